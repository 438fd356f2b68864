package kubeadm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/posixsh"
)

// The fixed scripts of the node steps run as `sh -c SCRIPT NAME ARGS...`
// with every value a positional argument (or a line of standard input),
// so they must be POSIX sh: /bin/sh is dash on Ubuntu. Each is parsed as
// POSIX and, where this machine has it, checked by the real dash
// (`dash -n`), as system's and remote's scripts are.
func TestNodeStepScriptsArePOSIX(t *testing.T) {
	posixsh.Check(t, map[string]string{
		"reset-probe":    resetProbeScript,
		"home":           homeScript,
		"install-script": scriptWrapper,
		"exists":         existsScript,
	})
}

// The install-script wrapper with the real dash and bash: the secrets
// read from standard input reach the script as variables and, with
// flags "yes", as -t and -k after the script's own flags.
func TestScriptWrapperWithRealShells(t *testing.T) {
	for _, p := range []string{"dash", "bash"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s here", p)
		}
	}
	script := filepath.Join(t.TempDir(), "install.sh")
	if err := os.WriteFile(script, []byte(`printf '%s|' "$@" "$ha_flag" "${HTTP_PRIVATE_REGISTRIES-unset}" "${http_proxy-unset}" "${https_proxy-unset}" "$MGMTKIT_KUBEADM_TOKEN" "${MGMTKIT_CERTIFICATE_KEY-unset}"`), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flags, regs, stdin, want string }{
		{"yes", `"r:5000"`, "http://p:1\n\n\ntok.en\nkey\n", `-w|10.0.0.12|-t|tok.en|-k|key|True|"r:5000"|http://p:1|unset|tok.en|key|`},
		{"no", "", "\n\n\ntok.en\n\n", `-w|10.0.0.12|True|unset|unset|unset|tok.en|unset|`},
	} {
		cmd := exec.Command("dash", "-c", scriptWrapper, "mgmtkit-install-script", script, tc.flags, "True", tc.regs, "-w", "10.0.0.12")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		cmd.Stdin = strings.NewReader(tc.stdin)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != tc.want {
			t.Errorf("flags %s: %q, %v; want %q", tc.flags, out, err, tc.want)
		}
	}
}
