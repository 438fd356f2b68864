package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/distribution/reference"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// entry is one tar entry of a test archive.
type entry struct {
	name, link string
	typeflag   byte
	data       []byte
}

func file(name string, data []byte) entry {
	return entry{name: name, typeflag: tar.TypeReg, data: data}
}

func makeTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.link, Size: int64(len(e.data)), Mode: 0o644}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil && hdr.Size > 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func manifestJSON(config string, tags []string, layers ...string) []byte {
	b, _ := json.Marshal([]map[string]any{{"Config": config, "RepoTags": tags, "Layers": layers}})
	return b
}

var (
	testConfig = []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:` + strings.Repeat("0", 64) + `"]}}`)
	testLayer  = []byte("layer")
	cfgHex     = sha(testConfig)
	layerHex   = sha(testLayer)
	layerDir   = strings.Repeat("a", 64)
)

// legacyTar is a `docker save` archive in the layout of Docker before 25
// (moby image/tarexport/save.go of v24): <config digest>.json,
// <v1 ID>/layer.tar and manifest.json last, as its tar is sorted.
func legacyTar(t testing.TB, manifest []byte, extra ...entry) []byte {
	es := []entry{
		file(cfgHex+".json", testConfig),
		{name: layerDir + "/", typeflag: tar.TypeDir},
		file(layerDir+"/layer.tar", testLayer),
		file(layerDir+"/VERSION", []byte("1.0")),
	}
	es = append(es, extra...)
	return makeTar(t, append(es, file("manifest.json", manifest))...)
}

// ociTar is a `docker save` archive of Docker 25 and later (moby
// image/tarexport/save.go): blobs/sha256/<digest> for the config and the
// layers, then index.json, manifest.json, oci-layout.
func ociTar(t testing.TB, manifest []byte) []byte {
	return makeTar(t,
		entry{name: "blobs/", typeflag: tar.TypeDir},
		entry{name: "blobs/sha256/", typeflag: tar.TypeDir},
		file("blobs/sha256/"+cfgHex, testConfig),
		file("blobs/sha256/"+layerHex, testLayer),
		file("index.json", []byte(`{"schemaVersion":2,"manifests":[]}`)),
		file("manifest.json", manifest),
		file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)),
	)
}

