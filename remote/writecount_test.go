package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// writeCase is one way of writing files, measured by
// TestWriteCommandCounts.
type writeCase struct {
	name  string
	write func(ctx context.Context, h *remote.SSHHost, files []remote.FileWrite) ([]bool, error)
}

var writeCases = []writeCase{
	{"WriteFile/seekable", func(ctx context.Context, h *remote.SSHHost, files []remote.FileWrite) ([]bool, error) {
		return writeOneByOne(ctx, h, files, false)
	}},
	{"WriteFile/stream", func(ctx context.Context, h *remote.SSHHost, files []remote.FileWrite) ([]bool, error) {
		return writeOneByOne(ctx, h, files, true)
	}},
	{"WriteFiles", func(ctx context.Context, h *remote.SSHHost, files []remote.FileWrite) ([]bool, error) {
		return remote.WriteFiles(ctx, h, files)
	}},
}

// writeOneByOne writes files with WriteFile, from a bytes.Reader or, with
// stream, from a reader that cannot seek.
func writeOneByOne(ctx context.Context, h *remote.SSHHost, files []remote.FileWrite, stream bool) ([]bool, error) {
	changed := make([]bool, len(files))
	for i, f := range files {
		var err error
		if stream {
			changed[i], err = h.WriteFile(ctx, f.Path, onlyReader{bytes.NewReader(f.Content)}, f.Options)
		} else {
			changed[i], err = h.WriteFile(ctx, f.Path, bytes.NewReader(f.Content), f.Options)
		}
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// TestWriteCommandCounts pins the number of commands each way of writing
// a file runs on a fresh host, a converged one, one where only the mode
// (and owner) differ and one where the content differs, as root (sudo)
// and as the login user. The commands are the probe and the commit; SFTP
// transfers are not commands.
func TestWriteCommandCounts(t *testing.T) {
	// want[scenario]: commands for one file, the same for every case:
	// WriteFile is WriteFiles for one file.
	for _, wc := range writeCases {
		for _, sudo := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sudo=%v", wc.name, sudo), func(t *testing.T) {
				// Under sudo: a probe and a commit. Without sudo, one file
				// that keeps its owner and group is checked, read back
				// and renamed over SFTP: no command at all.
				want := map[string]int{"fresh": 2, "converged": 1, "mode": 2, "owner+mode": 2, "content": 2}
				if !sudo {
					want = map[string]int{}
				}
				srv, _ := fakeHost(t)
				h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
				ctx := testContext(t)
				if _, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil { // learn sudo first
					t.Fatal(err)
				}
				dir := "/home/ubuntu/conf"
				if sudo {
					dir = "/etc/app"
				}
				file := dir + "/app.conf"
				owner := "ubuntu"
				if sudo {
					owner = "root"
				}
				steps := []struct {
					scenario string
					content  string
					opts     remote.FileOptions
					changed  bool
					mode     fs.FileMode
				}{
					{"fresh", "one\n", remote.FileOptions{Sudo: sudo}, true, 0o644},
					{"converged", "one\n", remote.FileOptions{Sudo: sudo}, false, 0o644},
					{"mode", "one\n", remote.FileOptions{Sudo: sudo, Mode: 0o600}, true, 0o600},
					{"owner+mode", "one\n", remote.FileOptions{Sudo: sudo, Mode: 0o640, Owner: owner, Group: "ubuntu"}, true, 0o640},
					{"content", "two\n", remote.FileOptions{Sudo: sudo}, true, 0o640},
				}
				if !sudo {
					// Without sudo the owner cannot change and the group
					// is ubuntu's already: only the mode differs.
					steps[3].opts.Owner, steps[3].opts.Group = "", ""
				}
				var report []string
				for _, s := range steps {
					srv.ResetTranscript()
					changed, err := wc.write(ctx, h, []remote.FileWrite{{Path: file, Content: []byte(s.content), Options: s.opts}})
					if err != nil {
						t.Fatalf("%s: %v", s.scenario, err)
					}
					n := len(srv.Transcript())
					report = append(report, fmt.Sprintf("%s=%d", s.scenario, n))
					if changed[0] != s.changed {
						t.Errorf("%s: changed %v, want %v", s.scenario, changed[0], s.changed)
					}
					if w := want[s.scenario]; n != w {
						t.Errorf("%s: %d commands, want %d", s.scenario, n, w)
					}
					got, mode, uid, _ := fileState(t, srv, file)
					if got != s.content || mode != s.mode || (sudo && uid != 0) || (!sudo && uid != 1000) {
						t.Errorf("%s: %q mode %v uid %d", s.scenario, got, mode, uid)
					}
				}
				t.Log(strings.Join(report, " "))
				assertNoStaged(t, srv, dir)
			})
		}
	}
}

// assertNoStaged fails if a staging or temporary file is left in dir or
// in the login user's staging directory.
func assertNoStaged(t *testing.T, srv *sshtest.Server, dir string) {
	t.Helper()
	for _, d := range []string{dir, "/home/ubuntu", "/home/ubuntu/.mgmtkit-staging"} {
		entries, err := srv.FS().As(sshtest.Root, "/").ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(e.Name(), "mgmtkit") && e.Name() != ".mgmtkit-staging" {
				t.Errorf("%s/%s left behind", d, e.Name())
			}
		}
	}
}
