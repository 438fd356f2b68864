package kubeadm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Files kubeadm writes, by which the steps tell what a node already is,
// besides [KubeletKubeconfig] and [APIServerManifest]
// (cmd/kubeadm/app/constants/constants.go: KubeletKubeConfigFileName,
// AdminKubeConfigFileName, KubeletBootstrapKubeConfigFileName, the
// static pod manifests and the CA under /etc/kubernetes/pki).
const (
	// CACert is the cluster CA's certificate.
	CACert = "/etc/kubernetes/pki/ca.crt"
	// bootstrapKubeconfig is the kubelet's TLS bootstrap kubeconfig,
	// written by kubeadm join before the kubelet.conf it exchanges it for.
	bootstrapKubeconfig = "/etc/kubernetes/bootstrap-kubelet.conf"
	// etcdManifest is the local etcd member's static pod.
	etcdManifest = "/etc/kubernetes/manifests/etcd.yaml"
)

// InitOptions says how [InitControlPlane] creates the cluster.
type InitOptions struct {
	// NodeName is the first master's node name ([NodeName]).
	NodeName string
	// AdvertiseAddress is the IP address of the master's NIC: its API
	// server's and kubelet's address.
	AdvertiseAddress string
	// Endpoint is the cluster's API endpoint, host:port: the master's
	// "<address>:6443" with one master, "<VIP>:16443" with three.
	Endpoint string
	// PodCIDR and ServiceCIDR are the pod and Service networks
	// (master_node's pod_cidr and cluster_cidr).
	PodCIDR, ServiceCIDR netip.Prefix
	// Version is the Kubernetes version: a patch release is written as
	// is; a minor ("1.36") is resolved to the version of the kubeadm
	// installed on the node (`kubeadm version -o short`), which must be
	// of that minor. Empty: [DefaultKubernetesVersion].
	Version Version
	// CertSANs are extra names and addresses in the API server's
	// certificate (the floating IP the VIM reaches the cluster at).
	// kubeadm adds the endpoint's host, the node's address and the
	// Service network's first address itself.
	CertSANs []string
}

// check returns an *lcm.ParamsError for every bad option.
func (o InitOptions) check() error {
	var p optProblems
	if msg := kubeapi.ObjectNameProblem(o.NodeName); msg != "" {
		p.addf("InitOptions.NodeName", "%s", msg)
	}
	if _, err := netip.ParseAddr(o.AdvertiseAddress); err != nil {
		p.addf("InitOptions.AdvertiseAddress", "must be an IP address, got %q", o.AdvertiseAddress)
	}
	if msg := endpointMsg(o.Endpoint); msg != "" {
		p.addf("InitOptions.Endpoint", "%s", msg)
	}
	for _, f := range []struct {
		name string
		cidr netip.Prefix
	}{{"InitOptions.PodCIDR", o.PodCIDR}, {"InitOptions.ServiceCIDR", o.ServiceCIDR}} {
		if !f.cidr.IsValid() {
			p.addf(f.name, "must be a CIDR")
		} else if f.cidr.Masked() != f.cidr {
			p.addf(f.name, "%s has host bits set (want %s)", f.cidr, f.cidr.Masked())
		}
	}
	if o.PodCIDR.IsValid() && o.ServiceCIDR.IsValid() && o.PodCIDR.Overlaps(o.ServiceCIDR) {
		p.addf("InitOptions.ServiceCIDR", "%s overlaps the pod network %s", o.ServiceCIDR, o.PodCIDR)
	}
	if o.Version != "" {
		if _, msg := parseVersion(string(o.Version)); msg != "" {
			p.addf("InitOptions.Version", "%s, got %q", msg, o.Version)
		}
	}
	for i, san := range o.CertSANs {
		if san == "" || strings.ContainsFunc(san, func(r rune) bool { return r <= ' ' || r == ',' || r == 0x7f }) {
			p.addf(fmt.Sprintf("InitOptions.CertSANs[%d]", i), "must be a host name or IP address, got %q", san)
		}
	}
	return p.err()
}

// endpointMsg says what is wrong with an API endpoint, host:port ("" if
// nothing).
func endpointMsg(endpoint string) string {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil || host == "" {
		return fmt.Sprintf("must be host:port, got %q", endpoint)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("port of %q must be a number from 1 to 65535", endpoint)
	}
	if _, err := netip.ParseAddr(host); err != nil && !lcm.IsDNSName(host) {
		return fmt.Sprintf("host of %q must be an IP address or a DNS name", endpoint)
	}
	return ""
}

