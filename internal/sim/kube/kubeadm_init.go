package kube

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// initPlan is an init configuration with kubeadm's defaults and dynamic
// defaults applied (cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go,
// cmd/kubeadm/app/util/config/initconfiguration.go SetInitDynamicDefaults).
type initPlan struct {
	init     *kubeadmInit
	cluster  *kubeadmCluster
	kubelet  *kubeletConfig
	name     string
	address  string
	port     int
	endpoint string
	version  string
	taints   []corev1.Taint
}

// planInit validates and defaults an init configuration; the error reads
// as kubeadm's validation error.
func (r *kubeadmRun) planInit(cfg *kubeadmConfig) (*initPlan, error) {
	pl := &initPlan{init: cfg.Init, cluster: cfg.Cluster, kubelet: cfg.Kubelet}
	if pl.init == nil {
		pl.init = &kubeadmInit{}
	}
	if pl.cluster == nil {
		pl.cluster = &kubeadmCluster{}
	}
	if pl.kubelet == nil {
		pl.kubelet = &kubeletConfig{}
	}
	nr := pl.init.NodeRegistration
	if err := checkCRISocket(nr.CRISocket); err != nil {
		return nil, err
	}
	pl.name = nr.Name
	if pl.name == "" {
		pl.name = strings.ToLower(r.m.Hostname())
	}
	var err error
	pl.address, err = r.advertiseAddress(pl.init.LocalAPIEndpoint.AdvertiseAddress, "localAPIEndpoint.advertiseAddress")
	if err != nil {
		return nil, err
	}
	if err := verifyBindAddress(pl.address); err != nil {
		return nil, err
	}
	pl.port = int(pl.init.LocalAPIEndpoint.BindPort)
	if pl.port == 0 {
		pl.port = defaultBindPort
	}
	cc := pl.cluster
	kubeadmV := kubeVersion(r.m, "kubeadm")
	pl.version = cc.KubernetesVersion
	if pl.version == "" {
		// "stable-1.36" needs dl.k8s.io; offline kubeadm falls back to
		// its own version, which is what the SDK pins anyway.
		pl.version = kubeadmV
	}
	if err := checkControlPlaneVersion(pl.version, kubeadmV); err != nil {
		return nil, err
	}
	if cc.Networking.ServiceSubnet == "" {
		cc.Networking.ServiceSubnet = "10.96.0.0/12"
	}
	if cc.Networking.DNSDomain == "" {
		cc.Networking.DNSDomain = "cluster.local"
	}
	for _, f := range []struct{ path, v string }{{"networking.serviceSubnet", cc.Networking.ServiceSubnet}, {"networking.podSubnet", cc.Networking.PodSubnet}} {
		if f.v == "" {
			continue
		}
		for _, s := range strings.Split(f.v, ",") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%s: Invalid value: %q: couldn't parse subnet", f.path, f.v)
			}
			if f.path != "networking.podSubnet" {
				continue
			}
			// validation.go ValidatePodSubnetNodeMask: the pod subnet must
			// hold one node subnet at least, and at most 2^16
			// (constants.PodSubnetNodeMaskMaxDiff).
			node := nodeCIDRMaskSize(cc, p.Addr().Is6())
			switch {
			case p.Bits() > node:
				return nil, fmt.Errorf("networking.podSubnet: Invalid value: %q: the size of pod subnet with mask %d is smaller than the size of node subnet with mask %d", p, p.Bits(), node)
			case node-p.Bits() > 16:
				return nil, fmt.Errorf("networking.podSubnet: Invalid value: %q: pod subnet mask (%d) and node-mask (%d) difference is greater than 16", p, p.Bits(), node)
			}
		}
	}
	pl.endpoint = net.JoinHostPort(pl.address, strconv.Itoa(pl.port))
	if cc.ControlPlaneEndpoint != "" {
		host, port, err := net.SplitHostPort(cc.ControlPlaneEndpoint)
		if err != nil {
			host, port = cc.ControlPlaneEndpoint, strconv.Itoa(pl.port)
		}
		if _, err := strconv.Atoi(port); err != nil || host == "" {
			return nil, fmt.Errorf("controlPlaneEndpoint: Invalid value: %q: invalid port", cc.ControlPlaneEndpoint)
		}
		pl.endpoint = net.JoinHostPort(host, port)
	}
	if cc.ClusterName == "" {
		cc.ClusterName = "kubernetes"
	}
	if pl.init.CertificateKey != "" {
		if k, err := hex.DecodeString(pl.init.CertificateKey); err != nil || len(k) != 32 {
			return nil, fmt.Errorf("certificateKey: Invalid value: \"<value withheld>\": certificate key size must be 32 bytes (64 hex characters)")
		}
	}
	if pl.kubelet.CgroupDriver == "" {
		// kubeadm defaults the kubelet's cgroupDriver to systemd since
		// 1.22 (cmd/kubeadm/app/componentconfigs/kubelet.go).
		pl.kubelet.CgroupDriver = "systemd"
	}
	// v1beta4 defaults: nil taints on a control plane are the
	// control-plane NoSchedule taint; an explicit empty list is none
	// (SetDefaults_NodeRegistration / initconfiguration.go).
	pl.taints = nr.Taints
	if pl.taints == nil {
		pl.taints = []corev1.Taint{{Key: controlPlaneLabel, Effect: corev1.TaintEffectNoSchedule}}
	}
	return pl, nil
}

