package kubeadm

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// DefaultScriptTimeout bounds one run of the install script: the
// reference's K8S_INSTALL_TIMEOUT (2700 s).
const DefaultScriptTimeout = 2700 * time.Second

// ScriptOptions are the arguments of the reference's install script
// (tacker samples/mgmt_driver/kubernetes/install_k8s_cluster.sh; see
// [RunInstallScript]). A master run gives Masters, a worker run Worker.
type ScriptOptions struct {
	// Script is the script's path in the VNF package: script_path
	// (ClusterParams.ScriptPath). Required.
	Script string
	// Masters is -m: the masters' cluster (NIC) addresses, the main
	// master, which runs kubeadm init, first. A master's run.
	Masters []string
	// Worker is -w: the worker's own cluster address. A worker's run.
	Worker string
	// ClusterIP is -i: the API endpoint's address (the VIP of several
	// masters, else the master's address). Required.
	ClusterIP string
	// PodCIDR and ServiceCIDR are -p and -a: the pod and Service
	// networks. A master's run only.
	PodCIDR, ServiceCIDR netip.Prefix
	// Token is -t: the kubeadm join token, for every run but the main
	// master's.
	Token remote.Secret
	// CACertHash is -s: "sha256:<hex>", with Token.
	CACertHash string
	// CertificateKey is -k: the certificate key of a master that joins.
	CertificateKey remote.Secret
	// HA sets ha_flag ("True" or "False"): whether the endpoint is the
	// VIP's HAProxy port (16443) or the master's 6443.
	HA bool
	// HTTPRegistries are the private registries reached over HTTP
	// ("host:port"), HTTP_PRIVATE_REGISTRIES for Docker's
	// insecure-registries. The variable holds them as JSON strings
	// separated by commas ("\"a:5000\",\"b:5000\""), the elements the
	// script puts between its brackets in daemon.json.
	HTTPRegistries []string
	// Proxy sets http_proxy, https_proxy and no_proxy; nil sets none.
	Proxy *system.Proxy
	// SecretFlags is an opt-in that exposes Token and CertificateKey in
	// the script's argv on the node (ps shows them to every user for as
	// long as the script runs; they are never in the SSH command, logs or
	// errors): the script runs as its own process, `bash SCRIPT FLAGS...
	// -t TOKEN -k KEY`, as the reference runs it. Only for a script that
	// works in no other way.
	//
	// By default (false) the script gets the same flags without any argv
	// holding them: a bash that read the secrets from its standard input
	// appends -t and -k to its positional parameters and runs the script
	// in itself (`. SCRIPT`, with $0 the script's path), so the script's
	// getopts sees -t and -k, as the reference's unchanged script expects.
	// The script also has them as the shell variables (not exported)
	// MGMTKIT_KUBEADM_TOKEN and MGMTKIT_CERTIFICATE_KEY.
	SecretFlags bool
	// Timeout bounds the run; [DefaultScriptTimeout] when 0.
	Timeout time.Duration
	// Stdout, when set, receives the script's standard output (the
	// reference's main master prints the join token and certificate
	// key there: treat it as a secret).
	Stdout io.Writer
}