func legacyManifest(tags ...string) []byte {
	return manifestJSON(cfgHex+".json", tags, layerDir+"/layer.tar")
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

func sampleTar(t testing.TB) []byte {
	t.Helper()
	b, err := fs.ReadFile(samples.VNFPackage(), "Files/images/private_registry.tar")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseImageArchiveAcceptsWhatDockerSaveWrites(t *testing.T) {
	tests := []struct {
		name     string
		tar      []byte
		wantID   string
		wantTags []string
	}{
		{"the package's sample", sampleTar(t), "sha256:b9de31fcec104ad0dafdf36628113f648ad068c5316abf1b70fc078bda0706ef", []string{"registry:latest"}},
		{"legacy layout", legacyTar(t, legacyManifest("registry:2.8.3", "docker.io/library/registry:2")), "sha256:" + cfgHex, []string{"registry:2.8.3", "registry:2"}},
		{"OCI layout of Docker 25+", ociTar(t, manifestJSON("blobs/sha256/"+cfgHex, []string{"192.168.0.10:5000/tools/registry:v2"}, "blobs/sha256/"+layerHex)), "sha256:" + cfgHex, []string{"192.168.0.10:5000/tools/registry:v2"}},
		// A layer saved twice is a symbolic link to the first copy (moby
		// save.go before 25).
		{"legacy layer link", legacyTar(t, manifestJSON(cfgHex+".json", []string{"r:1"}, layerDir+"/layer.tar", "b/layer.tar"),
			entry{name: "b/", typeflag: tar.TypeDir}, entry{name: "b/layer.tar", typeflag: tar.TypeSymlink, link: "../" + layerDir + "/layer.tar"}),
			"sha256:" + cfgHex, []string{"r:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arc, err := parseImageArchive(bytes.NewReader(tt.tar))
			if err != nil {
				t.Fatal(err)
			}
			if arc.ID != tt.wantID || strings.Join(arc.Tags, " ") != strings.Join(tt.wantTags, " ") {
				t.Errorf("got %+v, want %s %v", arc, tt.wantID, tt.wantTags)
			}
		})
	}
}

func TestParseImageArchiveRejects(t *testing.T) {
	sample := sampleTar(t)
	tests := []struct {
		name string
		tar  []byte
		want string
	}{
		{"short config digest", legacyTar(t, manifestJSON("b9de31.json", []string{"registry:latest"}, layerDir+"/layer.tar")),
			`manifest.json: Config "b9de31.json": want "<64 hex digits>.json" or "blobs/sha256/<64 hex digits>"`},
		{"upper-case digest", legacyTar(t, manifestJSON(strings.ToUpper(cfgHex)+".json", []string{"registry:latest"}, layerDir+"/layer.tar")), `manifest.json: Config "`},
		{"an option as a tag", legacyTar(t, legacyManifest("--privileged")), `manifest.json: RepoTags[0] "--privileged": invalid reference format`},
		{"a second tag injects", legacyTar(t, legacyManifest("registry:latest", "-v=/:/host")), `manifest.json: RepoTags[1] "-v=/:/host": invalid reference format`},
		{"untagged", legacyTar(t, legacyManifest("registry")), `manifest.json: RepoTags[0] "registry": has no tag`},
		{"digest", legacyTar(t, legacyManifest("registry@sha256:"+cfgHex)), `has a digest`},
		{"upper case", legacyTar(t, legacyManifest("Registry:latest")), `must be lowercase`},
		{"no tags", legacyTar(t, legacyManifest()), "manifest.json: no RepoTags"},
		{"two images", legacyTar(t, []byte(`[{"Config": "`+cfgHex+`.json", "RepoTags": ["a:1"]}, {"Config": "`+cfgHex+`.json", "RepoTags": ["b:1"]}]`)), "manifest.json: holds 2 images, want one"},
		{"null manifest", legacyTar(t, []byte(`null`)), "manifest.json: holds 0 images"},
		{"manifest not JSON", legacyTar(t, []byte(`[{"Config": `)), "manifest.json: unexpected end of JSON input"},
		{"manifest of the wrong shape", legacyTar(t, []byte(`{"Config": "x"}`)), "manifest.json: json: cannot unmarshal object"},
		{"no manifest", makeTar(t, file(cfgHex+".json", testConfig)), "no manifest.json file"},
		{"config missing", makeTar(t, file(layerDir+"/layer.tar", testLayer), file("manifest.json", legacyManifest("r:1"))), `manifest.json: Config "` + cfgHex + `.json" is not a file of the archive`},
		{"config of another digest", makeTar(t, file(cfgHex+".json", []byte("{}")), file(layerDir+"/layer.tar", testLayer), file("manifest.json", legacyManifest("r:1"))),
			"the file's digest is sha256:" + sha([]byte("{}"))},
		{"layer missing", legacyTar(t, manifestJSON(cfgHex+".json", []string{"r:1"}, "nope/layer.tar")), `manifest.json: Layers[0] "nope/layer.tar" is not a file of the archive`},
		{"layer outside", legacyTar(t, manifestJSON(cfgHex+".json", []string{"r:1"}, "../../etc/passwd")), `manifest.json: Layers[0] "../../etc/passwd" is not a file`},
		{"truncated", sample[:len(sample)/2+100], "not a tar archive, or a truncated one"},
		{"not a tar", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "not a tar archive"},
		{"empty", nil, "no manifest.json file"},
		{"gzip", gzipped(sample), "is gzip-compressed; want the uncompressed tar"},
		{"entry outside", legacyTar(t, legacyManifest("r:1"), file("../evil", []byte("x"))), `entry "../evil" leaves the extraction directory`},
		{"absolute entry", legacyTar(t, legacyManifest("r:1"), file("/etc/cron.d/x", []byte("x"))), `entry "/etc/cron.d/x" leaves`},
		{"link outside", legacyTar(t, legacyManifest("r:1"), entry{name: "x", typeflag: tar.TypeSymlink, link: "../../etc/shadow"}), `entry "x" links to "../../etc/shadow", outside`},
		{"absolute link", legacyTar(t, legacyManifest("r:1"), entry{name: "x", typeflag: tar.TypeSymlink, link: "/etc/shadow"}), `links to "/etc/shadow", outside`},
		{"hard link outside", legacyTar(t, legacyManifest("r:1"), entry{name: "x", typeflag: tar.TypeLink, link: "../shadow"}), `links to "../shadow", outside`},
		// a/b/d is a, so a/b/d/x would point at ../y, outside.
		{"link through a linked directory", legacyTar(t, legacyManifest("r:1"), entry{name: "a/b/d", typeflag: tar.TypeSymlink, link: ".."}, entry{name: "a/b/d/x", typeflag: tar.TypeSymlink, link: "../../y"}),
			`entry "a/b/d/x" goes through a symbolic link`},
		{"device", legacyTar(t, legacyManifest("r:1"), entry{name: "dev", typeflag: tar.TypeChar}), `entry "dev" is of tar type '3'`},
		{"manifest twice", makeTar(t, file("manifest.json", legacyManifest("r:1")), file(cfgHex+".json", testConfig), file(layerDir+"/layer.tar", testLayer), file("manifest.json", legacyManifest("--privileged"))),
			`holds "manifest.json" twice`},
		{"config twice", legacyTar(t, legacyManifest("r:1"), file("./"+cfgHex+".json", []byte("{}"))), `holds "` + cfgHex + `.json" twice`},
		{"huge manifest", makeTar(t, file("manifest.json", bytes.Repeat([]byte(" "), maxManifestSize+1))), "manifest.json: 1048577 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arc, err := parseImageArchive(bytes.NewReader(tt.tar))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if arc.ID != "" || arc.Tags != nil {
				t.Errorf("an error came with %+v", arc)
			}
		})
	}
}