// nodeCIDRMaskSize is the size of each node's pod subnet: the
// controller manager's --node-cidr-mask-size (-ipv4/-ipv6) from
// controllerManager.extraArgs, else 24 for IPv4 and 64 for IPv6
// (validation.go getClusterNodeMask). With a /24 pod subnet and the
// default, one node only gets a podCIDR: the node IPAM has no other
// range ("CIDRNotAvailable"), and a CNI that needs the node's podCIDR
// (flannel's --kube-subnet-mgr) never starts on the others.
func nodeCIDRMaskSize(cc *kubeadmCluster, ipv6 bool) int {
	want := []string{"node-cidr-mask-size-ipv4", "node-cidr-mask-size"}
	size := 24
	if ipv6 {
		want, size = []string{"node-cidr-mask-size-ipv6", "node-cidr-mask-size"}, 64
	}
	for _, name := range want {
		for _, a := range cc.ControllerManager.ExtraArgs {
			if a.Name == name {
				if n, err := strconv.Atoi(a.Value); err == nil {
					return n
				}
			}
		}
	}
	return size
}

// checkCRISocket refuses a CRI the simulation does not run kubelets on.
func checkCRISocket(s string) error {
	switch s {
	case "", containerdSocket, "unix:///run/containerd/containerd.sock":
		return nil
	}
	return fmt.Errorf("nodeRegistration.criSocket %q: only containerd is modelled by internal/sim/kube", s)
}

// advertiseAddress returns the configured address, or the address
// kubeadm chooses when it is empty (cmd/kubeadm/app/util/config/
// initconfiguration.go SetAPIEndpointDynamicDefaults, through
// common.go ChooseAPIServerBindAddress and
// k8s.io/apimachinery/pkg/util/net/interface.go ResolveBindAddress and
// chooseHostInterface): see [kubeadmRun.hostInterfaceAddress]. With no
// default route at all, kubeadm warns and takes 0.0.0.0, which the
// command then refuses ([verifyBindAddress]).
func (r *kubeadmRun) advertiseAddress(a, field string) (string, error) {
	if a == "" {
		return r.hostInterfaceAddress()
	}
	if _, err := netip.ParseAddr(a); err != nil {
		return "", fmt.Errorf("%s: Invalid value: %q: Validation failed for AdvertiseAddress", field, a)
	}
	return a, nil
}

// verifyBindAddress is cmd/kubeadm/app/util/config/common.go
// VerifyAPIServerBindAddress, which `kubeadm init` (and each of its
// phases, cmd/kubeadm/app/cmd/init.go newInitData) and a control-plane
// `kubeadm join` (cmd/join.go newJoinData) run on the advertise address:
// a loopback address passes, else it must be a global unicast address.
func verifyBindAddress(a string) error {
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return fmt.Errorf("cannot parse IP address: %s", a)
	}
	if !ip.IsLoopback() && !ip.IsGlobalUnicast() {
		return fmt.Errorf("cannot use %q as the bind address for the API Server", a)
	}
	return nil
}

// Where the kernel shows the routing tables (see internal/sim/ubuntu
// Machine.SetDefaultRoute), as k8s.io/apimachinery/pkg/util/net reads
// them.
const (
	ipv4RouteFile = "/proc/net/route"
	ipv6RouteFile = "/proc/net/ipv6_route"
)

// hostInterfaceAddress is the address k8s.io/apimachinery/pkg/util/net
// chooseHostInterface (interface.go) finds, IPv4 preferred: without
// /proc/net/route, the first global address of an interface that is up
// (chooseIPFromHostInterfaces; here [kubeadmRun.nicAddress], else
// [hostAddress]); otherwise the default routes of /proc/net/route and
// /proc/net/ipv6_route (getAllDefaultRoutes: a destination of 0, and for
// IPv6 a gateway that is not ::), and the first address of the route's
// family on the route's interface (chooseHostInterfaceFromRoute). With
// no default route, kubeadm logs a warning and uses 0.0.0.0
// (ChooseAPIServerBindAddress on noRoutesError); with default routes
// but no address on their interfaces it fails.
func (r *kubeadmRun) hostInterfaceAddress() (string, error) {
	v4, err := r.p.FS.ReadFile(ipv4RouteFile)
	if err != nil {
		if a := r.nicAddress(0); a != "" {
			return a, nil
		}
		if a := hostAddress(r.m); a != "" {
			return a, nil
		}
		return "", errors.New("unable to select an IP from default routes")
	}
	type route struct {
		iface string
		v6    bool
	}
	var routes []route
	for _, line := range strings.Split(string(v4), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "Iface" {
			continue
		}
		if f[1] == "00000000" {
			routes = append(routes, route{iface: f[0]})
		}
	}
	v6, _ := r.p.FS.ReadFile(ipv6RouteFile) // optional, as upstream
	zero := strings.Repeat("0", 32)
	for _, line := range strings.Split(string(v6), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		if f[0] == zero && f[4] != zero {
			routes = append(routes, route{iface: f[9], v6: true})
		}
	}
	if len(routes) == 0 {
		r.klogWarning("common.go:198", fmt.Sprintf("WARNING: could not obtain a bind address for the API Server: no default routes found in %q or %q; using: 0.0.0.0", ipv4RouteFile, ipv6RouteFile))
		return "0.0.0.0", nil
	}
	for _, family := range []int{4, 6} {
		for _, rt := range routes {
			if rt.v6 != (family == 6) || rt.iface != ubuntu.NIC {
				continue
			}
			if a := r.nicAddress(family); a != "" {
				return a, nil
			}
		}
	}
	return "", errors.New("unable to select an IP from default routes")
}

