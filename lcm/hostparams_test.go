package lcm_test

import (
	"encoding/json"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// hostParams exercises the shared checks of hostparams.go.
type hostParams struct {
	User string `json:"user"`
	Path string `json:"path"`
	Dir  string `json:"dir"`
}

func (p *hostParams) Validate(v *lcm.Validator) {
	v.Username("user", p.User)
	if c, ok := v.HostPath("path", p.Path); ok {
		p.Path = c
	}
	if c, ok := v.HostDataDir("dir", p.Dir); ok {
		p.Dir = c
	}
}

func decodeHostParams(t *testing.T, raw string) (hostParams, error) {
	t.Helper()
	var p hostParams
	err := lcm.DecodeParams(json.RawMessage(`{"p":`+raw+`}`), lcm.DecodeOptions{}, lcm.Param("p", &p))
	return p, err
}

func TestHostParamsAcceptAndClean(t *testing.T) {
	for _, tt := range []struct{ in, path, dir string }{
		{`{"user":"ubuntu","path":"/home/ansible/kubespray","dir":"/volume"}`, "/home/ansible/kubespray", "/volume"},
		{`{"user":"a.b_c-1","path":"/a//b/","dir":"/srv/nfs/pv1/"}`, "/a/b", "/srv/nfs/pv1"},
		{`{"path":"/","dir":"/home/ubuntu/nfs"}`, "/", "/home/ubuntu/nfs"},
		{`{"dir":"/mnt"}`, "", "/mnt"},
		{`{"dir":"/var/nfs"}`, "", "/var/nfs"},
		{`{"dir":"/opt/pv"}`, "", "/opt/pv"},
		{`{"dir":"/usrdata"}`, "", "/usrdata"},
		{`{"user":""}`, "", ""},
	} {
		p, err := decodeHostParams(t, tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if p.Path != tt.path || p.Dir != tt.dir {
			t.Errorf("%s: path %q dir %q, want %q %q", tt.in, p.Path, p.Dir, tt.path, tt.dir)
		}
	}
}

func TestHostParamsReject(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"user":"-oProxyCommand=x"}`, `p.user: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "-oProxyCommand=x"`},
		{`{"user":"ubu ntu"}`, `p.user: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "ubu ntu"`},
		{`{"user":"abcdefghijabcdefghijabcdefghijabc"}`, `p.user: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "abcdefghijabcdefghijabcdefghijabc"`},
		{`{"path":"volume"}`, `p.path: must be an absolute path, got "volume"`},
		{`{"path":"./volume"}`, `p.path: must be an absolute path, got "./volume"`},
		{`{"path":"/volume/../etc"}`, `p.path: must not have a "." or ".." element, got "/volume/../etc"`},
		{`{"path":"/volume/./nfs"}`, `p.path: must not have a "." or ".." element, got "/volume/./nfs"`},
		{`{"path":"/vol ume"}`, `p.path: must be made of the characters A-Z a-z 0-9 . _ - and /, got "/vol ume"`},
		{`{"path":"/v;rm -rf /"}`, `p.path: must be made of the characters A-Z a-z 0-9 . _ - and /, got "/v;rm -rf /"`},
		{`{"path":"/v\nx"}`, `p.path: must be made of the characters A-Z a-z 0-9 . _ - and /, got "/v\nx"`},
		{`{"path":"/vólume"}`, `p.path: must be made of the characters A-Z a-z 0-9 . _ - and /, got "/vólume"`},
		{`{"dir":"/"}`, `p.dir: must not be /, which the system needs; use a directory below it or in /srv or /mnt`},
		{`{"dir":"//"}`, `p.dir: must not be /, which the system needs; use a directory below it or in /srv or /mnt`},
		{`{"dir":"/var/"}`, `p.dir: must not be /var, which the system needs; use a directory below it or in /srv or /mnt`},
		{`{"dir":"/home"}`, `p.dir: must not be /home, which the system needs; use a directory below it or in /srv or /mnt`},
		{`{"dir":"/tmp"}`, `p.dir: must not be /tmp, which the system needs; use a directory below it or in /srv or /mnt`},
		{`{"dir":"/home/ubuntu"}`, `p.dir: must not be /home/ubuntu, a home directory: it holds the user's ~/.ssh; use a directory below it`},
		{`{"dir":"/etc"}`, `p.dir: must not be in /etc, which the operating system owns, got "/etc"`},
		{`{"dir":"/etc/nfs"}`, `p.dir: must not be in /etc, which the operating system owns, got "/etc/nfs"`},
		{`{"dir":"/usr/local/nfs"}`, `p.dir: must not be in /usr, which the operating system owns, got "/usr/local/nfs"`},
		{`{"dir":"/var/lib/nfs"}`, `p.dir: must not be in /var/lib, which the operating system owns, got "/var/lib/nfs"`},
		{`{"dir":"/proc/1"}`, `p.dir: must not be in /proc, which the operating system owns, got "/proc/1"`},
		{`{"dir":"nfs"}`, `p.dir: must be an absolute path, got "nfs"`},
	} {
		_, err := decodeHostParams(t, tt.in)
		checkProblems(t, err, tt.want)
	}
}

func TestPathWithin(t *testing.T) {
	for _, tt := range []struct {
		p, dir string
		want   bool
	}{
		{"/volume", "/volume", true},
		{"/volume/nfs/pv1", "/volume", true},
		{"/volume2", "/volume", false},
		{"/vol", "/volume", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"/", "/volume", false},
	} {
		if got := lcm.PathWithin(tt.p, tt.dir); got != tt.want {
			t.Errorf("PathWithin(%q, %q) = %v", tt.p, tt.dir, got)
		}
	}
}

func TestIsDNSNameAndIsUsername(t *testing.T) {
	for s, want := range map[string]bool{
		"registry.example.com": true, "r": true, "3com.example": true, "a-b.c": true,
		"": false, "-a.example": false, "a-.example": false, "a..b": false, "a.example.": false,
		"a_b.example": false, "host1:port1": false, "10.0.0.256": false, "1234": false, "a.123": false, "123.a": true, string(make([]byte, 64)) + ".x": false,
	} {
		if got := lcm.IsDNSName(s); got != want {
			t.Errorf("IsDNSName(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{
		"ubuntu": true, "user01": true, "a.b_c-d": true, "UPPER": true,
		"": false, "-root": false, "a b": false, "ubuntu;id": false, "abcdefghijklmnopqrstuvwxyz0123456": false,
	} {
		if got := lcm.IsUsername(s); got != want {
			t.Errorf("IsUsername(%q) = %v, want %v", s, got, want)
		}
	}
}
