package kubeadm_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// In compatibility mode the install script of a master that joins (a
// heal) gets the join token and the certificate key as its -t and -k
// flags, the reference's, yet no process on any node has either in its
// argv (where ps shows it to every user for the whole install).
func TestCompatModeKeepsJoinSecretsOutOfArgv(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 1}, sim.Options{})
	c.Instantiate()
	masters := c.VNF.HostsWithRole(lcm.RoleMaster)
	old := masters[len(masters)-1]
	c.Op.Package = compatPackage(t)
	c.Hooks.InstallScript, c.Hooks.ReadyTimeout = true, 2*time.Second
	// The recording script joins nothing: the heal fails waiting for the
	// node, after the script ran.
	if err := c.Heal(old); err == nil {
		t.Fatal("the heal succeeded with a script that joins nothing")
	}
	var healed *sim.Host
	for _, m := range c.VNF.HostsWithRole(lcm.RoleMaster) {
		if !slices.ContainsFunc(masters, func(o *sim.Host) bool { return o.ServerID == m.ServerID }) {
			healed = m
		}
	}
	if healed == nil {
		t.Fatal("no new master")
	}
	rec, err := healed.FS().ReadFile("/home/ubuntu/record")
	if err != nil {
		t.Fatal(err)
	}
	var token, key string
	for _, l := range strings.Split(string(rec), "\n") {
		if v, ok := strings.CutPrefix(l, "t="); ok {
			token = v
		}
		if v, ok := strings.CutPrefix(l, "k="); ok {
			key = v
		}
	}
	if len(token) != 23 || len(key) != 64 {
		t.Fatalf("the script did not get -t and -k:\n%s", rec)
	}
	for _, h := range c.VNF.Hosts() {
		for _, call := range h.SSH.Calls() {
			for _, a := range call.Args {
				if strings.Contains(a, token) || strings.Contains(a, key) {
					t.Errorf("%s: a join secret in the argv of %.120q", h.Resource, call.Args)
				}
			}
		}
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, token) || strings.Contains(e.Command, key) {
				t.Errorf("%s: a join secret in the command %.200q", h.Resource, e.Command)
			}
		}
	}
}
