package kubeadm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"unicode"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Files and names [PrepareNode] owns on a node.
const (
	// AptProxyFile is apt's proxy configuration (apt.conf(5)): the
	// Acquire::http::Proxy and Acquire::https::Proxy of the nodes' proxy
	// ([system.SetAptProxy]), the file the storage server's is in too.
	AptProxyFile = system.AptProxyFile
	// FstabFile is the file system table whose swap lines PrepareNode
	// comments out (fstab(5)).
	FstabFile = "/etc/fstab"
	// HostsBlock names the managed block of /etc/hosts that holds the
	// cluster's nodes.
	HostsBlock = "mgmtkit-k8s"
	// KernelConfigName names the modules-load.d and sysctl.d files
	// (/etc/modules-load.d/mgmtkit-k8s.conf,
	// /etc/sysctl.d/90-mgmtkit-k8s.conf).
	KernelConfigName = "mgmtkit-k8s"
)

// CloudHostsTemplate is cloud-init's template of /etc/hosts on Ubuntu
// ([system.CloudHostsTemplate]), which [PrepareNode] and [UpdateHosts]
// keep in step with /etc/hosts where it exists.
const CloudHostsTemplate = system.CloudHostsTemplate

// CloudPreserveHostname is the cloud-init configuration PrepareNode
// writes where cloud-init is installed (/etc/cloud/cloud.cfg or
// [CloudHostsTemplate] exists):
// preserve_hostname: true, so that cloud-init's update_hostname module,
// which runs at every boot, does not set the host name back to the
// instance's (cloudinit/config/cc_update_hostname.py and
// cc_set_hostname.py: "preserve_hostname: If true, the hostname will not
// be changed").
const CloudPreserveHostname = "/etc/cloud/cloud.cfg.d/99-mgmtkit-hostname.cfg"

// cloudConfig marks a node where cloud-init runs.
const cloudConfig = "/etc/cloud/cloud.cfg"

// swapsFile lists the active swap areas (proc(5)); its first line is a
// header. kubeadm's preflight SwapCheck reads it too
// (kubernetes/kubernetes cmd/kubeadm/app/preflight/checks.go: "running
// with swap on is not supported" unless the kubelet's failSwapOn is
// false), so an entry under the header fails `kubeadm init` and `join`.
const swapsFile = "/proc/swaps"

// k8sModules returns the kernel modules a kubeadm node needs: overlay for
// containerd's overlayfs snapshotter, br_netfilter so that bridged pod
// traffic passes iptables (kubernetes.io docs "Container Runtimes",
// "Forwarding IPv4 and letting iptables see bridged traffic";
// content/en/docs/setup/production-environment/container-runtimes.md).
func k8sModules() []string { return []string{"overlay", "br_netfilter"} }

// k8sSysctls returns the kernel parameters of the same page: bridged
// traffic through ip(6)tables, and IPv4 forwarding, which kubeadm's
// preflight checks (FileContentCheck of /proc/sys/net/ipv4/ip_forward
// in cmd/kubeadm/app/preflight/checks.go).
func k8sSysctls() map[string]string {
	return map[string]string{
		"net.bridge.bridge-nf-call-iptables":  "1",
		"net.bridge.bridge-nf-call-ip6tables": "1",
		"net.ipv4.ip_forward":                 "1",
	}
}

