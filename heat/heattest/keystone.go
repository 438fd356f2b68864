package heattest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"
)

// keystoneError is the body Keystone (and keystonemiddleware in front of
// Heat) answers errors with.
func keystoneError(status int, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"code": status, "message": msg, "title": http.StatusText(status)}}
}

const msgAuthRequired = "The request you have made requires authentication."

// identityVersion describes Keystone v3 as its version documents do.
func (s *Server) identityVersion() map[string]any {
	return map[string]any{
		"id":      "v3.14",
		"status":  "stable",
		"updated": "2020-04-07T00:00:00Z",
		"links":   []any{map[string]any{"rel": "self", "href": s.IdentityEndpoint() + "/"}},
		"media-types": []any{map[string]any{
			"base": "application/json",
			"type": "application/vnd.openstack.identity-v3+json",
		}},
	}
}

// serveVersions answers Keystone's version discovery at "/identity/" (and
// "/"): 300 Multiple Choices listing v3.
func (s *Server) serveVersions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSON(w, http.StatusMethodNotAllowed, keystoneError(http.StatusMethodNotAllowed, "The method is not allowed for the requested URL."), nil)
		return
	}
	writeJSON(w, http.StatusMultipleChoices, map[string]any{
		"versions": map[string]any{"values": []any{s.identityVersion()}},
	}, nil)
}

// serveKeystone answers the v3 API below "/identity/v3"; rest is the path
// after it.
func (s *Server) serveKeystone(w http.ResponseWriter, r *http.Request, rest string) {
	switch rest {
	case "", "/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			break
		}
		writeJSON(w, http.StatusOK, map[string]any{"version": s.identityVersion()}, nil)
		return
	case "/auth/tokens":
		switch r.Method {
		case http.MethodPost:
			s.issueToken(w, r)
			return
		case http.MethodGet, http.MethodHead:
			s.validateToken(w, r)
			return
		}
		writeJSON(w, http.StatusMethodNotAllowed, keystoneError(http.StatusMethodNotAllowed, "The method is not allowed for the requested URL."), nil)
		return
	}
	writeJSON(w, http.StatusNotFound, keystoneError(http.StatusNotFound, "Could not find the requested URL."), nil)
}

type domainRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type userRef struct {
	ID       string     `json:"id"`
	Name     string     `json:"name"`
	Password string     `json:"password"`
	Domain   *domainRef `json:"domain"`
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User userRef `json:"user"`
			} `json:"password"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
			ApplicationCredential *struct {
				ID     string   `json:"id"`
				Name   string   `json:"name"`
				Secret string   `json:"secret"`
				User   *userRef `json:"user"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope json.RawMessage `json:"scope"`
	} `json:"auth"`
}

// issueToken answers POST /v3/auth/tokens.
func (s *Server) issueToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, keystoneError(http.StatusBadRequest, "Invalid input for field 'auth': "+err.Error()), nil)
		return
	}
	id := req.Auth.Identity
	if len(id.Methods) != 1 {
		writeJSON(w, http.StatusUnauthorized, keystoneError(http.StatusUnauthorized, msgAuthRequired), nil)
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ok, appCred := false, false
	switch id.Methods[0] {
	case "password":
		if id.Password != nil {
			ok = s.userMatchesLocked(id.Password.User) && id.Password.User.Password == s.password
		}
	case "token":
		if id.Token != nil {
			ok = s.tokenLocked(id.Token.ID) != nil
		}
	case "application_credential":
		if ac := id.ApplicationCredential; ac != nil && ac.Secret == s.appCredSecret {
			switch {
			case ac.ID != "":
				ok = ac.ID == s.appCredID
			case ac.Name != "" && ac.User != nil:
				ok = ac.Name == s.appCredName && s.userMatchesLocked(*ac.User)
			}
		}
		// An application credential carries its project; Keystone refuses
		// a scope next to it.
		ok = ok && len(req.Auth.Scope) == 0
		appCred = true
	}
	if !ok || !s.scopeMatchesLocked(req.Auth.Scope) {
		writeJSON(w, http.StatusUnauthorized, keystoneError(http.StatusUnauthorized, msgAuthRequired), nil)
		return
	}

	issued := time.Now().UTC()
	t := &token{
		id:      "gAAAAA" + s.tokenStringLocked(135),
		auditID: s.tokenStringLocked(22),
		methods: id.Methods,
		issued:  issued,
		expires: issued.Add(TokenTTL),
		appCred: appCred,
	}
	s.tokens[t.id] = t
	writeJSON(w, http.StatusCreated, s.tokenBodyLocked(t), map[string]string{"X-Subject-Token": t.id})
}

