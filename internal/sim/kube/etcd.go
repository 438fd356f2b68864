package kube

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// EtcdMember is one member of a cluster's stacked etcd, as etcdctl
// member list shows it (go.etcd.io/etcd/api/v3/etcdserverpb Member).
type EtcdMember struct {
	// ID is the member ID etcd chose (etcdctl prints it in hex in
	// tables and messages, as a decimal uint64 in JSON).
	ID uint64
	// Name is the member name: kubeadm runs etcd with --name set to the
	// node name.
	Name string
	// PeerURLs are https://ADDRESS:2380.
	PeerURLs []string
	// ClientURLs are https://ADDRESS:2379.
	ClientURLs []string
}

func randomUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// memoryEtcd is the model's etcd: a membership list, one member per
// control plane (kubeadm init's local etcd, then each joining control
// plane's, cmd/kubeadm/app/phases/etcd/local.go), the order they joined.
type memoryEtcd struct {
	mu        sync.Mutex
	members   []EtcdMember
	clusterID uint64
}

func (e *memoryEtcd) add(peer EtcdPeer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.members = slices.DeleteFunc(e.members, func(m EtcdMember) bool { return m.Name == peer.Name })
	e.members = append(e.members, EtcdMember{
		ID:         randomUint64(),
		Name:       peer.Name,
		PeerURLs:   []string{"https://" + net.JoinHostPort(peer.Address, "2380")},
		ClientURLs: []string{"https://" + net.JoinHostPort(peer.Address, "2379")},
	})
}

func (e *memoryEtcd) Members(context.Context) (uint64, []EtcdMember, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clusterID, slices.Clone(e.members), nil
}

func (e *memoryEtcd) Add(_ context.Context, peer EtcdPeer) error {
	e.add(peer)
	return nil
}

func (e *memoryEtcd) Remove(_ context.Context, id uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := slices.IndexFunc(e.members, func(m EtcdMember) bool { return m.ID == id })
	if i < 0 {
		return ErrEtcdMemberNotFound
	}
	e.members = slices.Delete(e.members, i, i+1)
	return nil
}

// removeEtcdMemberByName removes a member of c by name (kubeadm reset's
// remove-etcd-member phase), reporting whether it was there.
func (c *Cluster) removeEtcdMemberByName(ctx context.Context, name string) (bool, error) {
	_, members, err := c.cp.Etcd().Members(ctx)
	if err != nil {
		return false, err
	}
	for _, m := range members {
		if m.Name == name {
			return true, c.cp.Etcd().Remove(ctx, m.ID)
		}
	}
	return false, nil
}

// etcdctlFlags are the flags of etcdctl 3.6 the exec handler accepts.
var etcdctlFlags = sshtest.OptionSpec{
	Short:    "w:",
	Long:     []string{"endpoints=", "cacert=", "cert=", "key=", "write-out="},
	Modeller: "internal/sim/kube",
}

