package system

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		"apt-key":        keyringScript,
	})
}

// The key script with the real dash, curl and gpg: a key served at a
// file:// URL (curl -fsSL -o takes any URL curl knows) comes out
// dearmored, mode 0644, with no temporary file left; a missing key fails
// and leaves no keyring.
func TestKeyringScriptWithRealPrograms(t *testing.T) {
	for _, p := range []string{"dash", "curl", "gpg"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s here", p)
		}
	}
	dir := t.TempDir()
	binary := []byte("\x99\x01\x0d\x04mgmtkit test key")
	enarmor := exec.Command("gpg", "--enarmor")
	enarmor.Stdin = strings.NewReader(string(binary))
	enarmor.Env = append(os.Environ(), "GNUPGHOME="+dir)
	armored, err := enarmor.Output()
	if err != nil {
		t.Skipf("gpg --enarmor: %v", err)
	}
	asc := filepath.Join(dir, "Release.key")
	if err := os.WriteFile(asc, armored, 0o644); err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(dir, "keyrings", "example-keyring.gpg")
	run := func(url string) ([]byte, error) {
		cmd := exec.Command("dash", "-c", keyringScript, "mgmtkit-apt-key", url, keyring)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+dir)
		cmd.Stdin = strings.NewReader("\n")
		return cmd.CombinedOutput()
	}
	if out, err := run("file://" + filepath.Join(dir, "missing.key")); err == nil {
		t.Errorf("a missing key succeeded: %s", out)
	}
	if _, err := os.Stat(keyring); err == nil {
		t.Error("a failed fetch left a keyring")
	}
	if out, err := run("file://" + asc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := os.ReadFile(keyring)
	if err != nil || string(got) != string(binary) {
		t.Errorf("keyring %q, %v; want the dearmored key", got, err)
	}
	if fi, _ := os.Stat(keyring); fi.Mode().Perm() != 0o644 {
		t.Errorf("keyring mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(keyring)); len(ents) != 1 {
		t.Errorf("left beside the keyring: %v", ents)
	}
}