// ProxyFor returns the proxy of a cluster's nodes, as apt, containerd
// and the kubelet are given it, or nil when p has no proxy: p's URLs and
// a no_proxy that holds what the reference's driver puts there
// (tacker kubernetes_mgmt.py: localhost, 127.0.0.1, the cluster's
// address, the pod and Service CIDRs, the nodes' network and the user's
// no_proxy) and more, each once and in this order: localhost, 127.0.0.1,
// ::1, the node addresses nodeAddrs, endpointHost (the API endpoint's
// host, a port is dropped), k8s_node_cidr (when absent, the /24 (IPv4)
// or /64 (IPv6) of nodeAddrs[0], the first master, as the reference
// does), the pod and Service CIDRs, the host of every private registry
// (registries are "host[:port]", as private_registry_connection_info's
// server), and the user's no_proxy entries.
//
// The reference expands k8s_node_cidr into every one of its addresses;
// ProxyFor writes the CIDR, which Go programs (containerd, the kubelet,
// kubeadm) match addresses against, and lists the node addresses
// themselves for the programs that match only names and addresses (curl
// before 7.86, wget).
func ProxyFor(p ClusterParams, nodeAddrs []string, endpointHost string, registries []string) *system.Proxy {
	if p.Proxy == nil || (p.Proxy.HTTPProxy.IsZero() && p.Proxy.HTTPSProxy.IsZero()) {
		return nil
	}
	var noProxy []string
	seen := map[string]bool{}
	add := func(e string) {
		e = strings.TrimSpace(e)
		if e != "" && !seen[e] {
			seen[e] = true
			noProxy = append(noProxy, e)
		}
	}
	add("localhost")
	add("127.0.0.1")
	add("::1")
	for _, a := range nodeAddrs {
		add(hostOnly(a))
	}
	add(hostOnly(endpointHost))
	switch {
	case p.Proxy.K8sNodeCIDR.IsValid():
		add(p.Proxy.K8sNodeCIDR.Masked().String())
	case len(nodeAddrs) > 0:
		if a, err := netip.ParseAddr(hostOnly(nodeAddrs[0])); err == nil {
			bits := 24
			if a.Is6() && !a.Is4In6() {
				bits = 64
			}
			if pfx, err := a.Unmap().Prefix(bits); err == nil {
				add(pfx.String())
			}
		}
	}
	for _, c := range []netip.Prefix{p.MasterNode.PodCIDR, p.MasterNode.ClusterCIDR} {
		if c.IsValid() {
			add(c.Masked().String())
		}
	}
	for _, r := range registries {
		add(hostOnly(r))
	}
	for _, e := range p.Proxy.NoProxyEntries() {
		add(e)
	}
	return &system.Proxy{HTTPProxy: p.Proxy.HTTPProxy, HTTPSProxy: p.Proxy.HTTPSProxy, NoProxy: strings.Join(noProxy, ",")}
}

// hostOnly returns the host of "host:port", "[v6]:port" or a bare host
// or address.
func hostOnly(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
}

// unsafeValueRune reports the characters a value written into apt.conf
// or a systemd environment file must not hold: they would end or
// escape the value.
func unsafeValueRune(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("\"'\\$`;", r)
}

// NodeOptions configure [PrepareNode].
type NodeOptions struct {
	// Name is the node's host name and Kubernetes node name
	// ([NodeName]). Required.
	Name string
	// Hosts are the lines of the cluster's block of /etc/hosts (every
	// node's address and name); none removes the block.
	Hosts []system.HostsEntry
	// Proxy is the HTTP proxy apt goes through ([ProxyFor]); nil removes
	// mgmtkit's apt proxy file (converging to no proxy).
	Proxy *system.Proxy
	// HostsFiles are further files to hold the block (see
	// system.HostsOptions.Files); [system.HostsFile] is always edited, and
	// [CloudHostsTemplate] when it exists ([system.SetHostsBlock]).
	HostsFiles []string
}

