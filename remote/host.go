package remote

import (
	"context"
	"io"
	"io/fs"
)

// Host is a machine that steps act on: the one seam between the SDK and a
// VM. [*SSHHost] implements it over SSH; tests may supply their own.
//
// All methods are safe for concurrent use.
type Host interface {
	// Name identifies the host in logs, errors and results.
	Name() string
	// Addr is the host:port the host is reached at.
	Addr() string
	// Run runs a command and waits for it. A non-zero exit status not
	// listed in Cmd.OKExit is an error (a *CommandError); standard error
	// alone never is.
	Run(ctx context.Context, c Cmd) (Output, error)
	// WriteFile makes the file at path (absolute) hold exactly the bytes
	// read from content, with the mode and owner of opts. It streams the
	// content, writes atomically (stage, verify SHA-256, rename) and does
	// nothing when the file already matches; changed reports whether it
	// wrote anything. Missing parent directories are created (mode 0755).
	WriteFile(ctx context.Context, path string, content io.Reader, opts FileOptions) (changed bool, err error)
	// ReadFile returns the content of the file at path. A missing file is
	// an error for which errors.Is(err, fs.ErrNotExist) holds.
	ReadFile(ctx context.Context, path string, opts FileOptions) ([]byte, error)
	// Close releases the host's connection.
	Close() error
}

// FileOptions says how a file is written or read.
type FileOptions struct {
	// Mode is the file's permission bits. Zero keeps the mode of an existing
	// file and gives a new one 0644.
	Mode fs.FileMode
	// Owner and Group are user and group names (or numeric IDs). Empty keeps
	// those of an existing file; a new file belongs to root when Sudo is set
	// and to the login user otherwise. Setting them requires Sudo unless
	// they name the login user.
	Owner, Group string
	// Sudo reads and writes as root, for root-owned paths such as /etc.
	Sudo bool
}
