package heattest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
)

// DefaultStart is the logical time a server starts at when Config.Start is
// zero.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TokenTTL is how long an issued token stays valid, in wall-clock time.
// Tokens also die at once with Server.ExpireTokens.
const TokenTTL = time.Hour

// Config describes the cloud a Server pretends to be. The zero value is
// usable: every empty field gets the default written next to it.
type Config struct {
	// Username and Password are the only user's credentials. Defaults:
	// "nfv_user" and a random password from crypto/rand.
	Username, Password string
	// ProjectName and ProjectID name the only project. Defaults: "nfv" and
	// a 32-digit hex id from the seeded source.
	ProjectName, ProjectID string
	// DomainName is the domain of both the user and the project. Default
	// "Default", whose id is "default" as in every Keystone; another name
	// gets a generated hex id.
	DomainName string
	// Region is the region of every catalog endpoint. Default "RegionOne".
	Region string
	// Start is the logical clock's start. Default DefaultStart
	// (2026-01-01T00:00:00Z).
	Start time.Time
	// Seed seeds the source of every id the server generates (UUIDs, hex
	// ids, Heat short ids, MAC addresses), so a test that builds the same
	// stacks in the same order sees the same ids. The zero value is a
	// valid seed.
	Seed uint64
}

// Request is one HTTP request the server answered.
type Request struct {
	// Method is the HTTP method, Path the URL path (unescaped).
	Method, Path string
	// RawPath is the path as the request line carried it, escapes kept:
	// what a client put on the wire.
	RawPath string
	// Query is the raw query string, without "?".
	Query string
	// Status is the status code of the response.
	Status int
}

// Server is a fake Keystone v3 and Heat v1 on a loopback port, and the
// builder of the stacks it serves. All methods are safe for concurrent use.
type Server struct {
	ts   *httptest.Server
	base string // "http://127.0.0.1:PORT"

	mu     sync.Mutex
	rng    *mrand.Rand // ids
	tokRng *mrand.Rand // token ids and audit ids, apart so that logins never shift ids
	now    time.Time

	username, password, userID string
	projectName, projectID     string
	domainName, domainID       string
	region                     string
	appCredID, appCredName     string
	appCredSecret              string
	roles                      [][2]string // id, name
	catalogIDs                 map[string]string

	tokens map[string]*token
	// requests has a mutex of its own: a request is recorded as its
	// response starts, which handlers do while holding mu.
	reqMu      sync.Mutex
	requests   []Request
	failN      int
	failStatus int

	stacks     map[string]*Stack // live stacks by id, nested included
	stackNames map[string]*Stack // live stacks by name
	topStacks  []*Stack          // top-level stacks in creation order

	networks   []*network
	publicNet  *network
	routerID   string
	securityID string
	hosts      int // servers placed so far, for OS-EXT-SRV-ATTR:host
}

type token struct {
	id, auditID     string
	methods         []string
	issued, expires time.Time
	appCred         bool
}

