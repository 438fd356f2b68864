package remote

import (
	"os/exec"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// The fixed scripts the file functions run as `sh -c SCRIPT NAME ARGS...`
// take every value as a positional argument, so none needs quoting; they
// must be valid POSIX sh, since /bin/sh is dash on Ubuntu and Debian:
// each is parsed as POSIX and, where this machine has it, checked by the
// real dash (`dash -n`).
func TestFileScriptsArePOSIX(t *testing.T) {
	dash, _ := exec.LookPath("dash")
	for name, script := range map[string]string{
		"probe":        probeScript,
		"commit":       commitScript,
		"read":         readScript,
		"read-files":   readFilesScript,
		"remove-files": removeFilesScript,
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
}
