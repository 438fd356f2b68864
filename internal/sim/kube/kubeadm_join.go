package kube

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// join is `kubeadm join --config FILE` (cmd/kubeadm/app/cmd/join.go and
// its phases: preflight with discovery, control-plane-prepare,
// kubelet-start, control-plane-join).
func (r *kubeadmRun) join() int {
	cfg, code, ok := r.readConfig("joinconfiguration.go:91")
	if !ok {
		return code
	}
	jc := cfg.Join
	if jc == nil {
		return r.fail("", "no JoinConfiguration found in the supplied config")
	}
	nr := jc.NodeRegistration
	if err := checkCRISocket(nr.CRISocket); err != nil {
		return r.fail("", "%v", err)
	}
	name := nr.Name
	if name == "" {
		name = strings.ToLower(r.m.Hostname())
	}
	bt := jc.Discovery.BootstrapToken
	switch {
	case bt == nil && jc.Discovery.File != nil:
		return r.p.Fail(2, "file discovery is not modelled by internal/sim/kube (the SDK uses token discovery)")
	case bt == nil:
		return r.fail("", "discovery: Invalid value: \"\": bootstrapToken or file must be set")
	case bt.APIServerEndpoint == "":
		return r.fail("", "discovery.bootstrapToken.apiServerEndpoint: Invalid value: \"\": the API server endpoint must be set")
	case len(bt.CACertHashes) == 0 && !bt.UnsafeSkipCAVerification:
		return r.fail("", "discovery.bootstrapToken: Invalid value: \"\": using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue")
	}
	tokenID, tokenSecret, valid := splitToken(bt.Token)
	if !valid {
		return r.fail("", "discovery.bootstrapToken.token: Invalid value: \"<value withheld>\": the bootstrap token is invalid")
	}
	if tls := jc.Discovery.TLSBootstrapToken; tls != "" && tls != bt.Token {
		return r.p.Fail(2, "a tlsBootstrapToken different from the discovery token is not modelled by internal/sim/kube")
	}
	cp := jc.ControlPlane
	var address string
	var err error
	if cp != nil {
		address, err = r.advertiseAddress(cp.LocalAPIEndpoint.AdvertiseAddress, "controlPlane.localAPIEndpoint.advertiseAddress")
		if err == nil {
			// cmd/kubeadm/app/cmd/join.go newJoinData.
			err = verifyBindAddress(address)
		}
	} else {
		address, err = r.advertiseAddress(nodeIPArg(nr.KubeletExtraArgs), "nodeRegistration.kubeletExtraArgs.node-ip")
		if address == "0.0.0.0" {
			// A worker's kubelet without --node-ip and without a default
			// route takes its host name's address
			// (pkg/kubelet/nodestatus/setters.go NodeAddress).
			address = hostAddress(r.m)
		}
	}
	if err != nil {
		return r.fail("", "%v", err)
	}
	files := []string{kubeletConf, bootstrapKubeletConf, pkiDir + "/ca.crt"}
	if cp != nil {
		files = append(files, manifestsDir+"/kube-apiserver.yaml", manifestsDir+"/kube-controller-manager.yaml", manifestsDir+"/kube-scheduler.yaml", manifestsDir+"/etcd.yaml")
	}
	errs, warns := r.commonChecks(files)
	if e := kubeletVersionCheck(r.m, kubeVersion(r.m, "kubeadm")); e != nil && (len(errs) == 0 || errs[0].name != "IsPrivilegedUser") {
		errs = append(errs, *e)
	}
	if !r.preflight("preflight", nr.IgnorePreflightErrors, errs, warns) {
		return 1
	}

	// Discovery (cmd/kubeadm/app/discovery/token/token.go).
	c, err := r.discover(bt, tokenID, tokenSecret)
	if err != nil {
		return r.fail("preflight", "couldn't validate the identity of the API Server: %v", err)
	}
	r.out("[preflight] Reading configuration from the cluster...")
	if _, _, err := c.API.Authenticate(r.ctx, bt.Token); err != nil {
		return r.fail("preflight", "unable to fetch the kubeadm-config ConfigMap: %v", err)
	}
	cc, err := clusterConfigOf(r.ctx, c.API)
	if err != nil {
		return r.fail("preflight", "unable to fetch the kubeadm-config ConfigMap: %v", err)
	}
	if err := r.nodeNameFree(c, name); err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	if cp != nil {
		if cc.ControlPlaneEndpoint == "" {
			return r.fail("preflight", "\nOne or more conditions for hosting a new control plane instance is not satisfied.\n\nunable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address\n\nPlease ensure that:\n* The cluster has a stable controlPlaneEndpoint address.\n* The certificates that must be shared among control plane instances are provided.\n")
		}
		if _, err := r.advertiseAddress(cp.LocalAPIEndpoint.AdvertiseAddress, "controlPlane.localAPIEndpoint.advertiseAddress"); err != nil {
			return r.fail("", "%v", err)
		}
		r.out("[preflight] Running pre-flight checks before initializing the new control plane instance")
		certs, err := r.downloadCerts(c, cp.CertificateKey)
		if err != nil {
			return r.fail("control-plane-prepare/download-certs", "error downloading certs: %v", err)
		}
		port := int(cp.LocalAPIEndpoint.BindPort)
		if port == 0 {
			port = defaultBindPort
		}
		kc, err := kubeletConfigOf(r.ctx, c.API)
		if err != nil {
			return r.fail("kubelet-start", "%v", err)
		}
		if _, err := r.writeControlPlaneFiles(certs, name, address, port, cc, kc, c.Version); err != nil {
			return r.fail("control-plane-prepare/certs", "%v", err)
		}
		// check-etcd runs after control-plane-prepare wrote the
		// certificates and manifests (cmd/kubeadm/app/cmd/join.go phase
		// order): a failure leaves them, for kubeadm reset.
		if err := r.w.checkEtcd(r.ctx, c); err != nil {
			return r.fail("check-etcd", "%v", err)
		}
		r.restartKubelet()
		if err := kubeletHealthy(r.m); err != nil {
			return r.fail("kubelet-start", "%s", kubeletWaitError(err))
		}
		taints := nr.Taints
		if taints == nil {
			taints = []corev1.Taint{{Key: controlPlaneLabel, Effect: corev1.TaintEffectNoSchedule}}
		}
		r.w.setMember(r.m, &member{cluster: c, node: name, controlPlane: true, address: address, bindPort: port, taints: taints})
		if err := c.cp.Etcd().Add(r.ctx, EtcdPeer{Name: name, Address: address}); err != nil {
			return r.fail("etcd-join", "error creating local etcd static pod manifest file: %v", err)
		}
		r.out("[etcd] Announced new etcd member joining to the existing etcd cluster")
		if err := r.w.Sync(r.ctx); err != nil {
			return r.fail("control-plane-join", "%v", err)
		}
		r.out("[mark-control-plane] Marking the node %s as control-plane by adding the labels: [%s %s]", name, controlPlaneLabel, excludeLBLabel)
		r.out("")
		r.out("This node has joined the cluster and a new control plane instance was created:")
		r.out("")
		r.out("* Certificate signing request was sent to apiserver and approval was received.")
		r.out("* The Kubelet was informed of the new secure connection details.")
		r.out("* Control plane label and taint were applied to the new node.")
		r.out("* The Kubernetes control plane instances scaled up.")
		r.out("* A new etcd member was added to the local/stacked etcd cluster.")
		r.out("")
		r.out("To start administering your cluster from this node, you need to run the following as a regular user:")
		r.out("")
		r.out("\tmkdir -p $HOME/.kube")
		r.out("\tsudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config")
		r.out("\tsudo chown $(id -u):$(id -g) $HOME/.kube/config")
		r.out("")
		r.out("Run 'kubectl get nodes' to see this node join the cluster.")
		return 0
	}
	// kubelet-start: the CA, the kubelet's configuration from the
	// kubelet-config ConfigMap, then the TLS bootstrap gives kubelet.conf
	// (cmd/kubeadm/app/cmd/phases/join/kubelet.go).
	kc, err := kubeletConfigOf(r.ctx, c.API)
	if err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	r.out("[kubelet-start] Writing kubelet configuration to file %q", kubeletConfigFile)
	if err := r.writeFile(pkiDir+"/ca.crt", c.CACert, 0o644); err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	if err := r.writeKubeletFiles(kc, name, address); err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	node, err := newKeyPair(c.ca, "system:node:"+name, []string{"system:nodes"}, nil, nil)
	if err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	r.out("[kubelet-start] Starting the kubelet")
	r.restartKubelet()
	if err := kubeletHealthy(r.m); err != nil {
		return r.fail("kubelet-start", "%s", kubeletWaitError(err))
	}
	r.out("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap")
	if err := r.writeFile(kubeletConf, []byte(renderKubeconfig("https://"+c.Endpoint, c.CACert, "system:node:"+name, node)), 0o600); err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	r.w.setMember(r.m, &member{cluster: c, node: name, address: address})
	if err := r.w.Sync(r.ctx); err != nil {
		return r.fail("kubelet-start", "%v", err)
	}
	r.out("")
	r.out("This node has joined the cluster:")
	r.out("* Certificate signing request was sent to apiserver and a response was received.")
	r.out("* The Kubelet was informed of the new secure connection details.")
	r.out("")
	r.out("Run 'kubectl get nodes' on the control-plane to see this node join the cluster.")
	return 0
}