// InitControlPlane creates the cluster on its first master: it writes
// [InitConfigFile] (root, 0600) from typed kubeadm v1beta4 structs and
// runs `kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml
// --upload-certs --skip-token-print --skip-certificate-key-print`.
//
// A master whose /etc/kubernetes/admin.conf and kube-apiserver manifest
// exist and whose node is registered is left alone ([lcm.Unchanged]).
// A node that holds some of kubeadm's files but is not such a master (an
// init that did not finish, a joined node) is refused with an error that
// says so: resetting a control plane could destroy a cluster, so the
// caller decides ([ResetNode]). kubeadm's own preflight refuses swap,
// IP forwarding off and a container runtime that is not running; its
// error names the check.
//
// kubeadm init makes join credentials (a 24-hour bootstrap token, the
// certificate key of --upload-certs) that this step neither prints nor
// keeps (--skip-token-print, --skip-certificate-key-print); [NewJoinInfo]
// makes short-lived ones when they are needed.
func InitControlPlane(ctx context.Context, h remote.Host, o InitOptions) (lcm.Result, error) {
	if err := o.check(); err != nil {
		return lcm.Unchanged, err
	}
	present, err := existingFiles(ctx, h, kubeapi.AdminKubeconfig, APIServerManifest, KubeletKubeconfig, CACert)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("kubeadm init on %s: %w", h.Name(), err)
	}
	if present[kubeapi.AdminKubeconfig] && present[APIServerManifest] {
		node, err := kubeapi.Kubectl{Host: h}.Node(ctx, o.NodeName)
		if err != nil {
			return lcm.Unchanged, fmt.Errorf("kubeadm init on %s: the control plane exists; checking that node %s is registered: %w", h.Name(), o.NodeName, err)
		}
		if node == nil {
			return lcm.Unchanged, fmt.Errorf("kubeadm init on %s: the control plane exists but node %s is not registered: an init that did not finish, or a node of another name; reset the node to start over", h.Name(), o.NodeName)
		}
		return lcm.Unchanged, nil
	}
	if files := presentList(present); len(files) > 0 {
		return lcm.Unchanged, fmt.Errorf("kubeadm init on %s: %s already exist: the node was initialised or joined before and is not a working control plane; reset it first", h.Name(), strings.Join(files, ", "))
	}
	version, err := resolveVersion(ctx, h, o.Version)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("kubeadm init on %s: %w", h.Name(), err)
	}
	cfg, err := renderInitConfig(o, version)
	if err != nil {
		return lcm.Unchanged, err
	}
	if err := writeConfig(ctx, h, InitConfigFile, cfg); err != nil {
		return lcm.Unchanged, fmt.Errorf("kubeadm init on %s: %w", h.Name(), err)
	}
	_, err = h.Run(ctx, remote.Cmd{
		// --skip-token-print and --skip-certificate-key-print
		// (cmd/kubeadm/app/cmd/init.go) keep the join credentials kubeadm
		// makes off standard output, which is discarded all the same.
		Args:   []string{"kubeadm", "init", "--config", InitConfigFile, "--upload-certs", "--skip-token-print", "--skip-certificate-key-print"},
		Sudo:   true,
		Stdout: io.Discard,
	})
	if err != nil {
		return lcm.Changed("wrote " + InitConfigFile), fmt.Errorf("kubeadm init on %s: %w", h.Name(), err)
	}
	return lcm.Changed(fmt.Sprintf("kubeadm init: control plane %s of Kubernetes %s at %s", o.NodeName, version, o.Endpoint)), nil
}

// existsScript prints each of its arguments that exists, one a line.
const existsScript = `for f in "$@"; do if [ -e "$f" ]; then printf '%s\n' "$f"; fi; done`

// existingFiles reports which of files exist on h (looked at as root),
// with one command.
func existingFiles(ctx context.Context, h remote.Host, files ...string) (map[string]bool, error) {
	out, err := h.Run(ctx, remote.Cmd{
		Args:       append([]string{"sh", "-c", existsScript, "mgmtkit-exists"}, files...),
		Sudo:       true,
		Idempotent: true,
		ReadOnly:   true,
	})
	if err != nil {
		return nil, err
	}
	present := make(map[string]bool, len(files))
	for line := range strings.Lines(string(out.Stdout)) {
		present[strings.TrimSuffix(line, "\n")] = true
	}
	for _, f := range files {
		if !present[f] {
			present[f] = false
		}
	}
	return present, nil
}

// presentList returns the files of present that exist, sorted.
func presentList(present map[string]bool) []string {
	var files []string
	for f, ok := range present {
		if ok {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files
}

// writeConfig writes a kubeadm configuration file as root, mode 0600.
func writeConfig(ctx context.Context, h remote.Host, file string, content []byte) error {
	_, err := h.WriteFile(ctx, file, bytes.NewReader(content), remote.FileOptions{Mode: 0o600, Owner: "root", Group: "root", Sudo: true})
	if err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// kubeadmVersionRe is `kubeadm version -o short`'s output: the GitVersion
// of the binary (cmd/kubeadm/app/cmd/version.go), "v1.36.2".
var kubeadmVersionRe = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$`)

// resolveVersion returns the kubernetesVersion to write: "v" and want
// when it is a patch release, else the installed kubeadm's version,
// which must be of want's minor.
func resolveVersion(ctx context.Context, h remote.Host, want Version) (string, error) {
	if want == "" {
		want = DefaultKubernetesVersion
	}
	if v, msg := parseVersion(string(want)); msg == "" {
		want = v
	}
	if want.IsPatch() {
		return "v" + string(want), nil
	}
	installed, err := kubeadmVersion(ctx, h)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(installed, "v"+string(want.Minor())+".") {
		return "", fmt.Errorf("the installed kubeadm is %s, not of Kubernetes %s: install the packages of that version first", installed, want.Minor())
	}
	return installed, nil
}

// kubeadmVersion returns the installed kubeadm's version, "v1.36.2".
func kubeadmVersion(ctx context.Context, h remote.Host) (string, error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"kubeadm", "version", "-o", "short"}, Idempotent: true, ReadOnly: true})
	if err != nil {
		return "", fmt.Errorf("kubeadm version: %w", err)
	}
	v := out.String()
	if !kubeadmVersionRe.MatchString(v) {
		return "", fmt.Errorf("kubeadm version -o short printed %q, not a version", clip(v))
	}
	return v, nil
}