// PrepareNode makes a VM ready for a container runtime and kubeadm, each
// part only where it differs:
//
//   - the host name is o.Name (system.SetHostname), and cloud-init keeps
//     it across reboots ([CloudPreserveHostname]);
//   - the cluster's block of /etc/hosts holds o.Hosts
//     (system.SetHostsBlock, block [HostsBlock]), and so does cloud-init's
//     [CloudHostsTemplate] where it exists, so that a reboot keeps it;
//   - swap is off: `swapoff -a` when /proc/swaps lists an area, and every
//     swap line of /etc/fstab commented out so that it stays off after a
//     reboot (kubeadm's preflight refuses swap: see swapsFile). Swap
//     that systemd starts from its own .swap units or zram is not
//     touched;
//   - the modules overlay and br_netfilter are loaded now and at boot,
//     and net.bridge.bridge-nf-call-iptables, -ip6tables and
//     net.ipv4.ip_forward are 1 (system.LoadKernelModules,
//     system.ApplySysctls; kubernetes.io "Container Runtimes");
//   - apt's proxy is o.Proxy ([AptProxyFile], 0600 when a URL holds
//     credentials), or the file is gone when o.Proxy is nil.
//
// The proxies of containerd and the kubelet are [InstallContainerd]'s
// and [InstallKubernetes]'s: their units do not exist yet.
//
// Bad options are an *lcm.ParamsError before any command runs.
func PrepareNode(ctx context.Context, h remote.Host, o NodeOptions) (lcm.Result, error) {
	var probs []lcm.Problem
	if o.Name == "" || len(o.Name) > 63 || !lcm.IsDNSName(o.Name) || strings.Contains(o.Name, ".") {
		probs = append(probs, lcm.Problem{Path: "Name", Message: fmt.Sprintf("%q is not a node name (one RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters; see NodeName)", o.Name)})
	}
	probs = append(probs, o.Proxy.Check("Proxy")...)
	if probs != nil {
		return lcm.Unchanged, &lcm.ParamsError{Problems: probs}
	}
	hostsFiles := []string{system.HostsFile}
	for _, f := range o.HostsFiles {
		if !slices.Contains(hostsFiles, f) {
			hostsFiles = append(hostsFiles, f)
		}
	}
	hosts := system.HostsOptions{Block: HostsBlock, Entries: o.Hosts, Files: hostsFiles}
	// The block's entries are checked before any command (planned against
	// no file, which runs nothing); the files of the block are then read
	// with the rest, in one command.
	if _, err := system.PlanHostsBlock(nil, hosts); err != nil {
		return lcm.Unchanged, stepErr(h, "the cluster's /etc/hosts block", hostsProblems(err))
	}
	read := system.HostsBlockFiles(hosts)
	for _, f := range []string{swapsFile, FstabFile, CloudHostsTemplate, cloudConfig, CloudPreserveHostname} {
		if !slices.Contains(read, f) {
			read = append(read, f)
		}
	}
	files, err := remote.ReadFiles(ctx, h, read, remote.FileOptions{Sudo: true})
	if err != nil {
		return lcm.Unchanged, stepErr(h, "reading the hosts, swap, fstab and cloud-init's files", err)
	}
	res := lcm.Unchanged
	steps := []struct {
		what string
		run  func() (lcm.Result, error)
	}{
		{"the cluster's /etc/hosts block", func() (lcm.Result, error) {
			writes, err := system.PlanHostsBlock(files, hosts)
			if err != nil || len(writes) == 0 {
				return lcm.Unchanged, err
			}
			changed, err := remote.WriteFiles(ctx, h, writes)
			r := lcm.Unchanged
			for i, w := range writes {
				if i < len(changed) && changed[i] {
					r = r.And(lcm.Changed("updated block " + HostsBlock + " of " + w.Path))
				}
			}
			return r, err
		}},
		{"the host name", func() (lcm.Result, error) { return system.SetHostname(ctx, h, o.Name) }},
		{"cloud-init's preserve_hostname", func() (lcm.Result, error) {
			want := []byte("# Managed by mgmtkit: the host name is the Kubernetes node name.\npreserve_hostname: true\n")
			_, cfg := files[cloudConfig]
			_, tmpl := files[CloudHostsTemplate]
			if !cfg && !tmpl || bytes.Equal(files[CloudPreserveHostname], want) {
				return lcm.Unchanged, nil
			}
			if _, err := h.WriteFile(ctx, CloudPreserveHostname, bytes.NewReader(want), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true}); err != nil {
				return lcm.Unchanged, err
			}
			return lcm.Changed("wrote " + CloudPreserveHostname), nil
		}},
		{"swap", func() (lcm.Result, error) { return swapOff(ctx, h, files) }},
		{"kernel modules", func() (lcm.Result, error) {
			return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: KernelConfigName, Modules: k8sModules()})
		}},
		{"kernel parameters", func() (lcm.Result, error) {
			return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "90-" + KernelConfigName, Settings: k8sSysctls()})
		}},
		{"apt's proxy", func() (lcm.Result, error) {
			return system.SetAptProxy(ctx, h, system.AptProxyOptions{File: AptProxyFile, Proxy: o.Proxy})
		}},
	}
	for _, s := range steps {
		r, err := s.run()
		res = res.And(r)
		if err != nil {
			return res, stepErr(h, s.what, err)
		}
	}
	return res, nil
}

