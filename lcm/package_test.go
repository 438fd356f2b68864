package lcm_test

import (
	"archive/zip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lcm"
)

func TestResolve(t *testing.T) {
	const expect = "; it must be a relative path inside the VNF package, like Files/images/registry.tar"
	tests := []struct {
		in, want, reason string
	}{
		{"Files/images/registry.tar", "Files/images/registry.tar", ""},
		{"./Files/images/registry.tar", "Files/images/registry.tar", ""},
		{"././Scripts/install.sh", "Scripts/install.sh", ""},
		{"TOSCA-Metadata/TOSCA.meta", "TOSCA-Metadata/TOSCA.meta", ""},
		{"file with spaces.txt", "file with spaces.txt", ""},
		{".", ".", ""},
		{"./", "", `it has an empty or "." element, or a trailing slash`},
		{"./.", "", `it has an empty or "." element, or a trailing slash`},
		{"", "", "it is empty"},
		{"/etc/passwd", "", "it is absolute"},
		{"/", "", "it is absolute"},
		{"../outside", "", "it leaves the package root"},
		{"Files/../../outside", "", "it leaves the package root"},
		{"./../outside", "", "it leaves the package root"},
		{"..", "", "it leaves the package root"},
		{"Files/../Scripts/x.sh", "", `it contains a ".." element`},
		{`Files\images\registry.tar`, "", `it contains a backslash (separate directories with "/")`},
		{`C:\Files\x`, "", `it contains a backslash (separate directories with "/")`},
		{"Files/x\x00.tar", "", "it contains a NUL byte"},
		{"Files//x", "", `it has an empty or "." element, or a trailing slash`},
		{"Files/./x", "", `it has an empty or "." element, or a trailing slash`},
		{"Files/", "", `it has an empty or "." element, or a trailing slash`},
		{"Files/.", "", `it has an empty or "." element, or a trailing slash`},
	}
	var p *lcm.Package = lcm.NewPackage(fstest.MapFS{})
	for _, tt := range tests {
		got, err := p.Resolve(tt.in)
		if tt.reason == "" {
			if err != nil || got != tt.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		var ipe *lcm.InvalidPathError
		if !errors.As(err, &ipe) || ipe.Path != tt.in || ipe.Reason != tt.reason || !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Resolve(%q) = %q, %#v; want reason %q", tt.in, got, err, tt.reason)
			continue
		}
		if !strings.HasSuffix(err.Error(), expect) || !strings.HasPrefix(err.Error(), "invalid VNF package path ") {
			t.Errorf("Resolve(%q) error = %q", tt.in, err)
		}
	}
}

// writeTree creates files (name -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenPackageDirectoryConfinesSymlinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "csar")
	writeTree(t, dir, map[string]string{
		"Files/images/registry.tar": "image",
		"Scripts/install.sh":        "#!/bin/sh",
	})
	writeTree(t, base, map[string]string{"outside.txt": "outside"})
	links := map[string]string{
		"Files/passwd":      "/etc/passwd",
		"Files/escape":      "../../outside.txt",
		"Files/inside":      "images/registry.tar",
		"Files/inside-abs":  filepath.Join(dir, "Files/images/registry.tar"),
		"Files/scripts":     "../Scripts",
		"Files/outside-dir": "../..",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Skipf("symlinks not supported: %v", err)
		}
	}

	p, err := lcm.OpenPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	// Links that stay inside the package work.
	for name, want := range map[string]string{
		"Files/inside":              "image",
		"./Files/inside":            "image",
		"Files/scripts/install.sh":  "#!/bin/sh",
		"Files/images/registry.tar": "image",
	} {
		b, err := p.ReadFile(name)
		if err != nil || string(b) != want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", name, b, err, want)
		}
		if fi, err := p.Stat(name); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("Stat(%q) = %v, %v", name, fi, err)
		}
	}
	// Links that leave it fail, whichever way they are opened.
	for _, name := range []string{"Files/passwd", "Files/escape", "Files/inside-abs", "Files/outside-dir/outside.txt"} {
		if b, err := p.ReadFile(name); err == nil {
			t.Errorf("ReadFile(%q) = %q, want an error", name, b)
		}
		if f, err := p.Open(name); err == nil {
			f.Close()
			t.Errorf("Open(%q) succeeded", name)
		}
		if _, err := p.Stat(name); err == nil {
			t.Errorf("Stat(%q) succeeded", name)
		}
	}
	if _, err := p.ReadFile("../outside.txt"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("ReadFile(../outside.txt) error = %v, want fs.ErrInvalid", err)
	}
	if _, err := p.ReadFile("Files/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(Files/none) error = %v, want fs.ErrNotExist", err)
	}

	// Parameter validation applies the same confinement.
	raw := []byte(`{"a": {"path": "Files/inside"}, "b": {"path": "Files/passwd"}}`)
	var a, b fileParam
	err = lcm.DecodeParams(raw, lcm.DecodeOptions{Package: p}, lcm.Param("a", &a), lcm.Param("b", &b))
	lines := problems(t, err)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], `b.path: "Files/passwd" cannot be read from the VNF package: `) {
		t.Errorf("problems = %q", lines)
	}

	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenPackageZip(t *testing.T) {
	files := map[string]string{
		"TOSCA-Metadata/TOSCA.meta": "TOSCA-Meta-File-Version: 1.0\n",
		"Files/images/registry.tar": "image",
		"Scripts/install.sh":        "#!/bin/sh\n",
	}
	for _, ext := range []string{".zip", ".csar", ".CSAR"} {
		path := filepath.Join(t.TempDir(), "pkg"+ext)
		writeZip(t, path, files)
		p, err := lcm.OpenPackage(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.ReadFile("./Scripts/install.sh")
		if err != nil || string(b) != "#!/bin/sh\n" {
			t.Errorf("%s: ReadFile = %q, %v", ext, b, err)
		}
		if err := fstest.TestFS(p, "TOSCA-Metadata/TOSCA.meta", "Files/images/registry.tar", "Scripts/install.sh"); err != nil {
			t.Errorf("%s: fstest: %v", ext, err)
		}
		if err := fstest.TestFS(p.FS(), "Scripts/install.sh"); err != nil {
			t.Errorf("%s: fstest on FS(): %v", ext, err)
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
}

func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, content); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenPackageDirectoryIsAnFS(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"Files/a.txt": "a", "Scripts/b.sh": "b"})
	p, err := lcm.OpenPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := fstest.TestFS(p, "Files/a.txt", "Scripts/b.sh"); err != nil {
		t.Error(err)
	}
}

func TestOpenPackageErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"pkg.tar.gz": "x", "broken.zip": "not a zip"})
	for name, want := range map[string]string{
		"missing":    "no such file or directory",
		"pkg.tar.gz": "must be a directory (an extracted CSAR) or a .zip or .csar file",
		"broken.zip": "zip: not a valid zip file",
	} {
		p, err := lcm.OpenPackage(filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenPackage(%s) = %v, %v; want error containing %q", name, p, err, want)
		}
	}
}

func TestNewPackage(t *testing.T) {
	p := lcm.NewPackage(fstest.MapFS{"Files/a": {Data: []byte("a")}})
	if b, err := p.ReadFile("./Files/a"); err != nil || string(b) != "a" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if _, err := p.Open("Files/../Files/a"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Open with .. = %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}