// checkEtcd is the check-etcd phase of a control-plane join
// (cmd/kubeadm/app/cmd/phases/join/checketcd.go, etcd client
// CheckClusterHealth): every member must answer, so a member whose
// machine is gone or whose etcd does not run (no static pod, kubelet or
// containerd down) fails the join until it is removed.
func (w *World) checkEtcd(ctx context.Context, c *Cluster) error {
	members, err := c.EtcdMembers(ctx)
	if err != nil {
		return fmt.Errorf("etcd cluster is not healthy: %w", err)
	}
	for _, em := range members {
		m, mb := w.machineOfNode(ctx, em.Name, c, nil)
		alive := m != nil && mb.cluster == c && !mb.gone && mb.controlPlane &&
			m.Server().FS().Exists(manifestsDir+"/etcd.yaml") && m.Service("kubelet").Active && containers.Containerd(m).Running()
		if !alive {
			return fmt.Errorf("etcd cluster is not healthy: failed to dial endpoint %s with maintenance client: context deadline exceeded", em.ClientURLs[0])
		}
	}
	return nil
}

// nodeIPArg is the kubelet's --node-ip among kubeletExtraArgs.
func nodeIPArg(args []kubeadmArg) string {
	for _, a := range args {
		if a.Name == "node-ip" {
			return a.Value
		}
	}
	return ""
}

