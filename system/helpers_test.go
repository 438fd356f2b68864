package system_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// vm is a simulated Ubuntu 22.04 machine and an SDK connection to it as
// "ubuntu", who may sudo without a password.
type vm struct {
	t   *testing.T
	ctx context.Context
	*ubuntu.Machine
	srv *sshtest.Server
	h   *remote.SSHHost
}

func newVM(t *testing.T, opts ubuntu.Options) *vm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	srv := sshtest.Start(t, sshtest.Config{
		Hostname: "node-1",
		Users:    []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}},
	})
	m := ubuntu.Install(srv, opts)
	h, err := remote.NewSSHHost(remote.Config{Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	// The connection's sudo probe, out of the way of command counts.
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	return &vm{t: t, ctx: ctx, Machine: m, srv: srv, h: h}
}

// step runs a step and returns its result, the commands it took, and its
// error.
func (v *vm) step(fn func(ctx context.Context, h remote.Host) (lcm.Result, error)) (lcm.Result, []string, error) {
	v.t.Helper()
	before := len(v.srv.Transcript())
	res, err := fn(v.ctx, v.h)
	var cmds []string
	for _, e := range v.srv.Transcript()[before:] {
		cmds = append(cmds, e.Command)
	}
	return res, cmds, err
}

// count counts the commands that contain s.
func count(cmds []string, s string) int {
	n := 0
	for _, c := range cmds {
		if strings.Contains(c, s) {
			n++
		}
	}
	return n
}

// paramsError checks that err is an *lcm.ParamsError mentioning want.
func paramsError(t *testing.T, err error, want string) {
	t.Helper()
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want an *lcm.ParamsError with %q", err, want)
	}
}
