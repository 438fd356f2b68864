package ubuntu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Repository is an apt repository that signs its Release files: apt-get
// update accepts its package lists only when the keyring its source names
// (signed-by), or else one of the trusted keyrings, holds its key, as
// apt-secure(8) describes. A repository the catalog does not know as a
// Repository is unsigned in the simulation and always accepted, as before
// signing was modelled.
type Repository struct {
	// URI is the repository as a sources.list entry names it
	// ("https://pkgs.k8s.io/core:/stable:/v1.36/deb/"); a trailing slash
	// does not matter.
	URI string
	// Key is the ASCII-armored OpenPGP public key that signs the
	// repository, as the vendor publishes it (pkgs.k8s.io's Release.key).
	Key string
}

// AptTransport is how apt (and other fakes that fetch URLs) reach a server
// of the simulated network from machine m: it fetches rawURL directly
// (proxy "") or through the HTTP proxy at proxy (a URL, maybe with
// user:password), and returns nil when the server answered, or an error
// whose text is apt's reason for the failure ("Could not resolve
// 'pkgs.k8s.io'", "Could not connect to 10.0.0.9:3128 (10.0.0.9).
// - connect (111: Connection refused)", ...).
type AptTransport func(ctx context.Context, m *Machine, rawURL, proxy string) error

// AptHTTPError is an [AptTransport] failure that is an HTTP answer (a
// proxy's 503 to a plain-HTTP GET), not a connection failure: apt then
// fails the update ("E: Failed to fetch", the repository "is not
// signed", exit 100) where a connection failure is only a warning. Its
// text is apt's reason ("503  Service Unavailable [IP: 10.0.0.9 3128]").
type AptHTTPError string

func (e AptHTTPError) Error() string { return string(e) }

// AddRepository makes the catalog's repository at r.URI a signed one. It
// panics when r.Key is not an armored OpenPGP public key, as a test fixture
// would fail the test.
func (c *Catalog) AddRepository(r Repository) {
	bin, err := Dearmor([]byte(r.Key))
	if err != nil || KeyID(bin) == "" {
		panic(fmt.Sprintf("ubuntu: repository %s: its Key is not an armored OpenPGP public key", r.URI))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repos == nil {
		c.repos = map[string]Repository{}
	}
	c.repos[repoKey(r.URI)] = r
}

// Repository returns the signed repository at uri, if the catalog has
// one.
func (c *Catalog) Repository(uri string) (Repository, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.repos[repoKey(uri)]
	return r, ok
}

// Repositories returns the catalog's signed repositories, by URI.
func (c *Catalog) Repositories() []Repository {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Repository
	for _, k := range slices.Sorted(maps.Keys(c.repos)) {
		out = append(out, c.repos[k])
	}
	return out
}

// SetTransport makes apt-get update on the catalog's machines reach
// repositories through t; without one every repository answers.
func (c *Catalog) SetTransport(t AptTransport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transport = t
}

// Transport returns the catalog's [AptTransport], or nil.
func (c *Catalog) Transport() AptTransport {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.transport
}

// inRelease is the URL of a source's InRelease file and how apt shows the
// source in its progress lines: "URI SUITE", and for a flat repository
// (suite "/", as pkgs.k8s.io's) "URI " with an empty distribution, which
// gives apt's double space before "InRelease".
func (s source) inRelease() (fileURL, shown string) {
	base := strings.TrimSuffix(s.uri, "/")
	if s.suite == "/" || strings.HasSuffix(s.suite, "/") {
		return base + "/" + strings.TrimPrefix(s.suite, "/") + "InRelease", base + " " + strings.TrimSuffix(s.suite, "/")
	}
	return base + "/dists/" + s.suite + "/InRelease", base + " " + s.suite
}

// keyringCheck says whether the keyrings a source may use hold key (the
// binary key), with apt's warnings about keyrings it ignored.
func (m *Machine) keyringCheck(s source, key []byte, fileURL string) (ok bool, warnings []string) {
	var files []string
	if s.signedBy != "" {
		// signed-by: keyring files (or fingerprints, not modelled)
		// separated by commas or spaces (sources.list(5)).
		for _, f := range strings.FieldsFunc(s.signedBy, func(r rune) bool { return r == ',' || r == ' ' }) {
			if strings.HasPrefix(f, "/") {
				files = append(files, f)
			}
		}
	} else {
		files = append(files, "/etc/apt/trusted.gpg")
		entries, _ := m.fs().ReadDir("/etc/apt/trusted.gpg.d")
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".gpg") || strings.HasSuffix(e.Name(), ".asc") {
				files = append(files, "/etc/apt/trusted.gpg.d/"+e.Name())
			}
		}
	}
	for _, f := range files {
		data, err := m.fs().ReadFile(f)
		if err != nil {
			continue
		}
		// apt's gpgv method accepts binary keyrings (*.gpg, "GPG key
		// public ring" as file(1) says) and, since apt 1.4, armored
		// keys in *.asc files. In apt 2.4 (Ubuntu 22.04) it verifies
		// through apt-key, which ignores a keybox or armored text in a
		// .gpg file with a warning (cmdline/apt-key.in: "The key(s) in
		// the keyring %s are ignored as the file has an unsupported
		// filetype."); apt 2.6, without apt-key, ignores it silently.
		bin := data
		if path.Ext(f) == ".asc" {
			bin, err = Dearmor(data)
		} else if len(data) > 0 && data[0]&0x80 == 0 {
			err = fmt.Errorf("not binary")
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("W: %s: The key(s) in the keyring %s are ignored as the file has an unsupported filetype.", fileURL, f))
			continue
		}
		if len(key) > 0 && bytes.Contains(bin, key) {
			ok = true
		}
	}
	return ok, warnings
}

