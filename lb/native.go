package lb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// HAProxyPackage and HAProxyUnit are Ubuntu's HAProxy package and its
// systemd unit, whose ExecReload checks the configuration (`haproxy -Ws
// -f $CONFIG -c -q`) and then signals the master process, which starts
// new workers and lets the old ones finish their connections.
const (
	HAProxyPackage = "haproxy"
	HAProxyUnit    = "haproxy"
)

// InstallHAProxy installs Ubuntu's haproxy package on the load balancer
// VM ([system.InstallPackages]: `apt-get install` only when it is not
// installed; a converged VM costs one command). The package enables and
// starts haproxy.service with its own configuration, which has no
// frontend. [ConfigureLB] does this first itself; a hook may call it
// earlier, to install while kubespray builds the cluster.
func InstallHAProxy(ctx context.Context, h remote.Host) (lcm.Result, error) {
	res, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{HAProxyPackage}})
	if err != nil {
		return res, stepErr(h, "installing "+HAProxyPackage, err)
	}
	return res, nil
}

// ConfigureLB makes the load balancer VM h serve cfg: HAProxy installed
// ([InstallHAProxy]), [ConfigFile] holding [Render]'s bytes for cfg, and
// haproxy.service enabled, running and loaded with them.
//
// The file is written only when its bytes differ, beside the old one
// (system.ConfigureDaemon), checked there by the VM's own `haproxy -c
// -f STAGED`, and only then renamed into place; haproxy.service is then
// reloaded (a reload, not a restart: established connections stay). A
// configuration HAProxy refuses is a *system.CheckError carrying its
// alerts, and the old file and the running HAProxy stay as they were. A
// converged VM costs two commands and no write or reload; a run that
// fails between the rename and the reload leaves the reload owed to the
// next run (the unit's restart marker).
//
// Backends are added and removed by building cfg from the nodes each
// time ([NewConfig], [Config.AddNodes], [Config.RemoveNodes]): the file is
// data, never edited line by line.
func ConfigureLB(ctx context.Context, h remote.Host, cfg Config) (lcm.Result, error) {
	content, err := Render(cfg)
	if err != nil {
		return lcm.Unchanged, err
	}
	res, err := InstallHAProxy(ctx, h)
	if err != nil {
		return res, err
	}
	r, err := system.ConfigureDaemon(ctx, h, system.DaemonOptions{
		UnitOptions: system.UnitOptions{Unit: HAProxyUnit, Inputs: map[string]string{ConfigFile: string(content)}},
		// haproxy(1): -c checks the configuration and exits (0 valid,
		// 1 not), -f names it.
		Check: func(staged map[string]string) []string { return checkArgv(staged[ConfigFile]) },
	})
	res = res.And(r)
	if err != nil {
		return res, stepErr(h, "haproxy.service", err)
	}
	return res, nil
}

// checkArgv is HAProxy's check of the configuration file f.
func checkArgv(f string) []string { return []string{"haproxy", "-c", "-f", f} }

// stepErr wraps a step's error with the host, except for parameter
// errors, which name their fields and need no host.
func stepErr(h remote.Host, what string, err error) error {
	var pe *lcm.ParamsError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("lb: %s: %s: %w", h.Name(), what, err)
}

// Backends reads the servers of each backend (and listen) section of a
// haproxy.cfg, by section name, in file order; Address is as written,
// with its port where there is one ("10.0.0.5:6443", "10.0.0.21"). It
// reads what [Render] writes, and what a script wrote, to show or
// compare a load balancer's backends; it does not check the file
// (HAProxy does: `haproxy -c`).
func Backends(haproxyCfg []byte) map[string][]Server {
	out := map[string][]Server{}
	section := ""
	for line := range strings.Lines(string(haproxyCfg)) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "backend" || f[0] == "listen":
			section = ""
			if len(f) > 1 {
				section = f[1]
				if _, ok := out[section]; !ok {
					out[section] = nil
				}
			}
		case f[0] == "global" || f[0] == "defaults" || f[0] == "frontend" || f[0] == "resolvers" ||
			f[0] == "userlist" || f[0] == "peers" || f[0] == "mailers" || f[0] == "program" ||
			f[0] == "http-errors" || f[0] == "ring" || f[0] == "cache":
			section = ""
		case f[0] == "server" && section != "" && len(f) >= 3:
			out[section] = append(out[section], Server{Name: f[1], Address: f[2]})
		}
	}
	return out
}