// nicAddress is the first address of the machine's NIC as `ip -o addr
// show` prints it ("2: ens3    inet 10.0.0.5/24 brd ... scope global
// ens3\\ ..."), of the family 4 or 6 (any with 0), "" when there is
// none. The simulated cloud's addresses are loopback ones (127.0.1.x):
// they count, except 127.0.0.1.
func (r *kubeadmRun) nicAddress(family int) string {
	var out strings.Builder
	q := *r.p
	q.Stdout, q.Stderr, q.Stdin = &out, discard{}, strings.NewReader("")
	if q.Exec(r.ctx, "ip", "-o", "addr", "show") != 0 {
		return ""
	}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] == "lo:" || f[1] == "lo" || (f[2] != "inet" && f[2] != "inet6") {
			continue
		}
		if family == 4 && f[2] != "inet" || family == 6 && f[2] != "inet6" {
			continue
		}
		if p, err := netip.ParsePrefix(f[3]); err == nil && p.Addr().IsGlobalUnicast() || err == nil && p.Addr().IsLoopback() && p.Addr().String() != "127.0.0.1" {
			return p.Addr().String()
		}
	}
	return ""
}

// checkControlPlaneVersion is kubeadm's version skew rule: the control
// plane may be kubeadm's minor or one older, not newer
// (cmd/kubeadm/app/util/config/common.go NormalizeKubernetesVersion).
func checkControlPlaneVersion(v, kubeadmV string) error {
	var maj, min, pat, kmaj, kmin, kpat int
	if n, _ := fmt.Sscanf(v, "v%d.%d.%d", &maj, &min, &pat); n != 3 {
		return fmt.Errorf("couldn't parse Kubernetes version %q: could not parse %q as version", v, v)
	}
	fmt.Sscanf(kubeadmV, "v%d.%d.%d", &kmaj, &kmin, &kpat)
	if maj != kmaj || min > kmin || (min == kmin && pat > kpat) {
		return fmt.Errorf("the specified version to deploy %q is newer than the kubeadm version %q", v, kubeadmV)
	}
	if min < kmin-1 {
		return fmt.Errorf("this version of kubeadm only supports deploying clusters with the control plane version >= %d.%d.0. Current version: %s", kmaj, kmin-1, v)
	}
	return nil
}

// init is `kubeadm init --config FILE [--upload-certs]`
// (cmd/kubeadm/app/cmd/init.go and its phases).
func (r *kubeadmRun) init() int {
	cfg, code, ok := r.readConfig("initconfiguration.go:332")
	if !ok {
		return code
	}
	pl, err := r.planInit(cfg)
	if err != nil {
		return r.fail("", "%v", err)
	}
	r.out("[init] Using Kubernetes version: %s", pl.version)
	files := []string{manifestsDir + "/kube-apiserver.yaml", manifestsDir + "/kube-controller-manager.yaml", manifestsDir + "/kube-scheduler.yaml", manifestsDir + "/etcd.yaml"}
	errs, warns := r.commonChecks(files)
	if entries, _ := r.m.Server().FS().ReadDir(etcdDataDir); len(entries) > 0 && len(errs) == 0 || len(entries) > 0 && errs[0].name != "IsPrivilegedUser" {
		errs = append(errs, preflightCheck{"DirAvailable--var-lib-etcd", etcdDataDir + " is not empty"})
	}
	if e := kubeletVersionCheck(r.m, pl.version); e != nil && (len(errs) == 0 || errs[0].name != "IsPrivilegedUser") {
		errs = append(errs, *e)
	}
	if !r.preflight("preflight", pl.init.NodeRegistration.IgnorePreflightErrors, errs, warns) {
		return 1
	}
	r.out("[preflight] Pulling images required for setting up a Kubernetes cluster")
	c, err := r.writeControlPlane(pl)
	if err != nil {
		return r.fail("certs", "%v", err)
	}
	r.restartKubelet()
	r.out("[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory %q", manifestsDir)
	if err := kubeletHealthy(r.m); err != nil {
		return r.fail("wait-control-plane", "%s", kubeletWaitError(err))
	}
	r.out("[kubelet-check] The kubelet is healthy")
	r.out("[control-plane-check] kube-apiserver is healthy")
	if err := r.createClusterObjects(c, pl); err != nil {
		return r.fail("upload-config", "%v", err)
	}
	r.w.setMember(r.m, &member{cluster: c, node: pl.name, controlPlane: true, address: pl.address, bindPort: pl.port, taints: pl.taints})
	r.w.addCluster(c)
	key := pl.init.CertificateKey
	if r.c.Has("--upload-certs") {
		if key == "" {
			key = newCertificateKey()
		}
		if err := r.uploadCerts(c.API, c, key); err != nil {
			return r.fail("upload-certs", "%v", err)
		}
		r.out("[upload-certs] Storing the certificates in Secret %q in the %q Namespace", kubeadmCertsSecret, "kube-system")
		r.out("[upload-certs] Using certificate key:")
		r.out("%s", withheld(key, r.c.Has("--skip-certificate-key-print")))
	} else {
		r.out("[upload-certs] Skipping phase. Please see --upload-certs")
	}
	r.out("[mark-control-plane] Marking the node %s as control-plane by adding the labels: [%s %s]", pl.name, controlPlaneLabel, excludeLBLabel)
	token, err := r.createInitTokens(c.API, pl)
	if err != nil {
		return r.fail("bootstrap-token", "%v", err)
	}
	if err := r.w.Sync(r.ctx); err != nil {
		return r.fail("mark-control-plane", "%v", err)
	}
	r.out("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials")
	r.out("[addons] Applied essential addon: CoreDNS")
	r.out("[addons] Applied essential addon: kube-proxy")
	r.out("")
	r.out("Your Kubernetes control-plane has initialized successfully!")
	r.out("")
	r.out("To start using your cluster, you need to run the following as a regular user:")
	r.out("")
	r.out("  mkdir -p $HOME/.kube")
	r.out("  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config")
	r.out("  sudo chown $(id -u):$(id -g) $HOME/.kube/config")
	r.out("")
	tok := withheld(token, r.c.Has("--skip-token-print"))
	if pl.cluster.ControlPlaneEndpoint != "" && r.c.Has("--upload-certs") {
		r.out("You can now join any number of control-plane nodes running the following command on each as root:")
		r.out("")
		r.out("  kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s \\\n\t--control-plane --certificate-key %s", pl.endpoint, tok, CACertHash(c.CACert), withheld(key, r.c.Has("--skip-certificate-key-print")))
		r.out("")
	}
	r.out("Then you can join any number of worker nodes by running the following on each as root:")
	r.out("")
	r.out("kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s ", pl.endpoint, tok, CACertHash(c.CACert))
	return 0
}