// --- apt's configuration ------------------------------------------------------

// aptConfig reads apt's configuration files (/etc/apt/apt.conf, then
// /etc/apt/apt.conf.d/* in lexical order, as apt-pkg/init.cc's
// ReadConfigDir does) into lower-cased keys ("acquire::http::proxy")
// and their values. Both apt.conf(5) syntaxes are understood: scoped
// names (`Acquire::http::Proxy "http://p:3128";`) and nested blocks
// (`Acquire { http { Proxy "..."; }; };`), with // and # comments.
func (m *Machine) aptConfig() map[string]string {
	cfg := map[string]string{}
	files := []string{"/etc/apt/apt.conf"}
	entries, _ := m.fs().ReadDir("/etc/apt/apt.conf.d")
	for _, e := range entries {
		if !e.IsDir() {
			files = append(files, "/etc/apt/apt.conf.d/"+e.Name())
		}
	}
	for _, f := range files {
		if data, err := m.fs().ReadFile(f); err == nil {
			parseAptConf(string(data), cfg)
		}
	}
	return cfg
}

// parseAptConf adds the settings of one apt.conf file to cfg.
func parseAptConf(text string, cfg map[string]string) {
	var toks []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
			continue
		}
		for i := 0; i < len(line); {
			switch c := line[i]; {
			case c == ' ' || c == '\t':
				i++
			case c == '/' && strings.HasPrefix(line[i:], "//"):
				i = len(line)
			case c == '{' || c == '}' || c == ';':
				toks = append(toks, string(c))
				i++
			case c == '"':
				j := strings.IndexByte(line[i+1:], '"')
				if j < 0 {
					j = len(line) - i - 1
				}
				toks = append(toks, "\x00"+line[i+1:i+1+j])
				i += j + 2
			default:
				j := i
				for j < len(line) && !strings.ContainsRune(" \t{};\"", rune(line[j])) {
					j++
				}
				toks = append(toks, line[i:j])
				i = j
			}
		}
	}
	var scope []string
	var name string
	for _, t := range toks {
		switch {
		case t == "{":
			scope = append(scope, name)
			name = ""
		case t == "}":
			if len(scope) > 0 {
				scope = scope[:len(scope)-1]
			}
		case t == ";":
			name = ""
		case strings.HasPrefix(t, "\x00"):
			if name != "" {
				cfg[strings.ToLower(strings.Join(append(slices.Clone(scope), name), "::"))] = t[1:]
			}
			name = ""
		default:
			name = t
		}
	}
}

