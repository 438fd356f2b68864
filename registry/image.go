package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Limits of the `docker save` archive reader. Real archives are far
// below them: a manifest.json of a few hundred bytes, an image config of
// some kilobytes, a few entries per layer and at most 128 layers.
const (
	maxManifestSize = 1 << 20
	maxConfigSize   = 4 << 20
	maxTarEntries   = 10000
)

// ImageArchive is what a `docker save` tar holds, as [ReadImageArchive]
// read and validated it: the image `docker load` will create and the tags
// it will give it.
type ImageArchive struct {
	// Path is the archive's path in the VNF package.
	Path string
	// ID is the image ID, "sha256:" and 64 hex digits: the digest of the
	// image config, computed from the config's bytes as `docker load`
	// does.
	ID string
	// Tags are the archive's RepoTags in familiar form
	// ("registry:latest"), each a valid NAME:TAG reference; never empty.
	Tags []string
}

// ReadImageArchive reads and validates the `docker save` tar name of fsys
// in one pass over its headers. It reads only manifest.json and the files
// of at most 4 MiB named like an image config (to compute the image ID),
// keeps only their digests, and skips the bodies of all other entries
// (without reading them when fsys's files can seek, as a directory
// package's do). It reads to the end rather than stopping at
// manifest.json, since the config and layers the manifest names must be
// in the archive, before it or after it.
//
// The format is the one moby writes and reads (moby
// image/tarexport/save.go and load.go; `docker save` in the Docker CLI
// reference): manifest.json is a JSON array of {Config, RepoTags, Layers};
// Config is "<64 hex>.json" in the legacy layout of Docker before 25 and
// "blobs/sha256/<64 hex>" in the OCI layout of Docker 25 and later, and
// the image ID is the sha256 digest of the config's bytes; every RepoTags
// entry must parse with reference.ParseNormalizedNamed and be tagged,
// as `docker load` requires.
//
// The archive must hold exactly one image with at least one tag, and the
// config and layers its manifest names. It is rejected when it is
// compressed, when an entry's name or link target would leave the
// extraction directory, when an entry is neither a file, a directory nor
// a link, when a name occurs twice (extraction would keep the last copy,
// which this reader would not have judged), and when a config's digest
// differs from the one its name gives.
func ReadImageArchive(fsys fs.FS, name string) (ImageArchive, error) {
	arc, err := readImageArchive(fsys, name)
	if err != nil {
		return ImageArchive{}, fmt.Errorf("%s: docker save archive: %w", name, err)
	}
	return arc, nil
}

// readImageArchive is ReadImageArchive with errors that do not name the
// file, for a field error at image_path.
func readImageArchive(fsys fs.FS, name string) (ImageArchive, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return ImageArchive{}, err
	}
	defer f.Close()
	arc, err := parseImageArchive(f)
	if err != nil {
		return ImageArchive{}, err
	}
	arc.Path = name
	return arc, nil
}

// manifestItem is one entry of manifest.json, as moby's
// image/tarexport/tarexport.go declares it (Parent and LayerSources are
// not needed here).
type manifestItem struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// tarEntry is what parseImageArchive remembers of an entry.
type tarEntry struct {
	typeflag byte
	link     string // the resolved target of a link
	digest   string // "sha256:…" of a small regular file
}