// validateToken answers GET /v3/auth/tokens: X-Auth-Token authorizes the
// call, X-Subject-Token is the token to describe.
func (s *Server) validateToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokenLocked(r.Header.Get("X-Auth-Token")) == nil {
		writeJSON(w, http.StatusUnauthorized, keystoneError(http.StatusUnauthorized, msgAuthRequired), nil)
		return
	}
	subject := r.Header.Get("X-Subject-Token")
	t := s.tokenLocked(subject)
	if t == nil {
		writeJSON(w, http.StatusNotFound, keystoneError(http.StatusNotFound, "Could not find token: "+subject+"."), nil)
		return
	}
	writeJSON(w, http.StatusOK, s.tokenBodyLocked(t), map[string]string{"X-Subject-Token": t.id})
}

// tokenLocked returns the live token with that id, or nil.
func (s *Server) tokenLocked(id string) *token {
	t := s.tokens[id]
	if t == nil {
		return nil
	}
	if time.Now().After(t.expires) {
		delete(s.tokens, id)
		return nil
	}
	return t
}

// tokenStringLocked returns n URL-safe characters from the token source.
func (s *Server) tokenStringLocked(n int) string {
	b := make([]byte, (n*3+3)/4)
	for i := range b {
		b[i] = byte(s.tokRng.Uint32())
	}
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// userMatchesLocked reports whether u names the user: by id, or by name in
// the user's domain (given by id or name).
func (s *Server) userMatchesLocked(u userRef) bool {
	if u.ID != "" {
		return u.ID == s.userID
	}
	return u.Name == s.username && s.domainMatchesLocked(u.Domain)
}

func (s *Server) domainMatchesLocked(d *domainRef) bool {
	if d == nil {
		return false
	}
	if d.ID != "" {
		return d.ID == s.domainID
	}
	return d.Name == s.domainName
}

// scopeMatchesLocked reports whether the requested scope is the project.
// No scope at all means the user's default project, which is the project.
// Domain, system and trust scopes are not modelled and fail as an
// unauthorized scope does in Keystone.
func (s *Server) scopeMatchesLocked(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	var scope struct {
		Project *struct {
			ID     string     `json:"id"`
			Name   string     `json:"name"`
			Domain *domainRef `json:"domain"`
		} `json:"project"`
	}
	if err := json.Unmarshal(raw, &scope); err != nil || scope.Project == nil {
		return false
	}
	p := scope.Project
	if p.ID != "" {
		return p.ID == s.projectID
	}
	return p.Name == s.projectName && s.domainMatchesLocked(p.Domain)
}

// keystoneTime formats t as Keystone does, with microseconds.
func keystoneTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// tokenBodyLocked is the {"token": ...} body describing t.
func (s *Server) tokenBodyLocked(t *token) map[string]any {
	domain := func() map[string]any { return map[string]any{"id": s.domainID, "name": s.domainName} }
	roles := make([]any, 0, len(s.roles))
	for _, r := range s.roles {
		roles = append(roles, map[string]any{"id": r[0], "name": r[1]})
	}
	body := map[string]any{
		"methods":    t.methods,
		"audit_ids":  []string{t.auditID},
		"expires_at": keystoneTime(t.expires),
		"issued_at":  keystoneTime(t.issued),
		"is_domain":  false,
		"user": map[string]any{
			"domain":              domain(),
			"id":                  s.userID,
			"name":                s.username,
			"password_expires_at": nil,
		},
		"project": map[string]any{"domain": domain(), "id": s.projectID, "name": s.projectName},
		"roles":   roles,
		"catalog": s.catalog(),
	}
	if t.appCred {
		body["application_credential"] = map[string]any{"id": s.appCredID, "name": s.appCredName, "restricted": true}
	}
	return map[string]any{"token": body}
}

// catalog lists Heat and Keystone, each with a public, an internal and an
// admin endpoint in the region, as a devstack catalog does.
func (s *Server) catalog() []any {
	entry := func(key, typ, url string) map[string]any {
		var eps []any
		for _, iface := range []string{"public", "internal", "admin"} {
			eps = append(eps, map[string]any{
				"id":        s.catalogIDs[key+"."+iface],
				"interface": iface,
				"region":    s.region,
				"region_id": s.region,
				"url":       url,
			})
		}
		return map[string]any{"id": s.catalogIDs[key], "name": key, "type": typ, "endpoints": eps}
	}
	return []any{
		entry("heat", "orchestration", s.OrchestrationEndpoint()),
		entry("keystone", "identity", s.VersionlessIdentityEndpoint()),
	}
}
