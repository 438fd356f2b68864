package system

import (
	"os/exec"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// The fixed scripts the steps run as `sh -c SCRIPT NAME ARGS...` take
// every value as a positional argument, so none needs quoting; they must
// be POSIX sh, since /bin/sh is dash on Ubuntu and Debian. Each is parsed
// as POSIX and, where this machine has it, checked by the real dash
// (`dash -n`).
func TestScriptsArePOSIX(t *testing.T) {
	dash, _ := exec.LookPath("dash")
	for name, script := range map[string]string{
		"arch":           archScript,
		"hostname":       hostnameScript,
		"loaded-modules": loadedModulesScript,
		"unit-state":     unitStateScript,
	} {
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if dash == "" {
			continue
		}
		if out, err := exec.Command(dash, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s: dash -n: %v\n%s", name, err, out)
		}
	}
	if dash == "" {
		t.Log("no dash here: checked by the POSIX parser only")
	}
}
