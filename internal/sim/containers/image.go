package containers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// blob is content addressed by its sha256 digest.
type blob struct {
	digest string // "sha256:…"
	data   []byte
}

func newBlob(data []byte) blob { return blob{digest: digestOf(data), data: data} }

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// image is an image as registries and runtimes hold it: its config (whose
// digest is the image ID) and its layers. Images are immutable once made.
type image struct {
	config blob
	layers []blob
}

// imageConfig is the part of an image config the simulation reads.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		Cmd          []string            `json:"Cmd,omitempty"`
		Entrypoint   []string            `json:"Entrypoint,omitempty"`
		Env          []string            `json:"Env,omitempty"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
		Volumes      map[string]struct{} `json:"Volumes,omitempty"`
		WorkingDir   string              `json:"WorkingDir,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// id is the image ID: the digest of its config.
func (im *image) id() string { return im.config.digest }

// parsedConfig decodes the config; a config that does not decode gives
// an empty one.
func (im *image) parsedConfig() imageConfig {
	var c imageConfig
	json.Unmarshal(im.config.data, &c)
	return c
}

// size is the image's size as runtimes report it.
func (im *image) size() int64 {
	n := int64(len(im.config.data))
	for _, l := range im.layers {
		n += int64(len(l.data))
	}
	return n
}

// manifestJSON is the image's Docker v2 schema 2 manifest, as a registry
// stores and serves it.
func (im *image) manifestJSON() []byte {
	type desc struct {
		MediaType string `json:"mediaType"`
		Size      int    `json:"size"`
		Digest    string `json:"digest"`
	}
	m := struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Config        desc   `json:"config"`
		Layers        []desc `json:"layers"`
	}{
		SchemaVersion: 2,
		MediaType:     "application/vnd.docker.distribution.manifest.v2+json",
		Config:        desc{"application/vnd.docker.container.image.v1+json", len(im.config.data), im.config.digest},
		Layers:        []desc{},
	}
	for _, l := range im.layers {
		m.Layers = append(m.Layers, desc{"application/vnd.docker.image.rootfs.diff.tar.gzip", len(l.data), l.digest})
	}
	b, _ := json.MarshalIndent(m, "", "   ")
	return b
}

// digest is the manifest digest: what "Digest: sha256:…" and RepoDigests
// show.
func (im *image) digest() string { return digestOf(im.manifestJSON()) }

// isRegistryImage reports whether a repository holds the registry (the
// Docker distribution registry): its last path component is "registry".
func isRegistryImage(r ref) bool { return r.repoBase() == "registry" }

// synthImage makes a small image for a name, the same for the same name:
// what Registry.Push, Docker Hub and DockerState.AddImage serve. A
// registry image exposes 5000/tcp and declares the volume
// /var/lib/registry, as the real one does.
func synthImage(name string) *image {
	layer := newBlob([]byte("mgmtkit simulated layer of " + name + "\n"))
	var c imageConfig
	c.Architecture, c.OS, c.Created = "amd64", "linux", "2023-11-14T22:13:20Z"
	c.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if r, err := parseRef(name); err == nil && isRegistryImage(r) {
		c.Config.Entrypoint = []string{"/entrypoint.sh"}
		c.Config.Cmd = []string{"/etc/docker/registry/config.yml"}
		c.Config.ExposedPorts = map[string]struct{}{"5000/tcp": {}}
		c.Config.Volumes = map[string]struct{}{"/var/lib/registry": {}}
	} else {
		c.Config.Cmd = []string{"/app"}
	}
	c.RootFS.Type = "layers"
	c.RootFS.DiffIDs = []string{layer.digest}
	cfg, _ := json.Marshal(c)
	return &image{config: newBlob(cfg), layers: []blob{layer}}
}

// hubImage returns an image Docker Hub serves: the registry (tags latest,
// 2 and 2.8.3, one image) and hello-world:latest.
func hubImage(r ref) (*image, bool) {
	switch {
	case r.path == "library/registry" && (r.tag == "latest" || r.tag == "2" || r.tag == "2.8" || r.tag == "2.8.3"):
		return synthImage("docker.io/library/registry:2.8.3"), true
	case r.path == "library/hello-world" && r.tag == "latest":
		return synthImage("docker.io/library/hello-world:latest"), true
	}
	return nil, false
}

// hubRepoExists reports whether Docker Hub has the repository at all
// (a missing tag of it is "manifest unknown", a missing repository
// "pull access denied").
func hubRepoExists(r ref) bool {
	return r.path == "library/registry" || r.path == "library/hello-world"
}

// store is a registry's storage in the layout of the distribution
// registry's filesystem driver, under root of a filesystem: blobs under
// docker/registry/v2/blobs/sha256/XX/HEX/data, tags as links under
// docker/registry/v2/repositories/NAME/_manifests/tags/TAG/current/link.
// A registry container's store is its host directory bound to
// /var/lib/registry, so its images survive the container and show in the
// host's filesystem.
type store struct {
	fs   *sshtest.FS
	root string
}