// caHashForm is kubeadm's discovery-token-ca-cert-hash for SHA-256
// (cmd/kubeadm/app/util/pubkeypin/pubkeypin.go: "sha256:" and 64 hex
// digits).
var caHashForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// check validates o.
func (o ScriptOptions) check(pkg *lcm.Package) []lcm.Problem {
	var probs []lcm.Problem
	add := func(p, format string, args ...any) {
		probs = append(probs, lcm.Problem{Path: p, Message: fmt.Sprintf(format, args...)})
	}
	if pkg == nil {
		add("pkg", "is nil: the VNF package holding the script is required")
	} else if fi, err := pkg.Stat(o.Script); err != nil || !fi.Mode().IsRegular() {
		add("Script", "%q is not a file of the package", o.Script)
	}
	addr := func(p, s string) {
		if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" {
			add(p, "%q is not an IP address", s)
		}
	}
	switch {
	case len(o.Masters) > 0 && o.Worker != "":
		add("Worker", "is for a worker's run, and Masters for a master's: give one")
	case len(o.Masters) == 0 && o.Worker == "":
		add("Masters", "or Worker is required")
	}
	for i, m := range o.Masters {
		addr("Masters["+strconv.Itoa(i)+"]", m)
	}
	if o.Worker != "" {
		addr("Worker", o.Worker)
		if o.PodCIDR.IsValid() || o.ServiceCIDR.IsValid() {
			add("PodCIDR", "and ServiceCIDR are for a master's run")
		}
		if !o.CertificateKey.IsZero() {
			add("CertificateKey", "is for a master that joins")
		}
		if o.Token.IsZero() {
			add("Token", "is required for a worker, which joins")
		}
	}
	addr("ClusterIP", o.ClusterIP)
	if o.Token.IsZero() != (o.CACertHash == "") {
		add("CACertHash", "comes with Token: both or neither")
	}
	if o.CACertHash != "" && !caHashForm.MatchString(o.CACertHash) {
		add("CACertHash", "must be sha256: and 64 lower-case hex digits, got %q", o.CACertHash)
	}
	for _, s := range []struct {
		name string
		v    remote.Secret
	}{{"Token", o.Token}, {"CertificateKey", o.CertificateKey}} {
		if strings.ContainsFunc(s.v.Reveal(), unsafeValueRune) {
			add(s.name, "must not contain white space, quotes or control characters")
		}
	}
	for i, r := range o.HTTPRegistries {
		if r == "" || strings.ContainsFunc(r, unsafeValueRune) || strings.ContainsAny(r, ",[]{}") {
			add("HTTPRegistries["+strconv.Itoa(i)+"]", "%q is not a registry host[:port]", r)
		}
	}
	probs = append(probs, o.Proxy.Check("Proxy")...)
	return probs
}

// scriptWrapper runs the uploaded script ($0) as the reference runs it
// (`bash SCRIPT FLAGS...` with its environment exported), under bash.
// The values that may be secret come on standard input, one per line:
// http_proxy, https_proxy, no_proxy, the token and the certificate key;
// empty lines leave a variable unset. $1 is "argv" to run the script as
// a process of its own, with -t and -k in its argv, or "shell" to run it
// in this shell (`.`), the flags only in the shell's positional
// parameters (see ScriptOptions.SecretFlags); $2 is ha_flag, $3
// HTTP_PRIVATE_REGISTRIES ("" for none); the rest are the script's
// flags. The shell options the wrapper sets are undone before the script
// runs, as a fresh bash would have them, and its own variable unset.
const scriptWrapper = `set -eu
mgmtkit_mode=$1 ha_flag=$2
export ha_flag
if [ -n "$3" ]; then HTTP_PRIVATE_REGISTRIES=$3; export HTTP_PRIVATE_REGISTRIES; fi
shift 3
IFS= read -r http_proxy || true
IFS= read -r https_proxy || true
IFS= read -r no_proxy || true
IFS= read -r MGMTKIT_KUBEADM_TOKEN || true
IFS= read -r MGMTKIT_CERTIFICATE_KEY || true
if [ -n "$http_proxy" ]; then export http_proxy; else unset http_proxy; fi
if [ -n "$https_proxy" ]; then export https_proxy; else unset https_proxy; fi
if [ -n "$no_proxy" ]; then export no_proxy; else unset no_proxy; fi
if [ -n "$MGMTKIT_KUBEADM_TOKEN" ]; then
  set -- "$@" -t "$MGMTKIT_KUBEADM_TOKEN"
else
  unset MGMTKIT_KUBEADM_TOKEN
fi
if [ -n "$MGMTKIT_CERTIFICATE_KEY" ]; then
  set -- "$@" -k "$MGMTKIT_CERTIFICATE_KEY"
else
  unset MGMTKIT_CERTIFICATE_KEY
fi
exec </dev/null
if [ "$mgmtkit_mode" = argv ]; then exec bash "$0" "$@"; fi
unset mgmtkit_mode
set +eu
. "$0"`