// TestReadImageArchiveSkipsLayers reads an archive whose layer is larger
// than the memory a test could spare: a seekable file's layer bodies are
// skipped, not read.
func TestReadImageArchiveSkipsLayers(t *testing.T) {
	var reads countingFS
	reads.fsys = fstest.MapFS{"img.tar": {Data: legacyTar(t, legacyManifest("r:1"), file("big/layer.tar", bytes.Repeat([]byte{'x'}, 8<<20)))}}
	arc, err := ReadImageArchive(&reads, "img.tar")
	if err != nil || arc.Path != "img.tar" {
		t.Fatal(arc, err)
	}
	if reads.n > 1<<20 {
		t.Errorf("read %d bytes of an archive whose layer is 8 MiB", reads.n)
	}
}

// countingFS counts the bytes read from its files, which seek as the
// files of a directory package and of fstest.MapFS do.
type countingFS struct {
	fsys fstest.MapFS
	n    int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{f.(seekFile), &c.n}, nil
}

type seekFile interface {
	fs.File
	io.Seeker
}

type countingFile struct {
	seekFile
	n *int
}

func (f *countingFile) Read(b []byte) (int, error) {
	n, err := f.seekFile.Read(b)
	*f.n += n
	return n, err
}

func TestImageFieldErrors(t *testing.T) {
	pkg := lcm.NewPackage(fstest.MapFS{
		"Files/images/privileged.tar": {Data: legacyTar(t, legacyManifest("--privileged"))},
		"Files/images/short.tar":      {Data: legacyTar(t, manifestJSON("b9de31.json", []string{"registry:latest"}, layerDir+"/layer.tar"))},
		"Files/images/ca.crt":         {Data: []byte("hello\n")},
		"Files/images/ok.tar":         {Data: ociTar(t, manifestJSON("blobs/sha256/"+cfgHex, []string{"registry:2"}, "blobs/sha256/"+layerHex))},
	})
	decode := func(image string) (InstallParams, error) {
		return DecodeInstallParams(json.RawMessage(`{"`+InstallParamKey+`": {"ssh_cp_name": "CP1", "ssh_username": "u", "ssh_password": "pw", "image_path": "`+image+`"}}`), pkg)
	}
	for image, want := range map[string]string{
		"Files/images/privileged.tar": InstallParamKey + `.image_path: docker save archive: manifest.json: RepoTags[0] "--privileged": invalid reference format`,
		"Files/images/short.tar":      InstallParamKey + `.image_path: docker save archive: manifest.json: Config "b9de31.json": want`,
		"./Files/images/ca.crt":       InstallParamKey + `.image_path: docker save archive: not a tar archive`,
	} {
		_, err := decode(image)
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v\nwant %q", image, err, want)
		}
	}
	p, err := decode("./Files/images/ok.tar")
	if err != nil {
		t.Fatal(err)
	}
	if p.Image == nil || p.Image.Path != "Files/images/ok.tar" || p.Image.ID != "sha256:"+cfgHex || p.Image.Tags[0] != "registry:2" {
		t.Errorf("validated image %+v", p.Image)
	}
}