// discover is token discovery: fetch cluster-info from the endpoint,
// check the JWS signature the bootstrap signer made for the token, and
// pin the CA (token.go retrieveValidatedConfigInfo; its retries until
// timeouts.discovery are not modelled: the last error is returned at
// once).
func (r *kubeadmRun) discover(bt *kubeadmBootstrapTokenDiscovery, id, secret string) (*Cluster, error) {
	c, err := r.w.Dial(r.m, bt.APIServerEndpoint)
	if err != nil {
		return nil, fmt.Errorf("failed to request the cluster-info ConfigMap: Get \"https://%s/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s\": %v", bt.APIServerEndpoint, err)
	}
	if err := r.w.runBootstrapControllers(r.ctx, c); err != nil {
		return nil, err
	}
	// A real bootstrapsigner signs a new token's cluster-info within
	// moments; kubeadm retries until then (token.go: wait.PollUntil
	// ContextTimeout, every 5 s until timeouts.discovery, 5 min by
	// default). The model's signer ran above: one look is enough.
	deadline := time.Now()
	if c.cp.RunsBootstrapControllers() {
		deadline = deadline.Add(discoveryRetryWindow)
	}
	var content, sig string
	for {
		obj, err := c.API.Get(r.ctx, KindConfigMap, "kube-public", "cluster-info")
		if err != nil {
			return nil, fmt.Errorf("failed to request the cluster-info ConfigMap: %v", err)
		}
		cm := obj.(*corev1.ConfigMap)
		var ok bool
		content, ok = cm.Data[clusterInfoKey]
		if !ok || content == "" {
			return nil, fmt.Errorf("there is no %s key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect", clusterInfoKey)
		}
		if sig = cm.Data[jwsPrefix+id]; sig != "" {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("could not find a JWS signature in the cluster-info ConfigMap for token ID %q", id)
		}
		select {
		case <-r.ctx.Done():
			return nil, r.ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !detachedJWSValid(sig, content, id, secret) {
		return nil, fmt.Errorf("failed to verify JWS signature of received cluster info object, can't trust this API Server")
	}
	if len(bt.CACertHashes) == 0 {
		return c, nil
	}
	_, ca, err := parseKubeconfig([]byte(content))
	if err != nil {
		return nil, fmt.Errorf("couldn't parse the kubeconfig file in the cluster-info ConfigMap: %v", err)
	}
	for _, h := range bt.CACertHashes {
		if !strings.HasPrefix(h, "sha256:") {
			return nil, fmt.Errorf("invalid discovery token CA certificate hash: unsupported hash format %q (must be \"sha256:<hex>\")", h)
		}
	}
	got := CACertHash(ca)
	if !slices.Contains(bt.CACertHashes, got) {
		return nil, fmt.Errorf("cluster CA found in cluster-info ConfigMap is invalid: none of the public keys %q are pinned", got)
	}
	return c, nil
}

// discoveryRetryWindow is how long a join waits for a real
// bootstrapsigner to sign cluster-info for its token: long enough for a
// token created moments ago, short enough that a token the API server
// does not hold fails a test quickly.
const discoveryRetryWindow = 15 * time.Second

// runBootstrapControllers runs, once, what kube-controller-manager's
// token cleaner and bootstrap signer would have done by now:
// expired bootstrap token Secrets are deleted (pkg/controller/bootstrap/
// tokencleaner.go; the garbage collector then deletes what they own, the
// kubeadm-certs Secret), and cluster-info carries one
// jws-kubeconfig-<id> signature per valid signing token and no other
// (pkg/controller/bootstrap/bootstrapsigner.go).
//
// A control plane whose kube-controller-manager runs them (a real one)
// is left to it.
func (w *World) runBootstrapControllers(ctx context.Context, c *Cluster) error {
	if c.cp.RunsBootstrapControllers() {
		return nil
	}
	w.ctrlMu.Lock()
	defer w.ctrlMu.Unlock()
	objs, err := c.API.List(ctx, KindSecret, "kube-system")
	if err != nil {
		return err
	}
	now := w.now()
	sigs := map[string]string{}
	obj, err := c.API.Get(ctx, KindConfigMap, "kube-public", "cluster-info")
	if err != nil {
		return nil
	}
	cm := obj.(*corev1.ConfigMap)
	content := cm.Data[clusterInfoKey]
	for _, o := range objs {
		s, ok := o.(*corev1.Secret)
		if !ok || s.Type != "bootstrap.kubernetes.io/token" {
			continue
		}
		if tokenExpired(s, now) {
			if err := c.API.Delete(ctx, KindSecret, s.Namespace, s.Name); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		if string(s.Data["usage-bootstrap-signing"]) == "true" {
			id, secret := string(s.Data["token-id"]), string(s.Data["token-secret"])
			sigs[jwsPrefix+id] = detachedJWS(content, id, secret)
		}
	}
	changed := false
	for k := range cm.Data {
		if strings.HasPrefix(k, jwsPrefix) && sigs[k] == "" {
			delete(cm.Data, k)
			changed = true
		}
	}
	for k, v := range sigs {
		if cm.Data[k] != v {
			cm.Data[k] = v
			changed = true
		}
	}
	if changed {
		_, err = c.API.Update(ctx, cm)
	}
	return err
}

// tokenExpired reads a bootstrap token Secret's expiration (RFC 3339).
func tokenExpired(s *corev1.Secret, now time.Time) bool {
	exp, ok := s.Data["expiration"]
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, string(exp))
	return err != nil || !now.Before(t)
}

// clusterConfigOf reads the ClusterConfiguration kubeadm init uploaded.
func clusterConfigOf(ctx context.Context, api API) (*kubeadmCluster, error) {
	obj, err := api.Get(ctx, KindConfigMap, "kube-system", "kubeadm-config")
	if err != nil {
		return nil, err
	}
	var cc kubeadmCluster
	if err := yaml.Unmarshal([]byte(obj.(*corev1.ConfigMap).Data["ClusterConfiguration"]), &cc); err != nil {
		return nil, err
	}
	return &cc, nil
}

// kubeletConfigOf reads the kubelet-config ConfigMap.
func kubeletConfigOf(ctx context.Context, api API) (*kubeletConfig, error) {
	obj, err := api.Get(ctx, KindConfigMap, "kube-system", "kubelet-config")
	if err != nil {
		return nil, fmt.Errorf("error downloading the kubelet configuration from the ConfigMap %q in the kube-system namespace: %v", "kubelet-config", err)
	}
	var kc kubeletConfig
	if err := yaml.Unmarshal([]byte(obj.(*corev1.ConfigMap).Data["kubelet"]), &kc); err != nil {
		return nil, err
	}
	return &kc, nil
}

// nodeNameFree refuses a join under the name of a Ready node
// (cmd/kubeadm/app/cmd/phases/join/kubelet.go, since 1.18).
func (r *kubeadmRun) nodeNameFree(c *Cluster, name string) error {
	if err := r.w.Sync(r.ctx); err != nil {
		return err
	}
	obj, err := c.API.Get(r.ctx, KindNode, "", name)
	if err != nil {
		return nil
	}
	for _, cond := range obj.(*corev1.Node).Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return fmt.Errorf("a Node with name %q and status \"Ready\" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node", name)
		}
	}
	return nil
}