// withheld is how kubeadm prints a secret it was told not to print.
func withheld(s string, skip bool) string {
	if skip {
		return "<value withheld>"
	}
	return s
}

// newCertificateKey is 32 random bytes in hex (kubeadm certs
// certificate-key; copycerts.CreateCertificateKey).
func newCertificateKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeControlPlane generates the cluster's PKI and writes the files of
// a first control plane: /etc/kubernetes/pki, the kubeconfig files, the
// static pod manifests and the kubelet's configuration.
func (r *kubeadmRun) writeControlPlane(pl *initPlan) (*Cluster, error) {
	ca, err := newKeyPair(nil, "kubernetes", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	etcdCA, err := newKeyPair(nil, "etcd-ca", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	fpCA, err := newKeyPair(nil, "front-proxy-ca", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	sa, err := newKeyPair(nil, "sa", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(sa.Key.Public())
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		CACert: ca.CertPEM, Endpoint: pl.endpoint, Version: pl.version, world: r.w,
		ca: ca, etcdCA: etcdCA, frontProxyCA: fpCA, saKey: sa.KeyPEM,
		saPub: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}
	// kube-controller-manager runs with --allocate-node-cidrs and
	// --cluster-cidr=podSubnet (staticPods below): the API's node IPAM.
	spec := ControlPlaneSpec{
		Name: pl.name, CACert: ca.CertPEM, CAKey: ca.KeyPEM,
		ServiceAccountKey: c.saKey, ServiceAccountPub: c.saPub,
		Now: r.w.now, FirstEtcdMember: EtcdPeer{Name: pl.name, Address: pl.address},
		MountNFS: r.w.kubeletMountNFS(c),
	}
	if p, err := netip.ParsePrefix(firstCIDR(pl.cluster.Networking.ServiceSubnet)); err == nil {
		spec.ServiceSubnet = p
	}
	if p, err := netip.ParsePrefix(firstCIDR(pl.cluster.Networking.PodSubnet)); err == nil {
		spec.PodSubnet = p
		spec.NodeCIDRMaskSize = nodeCIDRMaskSize(pl.cluster, p.Addr().Is6())
	}
	cp, err := r.w.startControlPlane(r.ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	c.cp, c.API = cp, cp.API()
	r.out("[certs] Using certificateDir folder %q", pkiDir)
	r.out("[certs] Generating \"ca\" certificate and key")
	if _, err := r.writeControlPlaneFiles(c, pl.name, pl.address, pl.port, pl.cluster, pl.kubelet, pl.version); err != nil {
		return nil, err
	}
	return c, nil
}

// firstCIDR is the first of a comma-separated list of CIDRs (a dual-stack
// subnet, "10.244.0.0/16,fd00::/56").
func firstCIDR(list string) string {
	first, _, _ := strings.Cut(list, ",")
	return first
}

// writeControlPlaneFiles writes what a control plane holds, its CAs
// from c: the pki directory, the kubeconfig files, the static pod
// manifests and the kubelet's files.
func (r *kubeadmRun) writeControlPlaneFiles(c *Cluster, name, address string, port int, cc *kubeadmCluster, kc *kubeletConfig, version string) (*keyPair, error) {
	svcIP := firstServiceIP(cc.Networking.ServiceSubnet)
	epHost, _, _ := net.SplitHostPort(c.Endpoint)
	sans := []string{name, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + cc.Networking.DNSDomain, svcIP, address}
	if epHost != "" && epHost != address {
		sans = append(sans, epHost)
	}
	sans = append(sans, cc.APIServer.CertSANs...)
	apiserver, err := newKeyPair(c.ca, "kube-apiserver", nil, sans, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	if err != nil {
		return nil, err
	}
	etcdSANs := []string{name, "localhost", address, "127.0.0.1", "::1"}
	etcdServer, err := newKeyPair(c.etcdCA, name, nil, etcdSANs, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	etcdPeer, err := newKeyPair(c.etcdCA, name, nil, etcdSANs, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	// admin.conf's user is kubernetes-admin in kubeadm:cluster-admins
	// since 1.29; super-admin.conf's is in system:masters
	// (cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go).
	admin, err := newKeyPair(c.ca, "kubernetes-admin", []string{clusterAdminsGroup}, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	super, err := newKeyPair(c.ca, "kubernetes-super-admin", []string{"system:masters"}, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	node, err := newKeyPair(c.ca, "system:node:"+name, []string{"system:nodes"}, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	server := "https://" + c.Endpoint
	local := "https://" + net.JoinHostPort(address, strconv.Itoa(port))
	files := []struct {
		name string
		data []byte
		perm uint32
	}{
		{pkiDir + "/ca.crt", c.ca.CertPEM, 0o644}, {pkiDir + "/ca.key", c.ca.KeyPEM, 0o600},
		{pkiDir + "/apiserver.crt", apiserver.CertPEM, 0o644}, {pkiDir + "/apiserver.key", apiserver.KeyPEM, 0o600},
		{pkiDir + "/front-proxy-ca.crt", c.frontProxyCA.CertPEM, 0o644}, {pkiDir + "/front-proxy-ca.key", c.frontProxyCA.KeyPEM, 0o600},
		{pkiDir + "/sa.key", c.saKey, 0o600}, {pkiDir + "/sa.pub", c.saPub, 0o644},
		{pkiDir + "/etcd/ca.crt", c.etcdCA.CertPEM, 0o644}, {pkiDir + "/etcd/ca.key", c.etcdCA.KeyPEM, 0o600},
		{pkiDir + "/etcd/server.crt", etcdServer.CertPEM, 0o644}, {pkiDir + "/etcd/server.key", etcdServer.KeyPEM, 0o600},
		{pkiDir + "/etcd/peer.crt", etcdPeer.CertPEM, 0o644}, {pkiDir + "/etcd/peer.key", etcdPeer.KeyPEM, 0o600},
		{adminConf, []byte(renderKubeconfig(server, c.ca.CertPEM, "kubernetes-admin", admin)), 0o600},
		{superAdminConf, []byte(renderKubeconfig(local, c.ca.CertPEM, "kubernetes-super-admin", super)), 0o600},
		{kubeletConf, []byte(renderKubeconfig(server, c.ca.CertPEM, "system:node:"+name, node)), 0o600},
		{controllerMgrConf, []byte(renderKubeconfig(local, c.ca.CertPEM, "system:kube-controller-manager", admin)), 0o600},
		{schedulerConf, []byte(renderKubeconfig(local, c.ca.CertPEM, "system:kube-scheduler", admin)), 0o600},
	}
	for _, f := range files {
		if err := r.writeFile(f.name, f.data, fsMode(f.perm)); err != nil {
			return nil, err
		}
	}
	for comp, text := range staticPods(name, address, port, cc, version) {
		if err := r.writeFile(manifestsDir+"/"+comp+".yaml", []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	if err := r.p.FS.MkdirAll(etcdDataDir+"/member", 0o700); err != nil {
		return nil, err
	}
	if err := r.writeKubeletFiles(kc, name, address); err != nil {
		return nil, err
	}
	return admin, nil
}

// writeKubeletFiles writes /var/lib/kubelet/config.yaml (the
// KubeletConfiguration, with kubeadm's defaults) and kubeadm-flags.env
// (cmd/kubeadm/app/phases/kubelet/flags.go: the CRI endpoint, the node
// IP, the pause image).
func (r *kubeadmRun) writeKubeletFiles(kc *kubeletConfig, name, address string) error {
	kc.APIVersion, kc.Kind = kubeletGroupVersion, "KubeletConfiguration"
	if kc.ContainerRuntimeEndpoint == "" {
		kc.ContainerRuntimeEndpoint = containerdSocket
	}
	if kc.StaticPodPath == "" {
		kc.StaticPodPath = manifestsDir
	}
	data, err := yaml.Marshal(kc)
	if err != nil {
		return err
	}
	if err := r.writeFile(kubeletConfigFile, data, 0o644); err != nil {
		return err
	}
	flags := fmt.Sprintf("KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=%s --node-ip=%s --hostname-override=%s --pod-infra-container-image=registry.k8s.io/pause:3.10.1\"\n", containerdSocket, address, name)
	return r.writeFile(kubeletFlagsFile, []byte(flags), 0o644)
}

// firstServiceIP is the kubernetes Service's ClusterIP: the first
// address of the service subnet.
func firstServiceIP(subnet string) string {
	first, _, _ := strings.Cut(subnet, ",")
	p, err := netip.ParsePrefix(first)
	if err != nil {
		return ""
	}
	return p.Masked().Addr().Next().String()
}

// staticPods renders the control plane's static pod manifests, reduced
// to what identifies them (cmd/kubeadm/app/phases/controlplane/
// manifests.go, cmd/kubeadm/app/phases/etcd/local.go).
func staticPods(name, address string, port int, cc *kubeadmCluster, version string) map[string]string {
	pod := func(comp, image string, args []string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    component: %s\n    tier: control-plane\n  name: %s\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n    - %s\n", comp, comp, comp)
		for _, a := range args {
			fmt.Fprintf(&b, "    - %s\n", a)
		}
		fmt.Fprintf(&b, "    image: %s\n    name: %s\n  hostNetwork: true\n  priorityClassName: system-node-critical\n", image, comp)
		return b.String()
	}
	repo := cc.ImageRepository
	if repo == "" {
		repo = "registry.k8s.io"
	}
	apiArgs := []string{
		"--advertise-address=" + address,
		"--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=https://127.0.0.1:2379",
		"--service-cluster-ip-range=" + cc.Networking.ServiceSubnet,
		"--client-ca-file=/etc/kubernetes/pki/ca.crt",
	}
	for _, a := range cc.APIServer.ExtraArgs {
		apiArgs = append(apiArgs, "--"+a.Name+"="+a.Value)
	}
	cmArgs := []string{"--kubeconfig=/etc/kubernetes/controller-manager.conf", "--cluster-name=" + cc.ClusterName}
	if cc.Networking.PodSubnet != "" {
		cmArgs = append(cmArgs, "--allocate-node-cidrs=true", "--cluster-cidr="+cc.Networking.PodSubnet)
	}
	return map[string]string{
		"kube-apiserver":          pod("kube-apiserver", repo+"/kube-apiserver:"+version, apiArgs),
		"kube-controller-manager": pod("kube-controller-manager", repo+"/kube-controller-manager:"+version, cmArgs),
		"kube-scheduler":          pod("kube-scheduler", repo+"/kube-scheduler:"+version, []string{"--kubeconfig=/etc/kubernetes/scheduler.conf"}),
		"etcd": pod("etcd", repo+"/etcd:3.6.6-0", []string{
			"--name=" + name, "--data-dir=" + etcdDataDir,
			"--advertise-client-urls=https://" + net.JoinHostPort(address, "2379"),
			"--initial-advertise-peer-urls=https://" + net.JoinHostPort(address, "2380"),
			"--listen-client-urls=https://127.0.0.1:2379,https://" + net.JoinHostPort(address, "2379"),
		}),
	}
}

// createClusterObjects is the upload-config, bootstrap-token RBAC and
// addon phases: the objects kubeadm init creates through the new API
// server.
func (r *kubeadmRun) createClusterObjects(c *Cluster, pl *initPlan) error {
	ctx := r.ctx
	ccData, err := yaml.Marshal(pl.cluster)
	if err != nil {
		return err
	}
	kcData, _ := r.p.FS.ReadFile(kubeletConfigFile)
	caKubeconfig := renderKubeconfig("https://"+c.Endpoint, c.CACert, "", nil)
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	group := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: name}}
	}
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	objs := []Object{
		// cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go
		&corev1.ConfigMap{ObjectMeta: meta("kube-system", "kubeadm-config"), Data: map[string]string{"ClusterConfiguration": string(ccData)}},
		// cmd/kubeadm/app/componentconfigs/kubelet.go
		&corev1.ConfigMap{ObjectMeta: meta("kube-system", "kubelet-config"), Data: map[string]string{"kubelet": string(kcData)}},
		// cmd/kubeadm/app/phases/bootstraptoken/clusterinfo/clusterinfo.go
		&corev1.ConfigMap{ObjectMeta: meta("kube-public", "cluster-info"), Data: map[string]string{clusterInfoKey: caKubeconfig}},
		&rbacv1.Role{ObjectMeta: meta("kube-public", "kubeadm:bootstrap-signer-clusterinfo"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cluster-info"}, Verbs: []string{"get"}}}},
		&rbacv1.RoleBinding{ObjectMeta: meta("kube-public", "kubeadm:bootstrap-signer-clusterinfo"), RoleRef: roleRef("Role", "kubeadm:bootstrap-signer-clusterinfo"), Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "system:anonymous"}}},
		// cmd/kubeadm/app/phases/kubeconfig: admin.conf's group.
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "kubeadm:cluster-admins"), RoleRef: roleRef("ClusterRole", "cluster-admin"), Subjects: group(clusterAdminsGroup)},
		// cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "kubeadm:kubelet-bootstrap"), RoleRef: roleRef("ClusterRole", "system:node-bootstrapper"), Subjects: group(defaultTokenGroup)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "kubeadm:node-autoapprove-bootstrap"), RoleRef: roleRef("ClusterRole", "system:certificates.k8s.io:certificatesigningrequests:nodeclient"), Subjects: group(defaultTokenGroup)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "kubeadm:node-autoapprove-certificate-rotation"), RoleRef: roleRef("ClusterRole", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"), Subjects: group("system:nodes")},
		&rbacv1.ClusterRole{ObjectMeta: meta("", "kubeadm:get-nodes"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "kubeadm:get-nodes"), RoleRef: roleRef("ClusterRole", "kubeadm:get-nodes"), Subjects: group(defaultTokenGroup)},
	}
	if !pl.cluster.Proxy.Disabled {
		// cmd/kubeadm/app/phases/addons/proxy: the kube-proxy DaemonSet.
		objs = append(objs, addonDaemonSet("kube-proxy", "registry.k8s.io/kube-proxy:"+pl.version))
	}
	if !pl.cluster.DNS.Disabled {
		// cmd/kubeadm/app/phases/addons/dns: the CoreDNS Deployment
		// (named coredns, label k8s-app: kube-dns, 2 replicas).
		objs = append(objs, addonDeployment("coredns", "registry.k8s.io/coredns/coredns:v1.12.4", 2))
	}
	for _, o := range objs {
		if _, err := c.API.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func addonDaemonSet(name, image string) *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:        []corev1.Container{{Name: name, Image: image}},
					HostNetwork:       true,
					PriorityClassName: "system-node-critical",
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
}

func addonDeployment(name, image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"k8s-app": "kube-dns"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:        []corev1.Container{{Name: name, Image: image}},
					PriorityClassName: "system-cluster-critical",
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: controlPlaneLabel, Effect: corev1.TaintEffectNoSchedule},
					},
				},
			},
		},
	}
}

// createInitTokens creates the bootstrap tokens of the InitConfiguration,
// or kubeadm's default one (24h, signing and authentication, the
// default-node-token group), and returns the first token.
func (r *kubeadmRun) createInitTokens(api API, pl *initPlan) (string, error) {
	tokens := pl.init.BootstrapTokens
	if len(tokens) == 0 {
		tokens = []kubeadmBootstrapToken{{}}
	}
	first := ""
	for _, t := range tokens {
		tok := t.Token
		if tok == "" {
			id, secret := randomToken()
			tok = id + "." + secret
		}
		id, secret, ok := splitToken(tok)
		if !ok {
			return "", fmt.Errorf("the bootstrap token %q was not of the form %q", "<value withheld>", `^([a-z0-9]{6})\.([a-z0-9]{16})$`)
		}
		ttl := 24 * time.Hour
		if t.TTL != nil {
			ttl = t.TTL.Duration
		}
		var expires time.Time
		if t.Expires != nil {
			expires = t.Expires.Time
		} else if ttl > 0 {
			expires = r.now().Add(ttl)
		}
		usages := t.Usages
		if len(usages) == 0 {
			usages = []string{"signing", "authentication"}
		}
		groups := t.Groups
		if len(groups) == 0 {
			groups = []string{defaultTokenGroup}
		}
		if _, err := createBootstrapToken(r.ctx, api, id, secret, expires, usages, groups, t.Description); err != nil {
			return "", err
		}
		if first == "" {
			first = tok
		}
	}
	return first, nil
}

// splitToken splits "[a-z0-9]{6}.[a-z0-9]{16}".
func splitToken(tok string) (id, secret string, ok bool) {
	id, secret, found := strings.Cut(tok, ".")
	valid := func(s string, n int) bool {
		if len(s) != n {
			return false
		}
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
				return false
			}
		}
		return true
	}
	return id, secret, found && valid(id, 6) && valid(secret, 16)
}

