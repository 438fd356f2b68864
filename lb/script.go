package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// DefaultScriptTimeout bounds one run of the load balancer's script: the
// reference's K8S_DEPLOY_TIMEOUT (300 s), which its driver gives the
// command that runs the script.
const DefaultScriptTimeout = 300 * time.Second

// ScriptOptions are the arguments of a load balancer script in the
// reference's calling convention (tacker
// samples/mgmt_driver/kubernetes/kubespray/install_external_lb.sh,
// _install_and_set_lb in kubespray_mgmt.py): `bash SCRIPT -m MASTERS -w
// WORKERS`, each list the nodes' NIC addresses joined by commas, with
// http_proxy and https_proxy exported when the request has a proxy.
type ScriptOptions struct {
	// Script is the script's path in the VNF package:
	// external_lb_param.script_path ([ExternalLBParam.ScriptPath]).
	// Required.
	Script string
	// Masters are -m: the masters' cluster (NIC) addresses. At least
	// one.
	Masters []string
	// Workers are -w: the workers' cluster addresses; may be empty (the
	// script then gets an empty -w, as the reference's driver passes
	// it).
	Workers []string
	// Proxy sets http_proxy, https_proxy and no_proxy in the script's
	// environment; nil sets none. The values travel on standard input,
	// never in a command line.
	Proxy *system.Proxy
	// Timeout bounds the run; [DefaultScriptTimeout] when 0.
	Timeout time.Duration
	// Stdout, when set, receives the script's standard output.
	Stdout io.Writer
}

// check validates o against the package.
func (o ScriptOptions) check(pkg *lcm.Package) error {
	var probs []lcm.Problem
	add := func(p, format string, args ...any) {
		probs = append(probs, lcm.Problem{Path: p, Message: fmt.Sprintf(format, args...)})
	}
	if pkg == nil {
		add("pkg", "is nil: the VNF package holding the script is required")
	} else if fi, err := pkg.Stat(o.Script); err != nil || !fi.Mode().IsRegular() {
		add("Script", "%q is not a file of the VNF package", o.Script)
	}
	if len(o.Masters) == 0 {
		add("Masters", "must name at least one master")
	}
	for field, list := range map[string][]string{"Masters": o.Masters, "Workers": o.Workers} {
		for i, a := range list {
			if ip, err := netip.ParseAddr(a); err != nil || ip.Zone() != "" || ip.IsUnspecified() {
				add(field+"["+strconv.Itoa(i)+"]", "%q is not an IP address", a)
			}
		}
	}
	probs = append(probs, o.Proxy.Check("Proxy")...)
	if probs == nil {
		return nil
	}
	return &lcm.ParamsError{Problems: probs}
}

// scriptWrapper runs the uploaded script ($0) as `bash SCRIPT FLAGS...`,
// its standard input empty, after reading http_proxy, https_proxy and
// no_proxy from its own standard input, one a line (an empty line
// leaves the variable unset); the other arguments are the script's.
const scriptWrapper = `set -eu
IFS= read -r http_proxy || true
IFS= read -r https_proxy || true
IFS= read -r no_proxy || true
if [ -n "$http_proxy" ]; then export http_proxy; else unset http_proxy; fi
if [ -n "$https_proxy" ]; then export https_proxy; else unset https_proxy; fi
if [ -n "$no_proxy" ]; then export no_proxy; else unset no_proxy; fi
exec bash "$0" "$@" </dev/null`

// checkScript checks the configuration the script left ($1) with the
// installed HAProxy, or exits 100 when HAProxy is not installed (a
// script that sets up another load balancer).
const checkScript = `if ! command -v haproxy >/dev/null 2>&1; then exit 100; fi
exec haproxy -c -f "$1"`

// noHAProxy is checkScript's exit status without HAProxy.
const noHAProxy = 100

