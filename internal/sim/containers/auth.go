package containers

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// authEntry is one registry of a Docker-style credentials file.
type authEntry struct {
	Auth     string `json:"auth,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// creds decodes the entry: "auth" (base64 of user:password) or the
// username and password fields.
func (a authEntry) creds() (creds, bool) {
	if a.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return creds{}, false
		}
		u, p, ok := strings.Cut(string(raw), ":")
		return creds{user: u, password: p, set: true}, ok
	}
	if a.Username != "" || a.Password != "" {
		return creds{user: a.Username, password: a.Password, set: true}, true
	}
	return creds{}, false
}

// readAuths reads the "auths" of a Docker-style config.json on m; a
// missing or unreadable file has none.
func readAuths(m *ubuntu.Machine, file string) (map[string]authEntry, bool) {
	data, err := m.Server().FS().ReadFile(file)
	if err != nil {
		return nil, false
	}
	var cfg struct {
		Auths map[string]authEntry `json:"auths"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return nil, false
	}
	return cfg.Auths, true
}

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