// createBootstrapToken stores a bootstrap token as the Secret
// bootstrap-token-<id> of type bootstrap.kubernetes.io/token
// (staging/src/k8s.io/cluster-bootstrap/token/api/types.go;
// cmd/kubeadm/app/apis/bootstraptoken/v1/utils.go BootstrapTokenToSecret).
func createBootstrapToken(ctx context.Context, api API, id, secret string, expires time.Time, usages, groups []string, description string) (Object, error) {
	data := map[string][]byte{"token-id": []byte(id), "token-secret": []byte(secret)}
	if description != "" {
		data["description"] = []byte(description)
	}
	if !expires.IsZero() {
		data["expiration"] = []byte(expires.UTC().Format(time.RFC3339))
	}
	for _, u := range usages {
		data["usage-bootstrap-"+u] = []byte("true")
	}
	if len(groups) > 0 {
		data["auth-extra-groups"] = []byte(strings.Join(groups, ","))
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-" + id},
		Type:       corev1.SecretType("bootstrap.kubernetes.io/token"),
		Data:       data,
	}
	return createOrUpdate(ctx, api, s)
}

// createOrUpdate creates obj or, when it exists, replaces it.
func createOrUpdate(ctx context.Context, api API, obj Object) (Object, error) {
	out, err := api.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return api.Update(ctx, obj)
	}
	return out, err
}

