package lcm

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Package is a VNF package: an extracted CSAR directory, a CSAR (.zip or
// .csar) file, or any fs.FS. Parameters such as image_path,
// certificate_path, script_path and pv_manifest_file_path name files in it.
//
// Path rules: a package path is relative to the package root and uses
// forward slashes, like "Files/images/registry.tar". A leading "./" is
// allowed and dropped ("./Scripts/install.sh" is "Scripts/install.sh"), as
// the specs write such paths both ways. Anything else that is not an
// [fs.ValidPath] is rejected with an [*InvalidPathError]: an empty path, an
// absolute path, a backslash, a NUL byte, empty or "." elements, a trailing
// slash, and any ".." element (whether or not it would leave the root). A
// path therefore never escapes the package.
//
// For a directory, relative symbolic links whose target stays inside the
// package are followed; links that point outside it, and absolute links,
// fail to open (the directory is opened with [os.OpenRoot]). In a zip file,
// symbolic links are not followed.
//
// Package implements [fs.FS], [fs.StatFS] and [fs.ReadFileFS] with these
// rules; [Package.FS] returns the underlying, strictly fs.ValidPath, file
// system. Its methods are safe for concurrent use, except Close, which must
// be called once all other use has ended.
type Package struct {
	fsys   fs.FS
	closer io.Closer
}

// OpenPackage opens the VNF package at path: a directory holding an
// extracted CSAR, or a CSAR file whose name ends in .zip or .csar. Close
// the package when done.
func OpenPackage(path string) (*Package, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("lcm: open VNF package: %w", err)
	}
	if fi.IsDir() {
		root, err := os.OpenRoot(path)
		if err != nil {
			return nil, fmt.Errorf("lcm: open VNF package: %w", err)
		}
		return &Package{fsys: root.FS(), closer: root}, nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".zip", ".csar":
		zr, err := zip.OpenReader(path)
		if err != nil {
			return nil, fmt.Errorf("lcm: open VNF package %s: %w", path, err)
		}
		return &Package{fsys: zr, closer: zr}, nil
	}
	return nil, fmt.Errorf("lcm: open VNF package %s: must be a directory (an extracted CSAR) or a .zip or .csar file", path)
}

// NewPackage returns a Package that reads from fsys, for example a
// [testing/fstest.MapFS] in tests or an [embed.FS]. Its Close does nothing.
func NewPackage(fsys fs.FS) *Package {
	return &Package{fsys: fsys}
}

// FS returns the package's underlying file system, which accepts only
// [fs.ValidPath] names.
func (p *Package) FS() fs.FS { return p.fsys }

// Resolve checks that name is a valid package path (see [Package]) and
// returns it in canonical form, without a leading "./". It only checks the
// form of the path; Open and Stat tell whether the file exists.
func (p *Package) Resolve(name string) (string, error) {
	return resolvePackagePath(name)
}

// Open opens the named file after resolving it.
func (p *Package) Open(name string) (fs.File, error) {
	rel, err := resolvePackagePath(name)
	if err != nil {
		return nil, err
	}
	return p.fsys.Open(rel)
}

// ReadFile reads the named file after resolving it.
func (p *Package) ReadFile(name string) ([]byte, error) {
	rel, err := resolvePackagePath(name)
	if err != nil {
		return nil, err
	}
	return fs.ReadFile(p.fsys, rel)
}

// Stat describes the named file after resolving it, following symbolic
// links that stay inside the package.
func (p *Package) Stat(name string) (fs.FileInfo, error) {
	rel, err := resolvePackagePath(name)
	if err != nil {
		return nil, err
	}
	return fs.Stat(p.fsys, rel)
}

// Close releases the directory or the zip file. It is safe to call more
// than once.
func (p *Package) Close() error {
	c := p.closer
	p.closer = nil
	if c == nil {
		return nil
	}
	return c.Close()
}

// regularFile resolves name and checks that it is a regular file.
func (p *Package) regularFile(name string) (string, error) {
	rel, err := resolvePackagePath(name)
	if err != nil {
		return "", err
	}
	fi, err := fs.Stat(p.fsys, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%q does not exist in the VNF package", name)
	case err != nil:
		return "", fmt.Errorf("%q cannot be read from the VNF package: %w", name, err)
	case fi.IsDir():
		return "", fmt.Errorf("%q is a directory in the VNF package, not a file", name)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%q is not a regular file in the VNF package", name)
	}
	return rel, nil
}

// InvalidPathError reports a path that is not a valid package path. It
// matches [fs.ErrInvalid] with errors.Is.
type InvalidPathError struct {
	Path   string // the path as given
	Reason string // what is wrong with it
}

// Error says what is wrong and what is expected.
func (e *InvalidPathError) Error() string {
	return fmt.Sprintf("invalid VNF package path %q: %s; it must be a relative path inside the VNF package, like Files/images/registry.tar", e.Path, e.Reason)
}

// Is reports whether target is fs.ErrInvalid.
func (e *InvalidPathError) Is(target error) bool { return target == fs.ErrInvalid }

// resolvePackagePath implements the path rules documented on Package.
func resolvePackagePath(name string) (string, error) {
	bad := func(reason string) (string, error) {
		return "", &InvalidPathError{Path: name, Reason: reason}
	}
	switch {
	case name == "":
		return bad("it is empty")
	case strings.ContainsRune(name, 0):
		return bad("it contains a NUL byte")
	case strings.Contains(name, `\`):
		return bad(`it contains a backslash (separate directories with "/")`)
	case strings.HasPrefix(name, "/"):
		return bad("it is absolute")
	}
	rel := name
	for strings.HasPrefix(rel, "./") {
		rel = rel[len("./"):]
	}
	if fs.ValidPath(rel) && (rel != "." || name == ".") {
		return rel, nil
	}
	depth := 0
	for elem := range strings.SplitSeq(rel, "/") {
		switch elem {
		case "..":
			if depth--; depth < 0 {
				return bad("it leaves the package root")
			}
		case "", ".":
		default:
			depth++
		}
	}
	if strings.Contains("/"+rel+"/", "/../") {
		return bad(`it contains a ".." element`)
	}
	return bad(`it has an empty or "." element, or a trailing slash`)
}
