package kubespray

import (
	"crypto/ed25519"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/remote"
)

// scalars decodes a vars file into its keys' values and tags.
func scalars(t *testing.T, b []byte) (values map[string]string, tags map[string]string) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	values, tags = map[string]string{}, map[string]string{}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		t.Fatalf("not a mapping:\n%s", b)
	}
	for i := 0; i < len(m.Content); i += 2 {
		k, v := m.Content[i].Value, m.Content[i+1]
		values[k], tags[k] = v.Value, v.ShortTag()
		if v.Kind == yaml.SequenceNode {
			var items []string
			for _, c := range v.Content {
				items = append(items, c.Value)
			}
			values[k] = strings.Join(items, ",")
		}
	}
	return values, tags
}

// sampleVars is the sample request's settings: pod_cidr 192.168.3.0/16
// masked, cluster_cidr 10.199.187.0/24, its proxies.
func sampleVars() GroupVars {
	return GroupVars{
		PodsSubnet:             netip.MustParsePrefix("192.168.0.0/16"),
		ServiceAddresses:       netip.MustParsePrefix("10.199.187.0/24"),
		HTTPProxy:              "http://user1:password1@host1:3128",
		HTTPSProxy:             "https://user2:p{{ass}}word2@host2:3129",
		AdditionalNoProxy:      []string{"192.168.246.0/24", "10.0.0.1"},
		MTU:                    1500,
		SupplementaryAddresses: []string{"203.0.113.10"},
		KnownHostsFile:         "/srv/kubespray/inventory/vnf-1/known_hosts",
	}
}

func TestGroupVarsFiles(t *testing.T) {
	files, err := sampleVars().Files()
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{AllVarsFile, ClusterVarsFile}) {
		t.Fatalf("files %v", got)
	}
	golden.Assert(t, "group_vars-all", files[AllVarsFile])
	golden.Assert(t, "group_vars-k8s_cluster", files[ClusterVarsFile])

	all, tags := scalars(t, files[AllVarsFile])
	want := map[string]string{
		"http_proxy":                    "http://user1:password1@host1:3128",
		"https_proxy":                   "https://user2:p{{ass}}word2@host2:3129",
		"additional_no_proxy":           "192.168.246.0/24,10.0.0.1",
		"no_proxy_exclude_workers":      "true",
		"ansible_ssh_host_key_checking": "true",
		"ansible_ssh_args":              "-o UserKnownHostsFile=/srv/kubespray/inventory/vnf-1/known_hosts -o StrictHostKeyChecking=yes -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100",
		"ansible_ssh_common_args":       "-o UserKnownHostsFile=/srv/kubespray/inventory/vnf-1/known_hosts -o StrictHostKeyChecking=yes",
	}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("%s = %v\nwant %v", AllVarsFile, all, want)
	}
	for _, k := range []string{"http_proxy", "https_proxy", "additional_no_proxy", "ansible_ssh_args", "ansible_ssh_common_args"} {
		if tags[k] != "!unsafe" {
			t.Errorf("%s is tagged %q, want !unsafe", k, tags[k])
		}
	}
	if tags["no_proxy_exclude_workers"] != "!!bool" {
		t.Errorf("no_proxy_exclude_workers is %s, want a boolean", tags["no_proxy_exclude_workers"])
	}
	cluster, tags := scalars(t, files[ClusterVarsFile])
	want = map[string]string{
		"kube_pods_subnet":                    "192.168.0.0/16",
		"kube_service_addresses":              "10.199.187.0/24",
		"calico_mtu":                          "1500",
		"calico_veth_mtu":                     "1450",
		"supplementary_addresses_in_ssl_keys": "203.0.113.10",
	}
	if !reflect.DeepEqual(cluster, want) {
		t.Errorf("%s = %v\nwant %v", ClusterVarsFile, cluster, want)
	}
	if tags["calico_mtu"] != "!!int" || tags["calico_veth_mtu"] != "!!int" {
		t.Errorf("MTUs are %s and %s, want integers", tags["calico_mtu"], tags["calico_veth_mtu"])
	}
}

