package remote_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/remote"
)

// TestRealSSHDLargeWrites writes files larger than remote reads back, so
// that the real host hashes them with dd and openssl while they land,
// and checks the commands each write costs: none but that hash without
// sudo (the check and the rename go over SFTP), and a probe, the hash and
// a commit that links the staged file into place under a sudo that needs
// no password.
func TestRealSSHDLargeWrites(t *testing.T) {
	srv := sshdtest.StartWith(t, sshdtest.Options{Transcript: true})
	u := srv.User(sshdtest.SudoNoPassword)
	h, lc := realHost(t, srv, u, nil)
	ctx := testCtx(t)
	content := bigContent(19<<20 + 321)
	want := sha256.Sum256(content)

	for _, c := range []struct {
		name     string
		path     string
		opts     remote.FileOptions
		commands []string // the scripts run, by their $0
		uid      int
	}{
		{"home", u.Home + "/big.bin", remote.FileOptions{Mode: 0o640}, []string{"mgmtkit-follow"}, -1},
		{"sudo", "/root/mgmtkit-large-write/big.bin", remote.FileOptions{Sudo: true, Mode: 0o600}, []string{"mgmtkit-probe", "mgmtkit-follow", "mgmtkit-commit"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.opts.Sudo {
				t.Cleanup(func() { os.RemoveAll("/root/mgmtkit-large-write") })
			}
			before := len(srv.Transcript())
			for _, stream := range []bool{false, true} {
				os.Remove(c.path)
				var r io.Reader = bytes.NewReader(content)
				if stream {
					r = io.MultiReader(r)
				}
				changed, err := h.WriteFile(ctx, c.path, r, c.opts)
				if lc.note(err) != nil || !changed {
					t.Fatalf("stream=%v: changed %v, %v", stream, changed, err)
				}
				got, err := os.ReadFile(c.path)
				if err != nil || sha256.Sum256(got) != want {
					t.Fatalf("stream=%v: %s holds %d other bytes, %v", stream, c.path, len(got), err)
				}
				fi, _ := os.Stat(c.path)
				if fi.Mode().Perm() != c.opts.Mode {
					t.Errorf("stream=%v: mode %v, want %v", stream, fi.Mode().Perm(), c.opts.Mode)
				}
				if st, ok := fi.Sys().(*syscall.Stat_t); c.uid >= 0 && ok && int(st.Uid) != c.uid {
					t.Errorf("stream=%v: owned by uid %d, want %d", stream, st.Uid, c.uid)
				}
			}
			var ran []string
			for _, cmd := range srv.Transcript()[before:] {
				for _, name := range []string{"mgmtkit-probe", "mgmtkit-follow", "mgmtkit-commit"} {
					if strings.Contains(cmd, " "+name+" ") {
						ran = append(ran, name)
					}
					// Verified as it landed: the commit links it into
					// place and does not hash it again.
					if name == "mgmtkit-commit" && strings.Contains(cmd, " "+name+" ") && !strings.Contains(cmd, " verified ") {
						t.Errorf("the commit hashes the file again: %s", cmd)
					}
				}
			}
			wantRan := append(append([]string(nil), c.commands...), c.commands...) // file, then stream
			if strings.Join(ran, " ") != strings.Join(wantRan, " ") {
				t.Errorf("commands %v, want %v", ran, wantRan)
			}
		})
	}
}
