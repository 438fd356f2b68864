package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/internal/posixsh"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// testPackage is a VNF package with the files the samples name, a file
// that is not a certificate and an image archive.
func testPackage(t testing.TB) *lcm.Package {
	t.Helper()
	ca, err := fs.ReadFile(samples.VNFPackage(), "Files/registries/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	img, err := fs.ReadFile(samples.VNFPackage(), "Files/images/private_registry.tar")
	if err != nil {
		t.Fatal(err)
	}
	return lcm.NewPackage(fstest.MapFS{
		"Files/registries/ca.crt":           {Data: ca},
		"Files/registries/not-a-cert.crt":   {Data: []byte("hello\n")},
		"Files/registries/key.pem":          {Data: []byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIDmZ\n-----END PRIVATE KEY-----\n")},
		"Files/images/private_registry.tar": {Data: img},
	})
}

// clusterParams is a cluster driver's parameter struct: this package's
// part embedded, the keys of other packages taken as they are.
type clusterParams struct {
	TrustParams
	ScriptPath string          `json:"script_path"`
	VimName    string          `json:"vim_name"`
	MasterNode json.RawMessage `json:"master_node"`
	WorkerNode json.RawMessage `json:"worker_node"`
	Proxy      json.RawMessage `json:"proxy"`
}

func decodeCluster(t *testing.T, raw string) (clusterParams, error) {
	t.Helper()
	var p clusterParams
	err := lcm.DecodeParams(json.RawMessage(raw), lcm.DecodeOptions{Package: testPackage(t)}, lcm.Param(ClusterParamKey, &p).Required())
	return p, err
}

func sampleRequest(t *testing.T, name string) lcm.InstantiateVnfRequest {
	t.Helper()
	b, err := samples.Request(name)
	if err != nil {
		t.Fatal(err)
	}
	var req lcm.InstantiateVnfRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestTheSpecsSamplesDecode(t *testing.T) {
	p, err := decodeCluster(t, string(sampleRequest(t, "instantiate_cir_k8s_cluster.json").AdditionalParams))
	if err != nil {
		t.Fatal(err)
	}
	conns := p.PrivateRegistryConnectionInfo
	if len(conns) != 2 || conns[0].Type() != HTTP || conns[0].Server != "192.168.0.10:5000" || conns[0].Username != "" {
		t.Fatalf("connection 0: %+v", conns[0])
	}
	c := conns[1]
	if c.Type() != HTTPS || c.Server != "registry.example.com" || c.Username != "user01" || c.Password.Reveal() != "user01" ||
		c.CertificatePath != "Files/registries/ca.crt" || c.HostsLine() != "192.168.0.20 registry.example.com" {
		t.Errorf("connection 1: %+v", c)
	}

	inst, err := DecodeInstallParams(sampleRequest(t, "instantiate_cir_registry.json").AdditionalParams, testPackage(t))
	if err != nil {
		t.Fatal(err)
	}
	if inst.SSHCPName != "CP1" || inst.SSHUsername != "ubuntu" || inst.ImagePath != "Files/images/private_registry.tar" || inst.Port() != DefaultPort {
		t.Errorf("install params %+v", inst)
	}
}

func TestBadParametersAreFieldErrors(t *testing.T) {
	const prefix = ClusterParamKey + ".private_registry_connection_info"
	tests := []struct {
		name, conn string
		want       []string // "path: message" substrings
	}{
		{"connection_type 2", `{"connection_type": "2", "server": "r:5000"}`,
			[]string{prefix + `[0].connection_type: must be "0" (HTTP) or "1" (HTTPS), got "2"`}},
		{"connection_type missing", `{"server": "r:5000"}`, []string{prefix + "[0].connection_type: is required"}},
		{"server with a space", `{"connection_type": 0, "server": "reg istry:5000"}`, []string{prefix + "[0].server: must be host[:port]"}},
		{"server with a scheme", `{"connection_type": 0, "server": "http://r:5000"}`, []string{prefix + "[0].server: must be host[:port]"}},
		{"server port", `{"connection_type": 0, "server": "r:70000"}`, []string{prefix + `[0].server: has port "70000"`}},
		{"server shell", `{"connection_type": 0, "server": "r;reboot"}`, []string{prefix + "[0].server: has host"}},
		{"server a mistyped address", `{"connection_type": 0, "server": "192.168.0.300:5000"}`, []string{prefix + "[0].server: has host"}},
		{"username without password", `{"connection_type": "1", "server": "r", "username": "u"}`,
			[]string{prefix + "[0].password: is required when username is given"}},
		{"password without username", `{"connection_type": "1", "server": "r", "password": "p"}`,
			[]string{prefix + "[0].username: is required when password is given"}},
		{"certificate outside the package", `{"connection_type": "1", "server": "r", "certificate_path": "../../etc/shadow"}`,
			[]string{prefix + "[0].certificate_path:"}},
		{"certificate missing", `{"connection_type": "1", "server": "r", "certificate_path": "Files/registries/nope.crt"}`,
			[]string{prefix + "[0].certificate_path:"}},
		{"not a PEM certificate", `{"connection_type": "1", "server": "r", "certificate_path": "Files/registries/not-a-cert.crt"}`,
			[]string{prefix + "[0].certificate_path: Files/registries/not-a-cert.crt: is not a PEM certificate"}},
		{"a key, not a certificate", `{"connection_type": "1", "server": "r", "certificate_path": "Files/registries/key.pem"}`,
			[]string{prefix + `[0].certificate_path: Files/registries/key.pem: holds a PEM "PRIVATE KEY" block`}},
		{"certificate on HTTP", `{"connection_type": "0", "server": "r", "certificate_path": "Files/registries/ca.crt"}`,
			[]string{prefix + `[0].certificate_path: is only for HTTPS`}},
		{"hosts_string injection", `{"connection_type": "1", "server": "r", "hosts_string": "1.2.3.4 x; rm -rf /"}`,
			[]string{prefix + `[0].hosts_string: must be "<IP address> <FQDN>"`}},
		{"hosts_string bad IP", `{"connection_type": "1", "server": "r", "hosts_string": "1.2.3 x.example.com"}`,
			[]string{prefix + `[0].hosts_string: must start with an IP address`}},
		{"hosts_string bad name", `{"connection_type": "1", "server": "r", "hosts_string": "1.2.3.4 x;y"}`,
			[]string{prefix + `[0].hosts_string: must end with a host name`}},
		{"unknown key", `{"connection_type": "1", "server": "r", "hosts_strng": "1.2.3.4 x"}`,
			[]string{prefix + `[0].hosts_strng: unknown key (did you mean "hosts_string"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [`+tt.conn+`]}}`)
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *lcm.ParamsError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), `"p"`) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	_, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [
		{"connection_type": 0, "server": "r:5000"}, {"connection_type": 1, "server": "r:5000"}]}}`)
	if err == nil || !strings.Contains(err.Error(), prefix+`[1].server: repeats private_registry_connection_info[0].server "r:5000"`) {
		t.Errorf("duplicate server: %v", err)
	}
}

func TestBadInstallParameters(t *testing.T) {
	tests := []struct {
		name, param string
		want        string
	}{
		{"missing image", `{"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "pw", "image_path": "Files/images/none.tar"}`, InstallParamKey + ".image_path:"},
		{"image outside", `{"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "pw", "image_path": "/etc/passwd"}`, InstallParamKey + ".image_path:"},
		{"port", `{"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "pw", "port_no": "70000"}`, InstallParamKey + ".port_no: must be a TCP port"},
		{"port string", `{"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "pw", "port_no": "five"}`, InstallParamKey + ".port_no:"},
		{"no password", `{"ssh_cp_name": "CP1", "ssh_username": "ubuntu"}`, InstallParamKey + ".ssh_password: is required"},
		{"bad user", `{"ssh_cp_name": "CP1", "ssh_username": "ubuntu;id", "ssh_password": "pw"}`, InstallParamKey + ".ssh_username: must be a user name"},
		{"proxy newline", `{"ssh_cp_name": "CP1", "ssh_username": "u", "ssh_password": "pw", "proxy": {"http_proxy": "http://p:3128\nExecStart=/bin/evil"}}`,
			InstallParamKey + ".proxy.http_proxy: must be a URL without quotes"},
		{"proxy scheme", `{"ssh_cp_name": "CP1", "ssh_username": "u", "ssh_password": "pw", "proxy": {"https_proxy": "ftp://p"}}`,
			InstallParamKey + ".proxy.https_proxy: must be an http:// or https:// URL"},
		{"CP outside its segment", `{"ssh_cp_name": "../x", "ssh_username": "u", "ssh_password": "pw"}`,
			InstallParamKey + `.ssh_cp_name: "../x" must not contain "/"`},
		{"CP with a control character", `{"ssh_cp_name": "CP1\u0000", "ssh_username": "u", "ssh_password": "pw"}`,
			InstallParamKey + `.ssh_cp_name: "CP1\x00" must not contain control characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeInstallParams(json.RawMessage(`{"`+InstallParamKey+`": `+tt.param+`}`), testPackage(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "evil")) {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
	p, err := DecodeInstallParams(json.RawMessage(`{"`+InstallParamKey+`": {"ssh_cp_name": "CP1", "ssh_username": "u", "ssh_password": "pw", "port_no": 5001,
		"proxy": {"http_proxy": "http://user1:pass%25word1@proxy:3128", "no_proxy": "localhost,10.0.0.0/8"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Port() != 5001 {
		t.Errorf("port %d", p.Port())
	}
	files, _ := system.ProxyUnitFiles("docker", p.Proxy)
	if got := files[ProxyEnvFile]; !strings.Contains(got, "\nHTTP_PROXY=http://user1:pass%25word1@proxy:3128\n") || !strings.Contains(got, "\nNO_PROXY=localhost,10.0.0.0/8\n") || strings.Contains(got, "HTTPS_PROXY") {
		t.Errorf("environment file:\n%s", got)
	}
	if dropIn := files[ProxyDropIn]; strings.Contains(dropIn, "Environment=") || !strings.Contains(dropIn, "\nEnvironmentFile="+ProxyEnvFile+"\n") {
		t.Errorf("drop-in:\n%s", dropIn)
	}
}

func TestMergeInsecureKeepsOtherSettings(t *testing.T) {
	old := []byte(`{"exec-opts": ["native.cgroupdriver=systemd"], "log-opts": {"max-size": "100m"}, "max-concurrent-downloads": 3, "insecure-registries": ["old:5000"]}`)
	b, added, err := mergeInsecure(old, []string{"old:5000", "new:5000"})
	if err != nil || b == nil || !slices.Equal(added, []string{"new:5000"}) {
		t.Fatalf("added %q, %v", added, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg["insecure-registries"].([]any); len(got) != 2 || got[0] != "old:5000" || got[1] != "new:5000" {
		t.Errorf("insecure-registries %v", got)
	}
	if cfg["max-concurrent-downloads"] != float64(3) || cfg["log-opts"].(map[string]any)["max-size"] != "100m" {
		t.Errorf("other settings lost: %s", b)
	}
	if again, _, _ := mergeInsecure(b, []string{"new:5000"}); again != nil {
		t.Error("a second merge changed the file")
	}
	if _, _, err := mergeInsecure([]byte("{not json"), []string{"x"}); err == nil {
		t.Error("a broken daemon.json was accepted")
	}
}

func TestReadImageArchive(t *testing.T) {
	arc, err := ReadImageArchive(testPackage(t), "Files/images/private_registry.tar")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(arc.ID, "sha256:b9de31fcec10") || len(arc.Tags) != 1 || arc.Tags[0] != "registry:latest" {
		t.Errorf("archive %+v", arc)
	}
	if _, err := ReadImageArchive(testPackage(t), "Files/registries/ca.crt"); err == nil {
		t.Error("a certificate read as an image archive")
	}
}

func TestNullConnectionIsAFieldError(t *testing.T) {
	const prefix = ClusterParamKey + ".private_registry_connection_info"
	for body, want := range map[string]string{
		`[null]`: prefix + "[0]: must be an object, got null",
		`[{"connection_type": "0", "server": "r:5000"}, null]`: prefix + "[1]: must be an object, got null",
		`[{"connection_type": null, "server": "r:5000"}]`:      prefix + "[0].connection_type: is required",
	} {
		p, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": `+body+`}}`)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q (decoded %+v)", body, err, want, p.PrivateRegistryConnectionInfo)
		}
	}
}

func TestLaxInputIsRejected(t *testing.T) {
	const prefix = ClusterParamKey + ".private_registry_connection_info[0]."
	tests := []struct {
		name, conn string
		want       string // the whole error
	}{
		{"port with a plus", `{"connection_type": 0, "server": "r:+5000"}`,
			prefix + `server: has port "+5000", which must be a port number without a sign or leading zeros`},
		{"port with a leading zero", `{"connection_type": 0, "server": "r:05000"}`,
			prefix + `server: has port "05000", which must be a port number without a sign or leading zeros`},
		{"port 0", `{"connection_type": 0, "server": "r:0"}`, prefix + `server: has port "0", which must be a port number from 1 to 65535`},
		{"IPv6 zone", `{"connection_type": 0, "server": "[fe80::1%eth0]:5000"}`,
			prefix + `server: has host "[fe80::1%eth0]", which has an IPv6 zone; a registry address cannot have one`},
		{"IPv6 zone without port", `{"connection_type": 0, "server": "[fe80::1%25eth0]"}`,
			prefix + `server: has host "[fe80::1%25eth0]", which has an IPv6 zone; a registry address cannot have one`},
		{"IPv6 over HTTP without a port", `{"connection_type": 0, "server": "[fd00::1]"}`,
			prefix + `server: an IPv6 registry over HTTP needs its port ([fd00::1]:5000): dockerd refuses [fd00::1] in insecure-registries and then does not start`},
		{"bracketed name", `{"connection_type": 0, "server": "[registry.example.com]:5000"}`,
			prefix + `server: has host "[registry.example.com]", but only an IPv6 address goes in brackets`},
		{"bracketed IPv4", `{"connection_type": 0, "server": "[192.168.0.10]"}`,
			prefix + `server: has host "[192.168.0.10]", but only an IPv6 address goes in brackets`},
		{"trailing dot", `{"connection_type": 0, "server": "registry.example.com."}`,
			prefix + `server: has host "registry.example.com.", which ends in a dot; write the name without it`},
		{"trailing dot and port", `{"connection_type": 0, "server": "registry.example.com.:5000"}`,
			prefix + `server: has host "registry.example.com.", which ends in a dot; write the name without it`},
		{"hosts_string trailing dot", `{"connection_type": 0, "server": "r", "hosts_string": "1.2.3.4 r.example.com."}`,
			prefix + `hosts_string: must end with a host name without a trailing dot, got "r.example.com."`},
		{"username with a space", `{"connection_type": 1, "server": "r", "username": "us er", "password": "p"}`,
			prefix + `username: must not contain white space, ':', ';' or control characters, got "us er"`},
		{"username with a tab", `{"connection_type": 1, "server": "r", "username": "us\ter", "password": "p"}`,
			prefix + `username: must not contain white space, ':', ';' or control characters, got "us\ter"`},
		{"username with a no-break space", `{"connection_type": 1, "server": "r", "username": "us\u00a0er", "password": "p"}`,
			prefix + `username: must not contain white space, ':', ';' or control characters, got "us\u00a0er"`},
		{"username with a semicolon", `{"connection_type": 1, "server": "r", "username": "u;id", "password": "p"}`,
			prefix + `username: must not contain white space, ':', ';' or control characters, got "u;id"`},
		{"username with a control character", `{"connection_type": 1, "server": "r", "username": "u\u001bx", "password": "p"}`,
			prefix + `username: must not contain white space, ':', ';' or control characters, got "u\x1bx"`},
		{"username with a bidi override", `{"connection_type": 1, "server": "r", "username": "u\u202ex", "password": "p"}`,
			prefix + `username: must not contain white space, ':', ';' or control characters, got "u\u202ex"`},
		{"username like an option", `{"connection_type": 1, "server": "r", "username": "--password=x", "password": "p"}`,
			prefix + `username: must not start with '-', got "--password=x"`},
		{"server too long", `{"connection_type": 0, "server": "` + strings.Repeat("a", 260) + `"}`,
			prefix + `server: is 260 bytes long; the limit is 259`},
		{"username too long", `{"connection_type": 1, "server": "r", "username": "` + strings.Repeat("u", 257) + `", "password": "p"}`,
			prefix + `username: is 257 bytes long; the limit is 256`},
		{"hosts_string too long", `{"connection_type": 0, "server": "r", "hosts_string": "1.2.3.4 ` + strings.Repeat("h", 293) + `"}`,
			prefix + `hosts_string: is 301 bytes long; the limit is 300`},
		{"certificate_path of 1 MB", `{"connection_type": 1, "server": "r", "certificate_path": "` + strings.Repeat("c", 1<<20) + `"}`,
			prefix + `certificate_path: is 1048576 bytes long; the limit is 4096`},
		{"long bad server", `{"connection_type": 0, "server": "` + strings.Repeat("a", 250) + `;"}`,
			prefix + `server: has host "` + strings.Repeat("a", 100) + `"… (251 bytes), which is neither an IP address nor a DNS name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [`+tt.conn+`]}}`)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}

	// What the spec's samples and the rules allow still decodes.
	for _, conn := range []string{
		`{"connection_type": 0, "server": "192.168.0.10:5000"}`,
		`{"connection_type": 0, "server": "[2001:db8::1]:5000"}`,
		`{"connection_type": 1, "server": "[2001:db8::1]"}`,
		`{"connection_type": 0, "server": "r:65535", "hosts_string": "2001:db8::1 r.example.com"}`,
		`{"connection_type": 1, "server": "` + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + `:65535", "username": "robot$ci+pull@example.com", "password": "p"}`,
	} {
		if _, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [`+conn+`]}}`); err != nil {
			t.Errorf("%s: %v", conn, err)
		}
	}
}

func TestConnectionListIsCapped(t *testing.T) {
	list := func(n int) string {
		conns := make([]string, n)
		for i := range conns {
			conns[i] = fmt.Sprintf(`{"connection_type": 0, "server": "r%d:5000"}`, i)
		}
		return `{"` + ClusterParamKey + `": {"private_registry_connection_info": [` + strings.Join(conns, ",") + `]}}`
	}
	if _, err := decodeCluster(t, list(MaxConnections)); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{MaxConnections + 1, 10000} {
		_, err := decodeCluster(t, list(n))
		want := fmt.Sprintf("%s.private_registry_connection_info: has %d elements; the limit is %d", ClusterParamKey, n, MaxConnections)
		if err == nil || err.Error() != want {
			t.Errorf("%d connections: %v, want %q", n, err, want)
		}
	}
}

func TestServersDifferingInCaseAreDuplicates(t *testing.T) {
	_, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [
		{"connection_type": 0, "server": "Registry.example.com:5000"}, {"connection_type": 1, "server": "registry.EXAMPLE.com:5000"}]}}`)
	want := ClusterParamKey + `.private_registry_connection_info[1].server: repeats private_registry_connection_info[0].server "registry.EXAMPLE.com:5000"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestServersInOtherSpellingsAreDuplicates(t *testing.T) {
	for _, pair := range [][2]string{
		{"[::1]:5000", "[0:0::1]:5000"},
		{"[fd00::A]:5000", "[fd00:0::a]:5000"},
		{"[2001:db8::1]", "[2001:DB8:0:0:0:0:0:1]"},
	} {
		_, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [
			{"connection_type": 0, "server": "`+pair[0]+`"}, {"connection_type": 1, "server": "`+pair[1]+`"}]}}`)
		want := ClusterParamKey + `.private_registry_connection_info[1].server: repeats private_registry_connection_info[0].server`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q and %q: err = %v, want %q", pair[0], pair[1], err, want)
		}
	}
	// Different registries to containerd and Docker: not duplicates.
	for _, pair := range [][2]string{
		{"registry.example.com", "registry.example.com:443"},
		{"10.0.0.1:5000", "[::ffff:10.0.0.1]:5000"},
		{"r.example.com:5000", "r.example.com:5001"},
	} {
		if _, err := decodeCluster(t, `{"`+ClusterParamKey+`": {"private_registry_connection_info": [
			{"connection_type": 0, "server": "`+pair[0]+`"}, {"connection_type": 1, "server": "`+pair[1]+`"}]}}`); err != nil {
			t.Errorf("%q and %q: %v", pair[0], pair[1], err)
		}
	}
}

func TestCanonicalServer(t *testing.T) {
	for in, want := range map[string]string{
		"Registry.Example.com:5000": "registry.example.com:5000",
		"registry.example.com":      "registry.example.com",
		"[0:0::1]:5000":             "[::1]:5000",
		"[FD00::0001]":              "[fd00::1]",
		"10.0.0.5:5000":             "10.0.0.5:5000",
		"[::ffff:10.0.0.5]:5000":    "[::ffff:10.0.0.5]:5000",
	} {
		if got := CanonicalServer(in); got != want {
			t.Errorf("CanonicalServer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConnectionHost(t *testing.T) {
	for in, want := range map[string]string{
		"registry.example.com:5000": "registry.example.com",
		"registry.example.com":      "registry.example.com",
		"[fd00::1]:5000":            "fd00::1",
		"[fd00::1]":                 "fd00::1",
		"10.0.0.5:5000":             "10.0.0.5",
	} {
		if got := (Connection{Server: in}).Host(); got != want {
			t.Errorf("Host of %q = %q, want %q", in, got, want)
		}
	}
}

// readScript and tellScript run as `sh -c` on the node, where /bin/sh is
// dash.
func TestTrustScriptsArePOSIX(t *testing.T) {
	posixsh.Check(t, map[string]string{"read": readScript, "tell": tellScript})
}