// RunInstallScript runs o.Script, a file of the VNF package pkg (the
// reference's install_k8s_cluster.sh, script_path), on a node, as the
// reference's driver does (tacker kubernetes_mgmt.py _install_worker_node
// and the master path of _install_k8s_cluster): as the login user, with
// bash, its flags -m|-w, -i, -p, -a, -s from o and ha_flag,
// HTTP_PRIVATE_REGISTRIES and the proxy variables in its environment.
//
// Unlike the reference, nothing is formatted into a shell line: the
// script is uploaded, mode 0700, into a fresh private directory
// (`mktemp -d`, removed afterwards), and run through a fixed wrapper
// with argv. The proxy URLs, the token and the certificate key travel on
// standard input to the wrapper, never in the SSH command, so they are in
// no transcript, log or error; the wrapper exports the proxy variables
// and hands the script the token and key as its -t and -k flags without
// putting them in any process's argv, unless o.SecretFlags opts in to
// that (see [ScriptOptions.SecretFlags]).
//
// A script cannot be asked whether it has run: RunInstallScript always
// runs it and reports Changed. Callers skip nodes already in the
// cluster, as the reference does (_is_master_installed), with
// [kubeapi.Kubectl.Node]. It fails with the script's exit status and the tail of
// its standard error.
func RunInstallScript(ctx context.Context, h remote.Host, pkg *lcm.Package, o ScriptOptions) (lcm.Result, error) {
	if probs := o.check(pkg); probs != nil {
		return lcm.Unchanged, &lcm.ParamsError{Problems: probs}
	}
	name, err := pkg.Resolve(o.Script)
	if err != nil {
		return lcm.Unchanged, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	dst, remove, err := system.StageFile(ctx, h, pkg, name, "script")
	if err != nil {
		return lcm.Unchanged, stepErr(h, "staging the script", err)
	}
	defer remove()

	var flags []string
	if len(o.Masters) > 0 {
		flags = append(flags, "-m", strings.Join(o.Masters, ","))
	} else {
		flags = append(flags, "-w", o.Worker)
	}
	flags = append(flags, "-i", o.ClusterIP)
	if o.PodCIDR.IsValid() {
		flags = append(flags, "-p", o.PodCIDR.String())
	}
	if o.ServiceCIDR.IsValid() {
		flags = append(flags, "-a", o.ServiceCIDR.String())
	}
	if o.CACertHash != "" {
		flags = append(flags, "-s", o.CACertHash)
	}
	mode, ha := "shell", "False"
	if o.SecretFlags {
		mode = "argv"
	}
	if o.HA {
		ha = "True"
	}
	var regs []string
	for _, r := range o.HTTPRegistries {
		regs = append(regs, strconv.Quote(r))
	}
	var stdin strings.Builder
	secrets := []remote.Secret{o.Token, o.CertificateKey}
	if p := o.Proxy; p != nil {
		stdin.WriteString(p.HTTPProxy.Reveal() + "\n" + p.HTTPSProxy.Reveal() + "\n" + p.NoProxy + "\n")
		secrets = append(secrets, p.HTTPProxy, p.HTTPSProxy)
	} else {
		stdin.WriteString("\n\n\n")
	}
	stdin.WriteString(o.Token.Reveal() + "\n" + o.CertificateKey.Reveal() + "\n")

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append([]string{"bash", "-c", scriptWrapper, dst, mode, ha, strings.Join(regs, ",")}, flags...)
	if _, err := h.Run(runCtx, remote.Cmd{Args: args, Stdin: strings.NewReader(stdin.String()), Stdout: o.Stdout, Secrets: secrets}); err != nil {
		// The script may have changed the node before it failed.
		return lcm.Changed("ran " + name + " (failed)"), stepErr(h, "running "+name, err)
	}
	return lcm.Changed("ran " + name), nil
}
