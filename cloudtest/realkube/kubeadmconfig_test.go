package realkube_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/kubeadm"
)

// goldenDir holds the kubeadm configurations the SDK renders, one golden
// file per variant (kubeadm/config_test.go configVariants writes them).
const goldenDir = "../../kubeadm/testdata"

// wantVariants are the renderings the real kubeadm must accept; a
// golden missing from the directory fails the test, so that a renamed
// variant is not silently left unjudged.
var wantVariants = []string{
	"config-init",                    // three masters behind a VIP, a floating IP as SAN
	"config-init-single-master",      // one master, default networks
	"config-init-custom-cidrs",       // pod and Service networks of the user's
	"config-init-ipv6",               // everything IPv6
	"config-upload-certs",            // the upload of the control-plane certificates
	"config-upload-certs-ipv6",       //
	"config-join-worker",             // a worker's join
	"config-join-control-plane",      // a master's join
	"config-join-control-plane-ipv6", //
}

// TestKubeadmValidatesRenderings has the real kubeadm, of the version
// this module builds (k8s.io/kubernetes, the minor the SDK deploys by
// default), judge every kubeadm configuration the SDK renders, with
// `kubeadm config validate --config FILE` (cmd/kubeadm/app/cmd/config.go
// newCmdConfigValidate → cmd/kubeadm/app/util/config/common.go
// ValidateConfig): strict decoding (an unknown or duplicate field is an
// error), conversion to the internal types, and their validation.
//
// kubeadm is built here with the version stamped as a release stamps it
// (-ldflags -X k8s.io/component-base/version.gitVersion=..., what
// hack/lib/version.sh does): unstamped, kubeadm takes itself for
// "v1.0.0-placeholder-version" and its version checks
// (NormalizeKubernetesVersion: the control plane at most one minor older
// than kubeadm) pass anything. The controls prove both the stamp and the
// strictness: an older control plane and an unknown field are refused.
func TestKubeadmValidatesRenderings(t *testing.T) {
	version := kubernetesModuleVersion(t)
	var major, minor int
	if _, err := fmt.Sscanf(version, "v%d.%d.", &major, &minor); err != nil {
		t.Fatalf("k8s.io/kubernetes version %q: %v", version, err)
	}
	if want := kubeadm.Version(fmt.Sprintf("%d.%d", major, minor)); kubeadm.DefaultKubernetesVersion != want {
		t.Fatalf("the SDK deploys %s by default, this module judges with kubeadm %s: move them together", kubeadm.DefaultKubernetesVersion, version)
	}
	bin := buildKubeadm(t, version, major, minor)

	files, err := filepath.Glob(filepath.Join(goldenDir, "config-*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".golden"))
	}
	for _, w := range wantVariants {
		if !slices.Contains(names, w) {
			t.Errorf("no golden %s.golden in %s", w, goldenDir)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			stdout, stderr, err := validate(t, bin, f)
			if err != nil || stdout != "ok\n" {
				t.Fatalf("kubeadm config validate: %v\n%s%s", err, stdout, stderr)
			}
			// klog's warnings and errors start with W or E and the date.
			for _, line := range strings.Split(stderr, "\n") {
				if len(line) > 1 && (line[0] == 'W' || line[0] == 'E') && line[1] >= '0' && line[1] <= '9' {
					t.Errorf("kubeadm warns: %s", line)
				}
			}
		})
	}

	// The controls: what kubeadm refuses must be refused here.
	init, err := os.ReadFile(filepath.Join(goldenDir, "config-init.golden"))
	if err != nil {
		t.Fatal(err)
	}
	older := fmt.Sprintf("v%d.%d.0", major, minor-2)
	for _, c := range []struct {
		name    string
		old, by string
		want    string
	}{
		{"a control plane two minors older", "\nkubernetesVersion: v1.36.2\n", "\nkubernetesVersion: " + older + "\n",
			"this version of kubeadm only supports deploying clusters with the control plane version >= "},
		{"an unknown field", "\n  bindPort: 6443\n", "\n  bindPort: 6443\n  bogus: 1\n",
			`strict decoding error: unknown field "localAPIEndpoint.bogus"`},
	} {
		doc := strings.Replace(string(init), c.old, c.by, 1)
		if doc == string(init) {
			t.Fatalf("%s: config-init.golden has no %q to change", c.name, c.old)
		}
		f := filepath.Join(t.TempDir(), "control.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := validate(t, bin, f)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: kubeadm config validate: %v, want an error with %q\n%s%s", c.name, err, c.want, stdout, stderr)
		}
	}
}

// kubernetesModuleVersion is the version of k8s.io/kubernetes this
// module requires (`go list -m`; a test binary carries no module list).
func kubernetesModuleVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goCommand(t), "list", "-m", "-f", "{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// goCommand is the go command, which lists the module and builds kubeadm.
func goCommand(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds kubeadm: %v", err)
	}
	return goBin
}

// buildKubeadm builds k8s.io/kubernetes/cmd/kubeadm (this module's tool)
// with its version stamped, and checks the stamp took.
func buildKubeadm(t *testing.T, version string, major, minor int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	goBin := goCommand(t)
	bin := filepath.Join(t.TempDir(), "kubeadm")
	const pkg = "k8s.io/component-base/version"
	ldflags := fmt.Sprintf("-X %s.gitMajor=%d -X %s.gitMinor=%d -X %s.gitVersion=%s -X %s.gitTreeState=clean", pkg, major, pkg, minor, pkg, version, pkg)
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "-ldflags", ldflags, "k8s.io/kubernetes/cmd/kubeadm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build kubeadm: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "version", "-o", "short").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != version {
		t.Fatalf("kubeadm version -o short: %q, %v; want %s", got, err, version)
	}
	return bin
}

// validate runs `kubeadm config validate --config file`.
func validate(t *testing.T, bin, file string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "config", "validate", "--config", file)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}