// NewServer starts a server on 127.0.0.1 with a random port. Close it when
// done; in tests prefer Start.
func NewServer(cfg Config) (*Server, error) {
	password := cfg.Password
	if password == "" {
		var err error
		if password, err = randomSecret(); err != nil {
			return nil, fmt.Errorf("heattest: generate password: %w", err)
		}
	}
	appCredSecret, err := randomSecret()
	if err != nil {
		return nil, fmt.Errorf("heattest: generate application credential secret: %w", err)
	}
	s := &Server{
		rng:         newRand(cfg.Seed, 0x6865617474657374), // "heattest"
		tokRng:      newRand(cfg.Seed, 0x746f6b656e73),     // "tokens"
		now:         cfg.Start,
		username:    cfg.Username,
		password:    password,
		projectName: cfg.ProjectName,
		projectID:   cfg.ProjectID,
		domainName:  cfg.DomainName,
		region:      cfg.Region,
		tokens:      map[string]*token{},
		stacks:      map[string]*Stack{},
		stackNames:  map[string]*Stack{},
		catalogIDs:  map[string]string{},
	}
	if s.now.IsZero() {
		s.now = DefaultStart
	}
	if s.username == "" {
		s.username = "nfv_user"
	}
	if s.projectName == "" {
		s.projectName = "nfv"
	}
	if s.projectID == "" {
		s.projectID = s.hexLocked(16)
	}
	if s.domainName == "" {
		s.domainName = "Default"
	}
	if s.domainName == "Default" {
		s.domainID = "default"
	} else {
		s.domainID = s.hexLocked(16)
	}
	if s.region == "" {
		s.region = "RegionOne"
	}
	s.userID = s.hexLocked(16)
	s.appCredID = s.hexLocked(16)
	s.appCredName = "heattest"
	s.appCredSecret = appCredSecret
	s.roles = [][2]string{{s.hexLocked(16), "member"}, {s.hexLocked(16), "reader"}}
	for _, k := range []string{"heat", "heat.public", "heat.internal", "heat.admin", "keystone", "keystone.public", "keystone.internal", "keystone.admin"} {
		s.catalogIDs[k] = s.hexLocked(16)
	}
	s.publicNet = &network{name: "public", id: s.uuidLocked(), subnets: map[netip.Prefix]string{}}
	s.routerID = s.uuidLocked()
	s.securityID = s.uuidLocked()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("heattest: listen: %w", err)
	}
	s.ts = &httptest.Server{Listener: l, Config: &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}}
	s.ts.Start()
	s.base = s.ts.URL
	return s, nil
}

// TB is the part of testing.TB that Start uses; *testing.T, *testing.B
// and *testing.F satisfy it. It is declared here so that heattest does not
// link the testing package into a program that only uses its
// testing-free constructor (such as the tour).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Start starts a server for a test and closes it when the test ends. It
// fails the test if the server cannot start.
func Start(tb TB, cfg Config) *Server {
	tb.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server and waits for requests in flight to finish.
func (s *Server) Close() { s.ts.Close() }

// URL returns the server's base URL, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.base }

// IdentityEndpoint returns the versioned Keystone URL,
// "http://127.0.0.1:PORT/identity/v3", the usual auth_url.
func (s *Server) IdentityEndpoint() string { return s.base + "/identity/v3" }

// VersionlessIdentityEndpoint returns the Keystone URL without a version,
// "http://127.0.0.1:PORT/identity"; clients discover v3 from it.
func (s *Server) VersionlessIdentityEndpoint() string { return s.base + "/identity" }

// OrchestrationEndpoint returns the Heat URL of the project as the catalog
// lists it, "http://127.0.0.1:PORT/heat/v1/PROJECT_ID".
func (s *Server) OrchestrationEndpoint() string { return s.base + "/heat/v1/" + s.projectID }

// Region returns the region of every endpoint in the catalog.
func (s *Server) Region() string { return s.region }

// Username returns the user's name.
func (s *Server) Username() string { return s.username }

// Password returns the user's password.
func (s *Server) Password() string { return s.password }

// UserID returns the user's id.
func (s *Server) UserID() string { return s.userID }

// ProjectName returns the project's name.
func (s *Server) ProjectName() string { return s.projectName }

// ProjectID returns the project's id, the one in every Heat URL.
func (s *Server) ProjectID() string { return s.projectID }

// DomainName returns the name of the user's and the project's domain.
func (s *Server) DomainName() string { return s.domainName }

// DomainID returns the id of the user's and the project's domain.
func (s *Server) DomainID() string { return s.domainID }

// ApplicationCredential returns the id and secret of an application
// credential of the user, restricted to the project, that authenticates
// like a password (auth_type v3applicationcredential).
func (s *Server) ApplicationCredential() (id, secret string) {
	return s.appCredID, s.appCredSecret
}

// AuthOptions returns gophercloud options for password authentication
// scoped to the project, with AllowReauth set so that a client recovers
// from ExpireTokens. Like the options clouds.Parse returns, they carry the
// project both as TenantName and as Scope (which gophercloud prefers).
func (s *Server) AuthOptions() gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: s.IdentityEndpoint(),
		Username:         s.username,
		Password:         s.password,
		DomainName:       s.domainName,
		TenantName:       s.projectName,
		Scope:            &gophercloud.AuthScope{ProjectName: s.projectName, DomainName: s.domainName},
		AllowReauth:      true,
	}
}