// adminAPI dials the API server a kubeconfig of this machine names, as
// kubeadm's client does (--kubeconfig, default admin.conf).
func (r *kubeadmRun) adminAPI() (*Cluster, error) {
	file, ok := r.c.Value("--kubeconfig")
	if !ok {
		file = adminConf
	}
	data, err := r.p.FS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("failed to load admin kubeconfig: %v", err)
	}
	server, _, err := parseKubeconfig(data)
	if err != nil {
		return nil, fmt.Errorf("failed to load admin kubeconfig: %v", err)
	}
	c, err := r.w.Dial(r.m, strings.TrimPrefix(server, "https://"))
	if err != nil {
		return nil, fmt.Errorf("Get \"%s/api/v1/namespaces/kube-system/configmaps/kubeadm-config?timeout=10s\": %v", server, err)
	}
	return c, nil
}

// tokenCreate is `kubeadm token create [--ttl D] [--description T]`: it
// prints the token alone (cmd/kubeadm/app/cmd/token.go RunCreateToken).
func (r *kubeadmRun) tokenCreate() int {
	ttl := 24 * time.Hour
	if v, ok := r.c.Value("--ttl"); ok {
		d, err := time.ParseDuration(v)
		if err != nil && v != "0" {
			return r.fail("", "invalid argument %q for \"--ttl\" flag: %v", v, err)
		}
		ttl = d
	}
	c, err := r.adminAPI()
	if err != nil {
		return r.fail("", "%v", err)
	}
	id, secret := randomToken()
	var expires time.Time
	if ttl > 0 {
		expires = r.now().Add(ttl)
	}
	desc, _ := r.c.Value("--description")
	if _, err := createBootstrapToken(r.ctx, c.API, id, secret, expires, []string{"signing", "authentication"}, []string{defaultTokenGroup}, desc); err != nil {
		return r.fail("", "failed to create or update bootstrap token with name bootstrap-token-%s: %v", id, err)
	}
	r.out("%s.%s", id, secret)
	return 0
}