// parseImageArchive reads a `docker save` tar from r; see
// ReadImageArchive. It never panics, whatever r holds.
func parseImageArchive(r io.Reader) (ImageArchive, error) {
	var magic [6]byte
	n, err := io.ReadFull(r, magic[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return ImageArchive{}, err
	}
	if c := compression(magic[:n]); c != "" {
		return ImageArchive{}, fmt.Errorf("is %s-compressed; want the uncompressed tar `docker save` writes", c)
	}
	// Put the bytes back; a seekable file stays seekable, so that the tar
	// reader skips layer bodies instead of reading them.
	if s, ok := r.(io.Seeker); ok {
		if _, err := s.Seek(0, io.SeekStart); err != nil {
			return ImageArchive{}, err
		}
	} else {
		r = io.MultiReader(bytes.NewReader(magic[:n]), r)
	}

	entries := map[string]tarEntry{}
	var manifest []byte
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ImageArchive{}, fmt.Errorf("not a tar archive, or a truncated one: %v", err)
		}
		if n >= maxTarEntries {
			return ImageArchive{}, fmt.Errorf("holds more than %d entries", maxTarEntries)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader { // PAX settings, not a file
			continue
		}
		name, ok := localPath(hdr.Name)
		if !ok {
			return ImageArchive{}, fmt.Errorf("entry %q leaves the extraction directory", hdr.Name)
		}
		e := tarEntry{typeflag: hdr.Typeflag}
		switch hdr.Typeflag {
		case tar.TypeReg:
			if name == "manifest.json" {
				if hdr.Size > maxManifestSize {
					return ImageArchive{}, fmt.Errorf("manifest.json: %d bytes, more than the %d a manifest needs", hdr.Size, maxManifestSize)
				}
				if manifest, err = io.ReadAll(tr); err != nil {
					return ImageArchive{}, fmt.Errorf("manifest.json: %v", err)
				}
			} else if hdr.Size <= maxConfigSize && configLike(name) {
				h := sha256.New()
				if _, err := io.Copy(h, tr); err != nil {
					return ImageArchive{}, fmt.Errorf("%s: %v", name, err)
				}
				e.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
			}
		case tar.TypeDir:
		case tar.TypeSymlink:
			target := path.Join(path.Dir(name), hdr.Linkname)
			if l, ok := localPath(target); ok && !path.IsAbs(hdr.Linkname) {
				e.link = l
			} else {
				return ImageArchive{}, fmt.Errorf("entry %q links to %q, outside the extraction directory", hdr.Name, hdr.Linkname)
			}
		case tar.TypeLink:
			if l, ok := localPath(hdr.Linkname); ok {
				e.link = l
			} else {
				return ImageArchive{}, fmt.Errorf("entry %q links to %q, outside the extraction directory", hdr.Name, hdr.Linkname)
			}
		default:
			return ImageArchive{}, fmt.Errorf("entry %q is of tar type %q, not a file, directory or link", hdr.Name, hdr.Typeflag)
		}
		if old, dup := entries[name]; dup && (old.typeflag != tar.TypeDir || e.typeflag != tar.TypeDir) {
			return ImageArchive{}, fmt.Errorf("holds %q twice", name)
		}
		entries[name] = e
	}
	if err := checkLinks(entries); err != nil {
		return ImageArchive{}, err
	}
	if manifest == nil {
		return ImageArchive{}, errors.New("no manifest.json file")
	}
	return checkManifest(manifest, entries)
}

// checkLinks refuses a directory component that is a symbolic link, in an
// entry's name or a link's target. Without one, every path means what it
// says lexically, so the checks of localPath hold once the archive is
// extracted: a link "d" to "." would otherwise let "d/x" link to "../y",
// which looks local and is not.
func checkLinks(entries map[string]tarEntry) error {
	throughSymlink := func(p string) bool {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if entries[dir].typeflag == tar.TypeSymlink {
				return true
			}
		}
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		if throughSymlink(name) || (e.link != "" && throughSymlink(e.link)) {
			return fmt.Errorf("entry %q goes through a symbolic link to a directory", name)
		}
	}
	return nil
}

// checkManifest validates manifest.json against the archive's entries.
func checkManifest(raw []byte, entries map[string]tarEntry) (ImageArchive, error) {
	var items []manifestItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return ImageArchive{}, fmt.Errorf("manifest.json: %v", err)
	}
	if len(items) != 1 {
		return ImageArchive{}, fmt.Errorf("manifest.json: holds %d images, want one", len(items))
	}
	m := items[0]
	digest, ok := configDigest(m.Config)
	if !ok {
		return ImageArchive{}, fmt.Errorf(`manifest.json: Config %q: want "<64 hex digits>.json" or "blobs/sha256/<64 hex digits>"`, m.Config)
	}
	cfg, ok := resolve(entries, m.Config)
	if !ok || cfg.typeflag != tar.TypeReg {
		return ImageArchive{}, fmt.Errorf("manifest.json: Config %q is not a file of the archive", m.Config)
	}
	if cfg.digest != digest {
		return ImageArchive{}, fmt.Errorf("manifest.json: Config %q: the file's digest is %s", m.Config, cfg.digest)
	}
	if len(m.RepoTags) == 0 {
		return ImageArchive{}, errors.New("manifest.json: no RepoTags: the image would load untagged, with no name to run it by")
	}
	arc := ImageArchive{ID: digest}
	for i, t := range m.RepoTags {
		tag, err := checkTag(t)
		if err != nil {
			return ImageArchive{}, fmt.Errorf("manifest.json: RepoTags[%d] %q: %v", i, t, err)
		}
		arc.Tags = append(arc.Tags, tag)
	}
	for i, l := range m.Layers {
		if e, ok := resolve(entries, l); !ok || e.typeflag != tar.TypeReg {
			return ImageArchive{}, fmt.Errorf("manifest.json: Layers[%d] %q is not a file of the archive", i, l)
		}
	}
	return arc, nil
}

// checkTag parses a RepoTags entry as `docker load` does
// (reference.ParseNormalizedNamed, then NamedTagged) and returns it in
// familiar form. A digest is refused too: the steps look images up by
// NAME:TAG.
func checkTag(s string) (string, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return "", err
	}
	if _, ok := named.(reference.Digested); ok {
		return "", errors.New("has a digest, want NAME:TAG")
	}
	tagged, ok := named.(reference.NamedTagged)
	if !ok {
		return "", errors.New("has no tag, want NAME:TAG")
	}
	// A valid reference never starts with '-', so it cannot reach docker's
	// argv as an option.
	return reference.FamiliarString(tagged), nil
}

