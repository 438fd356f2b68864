package ubuntu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testKey is an armored Ed25519 public key made with GnuPG 2.2.40
// (gpg --quick-gen-key, then --armor --export); testKeyID is its long key
// ID as gpg --list-keys --keyid-format long printed it.
const (
	testKey = `-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEZNoXQBYJKwYBBAHaRw8BAQdACN79DJeOdnXT57RAmKzAa7zP0LElstx+ikrE
CBy7YfW0PmlzdjprdWJlcm5ldGVzIE9CUyBQcm9qZWN0IDxpc3Y6a3ViZXJuZXRl
c0BidWlsZC5vcGVuc3VzZS5vcmc+iJAEExYIADgWIQTH/06rAGNS8l+1HKiwDrid
FFJkPQUCZNoXQAIbAwULCQgHAgYVCgkICwIEFgIDAQIeAQIXgAAKCRCwDridFFJk
PeppAQDPpq2UcwbbcG8Dc0jqUWy2uR+I+HDoSXLeeTzB1IlR5wD/e4z8mFd8eZIb
u+VQXgb2wTcBFOATP8nvFggjMoTcWAY=
=zpZU
-----END PGP PUBLIC KEY BLOCK-----
`
	testKeyID = "B00EB89D1452643D"
)

func TestDearmorAndKeyID(t *testing.T) {
	bin, err := Dearmor([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if len(bin) != 263 || KeyID(bin) != testKeyID {
		t.Errorf("dearmored %d bytes, key ID %q; want 263 bytes, %s", len(bin), KeyID(bin), testKeyID)
	}
	if _, err := Dearmor([]byte("<html>404</html>\n")); err == nil {
		t.Error("HTML dearmored")
	}
	if _, err := Dearmor([]byte(strings.Replace(testKey, "=zpZU", "=AAAA", 1))); err == nil || !strings.Contains(err.Error(), "CRC error; CE9654 - 000000") {
		t.Errorf("bad checksum: %v", err)
	}
	if KeyID([]byte("not a key")) != "" {
		t.Error("a key ID for text")
	}
}

func TestGPGDearmor(t *testing.T) {
	v := newVM(t, Options{})
	v.mustOK("mkdir -p /tmp/k")
	if err := v.Server().FS().WriteFile("/tmp/k/Release.key", []byte(testKey), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, _ := Dearmor([]byte(testKey))

	// Standard input to standard output, and -o FILE.
	r := v.user("gpg --dearmor < /tmp/k/Release.key")
	if r.code != 0 || r.stdout != string(bin) || r.stderr != "" {
		t.Errorf("dearmor to stdout: %v", r)
	}
	want(t, "dearmor -o", v.user("sudo gpg --dearmor -o /etc/apt/keyrings/k.gpg < /tmp/k/Release.key"), "", "", 0)
	if got, _ := v.Server().FS().ReadFile("/etc/apt/keyrings/k.gpg"); !bytes.Equal(got, bin) {
		t.Errorf("keyring holds %d bytes", len(got))
	}
	if fi, err := v.Server().FS().Stat("/etc/apt/keyrings/k.gpg"); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("keyring mode: %v %v", fi, err)
	}
	// An existing output: no terminal to ask on, or refused in batch mode;
	// --yes overwrites.
	want(t, "existing, no --yes", v.user("sudo gpg --dearmor -o /etc/apt/keyrings/k.gpg < /tmp/k/Release.key"), "", "gpg: cannot open '/dev/tty': No such device or address\n", 2)
	want(t, "existing, --batch", v.user("sudo gpg --batch --dearmor --output /etc/apt/keyrings/k.gpg < /tmp/k/Release.key"), "", "gpg: no valid OpenPGP data found.\ngpg: dearmoring failed: File exists\n", 2)
	want(t, "existing, --batch --yes", v.user("sudo gpg --batch --yes --dearmor --output=/etc/apt/keyrings/k.gpg /tmp/k/Release.key"), "", "", 0)
	// Not armored: an HTML error page, nothing at all.
	want(t, "html", v.user("printf '<html>404</html>\\n' | gpg --dearmor"), "", "gpg: no valid OpenPGP data found.\n", 2)
	want(t, "empty", v.user("gpg --dearmor < /dev/null"), "", "gpg: no valid OpenPGP data found.\n", 2)
	// Binary input passes through.
	r = v.user("gpg --dearmor < /etc/apt/keyrings/k.gpg")
	if r.code != 0 || r.stdout != string(bin) {
		t.Errorf("binary input: %v", r)
	}
	// Files it cannot create or read; a user who may not write there.
	want(t, "no directory", v.user("gpg --dearmor -o /nonexistent/k.gpg < /tmp/k/Release.key"), "",
		"gpg: can't create '/nonexistent/k.gpg': No such file or directory\ngpg: no valid OpenPGP data found.\ngpg: dearmoring failed: No such file or directory\n", 2)
	want(t, "no input", v.user("gpg --dearmor /tmp/k/missing"), "", "gpg: can't open '/tmp/k/missing': No such file or directory\ngpg: dearmoring failed: No such file or directory\n", 2)
	wantCode(t, "not root", v.user("gpg --dearmor -o /etc/apt/keyrings/u.gpg < /tmp/k/Release.key"), 2, "", "gpg: can't create '/etc/apt/keyrings/u.gpg': Permission denied\n")
	want(t, "a file operand", v.user("sudo gpg --dearmor /tmp/k/Release.key"), "", "", 0)
	if got, _ := v.Server().FS().ReadFile("/tmp/k/Release.key.gpg"); !bytes.Equal(got, bin) {
		t.Errorf("Release.key.gpg holds %d bytes", len(got))
	}
	want(t, "a file operand again", v.user("sudo gpg --batch --dearmor /tmp/k/Release.key"), "", "gpg: no valid OpenPGP data found.\ngpg: dearmoring failed: File exists\n", 2)
	want(t, "two files", v.user("gpg --dearmor /tmp/k/Release.key /tmp/k/Release.key"), "", "usage: gpg [options] --dearmor [file]\n", 2)
	// A corrupt checksum.
	if err := v.Server().FS().WriteFile("/tmp/k/bad.key", []byte(strings.Replace(testKey, "=zpZU", "=AAAA", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "bad CRC", v.user("gpg --dearmor < /tmp/k/bad.key"), 2, "", "gpg: CRC error; CE9654 - 000000\n")
	// Other gpg commands are not modelled.
	wantCode(t, "import", v.user("gpg --import /tmp/k/Release.key"), 2, "", "not modelled")
}

// TestGPGFaithful runs the real gpg, when the machine has one, on what
// the fake is checked with: the same output and messages.
func TestGPGFaithful(t *testing.T) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Skip("no gpg")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "Release.key")
	if err := os.WriteFile(key, []byte(testKey), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.CommandContext(context.Background(), gpg, args...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+filepath.Join(dir, "home"))
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String(), errb.String(), code
	}
	out, _, code := run(testKey, "--dearmor")
	bin, _ := Dearmor([]byte(testKey))
	if code != 0 || out != string(bin) {
		t.Errorf("real gpg --dearmor: exit %d, %d bytes; the fake gives %d", code, len(out), len(bin))
	}
	sum := sha256.Sum256([]byte(out))
	t.Logf("dearmored SHA-256 %s", hex.EncodeToString(sum[:]))
	if _, stderr, code := run("<html>404</html>\n", "--dearmor"); code != 2 || stderr != "gpg: no valid OpenPGP data found.\n" {
		t.Errorf("real gpg on HTML: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(strings.Replace(testKey, "=zpZU", "=AAAA", 1), "--dearmor"); code != 2 || stderr != "gpg: CRC error; CE9654 - 000000\n" {
		t.Errorf("real gpg on a bad checksum: exit %d, %q", code, stderr)
	}
	out2 := filepath.Join(dir, "k.gpg")
	if _, _, code := run(testKey, "--dearmor", "-o", out2); code != 0 {
		t.Fatalf("real gpg -o: exit %d", code)
	}
	if _, stderr, code := run(testKey, "--batch", "--dearmor", "-o", out2); code != 2 || stderr != "gpg: no valid OpenPGP data found.\ngpg: dearmoring failed: File exists\n" {
		t.Errorf("real gpg --batch -o existing: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(testKey, "--batch", "--yes", "--dearmor", "-o", out2); code != 0 || stderr != "" {
		t.Errorf("real gpg --batch --yes -o existing: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run("", "--dearmor", "-o", "/nonexistent/k.gpg"); code != 2 || !strings.HasPrefix(stderr, "gpg: can't create '/nonexistent/k.gpg': No such file or directory\n") {
		t.Errorf("real gpg -o into a missing directory: exit %d, %q", code, stderr)
	}
}