// uploadCertsPhase is `kubeadm init phase upload-certs --upload-certs
// --config FILE` on a control plane. Like every phase of init, it loads
// and checks the whole configuration first (cmd/kubeadm/app/cmd/init.go
// newInitData), the advertise address included: without one, on a
// machine without a default route, it fails as init would.
func (r *kubeadmRun) uploadCertsPhase() int {
	cfg, code, ok := r.readConfig("initconfiguration.go:332")
	if !ok {
		return code
	}
	if _, err := r.planInit(cfg); err != nil {
		return r.fail("", "%v", err)
	}
	if !r.c.Has("--upload-certs") {
		r.out("[upload-certs] Skipping phase. Please see --upload-certs")
		return 0
	}
	key := ""
	if cfg.Init != nil {
		key = cfg.Init.CertificateKey
	}
	if key == "" {
		key = newCertificateKey()
	}
	c, err := r.adminAPI()
	if err != nil {
		return r.fail("upload-certs", "%v", err)
	}
	if err := r.uploadCerts(c.API, nil, key); err != nil {
		return r.fail("upload-certs", "%v", err)
	}
	r.out("[upload-certs] Storing the certificates in Secret %q in the %q Namespace", kubeadmCertsSecret, "kube-system")
	r.out("[upload-certs] Using certificate key:")
	r.out("%s", withheld(key, r.c.Has("--skip-certificate-key-print")))
	return 0
}

