package containers

import (
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// The default registry of unqualified image names, as the distribution
// reference library names it and as Docker Hub's API answers.
const (
	hubDomain   = "docker.io"
	hubHost     = "registry-1.docker.io"
	hubLoginURL = "https://index.docker.io/v1/"
)

// ref is a normalized image reference, as github.com/distribution/reference
// parses one: registry domain, repository path and tag (or digest).
type ref struct {
	domain string // "docker.io", "registry.example.com", "192.168.0.10:5000"
	path   string // "library/registry", "app", "team/app"
	tag    string // "latest" when neither tag nor digest was given
	digest string // "sha256:…", when given
}

var (
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	tagPattern    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	domainPattern = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$`)
)

// errBadRef is distribution's "invalid reference format".
var errBadRef = errors.New("invalid reference format")

// errUpperRef is distribution's complaint about capitals in a repository.
type errUpperRef struct{ path string }

func (e errUpperRef) Error() string {
	return "invalid reference format: repository name (" + e.path + ") must be lowercase"
}

// parseRef parses an image reference as Docker and containerd's CRI do
// (ParseNormalizedNamed, then the default tag): "registry" is
// docker.io/library/registry:latest, "192.168.0.10:5000/app:1" is on the
// registry 192.168.0.10:5000.
func parseRef(s string) (ref, error) {
	var r ref
	if s == "" || strings.TrimSpace(s) != s {
		return r, errBadRef
	}
	name := s
	if i := strings.IndexByte(name, '@'); i >= 0 {
		r.digest = name[i+1:]
		name = name[:i]
		if !digestPattern.MatchString(r.digest) {
			return ref{}, errBadRef
		}
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "/") {
		r.tag = name[i+1:]
		name = name[:i]
		if !tagPattern.MatchString(r.tag) {
			return ref{}, errBadRef
		}
	}
	first, rest, found := strings.Cut(name, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
		if !domainPattern.MatchString(first) {
			return ref{}, errBadRef
		}
		r.domain, r.path = first, rest
	} else {
		r.domain, r.path = hubDomain, name
	}
	if r.domain == "index.docker.io" {
		r.domain = hubDomain
	}
	if r.domain == hubDomain && !strings.Contains(r.path, "/") {
		r.path = "library/" + r.path
	}
	for _, c := range strings.Split(r.path, "/") {
		if !pathComponent.MatchString(c) {
			if strings.ToLower(c) != c && pathComponent.MatchString(strings.ToLower(c)) {
				return ref{}, errUpperRef{r.path}
			}
			return ref{}, errBadRef
		}
	}
	if r.tag == "" && r.digest == "" {
		r.tag = "latest"
	}
	return r, nil
}

// name is the fully qualified repository: "docker.io/library/registry".
func (r ref) name() string { return r.domain + "/" + r.path }

// String is the fully qualified reference: "docker.io/library/registry:latest".
func (r ref) String() string {
	if r.digest != "" && r.tag == "" {
		return r.name() + "@" + r.digest
	}
	return r.name() + ":" + r.tag
}

// familiarName is the repository as Docker shows it: "registry",
// "team/app", "192.168.0.10:5000/app".
func (r ref) familiarName() string {
	if r.domain == hubDomain {
		return strings.TrimPrefix(r.path, "library/")
	}
	return r.name()
}

// familiar is the reference as Docker shows it: "registry:latest".
func (r ref) familiar() string {
	if r.digest != "" && r.tag == "" {
		return r.familiarName() + "@" + r.digest
	}
	return r.familiarName() + ":" + r.tag
}

// repoBase is the last component of the path: "registry" for every
// registry image.
func (r ref) repoBase() string {
	if i := strings.LastIndexByte(r.path, '/'); i >= 0 {
		return r.path[i+1:]
	}
	return r.path
}

// reference is the tag, or the digest when there is no tag: what a
// registry's manifest URL names.
func (r ref) reference() string {
	if r.tag != "" {
		return r.tag
	}
	return r.digest
}

// splitHostPort splits a registry domain into host and port (0 when
// none is given).
func splitHostPort(domain string) (string, int) {
	host, port, err := net.SplitHostPort(domain)
	if err != nil {
		return strings.Trim(domain, "[]"), 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

// joinHostPort is host:port, host alone when port is 0.
func joinHostPort(host string, port int) string {
	if port == 0 {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// serverKey reduces a credentials key or login server ("https://h:5000/v1/",
// "h:5000") to the registry it names ("h:5000"), as Docker's
// ConvertToHostname and the kubelet's credential matching do.
func serverKey(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	if s == "index.docker.io" || s == "registry-1.docker.io" {
		return hubDomain
	}
	return s
}
