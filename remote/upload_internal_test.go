package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFollowScriptOnThisMachine runs followScript with this machine's real
// dd, openssl (or sha256sum) and python3, the programs it relies on (the
// fake host's dd is checked against GNU dd this way), once through
// followPython and once through its dd fallback, feeding it the file's
// length in uneven steps as an upload would.
func TestFollowScriptOnThisMachine(t *testing.T) {
	for _, tool := range []string{"dd", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	data := make([]byte, 5<<20+777)
	rand.NewChaCha8([32]byte{3}).Read(data)
	file := filepath.Join(t.TempDir(), "staged")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	steps := "1048576\n1048576\n3000000\n" + "5243657\n" // a repeat, then the rest
	for _, python := range []string{followPython, ""} {
		if python != "" {
			if _, err := exec.LookPath("python3"); err != nil {
				t.Log("python3 is not installed: only the dd fallback is checked")
				continue
			}
		}
		cmd := exec.Command("sh", "-c", followScript, "mgmtkit-follow", file, python)
		cmd.Stdin = strings.NewReader(steps)
		out, err := cmd.CombinedOutput()
		if got, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); err != nil || got != want {
			t.Errorf("python=%v: %q, %v; want %s", python != "", out, err, want)
		}
	}
}