func TestLoadImageArchiveRefusesAHandMadeArchive(t *testing.T) {
	for _, arc := range []ImageArchive{
		{Path: "x.tar", ID: "sha256:b9de31", Tags: []string{"registry:latest"}},
		{Path: "x.tar", ID: "sha256:" + cfgHex, Tags: []string{"--privileged"}},
		{Path: "x.tar", ID: "sha256:" + cfgHex},
	} {
		// A nil host: the check comes before any command.
		if _, _, err := LoadImageArchive(t.Context(), nil, nil, arc); err == nil {
			t.Errorf("%+v loaded", arc)
		}
	}
}

// FuzzParseImageArchive feeds the reader arbitrary bytes: it never
// panics, and whatever it accepts is an archive the steps can use safely.
func FuzzParseImageArchive(f *testing.F) {
	sample := sampleTar(f)
	for _, seed := range [][]byte{
		sample,
		legacyTar(f, legacyManifest("registry:latest")),
		ociTar(f, manifestJSON("blobs/sha256/"+cfgHex, []string{"registry:2"}, "blobs/sha256/"+layerHex)),
		legacyTar(f, manifestJSON("b9de31.json", []string{"registry:latest"}, layerDir+"/layer.tar")),
		legacyTar(f, legacyManifest("--privileged")),
		legacyTar(f, legacyManifest("registry:latest"), entry{name: "a/b/d", typeflag: tar.TypeSymlink, link: ".."}, entry{name: "a/b/d/x", typeflag: tar.TypeSymlink, link: "../../y"}),
		sample[:len(sample)/2],
		[]byte("not a tar"),
		gzipped(sample),
		nil,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		arc, err := parseImageArchive(bytes.NewReader(data))
		// A reader that cannot seek reads the same archive.
		arc2, err2 := parseImageArchive(struct{ io.Reader }{bytes.NewReader(data)})
		if (err == nil) != (err2 == nil) || arc.ID != arc2.ID || strings.Join(arc.Tags, " ") != strings.Join(arc2.Tags, " ") {
			t.Fatalf("seekable: %+v, %v; not seekable: %+v, %v", arc, err, arc2, err2)
		}
		if err != nil {
			if arc.ID != "" || arc.Tags != nil {
				t.Fatalf("an error (%v) came with %+v", err, arc)
			}
			return
		}
		if err := arc.valid(); err != nil {
			t.Fatalf("accepted %+v: %v", arc, err)
		}
		for _, tag := range arc.Tags {
			named, err := reference.ParseNormalizedNamed(tag)
			if _, tagged := named.(reference.NamedTagged); err != nil || !tagged || strings.HasPrefix(tag, "-") {
				t.Fatalf("accepted tag %q (%v)", tag, err)
			}
		}
	})
}
