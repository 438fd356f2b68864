package mgmtkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// HostsParams is the part of additionalParams this driver owns.
type HostsParams struct {
	Entries []string `json:"entries" params:"required"`
}

// Validate reports every bad entry with its path.
func (p *HostsParams) Validate(v *lcm.Validator) {
	for i, e := range p.Entries {
		if f := strings.Fields(e); len(f) != 2 || net.ParseIP(f[0]) == nil {
			v.At("entries").Index(i).Errorf(`must be "<IP> <hostname>", got %q`, e)
		}
	}
}

// ConfigureHosts is a step: it makes the managed block of /etc/hosts hold
// the entries, and reports whether it had to change anything.
func ConfigureHosts(ctx context.Context, h remote.Host, entries []string) (lcm.Result, error) {
	changed, err := remote.EditBlock(ctx, h, "/etc/hosts", "cluster-nodes", entries, remote.FileOptions{Sudo: true})
	if err != nil || !changed {
		return lcm.Unchanged, err
	}
	return lcm.Changed("updated /etc/hosts"), nil
}

// Driver implements the instantiate_end hook; NopDriver supplies the others.
type Driver struct {
	lcm.NopDriver
	Nodes []remote.Host
}

// InstantiateEnd decodes its parameters, then fans ConfigureHosts out over
// the nodes, lcm.DefaultLimit (32) at a time.
func (d *Driver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	var p HostsParams
	err := lcm.DecodeParams(op.Request.AdditionalParams, lcm.DecodeOptions{Package: op.Package},
		lcm.Param("hosts_param", &p).Required())
	if err != nil {
		return nil, err // every problem, with its path; nothing has run
	}
	res := &lcm.HookResult{Hook: lcm.InstantiateEnd}
	results, err := lcm.OnHosts(ctx, "configure-hosts", d.Nodes, func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return ConfigureHosts(ctx, h, p.Entries)
	}, lcm.Limit(10))
	res.Add("configure-hosts", results)
	return res, err
}

// Example composes a hook from a step and runs it twice against two fake
// VMs: the second run changes nothing. A request with a bad entry is
// rejected before any command runs.
func Example() {
	var nodes []remote.Host
	var vms []*sshtest.Server
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		vm, err := sshtest.NewServer(sshtest.Config{Addr: ip + ":0", Users: []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}}})
		if err != nil {
			log.Fatal(err)
		}
		defer vm.Close()
		vms = append(vms, vm)
		h, err := remote.NewSSHHost(remote.Config{Addr: vm.Addr(), Name: "node-" + ip, User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: vm.HostKeyPolicy()})
		if err != nil {
			log.Fatal(err)
		}
		defer h.Close()
		nodes = append(nodes, h)
	}
	driver := &Driver{Nodes: nodes}
	run := func(params string) {
		op := &lcm.InstantiateOp{Request: &lcm.InstantiateVnfRequest{AdditionalParams: json.RawMessage(params)}}
		res, err := lcm.Invoke(context.Background(), driver, lcm.InstantiateEnd, op)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, step := range res.Steps {
			for _, hr := range step.Hosts {
				fmt.Printf("%s %s: %s\n", step.Step, hr.Host, hr.Result)
			}
		}
	}
	good := `{"hosts_param": {"entries": ["10.0.0.11 master1", "10.0.0.21 worker1"]}}`
	run(good)
	run(good)
	before := len(vms[0].Transcript())
	run(`{"hosts_param": {"entries": ["10.0.0.11; reboot"], "entires": []}}`)
	fmt.Println("commands run for the bad request:", len(vms[0].Transcript())-before)
	// Output:
	// configure-hosts node-127.0.0.1: changed: updated /etc/hosts
	// configure-hosts node-127.0.0.2: changed: updated /etc/hosts
	// configure-hosts node-127.0.0.1: unchanged
	// configure-hosts node-127.0.0.2: unchanged
	// error: hosts_param.entires: unknown key (did you mean "entries"?)
	// hosts_param.entries[0]: must be "<IP> <hostname>", got "10.0.0.11; reboot"
	// commands run for the bad request: 0
}
