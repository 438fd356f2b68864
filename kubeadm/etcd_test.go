package kubeadm_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const etcdctlPrefix = "exec --namespace=kube-system etcd-master-10-0-0-5 -- etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key "

// etcdCluster answers etcdctl through kubectl exec as etcd does, its
// member list in etcdctl's JSON (etcdctl/ctlv3/command/printer_json.go:
// the MemberListResponse through encoding/json, IDs as JSON numbers).
type etcdCluster struct {
	members   []kubeadm.EtcdMember
	clusterID uint64
}

func (c *etcdCluster) json() string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"header":{"cluster_id":%d,"member_id":%d,"raft_term":3},"members":[`, c.clusterID, c.members[0].ID)
	for i, m := range c.members {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"ID":%d,`, m.ID)
		if m.Name != "" { // omitempty: a member not started yet has no name
			fmt.Fprintf(&b, `"name":%q,`, m.Name)
		}
		fmt.Fprintf(&b, `"peerURLs":[%q]`, m.PeerURLs[0])
		if len(m.ClientURLs) > 0 {
			fmt.Fprintf(&b, `,"clientURLs":[%q]`, m.ClientURLs[0])
		}
		b.WriteString("}")
	}
	b.WriteString("]}\n")
	return b.String()
}

func (c *etcdCluster) script(t *testing.T) scripted.Script {
	return func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		line := inv.Line()
		rest, found := strings.CutPrefix(line, etcdctlPrefix)
		if !found {
			return scripted.Reply{Stderr: "unexpected kubectl " + line, Code: 2}
		}
		if rest == "member list -w json" {
			return scripted.OK(c.json())
		}
		if hexID, found := strings.CutPrefix(rest, "member remove "); found {
			// etcdctl parses the ID in base 16
			// (etcdctl/ctlv3/command/member_command.go).
			id, err := strconv.ParseUint(hexID, 16, 64)
			if err != nil {
				return scripted.Reply{Stderr: fmt.Sprintf("Error: bad member ID arg (strconv.ParseUint: parsing %q: invalid syntax), expecting ID in Hex\n", hexID), Code: 1}
			}
			for i, m := range c.members {
				if m.ID == id {
					c.members = slices.Delete(c.members, i, i+1)
					return scripted.OK(fmt.Sprintf("Member %16x removed from cluster %16x\n", id, c.clusterID))
				}
			}
			return scripted.Reply{Stderr: "Error: etcdserver: member not found\n", Code: 1}
		}
		return scripted.Reply{Code: 2}
	}
}

func TestEtcdMembersKeepsBigIDsExact(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	c := &etcdCluster{clusterID: 0xcdf818194e3a8c32, members: []kubeadm.EtcdMember{
		// IDs beyond 2^53: a float64 would round them.
		{ID: 0x8e9e05c52164694d, Name: "master-10-0-0-5", PeerURLs: []string{"https://10.0.0.5:2380"}, ClientURLs: []string{"https://10.0.0.5:2379"}},
		{ID: 0xfffffffffffffff1, Name: "master-10-0-0-1", PeerURLs: []string{"https://10.0.0.1:2380"}, ClientURLs: []string{"https://10.0.0.1:2379"}},
		{ID: 0x91bc3c398fb3c146, Name: "master-10-0-0-12", PeerURLs: []string{"https://10.0.0.12:2380"}, ClientURLs: []string{"https://10.0.0.12:2379"}},
		{ID: 0x20000000000001, PeerURLs: []string{"https://10.0.0.13:2380"}}, // added, not started
	}}
	n.Set("kubectl", c.script(t))
	got, err := kubeadm.EtcdMembers(n.Ctx, n.Kubectl(), "master-10-0-0-5")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("members %+v", got)
	}
	for i, m := range got {
		want := c.members[i]
		if m.ID != want.ID || m.Name != want.Name || !slices.Equal(m.PeerURLs, want.PeerURLs) || !slices.Equal(m.ClientURLs, want.ClientURLs) {
			t.Errorf("member %d = %+v (ID %x), want %+v (ID %x)", i, m, m.ID, want, want.ID)
		}
	}
}

func TestRemoveEtcdMemberByExactName(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	c := &etcdCluster{clusterID: 0xcdf818194e3a8c32, members: []kubeadm.EtcdMember{
		{ID: 0x8e9e05c52164694d, Name: "master-10-0-0-5", PeerURLs: []string{"https://10.0.0.5:2380"}},
		{ID: 0xfffffffffffffff1, Name: "master-10-0-0-12", PeerURLs: []string{"https://10.0.0.12:2380"}},
		{ID: 0x0a1, Name: "master-10-0-0-1", PeerURLs: []string{"https://10.0.0.1:2380"}},
	}}
	n.Set("kubectl", c.script(t))
	k := n.Kubectl()

	res, err := kubeadm.RemoveEtcdMember(n.Ctx, k, "master-10-0-0-5", "master-10-0-0-1")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !strings.Contains(res.Detail, "a1 (master-10-0-0-1)") {
		t.Fatalf("result %v", res)
	}
	if got := n.Lines("kubectl"); !slices.Equal(got, []string{etcdctlPrefix + "member list -w json", etcdctlPrefix + "member remove a1"}) {
		t.Fatalf("kubectl runs %q", got)
	}
	// Only master-10-0-0-1 went, not master-10-0-0-12.
	if len(c.members) != 2 || c.members[1].Name != "master-10-0-0-12" {
		t.Fatalf("members left %+v", c.members)
	}
	// Gone: unchanged, and nothing removed.
	n.Reset()
	res, err = kubeadm.RemoveEtcdMember(n.Ctx, k, "master-10-0-0-5", "master-10-0-0-1")
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second remove: %v, %v", res, err)
	}
	if got := n.Lines("kubectl"); len(got) != 1 {
		t.Fatalf("second remove ran %q", got)
	}
	// The big ID is removed by its exact hex.
	res, err = kubeadm.RemoveEtcdMember(n.Ctx, k, "master-10-0-0-5", "master-10-0-0-12")
	if err != nil || !strings.Contains(res.Detail, "fffffffffffffff1") || len(c.members) != 1 {
		t.Fatalf("big ID: %v, %v, %+v", res, err, c.members)
	}
	// Not through its own member; not with a bad name.
	_, err = kubeadm.RemoveEtcdMember(n.Ctx, k, "master-10-0-0-5", "master-10-0-0-5")
	scripted.ParamsError(t, err, "name")
	_, err = kubeadm.EtcdMembers(n.Ctx, k, "")
	scripted.ParamsError(t, err, "via")
}

func TestEtcdMembersFailure(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		return scripted.NotFound("pods", "etcd-master-10-0-0-5")
	})
	_, err := kubeadm.EtcdMembers(n.Ctx, n.Kubectl(), "master-10-0-0-5")
	if err == nil || !strings.Contains(err.Error(), `pods "etcd-master-10-0-0-5" not found`) {
		t.Fatalf("no etcd pod: %v", err)
	}
}
