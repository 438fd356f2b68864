// Package posixsh checks, in tests, the fixed scripts that steps run as
// `sh -c SCRIPT NAME ARGS...`: every value is a positional argument, so
// none needs quoting, but the script itself must be POSIX sh, since
// /bin/sh is dash on Ubuntu and Debian. Only tests import it.
package posixsh

import (
	"os/exec"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// Check parses each script (by name) as POSIX sh with mvdan.cc/sh and,
// where this machine has dash, checks it with the real one (`dash -n`),
// reporting every failure on t.
func Check(t *testing.T, scripts map[string]string) {
	t.Helper()
	dash, _ := exec.LookPath("dash")
	for name, script := range scripts {
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
