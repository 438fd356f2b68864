package system

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
)

// StageFile uploads the file name of fsys (a VNF package's script) into a
// new private directory on h (`mktemp -d /tmp/mgmtkit-PREFIX.XXXXXXXX`:
// mode 0700, owned by the login user, never a fixed /tmp name that
// another user could prepare), mode 0700, and returns its path there and
// a function that removes the directory (call it when done; it outlives
// the context's cancellation for up to a minute). prefix is a short
// name like "lb" or "script".
func StageFile(ctx context.Context, h remote.Host, fsys fs.FS, name, prefix string) (file string, remove func(), err error) {
	template := "/tmp/mgmtkit-" + prefix + "."
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"mktemp", "-d", template + "XXXXXXXX"}})
	if err != nil {
		return "", nil, fmt.Errorf("making a directory for %s: %w", name, err)
	}
	dir := strings.TrimSpace(string(out.Stdout))
	if !strings.HasPrefix(dir, template) || path.Clean(dir) != dir {
		return "", nil, fmt.Errorf("mktemp printed %q", out.Stdout)
	}
	remove = func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = h.Run(cleanup, remote.Cmd{Args: []string{"rm", "-rf", "--", dir}, Idempotent: true})
	}
	file = path.Join(dir, path.Base(name))
	if _, err := remote.UploadFile(ctx, h, fsys, name, file, remote.FileOptions{Mode: 0o700}); err != nil {
		remove()
		return "", nil, fmt.Errorf("uploading %s: %w", name, err)
	}
	return file, remove, nil
}