// aptProxy returns the proxy apt uses for rawURL ("" for a direct
// connection), as apt's http method chooses it (methods/http.cc and
// basehttp.cc; apt.conf(5), "http" and "https"): the per-host setting
// Acquire::SCHEME::Proxy::HOST ("DIRECT" for none), else
// Acquire::SCHEME::Proxy, else for https the http settings, else the
// SCHEME_proxy environment variable unless the host is in no_proxy.
func (a *aptRun) aptProxy(rawURL string, cfg map[string]string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	schemes := []string{u.Scheme}
	if u.Scheme == "https" {
		schemes = append(schemes, "http")
	}
	for _, s := range schemes {
		for _, k := range []string{"acquire::" + s + "::proxy::" + host, "acquire::" + s + "::proxy"} {
			if v, ok := cfg[k]; ok {
				if strings.EqualFold(v, "DIRECT") {
					return ""
				}
				return v
			}
		}
	}
	v := a.p.Getenv(u.Scheme + "_proxy")
	if v == "" {
		return ""
	}
	for _, d := range strings.Split(a.p.Getenv("no_proxy"), ",") {
		d = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), ".")
		if d != "" && (host == d || strings.HasSuffix(host, "."+d)) {
			return ""
		}
	}
	return v
}

// PackagesIndex returns the binary package index ("Packages") of the
// catalog's signed repository at uri, as a flat repository serves it at
// URI/Packages (https://wiki.debian.org/DebianRepository/Format, "Flat
// Repository Format": `deb uri directory/`, with Packages in that
// directory, as pkgs.k8s.io's repositories are named), and whether the
// catalog has that repository. Each version of each package whose Repo
// is uri has one paragraph per architecture the simulation models
// (amd64, arm64; pkgs.k8s.io publishes more), with the fields the format
// requires of a binary package index ("Packages Indices": the package's
// control fields Package, Version, Architecture, Maintainer, Depends,
// Description, and Filename, Size and SHA256 of the .deb) in deb822(5)
// form, paragraphs separated by a blank line. There is no .deb to hash:
// Size and SHA256 are those of the text "name_version_arch". Packages come
// in name order, each name's versions oldest first.
func (c *Catalog) PackagesIndex(uri string) ([]byte, bool) {
	if _, ok := c.Repository(uri); !ok {
		return nil, false
	}
	key := repoKey(uri)
	maintainer := "Unknown <unknown@localhost>"
	if u, err := url.Parse(uri); err == nil && u.Host == "pkgs.k8s.io" {
		// kubernetes/release's package specs (cmd/krel/templates).
		maintainer = "Kubernetes Authors <dev@kubernetes.io>"
	}
	var b bytes.Buffer
	for _, name := range c.Names() {
		vs := c.Versions(name)
		slices.Reverse(vs)
		for _, p := range vs {
			if repoKey(p.Repo) != key {
				continue
			}
			for _, arch := range []string{"amd64", "arm64"} {
				deb := p.Name + "_" + p.Version + "_" + arch
				sum := sha256.Sum256([]byte(deb))
				fmt.Fprintf(&b, "Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\n", p.Name, p.Version, arch, maintainer)
				if len(p.Depends) > 0 {
					fmt.Fprintf(&b, "Depends: %s\n", strings.Join(p.Depends, ", "))
				}
				desc := p.Description
				if desc == "" {
					desc = p.Name
				}
				fmt.Fprintf(&b, "Filename: %s/%s.deb\nSize: %d\nSHA256: %s\nDescription: %s\n\n", arch, deb, len(deb), hex.EncodeToString(sum[:]), desc)
			}
		}
	}
	return b.Bytes(), true
}
