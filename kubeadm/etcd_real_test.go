package kubeadm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// realEtcd starts an etcd member (Debian's etcd-server) named name on
// loopback with its peer URL peer, and returns its client URL; it is
// stopped when the test ends. initialCluster is etcd's
// --initial-cluster; join makes the member join an existing cluster.
func realEtcd(t *testing.T, name, peer, initialCluster string, join bool) string {
	t.Helper()
	for _, prog := range []string{"etcd", "etcdctl"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed (Debian: etcd-server, etcd-client): %v", prog, err)
		}
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	state := "new"
	if join {
		state = "existing"
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "etcd",
		"--name", name, "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", initialCluster, "--initial-cluster-state", state, "--log-level", "error")
	logFile, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	if join {
		// A learner serves no client requests (not even health).
		return client
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := exec.Command("etcdctl", "--endpoints="+client, "endpoint", "health").Run(); err == nil {
			return client
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("etcd did not become healthy:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// etcdctl runs the real etcdctl against endpoint.
func etcdctl(t *testing.T, endpoint string, args ...string) string {
	t.Helper()
	out, err := exec.Command("etcdctl", append([]string{"--endpoints=" + endpoint}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// simpleIDs parses `etcdctl member list -w simple` ("<hex ID>, started,
// <name>, <peer URLs>, <client URLs>, <is learner>" per member:
// etcdctl/ctlv3/command/printer_simple.go): each member's ID by name,
// read from its hex text, independently of the JSON.
func simpleIDs(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	ids := map[string]uint64{}
	for line := range strings.Lines(strings.TrimSpace(out)) {
		f := strings.Split(line, ", ")
		id, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || len(f) < 3 {
			t.Fatalf("member line %q: %v", line, err)
		}
		ids[f[2]] = id
	}
	return ids
}

// peerURL returns a loopback peer URL on a free port.
func peerURL(t *testing.T) string { return fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) }

// The steps' etcd commands against the real etcdctl and a real etcd of
// two members: the JSON of `member list -w json` decodes with every ID
// exact (etcd's IDs are random 64-bit numbers, mostly beyond 2^53), and
// `member remove` takes the ID as RemoveEtcdMember writes it.
func TestEtcdStepsAgainstRealEtcd(t *testing.T) {
	peer1, peer2 := peerURL(t), peerURL(t)
	endpoint := realEtcd(t, "master-10-0-0-5", peer1, "master-10-0-0-5="+peer1, false)
	// A second member, a learner (it does not count for the quorum, so
	// the cluster keeps working when it goes), started so that it has
	// its name.
	etcdctl(t, endpoint, "member", "add", "master-10-0-0-6", "--learner", "--peer-urls="+peer2)
	realEtcd(t, "master-10-0-0-6", peer2, "master-10-0-0-5="+peer1+",master-10-0-0-6="+peer2, true)

	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		// kubectl exec into the etcd pod becomes etcdctl against the
		// test's etcd (plain HTTP, no client certificates).
		rest, found := strings.CutPrefix(inv.Line(), etcdctlPrefix)
		if !found {
			return scripted.Reply{Stderr: "unexpected kubectl " + inv.Line(), Code: 2}
		}
		cmd := exec.Command("etcdctl", append([]string{"--endpoints=" + endpoint}, strings.Fields(rest)...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			return scripted.Reply{Stderr: err.Error(), Code: 127}
		}
		return scripted.Reply{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
	})
	k := n.Kubectl()

	// The learner publishes its name once it has started.
	var members []kubeadm.EtcdMember
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if members, err = kubeadm.EtcdMembers(n.Ctx, k, "master-10-0-0-5"); err != nil {
			t.Fatal(err)
		}
		if len(members) == 2 && members[0].Name != "" && members[1].Name != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("members %+v", members)
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := simpleIDs(t, etcdctl(t, endpoint, "member", "list", "-w", "simple"))
	for _, m := range members {
		if id, ok := want[m.Name]; !ok || id != m.ID || len(m.PeerURLs) != 1 || len(m.ClientURLs) != 1 {
			t.Errorf("member %+v: etcdctl -w simple says ID %x", m, id)
		}
	}
	t.Logf("member IDs %x, %x", members[0].ID, members[1].ID)

	res, err := kubeadm.RemoveEtcdMember(n.Ctx, k, "master-10-0-0-5", "master-10-0-0-6")
	if err != nil || !res.Changed {
		t.Fatalf("remove: %v, %v", res, err)
	}
	after := simpleIDs(t, etcdctl(t, endpoint, "member", "list", "-w", "simple"))
	if _, still := after["master-10-0-0-6"]; still || len(after) != 1 {
		t.Fatalf("after the remove: %v", after)
	}
	if res, err := kubeadm.RemoveEtcdMember(n.Ctx, k, "master-10-0-0-5", "master-10-0-0-6"); err != nil || res.Changed {
		t.Fatalf("second remove: %v, %v", res, err)
	}
}