// downloadCerts fetches and decrypts kubeadm-certs with the certificate
// key (copycerts.go DownloadCerts), or, without a key, reads the CAs an
// operator copied into /etc/kubernetes/pki. It returns a Cluster value
// holding the joining machine's view of the CAs.
func (r *kubeadmRun) downloadCerts(c *Cluster, keyHex string) (*Cluster, error) {
	files := map[string][]byte{}
	if keyHex == "" {
		for _, f := range certFiles {
			data, err := r.p.FS.ReadFile(f.file)
			if err != nil {
				return nil, fmt.Errorf("failure loading certificate for CA: couldn't load the certificate file %s: %v", f.file, err)
			}
			files[f.key] = data
		}
	} else {
		key, err := hex.DecodeString(keyHex)
		if err != nil {
			return nil, fmt.Errorf("error decoding certificate key: %v", err)
		}
		if err := r.w.runBootstrapControllers(r.ctx, c); err != nil {
			return nil, err
		}
		obj, err := c.API.Get(r.ctx, KindSecret, "kube-system", kubeadmCertsSecret)
		if err != nil {
			return nil, fmt.Errorf("error downloading the secret: %v", err)
		}
		for k, v := range obj.(*corev1.Secret).Data {
			plain, err := decryptCerts(v, key)
			if err != nil {
				return nil, fmt.Errorf("error decoding secret data with provided key: %v", err)
			}
			files[k] = plain
		}
	}
	out := &Cluster{Endpoint: c.Endpoint, Version: c.Version, saKey: files["sa.key"], saPub: files["sa.pub"]}
	var err error
	if out.ca, err = parseKeyPair(files["ca.crt"], files["ca.key"]); err != nil {
		return nil, fmt.Errorf("failure loading certificate for CA: %v", err)
	}
	if out.etcdCA, err = parseKeyPair(files["etcd-ca.crt"], files["etcd-ca.key"]); err != nil {
		return nil, fmt.Errorf("failure loading certificate for etcd CA: %v", err)
	}
	if out.frontProxyCA, err = parseKeyPair(files["front-proxy-ca.crt"], files["front-proxy-ca.key"]); err != nil {
		return nil, fmt.Errorf("failure loading certificate for front-proxy CA: %v", err)
	}
	out.CACert = out.ca.CertPEM
	return out, nil
}

