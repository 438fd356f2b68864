package lb_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

const sampleScript = "Scripts/ExternalLB_installation.sh"

// scriptArgs are the reference's -m and -w of the VM's cluster: the
// nodes' NIC addresses.
func (v *lbVM) scriptArgs(script string) lb.ScriptOptions {
	o := lb.ScriptOptions{Script: script}
	for _, h := range v.vnf.HostsWithRole(lcm.RoleMaster) {
		o.Masters = append(o.Masters, h.NICAddress)
	}
	for _, h := range v.vnf.HostsWithRole(lcm.RoleWorker) {
		o.Workers = append(o.Workers, h.NICAddress)
	}
	return o
}

// leftovers returns what the runs left in /tmp.
func (v *lbVM) leftovers() []string {
	entries, _ := v.host.FS().ReadDir("/tmp")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// The sample package's script writes "server nodeN IP check" without a
// port in the NodePort backend: HAProxy refuses it, the script's own
// `systemctl restart haproxy` fails, and the error says both, with
// HAProxy's alert for every such server.
func TestRunScriptReportsTheSampleScriptsDefect(t *testing.T) {
	v := newLBVM(t)
	o := v.scriptArgs(sampleScript)
	res, err := lb.RunScript(v.ctx, v.ssh, lcm.NewPackage(samples.VNFPackage()), o)
	if !res.Changed {
		t.Errorf("result %v: the script ran", res)
	}
	var se *lb.ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *lb.ScriptError", err)
	}
	var ce *remote.CommandError
	if !errors.As(se.ScriptErr, &ce) || ce.ExitCode == 0 {
		t.Errorf("the script's own failure: %v", se.ScriptErr)
	}
	if se.Script != sampleScript || se.ExitCode != 1 || se.Host != v.ssh.Name() {
		t.Errorf("%+v", se)
	}
	for i := range len(o.Masters) + len(o.Workers) {
		want := "backend 'kubernetes-nodeport': server 'node" + string(rune('1'+i)) + "' has neither service port nor check port nor tcp_check rule 'connect' with port information."
		if !strings.Contains(se.Alerts, want) {
			t.Errorf("alerts lack %q:\n%s", want, se.Alerts)
		}
	}
	for _, want := range []string{"without a port, which HAProxy refuses since 1.8", "native mode", sampleScript} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	// The script left its file; HAProxy serves nothing.
	if cfg := v.read(lb.ConfigFile); !strings.Contains(cfg, "    server node1 "+o.Masters[0]+" check\n") {
		t.Errorf("haproxy.cfg:\n%s", cfg)
	}
	if st := v.host.Machine.Service("haproxy"); st.Active {
		t.Errorf("haproxy.service runs a configuration it refuses: %+v", st)
	}
	// Uploaded to a private directory, run with the reference's flags,
	// removed afterwards; never a fixed /tmp name.
	var ran []string
	for _, c := range v.host.SSH.CallsTo("bash") {
		if len(c.Args) > 3 && strings.HasSuffix(c.Args[len(c.Args)-5], "/ExternalLB_installation.sh") {
			ran = c.Args[len(c.Args)-5:]
		}
	}
	if len(ran) != 5 || !strings.HasPrefix(ran[0], "/tmp/mgmtkit-lb.") || ran[1] != "-m" || ran[2] != strings.Join(o.Masters, ",") || ran[3] != "-w" || ran[4] != strings.Join(o.Workers, ",") {
		t.Errorf("the script ran as %q; calls:\n%s", ran, strings.Join(v.calls(), "\n"))
	}
	for _, name := range v.leftovers() {
		if strings.HasPrefix(name, "mgmtkit-lb.") || strings.Contains(name, "ExternalLB") {
			t.Errorf("/tmp/%s stays", name)
		}
	}

	// The remedy: native mode replaces the script's file and starts the
	// failed HAProxy.
	if res, err := lb.ConfigureLB(v.ctx, v.ssh, v.clusterConfig()); err != nil || !res.Changed {
		t.Fatalf("native mode after the script: %v, %v", res, err)
	}
	if st := v.host.Machine.Service("haproxy"); !st.Active || st.Failed {
		t.Errorf("haproxy.service after native mode: %+v", st)
	}
}

// fixedScript is the sample package's script with the defect fixed: no
// check on a server without a port.
func fixedScript(t *testing.T) []byte {
	t.Helper()
	b, err := fs.ReadFile(samples.VNFPackage(), sampleScript)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(b), `echo "    server node$i $ip check"`, `echo "    server node$i $ip"`, 1)
	if fixed == string(b) {
		t.Fatal("the sample script changed: the test's fix no longer applies")
	}
	// The script's environment, as the test sees it.
	return []byte(strings.Replace(fixed, "set -euo pipefail\n", "set -euo pipefail\nprintf '%s|%s|%s\\n' \"${http_proxy-unset}\" \"${https_proxy-unset}\" \"${no_proxy-unset}\" > /tmp/script-env\n", 1))
}

