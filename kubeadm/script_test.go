package kubeadm_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// recordScript parses the reference's flags with getopts (tacker
// install_k8s_cluster.sh: "m:w:i:p:a:t:s:k:") and records them and its
// environment in ~/record, as the reference's script would use them.
const recordScript = `#!/bin/bash
set -eu
while getopts m:w:i:p:a:t:s:k: opt; do
  case $opt in
    m) echo "m=$OPTARG";; w) echo "w=$OPTARG";; i) echo "i=$OPTARG";; p) echo "p=$OPTARG";;
    a) echo "a=$OPTARG";; t) echo "t=$OPTARG";; s) echo "s=$OPTARG";; k) echo "k=$OPTARG";;
  esac
done > "$HOME/record"
{
  echo "ha_flag=$ha_flag"
  echo "registries=${HTTP_PRIVATE_REGISTRIES:-}"
  echo "http_proxy=${http_proxy:-}"
  echo "no_proxy=${no_proxy:-}"
  echo "token=${MGMTKIT_KUBEADM_TOKEN:-}"
  echo "self=$0"
} >> "$HOME/record"
echo "token: printed"
if [ -n "${FAIL:-}" ]; then echo "kubeadm join failed" >&2; exit 255; fi
`

func TestRunInstallScript(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	pkg := lcm.NewPackage(fstest.MapFS{"Scripts/install_k8s_cluster.sh": {Data: []byte(recordScript)}})
	token, key := "abcdef.0123456789abcdef", "0011223344556677889900112233445566778899001122334455667788990011"
	hash := "sha256:" + strings.Repeat("ab", 32)
	var stdout strings.Builder
	o := kubeadm.ScriptOptions{
		Script: "./Scripts/install_k8s_cluster.sh", Masters: []string{"10.0.0.5", "10.0.0.6"}, ClusterIP: "10.0.0.100",
		PodCIDR: netip.MustParsePrefix("192.168.0.0/16"), ServiceCIDR: netip.MustParsePrefix("10.96.0.0/12"),
		Token: remote.NewSecret(token), CACertHash: hash, CertificateKey: remote.NewSecret(key),
		HA: true, HTTPRegistries: []string{"10.0.0.50:5000", "reg.example.com:5000"}, Proxy: proxyWithPassword, Stdout: &stdout,
	}
	res, err := kubeadm.RunInstallScript(n.ctx, n.ssh, pkg, o)
	if err != nil || !res.Changed {
		t.Fatalf("%v, %v", res, err)
	}
	rec := n.read("/home/ubuntu/record")
	for _, want := range []string{"m=10.0.0.5,10.0.0.6\n", "i=10.0.0.100\n", "p=192.168.0.0/16\n", "a=10.96.0.0/12\n", "s=" + hash + "\n",
		"ha_flag=True\n", `registries="10.0.0.50:5000","reg.example.com:5000"` + "\n", "http_proxy=http://user:s3cr3t-pw@proxy.example.com:3128\n",
		"no_proxy=localhost,127.0.0.1,10.0.0.0/24\n", "token=" + token + "\n"} {
		if !strings.Contains(rec, want) {
			t.Errorf("the script lacks %q:\n%s", want, rec)
		}
	}
	// The token and key as the reference's -t and -k, in no argv: the
	// script ran sourced by the wrapper's bash, its $0 its own path.
	for _, want := range []string{"t=" + token + "\n", "k=" + key + "\n", "self=/tmp/mgmtkit-script."} {
		if !strings.Contains(rec, want) {
			t.Errorf("the script lacks %q:\n%s", want, rec)
		}
	}
	argvHas := func(s string) bool {
		return slices.ContainsFunc(n.host.SSH.Calls(), func(c sshtest.Call) bool {
			return slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, s) })
		})
	}
	for _, s := range []string{token, key} {
		if argvHas(s) {
			t.Errorf("a secret in a process's argv without SecretFlags")
		}
	}
	if stdout.String() != "token: printed\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	for _, s := range []string{token, key, "s3cr3t-pw"} {
		n.noSecretIn(s, res.Detail)
	}
	if ents, _ := n.host.FS().ReadDir("/tmp"); len(ents) != 0 {
		t.Errorf("left in /tmp: %v", ents)
	}

	// The opt-in: the script as a process of its own, the secrets in its
	// argv on the node, never in the SSH command.
	n.host.SSH.ResetTranscript()
	o.SecretFlags, o.Proxy, o.HTTPRegistries, o.HA = true, nil, nil, false
	if _, err := kubeadm.RunInstallScript(n.ctx, n.ssh, pkg, o); err != nil {
		t.Fatal(err)
	}
	rec = n.read("/home/ubuntu/record")
	for _, want := range []string{"t=" + token + "\n", "k=" + key + "\n", "ha_flag=False\n", "registries=\n", "http_proxy=\n"} {
		if !strings.Contains(rec, want) {
			t.Errorf("the script lacks %q:\n%s", want, rec)
		}
	}
	if !argvHas(token) || !argvHas(key) {
		t.Error("SecretFlags: the secrets are not in the script's argv")
	}
	for _, e := range n.host.SSH.Transcript() {
		if strings.Contains(e.Command, token) || strings.Contains(e.Command, key) {
			t.Errorf("a secret in an SSH command: %s", e.Command)
		}
	}

	// A worker whose script fails: its status and stderr, no secret.
	w := kubeadm.ScriptOptions{Script: "Scripts/install_k8s_cluster.sh", Worker: "10.0.0.12", ClusterIP: "10.0.0.100", Token: remote.NewSecret(token), CACertHash: hash}
	pkgFail := lcm.NewPackage(fstest.MapFS{"Scripts/install_k8s_cluster.sh": {Data: []byte(strings.Replace(recordScript, "${FAIL:-}", "x", 1))}})
	res, err = kubeadm.RunInstallScript(n.ctx, n.ssh, pkgFail, w)
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 255 || !strings.Contains(err.Error(), "kubeadm join failed") || !res.Changed {
		t.Errorf("got %v, %v", res, err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the token in the error: %v", err)
	}
	if rec := n.read("/home/ubuntu/record"); !strings.Contains(rec, "w=10.0.0.12\n") || strings.Contains(rec, "p=") {
		t.Errorf("worker flags:\n%s", rec)
	}
}

func TestRunInstallScriptRefusesBadOptions(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	pkg := lcm.NewPackage(fstest.MapFS{"Scripts/install_k8s_cluster.sh": {Data: []byte(recordScript)}})
	n.commands()
	_, err := kubeadm.RunInstallScript(n.ctx, n.ssh, pkg, kubeadm.ScriptOptions{
		Script: "Scripts/missing.sh", Masters: []string{"10.0.0.5"}, Worker: "10.0.0.300", ClusterIP: "vip",
		CACertHash: "md5:x", HTTPRegistries: []string{"a,b"},
	})
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v", err)
	}
	var paths []string
	for _, p := range pe.Problems {
		paths = append(paths, p.Path)
	}
	want := "Script Worker Worker Token ClusterIP CACertHash CACertHash HTTPRegistries[0]"
	if strings.Join(paths, " ") != want {
		t.Errorf("problems %q, want %q", paths, want)
	}
	if cmds := n.commands(); len(cmds) != 0 {
		t.Errorf("commands ran: %q", cmds)
	}
}