// reset is `kubeadm reset [--force]` (cmd/kubeadm/app/cmd/reset.go and
// phases/reset: preflight, remove-etcd-member, cleanup-node): on a
// control plane its etcd member is removed; the kubelet is stopped;
// /etc/kubernetes/manifests, /var/lib/kubelet, /etc/kubernetes/pki (and
// /var/lib/etcd) are emptied and the kubeconfig files deleted. The Node
// object stays (kubectl delete node removes it).
func (r *kubeadmRun) reset() int {
	if !r.c.Has("--force", "-f") {
		r.klogWarning("preflight.go:56", "[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted.")
		fmt.Fprint(r.p.Stdout, "[reset] Are you sure you want to proceed? [y/N]: ")
		line, _ := bufio.NewReader(r.p.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return r.fail("preflight", "won't proceed; the user didn't answer (Y|y) in order to continue")
		}
	}
	if r.p.FS.Cred().UID != 0 {
		r.preflight("preflight", nil, []preflightCheck{{"IsPrivilegedUser", "user is not running as root"}}, nil)
		return 1
	}
	r.out("[preflight] Running pre-flight checks")
	mb := r.w.memberOf(r.m)
	etcdLocal := r.m.Server().FS().Exists(manifestsDir + "/etcd.yaml")
	if etcdLocal {
		// phases/reset/removeetcdmember.go: through the cluster's API
		// and etcd, the member of this node is removed; without them,
		// a warning.
		// cmd/kubeadm/app/phases/etcd/local.go
		// RemoveStackedEtcdMemberFromCluster: the only remaining member
		// is not removed.
		removed := false
		if mb != nil && mb.controlPlane {
			if ms, err := mb.cluster.EtcdMembers(r.ctx); err == nil && len(ms) == 1 && ms[0].Name == mb.node {
				removed = true
			} else if ok, err := mb.cluster.removeEtcdMemberByName(r.ctx, mb.node); err == nil {
				removed = ok
			}
		}
		if !removed {
			r.klogWarning("removeetcdmember.go:106", "[reset] No kubeadm config, using etcd pod spec to get data directory")
		}
		r.removeContents(etcdDataDir)
		r.out("[reset] Deleted contents of the etcd data directory: %s", etcdDataDir)
	}
	r.out("[reset] Stopping the kubelet service")
	q := *r.p
	q.Stdout, q.Stderr, q.Stdin = discard{}, discard{}, strings.NewReader("")
	q.Exec(r.ctx, "systemctl", "stop", "kubelet")
	r.out("[reset] Unmounting mounted directories in %q", kubeletDir)
	dirs := []string{manifestsDir, kubeletDir, pkiDir}
	r.out("[reset] Deleting contents of directories: [%s]", strings.Join(dirs, " "))
	for _, d := range dirs {
		r.removeContents(d)
	}
	conf := []string{adminConf, superAdminConf, kubeletConf, bootstrapKubeletConf, controllerMgrConf, schedulerConf}
	r.out("[reset] Deleting files: [%s]", strings.Join(conf, " "))
	for _, f := range conf {
		_ = r.p.FS.Remove(f)
	}
	r.w.setMember(r.m, nil)
	r.out("")
	r.out("The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d")
	r.out("")
	r.out("The reset process does not reset or clean up iptables rules or IPVS tables.")
	r.out("If you wish to reset iptables, you must do so manually by using the \"iptables\" command.")
	r.out("")
	r.out("If your cluster was setup to utilize IPVS, run ipvsadm --clear (or similar)")
	r.out("to reset your system's IPVS tables.")
	r.out("")
	r.out("The reset process does not clean your kubeconfig files and you must remove them manually.")
	r.out("Please, check the contents of the $HOME/.kube/config file.")
	return 0
}

// discard is an io.Writer that drops what it gets.
type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// removeContents deletes what a directory holds, keeping it.
func (r *kubeadmRun) removeContents(dir string) {
	entries, err := r.p.FS.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			r.removeContents(p)
		}
		_ = r.p.FS.Remove(p)
	}
}

// fsMode converts a permission literal.
func fsMode(perm uint32) fs.FileMode { return fs.FileMode(perm) }

// hostAddress is the machine's primary address: the address its SSH
// server listens on (the simulated cloud's fixed IP of its first port),
// or the address /etc/hosts gives its hostname; never 127.0.0.1 nor
// cloud-init's 127.0.1.1 hostname line.
func hostAddress(m *ubuntu.Machine) string {
	for _, a := range []string{m.Server().IP(), lookupEtcHosts(m, m.Hostname())} {
		if ip, err := netip.ParseAddr(a); err == nil && a != "127.0.0.1" && a != "127.0.1.1" && !ip.IsUnspecified() && a != "::1" {
			return a
		}
	}
	return ""
}