// Unset fields leave kubespray's defaults: nothing is written for them,
// and the cluster file is written empty, so that a value removed from
// the request is removed on the Ansible server too.
func TestGroupVarsFilesEmpty(t *testing.T) {
	files, err := GroupVars{}.Files()
	if err != nil {
		t.Fatal(err)
	}
	all, _ := scalars(t, files[AllVarsFile])
	if want := map[string]string{"no_proxy_exclude_workers": "true"}; !reflect.DeepEqual(all, want) {
		t.Errorf("%s = %v, want %v", AllVarsFile, all, want)
	}
	if cluster, _ := scalars(t, files[ClusterVarsFile]); len(cluster) != 0 {
		t.Errorf("%s = %v, want nothing", ClusterVarsFile, cluster)
	}
	golden.Assert(t, "group_vars-k8s_cluster-empty", files[ClusterVarsFile])
}

func TestGroupVarsFilesRefuses(t *testing.T) {
	const secret = "pa55word"
	for _, c := range []struct {
		name string
		g    GroupVars
		want string
	}{
		{"host bits", GroupVars{PodsSubnet: netip.MustParsePrefix("192.168.3.0/16")}, `kube_pods_subnet 192.168.3.0/16 is not a network address (kubespray stops: "is not a valid network range"); did you mean 192.168.0.0/16?`},
		{"IPv6", GroupVars{ServiceAddresses: netip.MustParsePrefix("fd00::/108")}, "kube_service_addresses fd00::/108 is not IPv4"},
		{"overlap", GroupVars{PodsSubnet: netip.MustParsePrefix("10.0.0.0/8"), ServiceAddresses: netip.MustParsePrefix("10.96.0.0/12")}, "overlap"},
		{"MTU too small", GroupVars{MTU: 50}, "MTU 50 is not between 576 and 65535"},
		{"MTU too large", GroupVars{MTU: 70000}, "MTU 70000"},
		{"relative known_hosts", GroupVars{KnownHostsFile: "inv/known_hosts"}, "not a clean absolute path"},
		{"unclean known_hosts", GroupVars{KnownHostsFile: "/srv/inv/../known_hosts"}, "not a clean absolute path"},
		{"space in known_hosts", GroupVars{KnownHostsFile: "/srv/my inv/known_hosts"}, `holds " "`},
		{"token in known_hosts", GroupVars{KnownHostsFile: "/srv/%d/known_hosts"}, `holds "%"`},
		{"variable in known_hosts", GroupVars{KnownHostsFile: "/srv/${HOME}/known_hosts"}, `holds "$"`},
		{"line break in proxy", GroupVars{HTTPProxy: "http://u:" + secret + "@h\n:1"}, "http_proxy holds a line break"},
		{"comma in no_proxy entry", GroupVars{AdditionalNoProxy: []string{"a,b"}}, `entry "a,b"`},
		{"empty no_proxy entry", GroupVars{AdditionalNoProxy: []string{""}}, `entry ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, err := c.g.Files()
			if err == nil {
				t.Fatalf("Files accepted it:\n%s", files[AllVarsFile])
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Files: %v\nwant it to say %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Files' error quotes the proxy: %v", err)
			}
		})
	}
}

func TestLoginFiles(t *testing.T) {
	pw := remote.NewSecret(`p'a"s s{{ 7*7 }}$x#` + "\\")
	same := Login{User: "ubuntu", Password: pw}
	files, err := LoginFiles(same, same)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{LoginFile}) {
		t.Fatalf("files %v, want %s alone", got, LoginFile)
	}
	golden.Assert(t, "login-same", files[LoginFile])
	values, tags := scalars(t, files[LoginFile])
	if want := map[string]string{"ansible_user": "ubuntu", "ansible_password": pw.Reveal(), "ansible_become_password": pw.Reveal()}; !reflect.DeepEqual(values, want) {
		t.Errorf("%s = %v, want %v", LoginFile, values, want)
	}
	if tags["ansible_password"] != "!unsafe" || tags["ansible_become_password"] != "!unsafe" {
		t.Errorf("passwords tagged %v, want !unsafe", tags)
	}

	// Logins differ by user or by password: one file per group.
	for _, workers := range []Login{
		{User: "worker", Password: pw},
		{User: "ubuntu", Password: remote.NewSecret("other")},
	} {
		files, err := LoginFiles(same, workers)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{ControlPlaneLoginFile, NodeLoginFile}) {
			t.Fatalf("files %v", got)
		}
		m, _ := scalars(t, files[ControlPlaneLoginFile])
		w, _ := scalars(t, files[NodeLoginFile])
		if m["ansible_user"] != "ubuntu" || m["ansible_password"] != pw.Reveal() || w["ansible_user"] != workers.User || w["ansible_password"] != workers.Password.Reveal() || w["ansible_become_password"] != workers.Password.Reveal() {
			t.Errorf("masters %v, workers %v", m, w)
		}
	}
	for _, f := range slices.Collect(maps.Keys(files)) {
		if !slices.Contains(LoginFilePaths(), f) {
			t.Errorf("%s is not in LoginFilePaths %v", f, LoginFilePaths())
		}
	}

	// Values a YAML 1.1 reader (Ansible's PyYAML) would take for booleans
	// or numbers stay strings.
	files, err = LoginFiles(Login{User: "on", Password: remote.NewSecret("yes")}, Login{User: "0700"})
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "login-differ", []byte(string(files[ControlPlaneLoginFile])+"---\n"+string(files[NodeLoginFile])))
	for _, line := range []string{`ansible_user: "on"`, `ansible_password: !unsafe "yes"`, `ansible_user: "0700"`} {
		if !strings.Contains(string(files[ControlPlaneLoginFile])+string(files[NodeLoginFile]), line+"\n") {
			t.Errorf("no line %s in\n%s%s", line, files[ControlPlaneLoginFile], files[NodeLoginFile])
		}
	}
	// A login without a password sets only the user.
	if w, _ := scalars(t, files[NodeLoginFile]); !reflect.DeepEqual(w, map[string]string{"ansible_user": "0700"}) {
		t.Errorf("a login without password: %v", w)
	}

	for _, bad := range [][2]Login{{{}, same}, {same, {Password: pw}}, {{User: "a\nb"}, same}} {
		if _, err := LoginFiles(bad[0], bad[1]); err == nil {
			t.Errorf("LoginFiles(%v, %v) accepted", bad[0], bad[1])
		} else if strings.Contains(err.Error(), pw.Reveal()) {
			t.Errorf("error quotes the password: %v", err)
		}
	}
}