// CloudsYAML returns a clouds.yaml document with one entry, named cloud,
// for this server: password auth scoped to the project, the region, the
// public interface and identity API version 3.
func (s *Server) CloudsYAML(cloud string) []byte {
	q := func(v string) string {
		b, _ := json.Marshal(v) // a JSON string is a YAML double-quoted scalar
		return string(b)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "clouds:\n  %s:\n    auth:\n", q(cloud))
	fmt.Fprintf(&b, "      auth_url: %s\n", q(s.IdentityEndpoint()))
	fmt.Fprintf(&b, "      username: %s\n", q(s.username))
	fmt.Fprintf(&b, "      password: %s\n", q(s.password))
	fmt.Fprintf(&b, "      project_name: %s\n", q(s.projectName))
	fmt.Fprintf(&b, "      user_domain_name: %s\n", q(s.domainName))
	fmt.Fprintf(&b, "      project_domain_name: %s\n", q(s.domainName))
	fmt.Fprintf(&b, "    region_name: %s\n", q(s.region))
	b.WriteString("    interface: \"public\"\n")
	b.WriteString("    identity_api_version: 3\n")
	return b.Bytes()
}

// Requests returns every request served so far, in the order their
// responses started; a request is listed before its client can have the
// response.
func (s *Server) Requests() []Request {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ExpireTokens invalidates every token issued so far. The next Heat request
// with an old token gets 401, as after a Keystone token expiry.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// FailRequests makes the next n Heat requests (not Keystone ones) answer
// status with a Heat error body, before authentication is checked, as a
// failing load balancer or API worker would. n <= 0 cancels the injection.
func (s *Server) FailRequests(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failN, s.failStatus = max(n, 0), status
}

// Now returns the logical clock.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the logical clock forward by d (backward when negative).
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// randomSecret returns 24 random characters from crypto/rand: secrets are
// the one thing a test cannot reproduce, so that nothing guesses them.
func randomSecret() (string, error) {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// tickLocked returns the logical time, truncated to the second Heat's
// timestamps carry, and moves the clock one second on, so that successive
// events have strictly increasing times.
func (s *Server) tickLocked() time.Time {
	t := s.now.UTC().Truncate(time.Second)
	s.now = s.now.Add(time.Second)
	return t
}

// ServeHTTP answers one Keystone or Heat request and records it.
//
// It routes on the decoded path, r.URL.Path, split on "/" afterwards, as
// Heat does: the WSGI server decodes the whole path into PATH_INFO first
// (eventlet.wsgi's get_environ: urllib.parse.unquote of the request line's
// path; RAW_PATH_INFO keeps the original), and routes.Mapper then matches
// PATH_INFO against patterns such as
// /{tenant_id}/stacks/{stack_name}/{stack_id}/resources/{resource_name}
// (heat/api/openstack/v1/__init__.py), whose variables match [^/]+. So
// "%3F" reaches Heat as a "?" inside a name, and "%2F" as a "/" that
// separates segments: a name can never hold a "/", and no dot segments
// are resolved.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	raw, _, _ := strings.Cut(r.RequestURI, "?")
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	// Recorded as the response starts, so that a client that has its
	// response finds its request among Requests.
	rec.record = func(status int) {
		s.reqMu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: p, RawPath: raw, Query: r.URL.RawQuery, Status: status})
		s.reqMu.Unlock()
	}
	switch {
	case p == "/" || p == "/identity" || p == "/identity/":
		s.serveVersions(rec, r)
	case p == "/identity/v3" || strings.HasPrefix(p, "/identity/v3/"):
		s.serveKeystone(rec, r, strings.TrimPrefix(p, "/identity/v3"))
	case strings.HasPrefix(p, "/heat/"):
		s.serveHeat(rec, r, strings.TrimPrefix(p, "/heat"))
	default:
		writeJSON(rec, http.StatusNotFound, keystoneError(http.StatusNotFound, "Could not find the requested URL."), nil)
	}
	if !rec.wrote {
		rec.WriteHeader(http.StatusOK)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	record func(status int) // called once, with the status, before it is sent
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
		w.record(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// writeJSON writes v as the JSON body of a response with status and the
// given extra headers.
func writeJSON(w http.ResponseWriter, status int, v any, header map[string]string) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error": "heattest: cannot encode response"}`)
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
