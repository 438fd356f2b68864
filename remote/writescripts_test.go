package remote

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/posixsh"
)

// The fixed scripts the file functions run as `sh -c SCRIPT NAME ARGS...`
// take every value as a positional argument, so none needs quoting; they
// must be valid POSIX sh, since /bin/sh is dash on Ubuntu and Debian:
// each is parsed as POSIX and, where this machine has it, checked by the
// real dash (`dash -n`).
func TestFileScriptsArePOSIX(t *testing.T) {
	posixsh.Check(t, map[string]string{
		"probe":        probeScript,
		"commit":       commitScript,
		"read":         readScript,
		"read-files":   readFilesScript,
		"remove-files": removeFilesScript,
	})
}