func (s store) v2(elem ...string) string {
	return path.Join(append([]string{s.root, "docker/registry/v2"}, elem...)...)
}

func (s store) blobPath(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	if len(hex) < 2 {
		hex = "00" + hex
	}
	return s.v2("blobs/sha256", hex[:2], hex, "data")
}

func (s store) writeBlob(b blob) error {
	if s.fs.Exists(s.blobPath(b.digest)) {
		return nil
	}
	return s.fs.WriteFile(s.blobPath(b.digest), b.data, 0o644)
}

func (s store) readBlob(digest string) (blob, bool) {
	data, err := s.fs.ReadFile(s.blobPath(digest))
	if err != nil {
		return blob{}, false
	}
	return blob{digest: digest, data: data}, true
}

func (s store) link(file, digest string) error {
	return s.fs.WriteFile(file, []byte(digest), 0o644)
}

// put stores an image under repo:tag, as a push does.
func (s store) put(repo, tag string, im *image) error {
	man := newBlob(im.manifestJSON())
	for _, b := range append([]blob{im.config, man}, im.layers...) {
		if err := s.writeBlob(b); err != nil {
			return err
		}
	}
	repoDir := s.v2("repositories", repo)
	for _, b := range append([]blob{im.config}, im.layers...) {
		if err := s.link(path.Join(repoDir, "_layers/sha256", strings.TrimPrefix(b.digest, "sha256:"), "link"), b.digest); err != nil {
			return err
		}
	}
	hex := strings.TrimPrefix(man.digest, "sha256:")
	for _, file := range []string{
		path.Join(repoDir, "_manifests/revisions/sha256", hex, "link"),
		path.Join(repoDir, "_manifests/tags", tag, "index/sha256", hex, "link"),
		path.Join(repoDir, "_manifests/tags", tag, "current/link"),
	} {
		if err := s.link(file, man.digest); err != nil {
			return err
		}
	}
	return nil
}

// get reads repo:tag (or repo@digest) back; false when the tag, the
// manifest or one of its blobs is missing.
func (s store) get(repo, reference string) (*image, bool) {
	var manDigest string
	if strings.HasPrefix(reference, "sha256:") {
		manDigest = reference
		if !s.fs.Exists(s.v2("repositories", repo, "_manifests/revisions/sha256", strings.TrimPrefix(reference, "sha256:"), "link")) {
			return nil, false
		}
	} else {
		link, err := s.fs.ReadFile(s.v2("repositories", repo, "_manifests/tags", reference, "current/link"))
		if err != nil {
			return nil, false
		}
		manDigest = strings.TrimSpace(string(link))
	}
	man, ok := s.readBlob(manDigest)
	if !ok {
		return nil, false
	}
	var m struct {
		Config struct{ Digest string }   `json:"config"`
		Layers []struct{ Digest string } `json:"layers"`
	}
	if json.Unmarshal(man.data, &m) != nil {
		return nil, false
	}
	cfg, ok := s.readBlob(m.Config.Digest)
	if !ok {
		return nil, false
	}
	im := &image{config: cfg}
	for _, l := range m.Layers {
		b, ok := s.readBlob(l.Digest)
		if !ok {
			return nil, false
		}
		im.layers = append(im.layers, b)
	}
	return im, true
}

// list returns every repo:tag in the store, sorted.
func (s store) list() []string {
	var out []string
	base := s.v2("repositories")
	var walk func(dir, repo string)
	walk = func(dir, repo string) {
		entries, err := s.fs.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			switch e.Name() {
			case "_manifests":
				tags, _ := s.fs.ReadDir(path.Join(dir, "_manifests/tags"))
				for _, t := range tags {
					if s.fs.Exists(path.Join(dir, "_manifests/tags", t.Name(), "current/link")) {
						out = append(out, repo+":"+t.Name())
					}
				}
			case "_layers", "_uploads":
			default:
				walk(path.Join(dir, e.Name()), strings.TrimPrefix(repo+"/"+e.Name(), "/"))
			}
		}
	}
	walk(base, "")
	slices.Sort(out)
	return out
}

// repoTag splits "app:1" or "team/app" (tag latest) into repository and
// tag, for a registry's own names (no domain).
func repoTag(image string) (string, string, error) {
	repo, tag := image, "latest"
	if i := strings.LastIndexByte(image, ':'); i >= 0 && !strings.Contains(image[i:], "/") {
		repo, tag = image[:i], image[i+1:]
	}
	if repo == "" || !tagPattern.MatchString(tag) {
		return "", "", fmt.Errorf("invalid image name %q", image)
	}
	for _, c := range strings.Split(repo, "/") {
		if !pathComponent.MatchString(c) {
			return "", "", fmt.Errorf("invalid image name %q", image)
		}
	}
	return repo, tag, nil
}

// removeAll removes a directory tree of a machine's filesystem.
func removeAll(fsys *sshtest.FS, dir string) {
	entries, _ := fsys.ReadDir(dir)
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if e.IsDir() {
			removeAll(fsys, p)
		} else {
			fsys.Remove(p)
		}
	}
	fsys.Remove(dir)
}
