package realkube_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

func memberNames(ms []kube.EtcdMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// TestEtcdMembership: two members join the first; removing the first
// leaves the API server serving; adding a member of an existing name
// replaces it; an unknown member is ErrEtcdMemberNotFound.
func TestEtcdMembership(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "etcd-1")
	etcd := cp.Etcd()

	clusterID, members, err := etcd.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if clusterID == 0 || len(members) != 1 || members[0].Name != "etcd-1" || len(members[0].ClientURLs) != 1 || len(members[0].PeerURLs) != 1 {
		t.Fatalf("initial membership: cluster %x, %+v", clusterID, members)
	}
	first := members[0]

	for _, name := range []string{"etcd-2", "etcd-3"} {
		start := time.Now()
		if err := etcd.Add(ctx, kube.EtcdPeer{Name: name, Address: "192.168.0.5"}); err != nil {
			t.Fatalf("adding %s: %v", name, err)
		}
		t.Logf("added %s in %s", name, time.Since(start).Round(time.Millisecond))
	}
	id, members, err := etcd.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(memberNames(members)); got != "[etcd-1 etcd-2 etcd-3]" {
		t.Errorf("members after two adds: %s", got)
	}
	if id != clusterID {
		t.Errorf("cluster ID changed from %x to %x", clusterID, id)
	}
	for _, m := range members {
		if m.ID == 0 || len(m.ClientURLs) != 1 || len(m.PeerURLs) != 1 {
			t.Errorf("member %+v: want an ID and one client and peer URL", m)
		}
	}

	start := time.Now()
	if err := etcd.Remove(ctx, first.ID); err != nil {
		t.Fatalf("removing the first member: %v", err)
	}
	t.Logf("removed the first member in %s", time.Since(start).Round(time.Millisecond))
	_, members, err = etcd.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(memberNames(members)); got != "[etcd-2 etcd-3]" {
		t.Errorf("members after removing the first: %s", got)
	}

	// The API server writes and reads through the remaining members (its
	// etcd client may need a moment to reconnect).
	api := cp.API()
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := api.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after-removal"},
			Data:       map[string]string{"k": "v"},
		})
		return err == nil, nil
	}, func() string { return "no write after removing the first member" })
	t.Logf("the API server wrote %s after the removal", time.Since(start).Round(time.Millisecond))
	o, err := api.Get(ctx, kube.KindConfigMap, "default", "after-removal")
	if err != nil {
		t.Fatal(err)
	}
	if o.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Errorf("read back %+v", o)
	}

	// Adding a member of a name the cluster has replaces it (a control
	// plane that rejoins).
	old := members[0]
	if err := etcd.Add(ctx, kube.EtcdPeer{Name: old.Name, Address: "192.168.0.5"}); err != nil {
		t.Fatalf("re-adding %s: %v", old.Name, err)
	}
	_, members, err = etcd.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(memberNames(members)); got != "[etcd-3 etcd-2]" {
		t.Errorf("members after re-adding etcd-2: %s", got)
	}
	if members[1].ID == old.ID {
		t.Errorf("re-added etcd-2 kept its ID %x", old.ID)
	}

	if err := etcd.Remove(ctx, first.ID); !errors.Is(err, kube.ErrEtcdMemberNotFound) {
		t.Errorf("removing a removed member: %v, want ErrEtcdMemberNotFound", err)
	}
	if err := etcd.Remove(ctx, 0x1234); !errors.Is(err, kube.ErrEtcdMemberNotFound) {
		t.Errorf("removing an unknown member: %v, want ErrEtcdMemberNotFound", err)
	}
}