// resolve finds the entry name (a path of manifest.json) names, following
// links inside the archive.
func resolve(entries map[string]tarEntry, name string) (tarEntry, bool) {
	p, ok := localPath(name)
	for hops := 0; ok && hops < 16; hops++ {
		e, found := entries[p]
		if !found {
			return tarEntry{}, false
		}
		if e.link == "" {
			return e, true
		}
		p = e.link
	}
	return tarEntry{}, false
}

// localPath cleans a path inside the archive and reports whether it stays
// inside the directory the archive is extracted to.
func localPath(name string) (string, bool) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", false
	}
	p := path.Clean(name)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// configDigest returns the image ID a manifest's Config path gives:
// "<64 hex>.json" (legacy layout) or "blobs/sha256/<64 hex>" (OCI layout).
func configDigest(config string) (string, bool) {
	hexPart, ok := strings.CutSuffix(config, ".json")
	if !ok {
		hexPart, ok = strings.CutPrefix(config, "blobs/sha256/")
	}
	if !ok || !isSHA256("sha256:"+hexPart) {
		return "", false
	}
	return "sha256:" + hexPart, true
}

// configLike reports whether an entry could be the image config, whose
// digest the reader must know.
func configLike(name string) bool {
	_, ok := configDigest(name)
	return ok
}

// isSHA256 reports whether s is "sha256:" and 64 lower-case hex digits,
// as go-digest (the image spec's digest package) validates it.
func isSHA256(s string) bool {
	d, err := digest.Parse(s)
	return err == nil && d.Algorithm() == digest.SHA256
}

// compression names the compression whose magic number b starts with, or
// returns "".
func compression(b []byte) string {
	for _, c := range []struct {
		name  string
		magic []byte
	}{
		{"gzip", []byte{0x1f, 0x8b}},
		{"bzip2", []byte("BZh")},
		{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
	} {
		if bytes.HasPrefix(b, c.magic) {
			return c.name
		}
	}
	return ""
}

// valid checks the forms ReadImageArchive guarantees, for an ImageArchive
// a caller built by hand.
func (a ImageArchive) valid() error {
	if !isSHA256(a.ID) {
		return fmt.Errorf("image ID %q: want sha256:<64 hex digits>", a.ID)
	}
	if len(a.Tags) == 0 {
		return errors.New("no tags")
	}
	for _, t := range a.Tags {
		if tag, err := checkTag(t); err != nil || tag != t {
			return fmt.Errorf("tag %q: want NAME:TAG in familiar form (%v)", t, err)
		}
	}
	return nil
}

// LoadImage reads the `docker save` tar name of fsys (the VNF package)
// with [ReadImageArchive] and loads it with [LoadImageArchive].
func LoadImage(ctx context.Context, h remote.Host, fsys fs.FS, name string) (string, lcm.Result, error) {
	arc, err := ReadImageArchive(fsys, name)
	if err != nil {
		return "", lcm.Unchanged, err
	}
	return LoadImageArchive(ctx, h, fsys, arc)
}

// LoadImageArchive makes the image of arc, read from fsys (the VNF
// package) by [ReadImageArchive], present on h: skipped when every tag of
// the archive is there with the archive's image ID; otherwise the tar is
// streamed to the VM, loaded, and removed. It returns the archive's first
// tag, the image to run.
func LoadImageArchive(ctx context.Context, h remote.Host, fsys fs.FS, arc ImageArchive) (string, lcm.Result, error) {
	if err := arc.valid(); err != nil {
		return "", lcm.Unchanged, fmt.Errorf("%s: %w", arc.Path, err)
	}
	image := arc.Tags[0]
	present := true
	for _, tag := range arc.Tags {
		id, err := imageID(ctx, h, tag)
		if err != nil {
			return image, lcm.Unchanged, err
		}
		present = present && id == arc.ID
	}
	if present {
		return image, lcm.Unchanged, nil
	}
	staging := "/var/tmp/mgmtkit-image-" + strings.TrimPrefix(arc.ID, "sha256:")[:12] + ".tar"
	if _, err := remote.UploadFile(ctx, h, fsys, arc.Path, staging, remote.FileOptions{Mode: 0o600}); err != nil {
		return image, lcm.Unchanged, err
	}
	_, err := h.Run(ctx, sudo("docker", "load", "-i", staging))
	_, rmErr := h.Run(ctx, sudo("rm", "-f", staging))
	if err != nil {
		return image, lcm.Unchanged, err
	}
	if rmErr != nil {
		return image, lcm.Changed("loaded " + image), rmErr
	}
	if id, err := imageID(ctx, h, image); err != nil || id != arc.ID {
		return image, lcm.Changed("loaded " + image), fmt.Errorf("after docker load, %s is %q, want %s (%v)", image, id, arc.ID, err)
	}
	return image, lcm.Changed(fmt.Sprintf("loaded %s from %s", image, arc.Path)), nil
}
