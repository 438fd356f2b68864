package kubeadm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// A proxy URL that parameter validation accepts is one the node steps
// take and render: a ';' in the password (an RFC 3986 sub-delim, legal
// unescaped in userinfo) passed validation but was refused by
// PrepareNode, after the hook had started, without the parameter's path.
// apt reads it verbatim inside a quoted apt.conf value, and a systemd
// environment file treats ';' as a comment only at the start of a line.
func TestPrepareNodeTakesEveryProxyValidationAccepts(t *testing.T) {
	const url = "http://user:pa;ss!w*rd@proxy.example.com:3128"
	var px kubeadm.Proxy
	raw := `{"proxy": {"http_proxy": "` + url + `", "https_proxy": "` + url + `", "no_proxy": "example.com"}}`
	if err := lcm.DecodeParams(json.RawMessage(raw), lcm.DecodeOptions{}, lcm.Param("proxy", &px)); err != nil {
		t.Fatalf("validation refuses the proxy: %v", err)
	}
	n := newSimNode(t, sim.Options{})
	p := kubeadm.ClusterParams{Proxy: &px}
	name := kubeadm.NodeName(lcm.RoleMaster, n.host.NICAddress)
	if _, err := kubeadm.PrepareNode(n.ctx, n.ssh, kubeadm.NodeOptions{Name: name, Proxy: kubeadm.ProxyFor(p, []string{n.host.NICAddress}, n.host.NICAddress, nil)}); err != nil {
		t.Fatalf("PrepareNode refuses what validation accepted: %v", err)
	}
	if conf := n.read(kubeadm.AptProxyFile); !strings.Contains(conf, `Acquire::http::Proxy "`+url+`";`) {
		t.Errorf("apt proxy:\n%s", conf)
	}
}