// EtcdExec runs etcdctl in the etcd static pod pod (kubectl exec
// --namespace=kube-system etcd-NODE -- etcdctl ...), for simapi's
// kubectl: `member list -w json` and `member remove <hex ID>`, printed as
// etcdctl 3.6 prints them (etcdctl/ctlv3/command/printer_json.go: the
// MemberListResponse as JSON, IDs as decimal uint64; printer.go
// MemberRemove: "Member %16x removed from cluster %16x"). The certificate
// files must exist on the pod's node (the pod mounts
// /etc/kubernetes/pki/etcd from the host). It returns the exit status.
func (w *World) EtcdExec(ctx context.Context, p *sshtest.Process, pod *corev1.Pod, argv []string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(p.Stderr, "Error: "+format+"\n", args...)
		return 1
	}
	if len(argv) == 0 || argv[0] != "etcdctl" {
		name := ""
		if len(argv) > 0 {
			name = argv[0]
		}
		fmt.Fprintf(p.Stderr, "error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown\n", name)
		return 126
	}
	c, code, ok := etcdctlFlags.Parse(p, argv[1:], false)
	if !ok {
		return code
	}
	m, mb := w.machineOfNode(ctx, pod.Spec.NodeName, nil, pod)
	if m == nil || !mb.controlPlane || !m.Server().FS().Exists(manifestsDir+"/etcd.yaml") || !m.Service("kubelet").Active {
		return fail("context deadline exceeded")
	}
	for _, f := range []string{"--cacert", "--cert", "--key"} {
		if v, ok := c.Value(f); ok && !m.Server().FS().Exists(v) {
			return fail("open %s: no such file or directory", v)
		}
	}
	if v, ok := c.Value("--endpoints"); ok && v != "https://127.0.0.1:2379" && !strings.HasSuffix(v, ":2379") {
		return fail("context deadline exceeded")
	}
	cl := mb.cluster
	ops := c.Operands
	switch {
	case len(ops) == 2 && ops[0] == "member" && ops[1] == "list":
		if out, _ := c.Value("-w", "--write-out"); out != "json" {
			return p.Fail(2, "member list without -w json is not modelled by internal/sim/kube")
		}
		return cl.printMemberList(ctx, p, mb.node)
	case len(ops) == 3 && ops[0] == "member" && ops[1] == "remove":
		id, err := strconv.ParseUint(ops[2], 16, 64)
		if err != nil {
			return fail("bad member ID arg (strconv.ParseUint: parsing %q: invalid syntax), expecting ID in Hex", ops[2])
		}
		if err := cl.cp.Etcd().Remove(ctx, id); err != nil {
			return fail("%v", strings.TrimPrefix(err.Error(), "Error: "))
		}
		cid, _, err := cl.cp.Etcd().Members(ctx)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(p.Stdout, "Member %16x removed from cluster %16x\n", id, cid)
		return 0
	}
	return p.Fail(2, "etcdctl %s is not modelled by internal/sim/kube", strings.Join(argv[1:], " "))
}

// printMemberList prints `etcdctl member list -w json`.
func (c *Cluster) printMemberList(ctx context.Context, p *sshtest.Process, via string) int {
	cid, ms, err := c.cp.Etcd().Members(ctx)
	if err != nil {
		fmt.Fprintf(p.Stderr, "Error: %v\n", err)
		return 1
	}
	type jm struct {
		ID         uint64   `json:"ID"`
		Name       string   `json:"name"`
		PeerURLs   []string `json:"peerURLs"`
		ClientURLs []string `json:"clientURLs,omitempty"`
	}
	var members []jm
	var self uint64
	for _, m := range ms {
		members = append(members, jm(m))
		if m.Name == via {
			self = m.ID
		}
	}
	out := struct {
		Header struct {
			ClusterID uint64 `json:"cluster_id"`
			MemberID  uint64 `json:"member_id"`
			RaftTerm  uint64 `json:"raft_term"`
		} `json:"header"`
		Members []jm `json:"members"`
	}{Members: members}
	out.Header.ClusterID, out.Header.MemberID, out.Header.RaftTerm = cid, self, uint64(len(ms))+1
	data, _ := json.Marshal(out)
	fmt.Fprintf(p.Stdout, "%s\n", data)
	return 0
}

// machineOfNode finds the machine whose kubelet registers node: in
// cluster c when c is not nil, a live member before a forgotten one; for
// a pod (c nil), the member of the cluster that has the pod.
func (w *World) machineOfNode(ctx context.Context, node string, c *Cluster, pod *corev1.Pod) (*ubuntu.Machine, *member) {
	w.mu.Lock()
	type cand struct {
		m  *ubuntu.Machine
		mb *member
	}
	var cands []cand
	for m, mb := range w.members {
		if mb.node == node && (c == nil || mb.cluster == c) {
			cands = append(cands, cand{m, mb})
		}
	}
	w.mu.Unlock()
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.mb.gone == b.mb.gone:
			return 0
		case a.mb.gone:
			return 1
		}
		return -1
	})
	for _, k := range cands {
		if pod == nil {
			return k.m, k.mb
		}
		if o, err := k.mb.cluster.API.Get(ctx, KindPod, pod.Namespace, pod.Name); err == nil && (pod.UID == "" || o.GetUID() == pod.UID) {
			return k.m, k.mb
		}
	}
	return nil, nil
}
