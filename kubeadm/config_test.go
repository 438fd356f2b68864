package kubeadm

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/remote"
)

// The structs below are shaped as upstream's
// (cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go; the kubelet's
// staging/src/k8s.io/kubelet/config/v1beta1/types.go), transcribed field
// by field from upstream, independently of config.go, with every field
// of the kinds mgmtkit writes (sub-objects it never writes kept as raw
// JSON). kubeadm decodes its configuration strictly
// (cmd/kubeadm/app/util/config/strict: an unknown or duplicate field is
// an error), which TestConfigDecodesStrictlyAsUpstream reproduces.

type upArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type upAPIEndpoint struct {
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	BindPort         int32  `json:"bindPort,omitempty"`
}

type upNodeRegistrationOptions struct {
	Name                  string            `json:"name,omitempty"`
	CRISocket             string            `json:"criSocket,omitempty"`
	Taints                []corev1.Taint    `json:"taints"`
	KubeletExtraArgs      []upArg           `json:"kubeletExtraArgs,omitempty"`
	IgnorePreflightErrors []string          `json:"ignorePreflightErrors,omitempty"`
	ImagePullPolicy       corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	ImagePullSerial       *bool             `json:"imagePullSerial,omitempty"`
}

type upInitConfiguration struct {
	metav1.TypeMeta  `json:",inline"`
	BootstrapTokens  []json.RawMessage         `json:"bootstrapTokens,omitempty"`
	DryRun           bool                      `json:"dryRun,omitempty"`
	NodeRegistration upNodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	LocalAPIEndpoint upAPIEndpoint             `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string                    `json:"certificateKey,omitempty"`
	SkipPhases       []string                  `json:"skipPhases,omitempty"`
	Patches          json.RawMessage           `json:"patches,omitempty"`
	Timeouts         json.RawMessage           `json:"timeouts,omitempty"`
}

type upControlPlaneComponent struct {
	ExtraArgs    []upArg           `json:"extraArgs,omitempty"`
	ExtraVolumes []json.RawMessage `json:"extraVolumes,omitempty"`
	ExtraEnvs    []json.RawMessage `json:"extraEnvs,omitempty"`
}

type upAPIServer struct {
	upControlPlaneComponent `json:",inline"`
	CertSANs                []string `json:"certSANs,omitempty"`
}

type upNetworking struct {
	ServiceSubnet string `json:"serviceSubnet,omitempty"`
	PodSubnet     string `json:"podSubnet,omitempty"`
	DNSDomain     string `json:"dnsDomain,omitempty"`
}

type upClusterConfiguration struct {
	metav1.TypeMeta             `json:",inline"`
	Etcd                        json.RawMessage         `json:"etcd,omitempty"`
	Networking                  upNetworking            `json:"networking,omitempty"`
	KubernetesVersion           string                  `json:"kubernetesVersion,omitempty"`
	ControlPlaneEndpoint        string                  `json:"controlPlaneEndpoint,omitempty"`
	APIServer                   upAPIServer             `json:"apiServer,omitempty"`
	ControllerManager           upControlPlaneComponent `json:"controllerManager,omitempty"`
	Scheduler                   upControlPlaneComponent `json:"scheduler,omitempty"`
	DNS                         json.RawMessage         `json:"dns,omitempty"`
	Proxy                       json.RawMessage         `json:"proxy,omitempty"`
	CertificatesDir             string                  `json:"certificatesDir,omitempty"`
	ImageRepository             string                  `json:"imageRepository,omitempty"`
	FeatureGates                map[string]bool         `json:"featureGates,omitempty"`
	ClusterName                 string                  `json:"clusterName,omitempty"`
	EncryptionAlgorithm         string                  `json:"encryptionAlgorithm,omitempty"`
	CertificateValidityPeriod   *metav1.Duration        `json:"certificateValidityPeriod,omitempty"`
	CACertificateValidityPeriod *metav1.Duration        `json:"caCertificateValidityPeriod,omitempty"`
}

type upBootstrapTokenDiscovery struct {
	Token                    string   `json:"token"`
	APIServerEndpoint        string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes             []string `json:"caCertHashes,omitempty"`
	UnsafeSkipCAVerification bool     `json:"unsafeSkipCAVerification,omitempty"`
}

type upDiscovery struct {
	BootstrapToken    *upBootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
	File              json.RawMessage            `json:"file,omitempty"`
	TLSBootstrapToken string                     `json:"tlsBootstrapToken,omitempty"`
}

type upJoinControlPlane struct {
	LocalAPIEndpoint upAPIEndpoint `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string        `json:"certificateKey,omitempty"`
}

