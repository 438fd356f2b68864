package kubeadm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// EtcdMember is one member of the cluster's etcd, as `etcdctl member
// list` reports it.
type EtcdMember struct {
	// ID is the member's ID. etcd IDs use all 64 bits, beyond what a
	// float64 holds exactly: never pass them through one.
	ID uint64
	// Name is the member's name: kubeadm names a stacked member after its
	// node. A member added but not started yet has none.
	Name string
	// PeerURLs and ClientURLs are where the member listens.
	PeerURLs, ClientURLs []string
}

// etcdctlFlags reach the local etcd member of a kubeadm control plane
// with the certificates kubeadm made (cmd/kubeadm/app/constants:
// EtcdListenClientPort 2379, the etcd CA and server pair under
// /etc/kubernetes/pki/etcd).
var etcdctlFlags = []string{
	"--endpoints=https://127.0.0.1:2379",
	"--cacert=/etc/kubernetes/pki/etcd/ca.crt",
	"--cert=/etc/kubernetes/pki/etcd/server.crt",
	"--key=/etc/kubernetes/pki/etcd/server.key",
}

// etcdPod is the etcd static pod of the control-plane node via: its
// mirror pod is "etcd-<node>" in kube-system (the kubelet names a static
// pod's mirror "<pod name>-<node name>": pkg/kubelet/config/common.go).
// The etcd image ships etcdctl.
func etcdPod(via string) string { return "etcd-" + via }

// etcdctl runs etcdctl with args in the etcd static pod of the
// control-plane node via ([kubeapi.Kubectl.Exec]). A read (readOnly)
// changes nothing and may run twice.
func etcdctl(ctx context.Context, k kubeapi.Kubectl, via string, readOnly bool, args ...string) (remote.Output, error) {
	argv := append(append([]string{"etcdctl"}, etcdctlFlags...), args...)
	return k.Exec(ctx, "kube-system", etcdPod(via), argv, kubeapi.ExecOptions{Idempotent: readOnly, ReadOnly: readOnly})
}

// memberListJSON is `etcdctl member list -w json`'s output: the
// MemberListResponse as encoding/json writes it
// (etcdctl/ctlv3/command/printer_json.go), members with the JSON names of
// etcdserverpb.Member (ID, name, peerURLs, clientURLs, isLearner). IDs
// are JSON numbers that can exceed 2^53; encoding/json parses a number
// into a uint64 field exactly (strconv.ParseUint on the literal).
type memberListJSON struct {
	Members []struct {
		ID         uint64   `json:"ID"`
		Name       string   `json:"name"`
		PeerURLs   []string `json:"peerURLs"`
		ClientURLs []string `json:"clientURLs"`
	} `json:"members"`
}

// EtcdMembers lists the etcd members, asking the local member of the
// control-plane node called via (`kubectl exec --namespace=kube-system
// etcd-VIA -- etcdctl ... member list -w json`).
func EtcdMembers(ctx context.Context, k kubeapi.Kubectl, via string) ([]EtcdMember, error) {
	if err := kubeapi.CheckObjectName("via", via); err != nil {
		return nil, err
	}
	out, err := etcdctl(ctx, k, via, true, "member", "list", "-w", "json")
	if err != nil {
		return nil, fmt.Errorf("etcd member list via %s: %w", via, err)
	}
	var list memberListJSON
	if err := json.Unmarshal(out.Stdout, &list); err != nil {
		return nil, fmt.Errorf("etcd member list via %s: decoding etcdctl's JSON: %w", via, err)
	}
	members := make([]EtcdMember, len(list.Members))
	for i, m := range list.Members {
		members[i] = EtcdMember{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs}
	}
	if len(members) == 0 {
		// etcd always lists at least the member that answers.
		return nil, fmt.Errorf("etcd member list via %s: etcdctl listed no member", via)
	}
	return members, nil
}

// RemoveEtcdMember removes the etcd member called name (the name of the
// master it ran on: exactly that name, never a prefix of another), asking
// the local member of the control-plane node via (`etcdctl member remove
// <hex ID>`, which parses the ID in base 16:
// etcdctl/ctlv3/command/member_command.go). A member that is not there
// is [lcm.Unchanged]. The member of via itself is refused: a master does
// not remove itself through its own etcd.
//
// Remove a dead master's member before its replacement joins: with three
// members and one dead, etcd has no quorum to spare, and a fourth member
// would need three of four.
func RemoveEtcdMember(ctx context.Context, k kubeapi.Kubectl, via, name string) (lcm.Result, error) {
	if err := kubeapi.CheckObjectName("name", name); err != nil {
		return lcm.Unchanged, err
	}
	if name == via {
		return lcm.Unchanged, optProblem("name", "%q is the node whose etcd member is asked (via): remove it through another master", name)
	}
	members, err := EtcdMembers(ctx, k, via)
	if err != nil {
		return lcm.Unchanged, err
	}
	for _, m := range members {
		if m.Name != name {
			continue
		}
		id := strconv.FormatUint(m.ID, 16)
		if _, err := etcdctl(ctx, k, via, false, "member", "remove", id); err != nil {
			return lcm.Unchanged, fmt.Errorf("etcd member remove %s (%s) via %s: %w", id, name, via, err)
		}
		return lcm.Changed(fmt.Sprintf("removed etcd member %s (%s)", id, name)), nil
	}
	return lcm.Unchanged, nil
}