// UpdateHosts makes the cluster's block of /etc/hosts (and of
// [CloudHostsTemplate] where it exists) hold entries, and changes
// nothing else: the step that tells the other nodes that one joined or
// left (scale-out, scale-in, heal), where [PrepareNode] prepares a new
// one. Entries are validated before anything runs (an
// *lcm.ParamsError); a converged node costs one command
// ([system.SetHostsBlock]).
func UpdateHosts(ctx context.Context, h remote.Host, entries []system.HostsEntry) (lcm.Result, error) {
	res, err := system.SetHostsBlock(ctx, h, system.HostsOptions{Block: HostsBlock, Entries: entries})
	if err != nil {
		return res, stepErr(h, "the cluster's /etc/hosts block", hostsProblems(err))
	}
	return res, nil
}

// hostsProblems renames the paths of SetHostsBlock's ParamsError to
// NodeOptions' fields (Entries → Hosts, Files → HostsFiles).
func hostsProblems(err error) error {
	var pe *lcm.ParamsError
	if errors.As(err, &pe) {
		for i, pr := range pe.Problems {
			if rest, ok := strings.CutPrefix(pr.Path, "Entries"); ok {
				pe.Problems[i].Path = "Hosts" + rest
			} else if strings.HasPrefix(pr.Path, "Files") {
				pe.Problems[i].Path = "HostsFiles"
			}
		}
	}
	return err
}

// stepErr says which part of a step failed on which host; a ParamsError
// is returned as it is.
func stepErr(h remote.Host, what string, err error) error {
	var pe *lcm.ParamsError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("kubeadm: %s: %s: %w", h.Name(), what, err)
}

// swapOff turns swap off now and comments out fstab's swap lines, each
// only when needed, given the files' contents (ReadFiles: a missing
// file is absent).
func swapOff(ctx context.Context, h remote.Host, files map[string][]byte) (lcm.Result, error) {
	res := lcm.Unchanged
	if active := activeSwaps(files[swapsFile]); len(active) > 0 {
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"swapoff", "-a"}, Sudo: true, Idempotent: true}); err != nil {
			return res, err
		}
		res = res.And(lcm.Changed("swap turned off (" + strings.Join(active, ", ") + ")"))
	}
	if old, ok := files[FstabFile]; ok {
		if fixed, n := commentSwap(old); n > 0 {
			if _, err := h.WriteFile(ctx, FstabFile, bytes.NewReader(fixed), remote.FileOptions{Sudo: true}); err != nil {
				return res, err
			}
			res = res.And(lcm.Changed(fmt.Sprintf("%d swap line(s) of %s commented out", n, FstabFile)))
		}
	}
	return res, nil
}

// activeSwaps returns the swap areas /proc/swaps lists under its header.
func activeSwaps(b []byte) []string {
	var out []string
	for i, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); i > 0 && len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// commentSwap returns fstab with "#" before every entry whose type (the
// third field, fstab(5) fs_vfstype) is swap, and how many it commented;
// everything else is kept byte for byte.
func commentSwap(fstab []byte) ([]byte, int) {
	lines := bytes.SplitAfter(fstab, []byte("\n"))
	n := 0
	for i, l := range lines {
		f := strings.Fields(string(l))
		if len(f) >= 3 && !strings.HasPrefix(f[0], "#") && f[2] == "swap" {
			lines[i] = append([]byte("#"), l...)
			n++
		}
	}
	return bytes.Join(lines, nil), n
}
