package system

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/posixsh"
)

// The fixed scripts the steps run as `sh -c SCRIPT NAME ARGS...` take
// every value as a positional argument, so none needs quoting; they must
// be POSIX sh, since /bin/sh is dash on Ubuntu and Debian. Each is parsed
// as POSIX and, where this machine has it, checked by the real dash
// (`dash -n`).
func TestScriptsArePOSIX(t *testing.T) {
	posixsh.Check(t, map[string]string{
		"arch":           archScript,
		"hostname":       hostnameScript,
		"loaded-modules": loadedModulesScript,
		"unit-state":     unitStateScript,
		"daemon-replace": moveScript,
	})
}