func TestKnownHosts(t *testing.T) {
	key := func(seed byte) ssh.PublicKey {
		priv := ed25519.NewKeyFromSeed(slices.Repeat([]byte{seed}, ed25519.SeedSize))
		pub, err := ssh.NewPublicKey(priv.Public())
		if err != nil {
			t.Fatal(err)
		}
		return pub
	}
	line := func(k ssh.PublicKey) string { return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) }
	k1, k2, k3 := key(1), key(2), key(3)
	got, err := KnownHosts(map[netip.Addr]string{
		addr("10.0.0.12"):       line(k2) + " root@worker-12",    // a comment is dropped
		addr("::ffff:10.0.0.2"): `from="10.0.0.0/8" ` + line(k1), // options too
		addr("fd00::1"):         line(k3) + "\n",
		addr("10.0.0.1"):        line(k3),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "10.0.0.1 " + line(k3) + "\n" +
		"10.0.0.2 " + line(k1) + "\n" +
		"10.0.0.12 " + line(k2) + "\n" +
		"fd00::1 " + line(k3) + "\n"
	if string(got) != want {
		t.Errorf("KnownHosts:\n%s\nwant:\n%s", got, want)
	}
	golden.Assert(t, "known_hosts", got)
	// Each line is one ssh reads: host pattern and key.
	for l := range strings.SplitSeq(strings.TrimSpace(string(got)), "\n") {
		_, hosts, pub, _, _, err := ssh.ParseKnownHosts([]byte(l))
		if err != nil || len(hosts) != 1 || pub == nil {
			t.Errorf("ssh.ParseKnownHosts(%q): hosts %v, %v", l, hosts, err)
		}
	}
	if got, err := KnownHosts(nil); err != nil || len(got) != 0 {
		t.Errorf("KnownHosts(nil) = %q, %v", got, err)
	}
	for _, bad := range []map[netip.Addr]string{
		{addr("10.0.0.1"): "not a key"},
		{addr("10.0.0.1"): line(k1), addr("::ffff:10.0.0.1"): line(k2)},
		{addr("fe80::1%eth0"): line(k1)},
		{{}: line(k1)},
	} {
		if _, err := KnownHosts(bad); err == nil {
			t.Errorf("KnownHosts(%v) accepted", bad)
		}
	}
}
