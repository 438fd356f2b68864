package kubeadm

import (
	"errors"
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

// The install-script wrapper with the real bash: the secrets read from
// standard input reach the script as -t and -k after its own flags, in
// both modes; sourced ("shell"), the script has $0 and BASH_SOURCE its
// path, the shell options of a fresh bash, the token and key as
// variables that its children do not inherit (run as a process, it has
// the flags only), and no argv of any
// process holds them (/proc/PID/cmdline of the script's bash, read from
// within the script); run as a process ("argv"), its argv holds them.
func TestScriptWrapperWithRealShells(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash here")
	}
	script := filepath.Join(t.TempDir(), "install.sh")
	body := `printf '%s|' "$@" "$ha_flag" "${HTTP_PRIVATE_REGISTRIES-unset}" "${http_proxy-unset}" "${https_proxy-unset}" "${MGMTKIT_KUBEADM_TOKEN-unset}" "${MGMTKIT_CERTIFICATE_KEY-unset}" "$0" "${BASH_SOURCE[0]}" "$-" "${mgmtkit_mode-unset}"
bash -c 'printf "%s|" "child:${MGMTKIT_KUBEADM_TOKEN-unset}"'
if [ -r /proc/$$/cmdline ]; then tr '\0' ' ' </proc/$$/cmdline | grep -q tok.en && printf 'argv:yes|' || printf 'argv:no|'; fi
exit 3
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mode, regs, stdin, want string }{
		{"argv", `"r:5000"`, "http://p:1\n\n\ntok.en\nkey\n", `-w|10.0.0.12|-t|tok.en|-k|key|True|"r:5000"|http://p:1|unset|unset|unset|` + script + "|" + script + "|hB|unset|child:unset|argv:yes|"},
		{"shell", "", "\n\n\ntok.en\n\n", `-w|10.0.0.12|-t|tok.en|True|unset|unset|unset|tok.en|unset|` + script + "|" + script + "|hBc|unset|child:unset|argv:no|"},
	} {
		cmd := exec.Command("bash", "-c", scriptWrapper, script, tc.mode, "True", tc.regs, "-w", "10.0.0.12")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		cmd.Stdin = strings.NewReader(tc.stdin)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || string(out) != tc.want {
			t.Errorf("mode %s: %q, %v; want %q and exit status 3", tc.mode, out, err, tc.want)
		}
	}
}