// A script that writes a configuration HAProxy accepts succeeds: HAProxy
// serves it. The proxy URLs reach the script's environment and no
// command line.
func TestRunScriptThatWritesAValidConfiguration(t *testing.T) {
	v := newLBVM(t)
	pkg := lcm.NewPackage(fstest.MapFS{"Scripts/lb.sh": {Data: fixedScript(t), Mode: 0o644}})
	o := v.scriptArgs("Scripts/lb.sh")
	const password = "pr0xy-Pa55"
	o.Proxy = &system.Proxy{HTTPProxy: remote.NewSecret("http://user:" + password + "@127.0.0.9:3128"), NoProxy: "10.0.0.0/8"}
	res, err := lb.RunScript(v.ctx, v.ssh, pkg, o)
	if err != nil || !res.Changed || res.Detail != "ran Scripts/lb.sh" {
		t.Fatalf("%v, %v", res, err)
	}
	if st := v.host.Machine.Service("haproxy"); !st.Active {
		t.Errorf("haproxy.service: %+v", st)
	}
	nodes := lb.Backends([]byte(v.read(lb.ConfigFile)))[lb.NodePortBackend]
	if len(nodes) != len(o.Masters)+len(o.Workers) || nodes[0].Address != o.Masters[0] {
		t.Errorf("NodePort backend: %v", nodes)
	}
	if got, want := strings.TrimSpace(v.read("/tmp/script-env")), "http://user:"+password+"@127.0.0.9:3128|unset|10.0.0.0/8"; got != want {
		t.Errorf("the script's environment: %q, want %q", got, want)
	}
	for _, e := range v.host.SSH.Transcript() {
		if strings.Contains(e.Command, password) {
			t.Errorf("a command line holds the proxy's password: %s", e.Command)
		}
	}
}

// A script that exits 0 but leaves a configuration HAProxy refuses (it
// does not restart HAProxy, so nothing failed on its side) is an error
// all the same.
func TestRunScriptJudgesWhatAScriptLeftThatExitedZero(t *testing.T) {
	v := newLBVM(t)
	script := "#!/bin/bash\nset -eu\nsudo apt-get update -q\nsudo apt-get install -y -q haproxy\nprintf 'backend b\\n    server w1 %s check\\n' \"$2\" | sudo tee /etc/haproxy/haproxy.cfg >/dev/null\n"
	pkg := lcm.NewPackage(fstest.MapFS{"Scripts/lb.sh": {Data: []byte(script)}})
	_, err := lb.RunScript(v.ctx, v.ssh, pkg, v.scriptArgs("Scripts/lb.sh"))
	var se *lb.ScriptError
	if !errors.As(err, &se) || se.ScriptErr != nil || !strings.Contains(se.Alerts, "server 'w1' has neither service port nor check port") {
		t.Fatalf("err = %v (%#v)", err, se)
	}
	if strings.Contains(err.Error(), "failed (") {
		t.Errorf("the error says the script failed: %v", err)
	}
}

// A script that installs no HAProxy is not judged; its own failure is
// the error.
func TestRunScriptWithoutHAProxy(t *testing.T) {
	v := newLBVM(t)
	for _, tc := range []struct {
		script string
		fails  bool
	}{{"#!/bin/bash\necho configured\n", false}, {"#!/bin/bash\necho broken >&2\nexit 3\n", true}} {
		pkg := lcm.NewPackage(fstest.MapFS{"Scripts/lb.sh": {Data: []byte(tc.script)}})
		res, err := lb.RunScript(v.ctx, v.ssh, pkg, v.scriptArgs("Scripts/lb.sh"))
		var ce *remote.CommandError
		switch {
		case !tc.fails && err != nil:
			t.Errorf("%q: %v", tc.script, err)
		case tc.fails && (!errors.As(err, &ce) || ce.ExitCode != 3 || !strings.Contains(err.Error(), "broken") || res.Detail != "ran Scripts/lb.sh (failed)"):
			t.Errorf("%q: %v, %v", tc.script, res, err)
		}
	}
}

// Bad options run nothing.
func TestRunScriptRefusesBadOptionsBeforeAnyCommand(t *testing.T) {
	v := newLBVM(t)
	pkg := lcm.NewPackage(samples.VNFPackage())
	for _, tc := range []struct {
		pkg  *lcm.Package
		o    lb.ScriptOptions
		want []string
	}{
		{pkg, lb.ScriptOptions{Script: "Scripts/missing.sh", Masters: []string{"10.0.0.5"}}, []string{`Script: "Scripts/missing.sh" is not a file of the VNF package`}},
		{pkg, lb.ScriptOptions{Script: "../etc/passwd", Masters: []string{"10.0.0.5"}}, []string{`Script: "../etc/passwd" is not a file of the VNF package`}},
		{pkg, lb.ScriptOptions{Script: sampleScript, Workers: []string{"10.0.0.5;reboot"}}, []string{"Masters: must name at least one master", `Workers[0]: "10.0.0.5;reboot" is not an IP address`}},
		{nil, lb.ScriptOptions{Script: sampleScript, Masters: []string{"10.0.0.5"}, Proxy: &system.Proxy{}}, []string{"pkg: is nil", "Proxy"}},
	} {
		_, cmds, err := v.step(func() (lcm.Result, error) { return lb.RunScript(v.ctx, v.ssh, tc.pkg, tc.o) })
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) {
			t.Errorf("%+v: err = %v", tc.o, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v lacks %q", tc.o, err, w)
			}
		}
		if len(cmds) != 0 {
			t.Errorf("%+v: commands ran: %q", tc.o, cmds)
		}
	}
}