type upJoinConfiguration struct {
	metav1.TypeMeta  `json:",inline"`
	DryRun           bool                      `json:"dryRun,omitempty"`
	NodeRegistration upNodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	CACertPath       string                    `json:"caCertPath,omitempty"`
	Discovery        upDiscovery               `json:"discovery"`
	ControlPlane     *upJoinControlPlane       `json:"controlPlane,omitempty"`
	SkipPhases       []string                  `json:"skipPhases,omitempty"`
	Patches          json.RawMessage           `json:"patches,omitempty"`
	Timeouts         json.RawMessage           `json:"timeouts,omitempty"`
}

type upKubeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	CgroupDriver    string `json:"cgroupDriver,omitempty"`
}

// splitDocs splits a rendered file at its "---" lines.
func splitDocs(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	for _, d := range bytes.Split(b, []byte("---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// decodeStrict decodes one document into the upstream-shaped struct of
// its kind, refusing unknown fields.
func decodeStrict(t *testing.T, doc []byte) any {
	t.Helper()
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatal(err)
	}
	var into any
	switch meta.APIVersion + " " + meta.Kind {
	case "kubeadm.k8s.io/v1beta4 InitConfiguration":
		into = &upInitConfiguration{}
	case "kubeadm.k8s.io/v1beta4 ClusterConfiguration":
		into = &upClusterConfiguration{}
	case "kubeadm.k8s.io/v1beta4 JoinConfiguration":
		into = &upJoinConfiguration{}
	case "kubelet.config.k8s.io/v1beta1 KubeletConfiguration":
		into = &upKubeletConfiguration{}
	default:
		t.Fatalf("document of unknown kind %q %q:\n%s", meta.APIVersion, meta.Kind, doc)
	}
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("strict decoding of %s: %v\n%s", meta.Kind, err, doc)
	}
	return into
}

func testInitOptions() InitOptions {
	return InitOptions{
		NodeName:         "master-10-0-0-5",
		AdvertiseAddress: "10.0.0.5",
		Endpoint:         "10.0.0.100:16443",
		PodCIDR:          netip.MustParsePrefix("192.168.0.0/16"),
		ServiceCIDR:      netip.MustParsePrefix("10.96.0.0/12"),
		Version:          "1.36.2",
		CertSANs:         []string{"203.0.113.7"},
	}
}

const (
	testToken   = "abcdef.0123456789abcdef"
	testCertKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	testHash    = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func testJoinOptions(controlPlane bool) JoinOptions {
	o := JoinOptions{
		NodeName:         "worker-10-0-0-12",
		AdvertiseAddress: "10.0.0.12",
		Info: JoinInfo{
			Endpoint:   "10.0.0.100:16443",
			Token:      remote.NewSecret(testToken),
			CACertHash: testHash,
		},
	}
	if controlPlane {
		o.NodeName, o.AdvertiseAddress = "master-10-0-0-6", "10.0.0.6"
		o.ControlPlane = true
		o.Info.CertificateKey = remote.NewSecret(testCertKey)
	}
	return o
}

// configVariants are the kubeadm configuration files the SDK renders,
// one golden each (testdata/config-NAME.golden): the init of a cluster
// of one master, of three masters behind a VIP reached at a floating IP,
// with custom networks, on IPv6; the upload of the control-plane
// certificates; the joins of a worker and of a master. The module
// cloudtest/realkube has the real kubeadm validate every one of them
// (`kubeadm config validate`), so a variant belongs here, not only in a
// test of its own.
func configVariants(t *testing.T) map[string][]byte {
	t.Helper()
	v6 := func(o JoinOptions) JoinOptions {
		o.NodeName, o.AdvertiseAddress = NodeName("master", "fd00::6"), "fd00::6"
		o.Info.Endpoint = "[fd00::100]:16443"
		return o
	}
	out := map[string][]byte{}
	for name, render := range map[string]func() ([]byte, error){
		// Three masters behind the VIP, the VIM reaching them at a
		// floating IP (a certificate SAN), the default networks.
		"config-init": func() ([]byte, error) { return renderInitConfig(testInitOptions(), "v1.36.2") },
		"config-init-single-master": func() ([]byte, error) {
			o := testInitOptions()
			o.Endpoint, o.CertSANs = "10.0.0.5:6443", nil
			o.PodCIDR, o.ServiceCIDR = netip.MustParsePrefix(DefaultPodCIDR), netip.MustParsePrefix(DefaultClusterCIDR)
			return renderInitConfig(o, "v1.36.2")
		},
		"config-init-custom-cidrs": func() ([]byte, error) {
			o := testInitOptions()
			o.PodCIDR, o.ServiceCIDR = netip.MustParsePrefix("172.20.0.0/14"), netip.MustParsePrefix("172.16.0.0/20")
			return renderInitConfig(o, "v1.36.2")
		},
		"config-init-ipv6": func() ([]byte, error) {
			o := testInitOptions()
			o.NodeName, o.AdvertiseAddress, o.Endpoint = NodeName("master", "fd00::5"), "fd00::5", "[fd00::100]:16443"
			o.PodCIDR, o.ServiceCIDR = netip.MustParsePrefix("fd00:10:244::/56"), netip.MustParsePrefix("fd00:10:96::/112")
			o.CertSANs = []string{"2001:db8::7"}
			return renderInitConfig(o, "v1.36.2")
		},
		"config-upload-certs":       func() ([]byte, error) { return renderUploadCertsConfig(testCertKey, "10.0.0.5", "v1.36.2") },
		"config-upload-certs-ipv6":  func() ([]byte, error) { return renderUploadCertsConfig(testCertKey, "fd00::5", "v1.36.2") },
		"config-join-worker":        func() ([]byte, error) { return renderJoinConfig(testJoinOptions(false)) },
		"config-join-control-plane": func() ([]byte, error) { return renderJoinConfig(testJoinOptions(true)) },
		"config-join-control-plane-ipv6": func() ([]byte, error) {
			return renderJoinConfig(v6(testJoinOptions(true)))
		},
	} {
		b, err := render()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b
	}
	return out
}

func TestConfigGolden(t *testing.T) {
	for name, b := range configVariants(t) {
		golden.Assert(t, name, b)
		for _, d := range splitDocs(t, b) {
			decodeStrict(t, d)
		}
	}
	// Every golden is a variant still rendered: none left behind.
	files, err := filepath.Glob(golden.Path("config-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := configVariants(t)[strings.TrimSuffix(filepath.Base(f), ".golden")]; !ok {
			t.Errorf("%s is no variant's golden", f)
		}
	}
}

func TestConfigDecodesStrictlyAsUpstream(t *testing.T) {
	init, err := renderInitConfig(testInitOptions(), "v1.36.2")
	if err != nil {
		t.Fatal(err)
	}
	docs := splitDocs(t, init)
	if len(docs) != 3 {
		t.Fatalf("init.yaml has %d documents, want 3", len(docs))
	}
	ic := decodeStrict(t, docs[0]).(*upInitConfiguration)
	if ic.NodeRegistration.Name != "master-10-0-0-5" || ic.LocalAPIEndpoint != (upAPIEndpoint{"10.0.0.5", 6443}) ||
		ic.NodeRegistration.CRISocket != "unix:///var/run/containerd/containerd.sock" ||
		len(ic.NodeRegistration.KubeletExtraArgs) != 1 || ic.NodeRegistration.KubeletExtraArgs[0] != (upArg{"node-ip", "10.0.0.5"}) ||
		ic.NodeRegistration.Taints != nil || ic.CertificateKey != "" {
		t.Errorf("InitConfiguration = %+v", ic)
	}
	// taints: null, not left out: kubeadm's default taint for a control
	// plane (null and absent decode alike; upstream prints null too).
	if !bytes.Contains(docs[0], []byte("taints: null")) {
		t.Errorf("InitConfiguration without taints: null:\n%s", docs[0])
	}
	cc := decodeStrict(t, docs[1]).(*upClusterConfiguration)
	if cc.KubernetesVersion != "v1.36.2" || cc.ControlPlaneEndpoint != "10.0.0.100:16443" ||
		cc.Networking != (upNetworking{ServiceSubnet: "10.96.0.0/12", PodSubnet: "192.168.0.0/16"}) ||
		strings.Join(cc.APIServer.CertSANs, ",") != "203.0.113.7" {
		t.Errorf("ClusterConfiguration = %+v", cc)
	}
	kc := decodeStrict(t, docs[2]).(*upKubeletConfiguration)
	if kc.CgroupDriver != "systemd" {
		t.Errorf("KubeletConfiguration = %+v", kc)
	}

	for _, cp := range []bool{false, true} {
		b, err := renderJoinConfig(testJoinOptions(cp))
		if err != nil {
			t.Fatal(err)
		}
		docs := splitDocs(t, b)
		if len(docs) != 1 {
			t.Fatalf("join.yaml has %d documents", len(docs))
		}
		jc := decodeStrict(t, docs[0]).(*upJoinConfiguration)
		bt := jc.Discovery.BootstrapToken
		if bt == nil || bt.Token != testToken || bt.APIServerEndpoint != "10.0.0.100:16443" || len(bt.CACertHashes) != 1 || bt.CACertHashes[0] != testHash {
			t.Errorf("discovery = %+v", bt)
		}
		switch {
		case !cp && jc.ControlPlane != nil:
			t.Errorf("worker join has controlPlane %+v", jc.ControlPlane)
		case cp && (jc.ControlPlane == nil || jc.ControlPlane.CertificateKey != testCertKey || jc.ControlPlane.LocalAPIEndpoint != (upAPIEndpoint{"10.0.0.6", 6443})):
			t.Errorf("control-plane join has controlPlane %+v", jc.ControlPlane)
		}
	}

	b, err := renderUploadCertsConfig(testCertKey, "10.0.0.5", "v1.36.2")
	if err != nil {
		t.Fatal(err)
	}
	docs = splitDocs(t, b)
	if len(docs) != 2 {
		t.Fatalf("upload-certs.yaml has %d documents", len(docs))
	}
	if ic := decodeStrict(t, docs[0]).(*upInitConfiguration); ic.CertificateKey != testCertKey || ic.LocalAPIEndpoint != (upAPIEndpoint{"10.0.0.5", 6443}) {
		t.Errorf("upload-certs InitConfiguration = %+v", ic)
	}
	if cc := decodeStrict(t, docs[1]).(*upClusterConfiguration); cc.KubernetesVersion != "v1.36.2" {
		t.Errorf("upload-certs ClusterConfiguration = %+v", cc)
	}
}

// A field the upstream structs lack is refused, so the strict test can
// fail.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	doc := []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podCIDR: 10.0.0.0/8\n")
	if err := yaml.UnmarshalStrict(doc, &upClusterConfiguration{}); err == nil || !strings.Contains(err.Error(), "podCIDR") {
		t.Fatalf("unknown field: %v", err)
	}
}