// RunScript runs o.Script, a file of the VNF package pkg
// (external_lb_param.script_path), on the load balancer VM h: the
// script mode, compatible with Tacker's kubespray driver, which runs it
// at instantiation and, as the spec says ("Update route configuration
// in Load Balancer with the script"), again after every change of the
// nodes, with the nodes then in the cluster. A script that appends to
// haproxy.cfg, as Tacker's install_external_lb.sh does, is not made for
// a second run; the sample package's script writes the whole file.
//
// Unlike the reference (which copies the script to a fixed
// /tmp/NAME and formats the proxy URLs into the command line), the
// script is uploaded, mode 0700, into a fresh private directory of the
// login user (`mktemp -d`: mode 0700, a random name; removed
// afterwards), and run through a fixed wrapper with argv; the proxy
// URLs, which may hold a password, travel on standard input.
//
// Then HAProxy judges what the script left: `haproxy -c -f
// /etc/haproxy/haproxy.cfg` (skipped when the script installed no
// HAProxy). A configuration HAProxy refuses is a [*ScriptError] whether
// the script exited 0 or not: the sample package's script, like the
// reference's, writes "server nodeN IP check" lines without a port in
// the NodePort backend, which every HAProxy since 1.8 refuses ("server
// 'node1' has neither service port nor check port nor tcp_check rule
// 'connect' with port information"), and its `systemctl restart
// haproxy` then fails. mgmtkit does not edit what a script wrote: the
// error names the defect, and native mode ([ConfigureLB]) renders a
// configuration HAProxy accepts.
//
// A script cannot be asked whether it has run: RunScript always runs it
// and reports Changed.
func RunScript(ctx context.Context, h remote.Host, pkg *lcm.Package, o ScriptOptions) (lcm.Result, error) {
	if err := o.check(pkg); err != nil {
		return lcm.Unchanged, err
	}
	name, err := pkg.Resolve(o.Script)
	if err != nil {
		return lcm.Unchanged, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	dst, remove, err := system.StageFile(ctx, h, pkg, name, "lb")
	if err != nil {
		return lcm.Unchanged, stepErr(h, "staging the script", err)
	}
	defer remove()

	var stdin strings.Builder
	var secrets []remote.Secret
	if p := o.Proxy; p != nil {
		stdin.WriteString(p.HTTPProxy.Reveal() + "\n" + p.HTTPSProxy.Reveal() + "\n" + p.NoProxy + "\n")
		secrets = append(secrets, p.HTTPProxy, p.HTTPSProxy)
	}
	args := []string{"bash", "-c", scriptWrapper, dst, "-m", strings.Join(o.Masters, ","), "-w", strings.Join(o.Workers, ",")}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, runErr := h.Run(runCtx, remote.Cmd{Args: args, Stdin: strings.NewReader(stdin.String()), Stdout: o.Stdout, Secrets: secrets})
	res := lcm.Changed("ran " + name)
	if runErr != nil {
		res = lcm.Changed("ran " + name + " (failed)")
		runErr = &scriptFailure{script: name, err: runErr}
		if ctx.Err() != nil {
			return res, fmt.Errorf("lb: %s: %w", h.Name(), runErr)
		}
	}

	// HAProxy's judgement of what the script left.
	check := remote.Cmd{Args: []string{"sh", "-c", checkScript, "mgmtkit-haproxy-check", ConfigFile}, Sudo: true, Idempotent: true, OKExit: []int{noHAProxy}, ReadOnly: true}
	_, chkErr := h.Run(ctx, check)
	var ce *remote.CommandError
	switch {
	case chkErr == nil: // valid, or no HAProxy to judge it
		if runErr != nil {
			return res, fmt.Errorf("lb: %s: %w", h.Name(), runErr)
		}
		return res, nil
	case errors.As(chkErr, &ce) && ce.Err == nil && ce.Signal == "":
		return res, &ScriptError{Host: h.Name(), Script: name, ScriptErr: runErr, ExitCode: ce.ExitCode, Alerts: alerts(ce.Stderr)}
	default:
		err := fmt.Errorf("checking %s after the script: %w", ConfigFile, chkErr)
		if runErr != nil {
			err = errors.Join(runErr, err)
		}
		return res, stepErr(h, name, err)
	}
}

// alerts returns HAProxy's [ALERT] lines (its fatal errors), or the
// tail of what it printed when there are none.
func alerts(stderr string) string {
	var out []string
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "[ALERT]") {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	if out == nil {
		return strings.TrimSpace(stderr)
	}
	return strings.Join(out, "\n")
}

// ScriptError is a load balancer script that left a haproxy.cfg HAProxy
// refuses ([RunScript]): HAProxy does not serve it (its start or reload
// fails, and a running HAProxy keeps its old configuration).
type ScriptError struct {
	// Host is the load balancer VM's name.
	Host string
	// Script is the script's path in the VNF package.
	Script string
	// ScriptErr is the script's own failure (a *remote.CommandError with
	// its exit status and standard error), nil when it exited 0.
	ScriptErr error
	// ExitCode is `haproxy -c`'s exit status.
	ExitCode int
	// Alerts are HAProxy's [ALERT] lines.
	Alerts string
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lb: %s: %s ", e.Host, e.Script)
	if e.ScriptErr != nil {
		fmt.Fprintf(&b, "failed (%s) and ", describe(e.ScriptErr))
	}
	fmt.Fprintf(&b, "left %s, which HAProxy refuses (haproxy -c: exit status %d)", ConfigFile, e.ExitCode)
	if strings.Contains(e.Alerts, "has neither service port nor check port") {
		b.WriteString(": the script writes a `server NAME IP check` line without a port, which HAProxy refuses since 1.8 (Tacker's install_external_lb.sh and the sample package's script do);" +
			" fix the script (`server NAME IP`, or `server NAME IP check port PORT`) or use mgmtkit's native mode")
	}
	if e.Alerts != "" {
		b.WriteString(":\n" + e.Alerts)
	}
	return b.String()
}

// Unwrap returns the script's own failure.
func (e *ScriptError) Unwrap() error { return e.ScriptErr }

// scriptFailure is the script's own failure, said without the wrapper
// that ran it.
type scriptFailure struct {
	script string
	err    error
}

func (e *scriptFailure) Error() string { return e.script + " " + describe(e.err) }

func (e *scriptFailure) Unwrap() error { return e.err }

// describe says how a command failed: its exit status and the last lines
// of its standard error (redacted by package remote), or why it did not
// finish.
func describe(err error) string {
	var sf *scriptFailure
	if errors.As(err, &sf) {
		err = sf.err
	}
	var ce *remote.CommandError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	var msg string
	switch {
	case ce.Err != nil:
		msg = fmt.Sprintf("did not finish: %v", ce.Err)
	case ce.Signal != "":
		msg = "was killed by signal " + ce.Signal
	default:
		msg = fmt.Sprintf("exited with status %d", ce.ExitCode)
	}
	lines := strings.Split(strings.TrimSpace(ce.Stderr), "\n")
	if tail := strings.Join(lines[max(0, len(lines)-3):], " | "); tail != "" {
		msg += ": " + tail
	}
	return msg
}
