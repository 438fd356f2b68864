package remote

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// The fixed scripts the file functions run as `sh -c SCRIPT NAME ARGS...`
// take every value as a positional argument, so none needs quoting; they
// must be valid POSIX sh, since /bin/sh is dash on Ubuntu and Debian.
func TestFileScriptsArePOSIX(t *testing.T) {
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
	}
}