// certFiles are the files kubeadm-certs carries, by Secret key
// (cmd/kubeadm/app/phases/copycerts/copycerts.go certsToTransfer; the
// etcd CA's key is "etcd-ca.crt").
var certFiles = []struct{ key, file string }{
	{"ca.crt", pkiDir + "/ca.crt"}, {"ca.key", pkiDir + "/ca.key"},
	{"sa.key", pkiDir + "/sa.key"}, {"sa.pub", pkiDir + "/sa.pub"},
	{"front-proxy-ca.crt", pkiDir + "/front-proxy-ca.crt"}, {"front-proxy-ca.key", pkiDir + "/front-proxy-ca.key"},
	{"etcd-ca.crt", pkiDir + "/etcd/ca.crt"}, {"etcd-ca.key", pkiDir + "/etcd/ca.key"},
}

// uploadCerts stores the CAs of this machine's /etc/kubernetes/pki,
// encrypted with the certificate key, in the Secret kubeadm-certs, owned
// by a bootstrap token that expires in 2 hours so that the token cleaner
// and the garbage collector remove both (copycerts.go UploadCerts,
// constants.DefaultCertTokenDuration).
func (r *kubeadmRun) uploadCerts(api API, _ *Cluster, keyHex string) error {
	key, err := hex.DecodeString(keyHex)
	if err != nil || len(key) != 32 {
		return fmt.Errorf("error decoding certificate key: the certificate key must be 32 bytes, hex encoded")
	}
	data := map[string][]byte{}
	for _, f := range certFiles {
		raw, err := r.p.FS.ReadFile(f.file)
		if err != nil {
			return fmt.Errorf("error uploading certs: %v", err)
		}
		enc, err := encryptCerts(raw, key)
		if err != nil {
			return err
		}
		data[f.key] = enc
	}
	id, secret := randomToken()
	owner, err := createBootstrapToken(r.ctx, api, id, secret, r.now().Add(2*time.Hour), nil, nil, "Proxy for managing TTL for the kubeadm-certs secret")
	if err != nil {
		return fmt.Errorf("error uploading certs: %v", err)
	}
	block := true
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: kubeadmCertsSecret, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Secret", Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block,
		}}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if _, err := createOrUpdate(r.ctx, api, s); err != nil {
		return fmt.Errorf("error uploading certs: %v", err)
	}
	return nil
}
