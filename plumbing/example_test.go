package plumbing_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"sort"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// HelloDriver is a minimal management driver: at instantiate_end it runs
// two steps on every master. The VNFM sets Plumbing once; each hook runs
// on the hook runner (Config.Run), whose session dials every node once
// for all the hook's steps, records each step in the hook's result and
// closes the connections when the hook returns.
type HelloDriver struct {
	lcm.NopDriver
	Plumbing plumbing.Config
	// Login would come from the driver's typed additionalParams
	// (master_node.username and master_node.password).
	Login plumbing.Login
}

// InstantiateEnd is the hook.
func (d *HelloDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	return d.Plumbing.Run(ctx, lcm.InstantiateEnd, op.Instance, plumbing.Credentials{lcm.RoleMaster: d.Login}, func(ctx context.Context, r *plumbing.Runner) error {
		masters, err := r.Session().Nodes(ctx, heat.Group{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1"})
		if err != nil {
			return err
		}
		if err := r.OnNodes(ctx, "greet", masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			_, err := h.Run(ctx, remote.Command("echo", "hello", n.NICAddress))
			return lcm.Unchanged, err
		}); err != nil {
			return err
		}
		return r.OnNodes(ctx, "write-motd", masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			changed, err := h.WriteFile(ctx, "/etc/motd", strings.NewReader("managed by mgmtkit\n"), remote.FileOptions{Sudo: true})
			if changed {
				return lcm.Changed("wrote /etc/motd"), err
			}
			return lcm.Unchanged, err
		})
	})
}

// A driver is tested without SSH by setting Config.Dial to hand out fake
// hosts (here: printHost, which prints what it is asked to do). Heat is a
// fake VIM from heat/heattest with two masters.
func ExampleConfig_Run() {
	vim, err := heattest.NewServer(heattest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer vim.Close()
	top := vim.CreateStack("vnf-inst-1")
	top.AddGroup("master_instance", heattest.GroupSpec{MinSize: 2, MaxSize: 2, Desired: 2,
		Member: func(m *heattest.Stack, i int) {
			m.AddPort("masterNode_CP1", fmt.Sprintf("10.10.0.%d", 11+i))
			m.AddServer("server", "masterNode_CP1")
		}})

	var mu sync.Mutex
	var lines []string
	record := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	driver := &HelloDriver{
		Plumbing: plumbing.Config{
			// In production: the VMs' host-key policy (known_hosts) and
			// nothing else; Heat defaults to the instance's VIM.
			SSH: func(context.Context) (remote.Config, error) {
				return remote.Config{HostKey: remote.InsecureIgnoreHostKey()}, nil
			},
			Heat: func(ctx context.Context, _ *lcm.VnfInstance) (*heat.Client, error) {
				ao := vim.AuthOptions()
				return heat.ConnectVIM(ctx, lcm.VimConnectionInfo{VimType: "openstack",
					InterfaceInfo: map[string]any{"endpoint": vim.IdentityEndpoint()},
					AccessInfo:    lcm.AccessInfo{"username": ao.Username, "password": ao.Password, "project": ao.TenantName}}, nil)
			},
			Dial: func(_ context.Context, cfg remote.Config) (remote.Host, error) {
				record("%s: dial as %s", cfg.Addr, cfg.User)
				return &printHost{addr: cfg.Addr, record: record}, nil
			},
		},
		Login: plumbing.Login{Username: "ubuntu", Password: remote.NewSecret("s3cret")},
	}
	res, err := lcm.Invoke(context.Background(), driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &lcm.VnfInstance{ID: "inst-1"}})
	if err != nil {
		panic(err)
	}
	sort.Strings(lines) // the masters run in parallel
	for _, line := range lines {
		fmt.Println(line)
	}
	for _, step := range res.Steps {
		fmt.Printf("%s changed=%v\n", step.Step, step.Hosts.Changed())
	}
	// Output:
	// 10.10.0.11: close
	// 10.10.0.11: dial as ubuntu
	// 10.10.0.11: echo hello 10.10.0.11
	// 10.10.0.11: write /etc/motd
	// 10.10.0.12: close
	// 10.10.0.12: dial as ubuntu
	// 10.10.0.12: echo hello 10.10.0.12
	// 10.10.0.12: write /etc/motd
	// greet changed=false
	// write-motd changed=true
}

// printHost is a remote.Host that records what it is asked to do.
type printHost struct {
	addr   string
	record func(format string, args ...any)
}

func (h *printHost) Name() string { return h.addr }
func (h *printHost) Addr() string { return h.addr }
func (h *printHost) Run(_ context.Context, c remote.Cmd) (remote.Output, error) {
	h.record("%s: %s", h.addr, remote.Quote(c.Args...))
	return remote.Output{}, nil
}
func (h *printHost) WriteFile(_ context.Context, path string, r io.Reader, _ remote.FileOptions) (bool, error) {
	h.record("%s: write %s", h.addr, path)
	return true, nil
}
func (h *printHost) ReadFile(_ context.Context, path string, _ remote.FileOptions) ([]byte, error) {
	return nil, fmt.Errorf("%s: no file %s", h.addr, path)
}
func (h *printHost) Close() error { h.record("%s: close", h.addr); return nil }
