package kubeadm

import (
	"bytes"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Where the steps put kubeadm's configuration files, in [ConfigDir]:
// root's, mode 0600, because the join and upload-certs files hold a
// bootstrap token or the certificate key.
const (
	// InitConfigFile is `kubeadm init --config`'s file; it holds no
	// secret and stays after the init, as a record of it.
	InitConfigFile = ConfigDir + "/init.yaml"
	// JoinConfigFile is `kubeadm join --config`'s file. It holds the
	// bootstrap token (and the certificate key of a control-plane join)
	// and is removed after the join, whether it worked or not.
	JoinConfigFile = ConfigDir + "/join.yaml"
	// UploadCertsConfigFile is the configuration of `kubeadm init phase
	// upload-certs`, with the certificate key; removed after the upload.
	UploadCertsConfigFile = ConfigDir + "/upload-certs.yaml"
)

// The kubeadm configuration API the files are written in.
const (
	// KubeadmAPIVersion is kubeadm's configuration API
	// (cmd/kubeadm/app/apis/kubeadm/v1beta4), current since Kubernetes
	// 1.31.
	KubeadmAPIVersion = "kubeadm.k8s.io/v1beta4"
	// KubeletAPIVersion is the kubelet's configuration API
	// (staging/src/k8s.io/kubelet/config/v1beta1/types.go).
	KubeletAPIVersion = "kubelet.config.k8s.io/v1beta1"
)

// CRISocket is the container runtime endpoint every node registers
// with: containerd's, kubeadm's DefaultCRISocket on Linux
// (cmd/kubeadm/app/constants/constants_unix.go). Naming it keeps kubeadm
// from failing on a VM where it finds several CRI sockets.
const CRISocket = "unix:///var/run/containerd/containerd.sock"

// The types below are mgmtkit's copy of the few fields of kubeadm's
// v1beta4 configuration it sets, with the JSON names of
// cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go (and of
// staging/src/k8s.io/kubelet/config/v1beta1/types.go for the kubelet).
// kubeadm decodes its configuration strictly (an unknown field is an
// error), which config_test.go checks against upstream-shaped structs.
// v1beta4 made extraArgs lists of {name, value} (v1beta3 had maps).

// initConfiguration is kubeadm's InitConfiguration.
type initConfiguration struct {
	metav1.TypeMeta  `json:",inline"`
	NodeRegistration nodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	LocalAPIEndpoint apiEndpoint             `json:"localAPIEndpoint,omitempty"`
	// CertificateKey encrypts the control-plane certificates that
	// upload-certs stores in the kubeadm-certs Secret: 32 bytes, hex.
	CertificateKey string `json:"certificateKey,omitempty"`
	// BootstrapTokens are the tokens kubeadm init makes; each without
	// its token, which kubeadm then generates
	// (SetBootstrapTokensDynamicDefaults in
	// cmd/kubeadm/app/util/config/initconfiguration.go).
	BootstrapTokens []bootstrapToken `json:"bootstrapTokens,omitempty"`
}

// bootstrapToken is kubeadm's BootstrapToken without the token
// (k8s.io/kubernetes cmd/kubeadm/app/apis/bootstraptoken/v1/types.go).
type bootstrapToken struct {
	Description string `json:"description,omitempty"`
	TTL         string `json:"ttl,omitempty"`
}

// clusterConfiguration is kubeadm's ClusterConfiguration.
type clusterConfiguration struct {
	metav1.TypeMeta      `json:",inline"`
	Networking           networking `json:"networking,omitempty"`
	KubernetesVersion    string     `json:"kubernetesVersion,omitempty"`
	ControlPlaneEndpoint string     `json:"controlPlaneEndpoint,omitempty"`
	APIServer            apiServer  `json:"apiServer,omitempty"`
}

// networking is kubeadm's Networking.
type networking struct {
	ServiceSubnet string `json:"serviceSubnet,omitempty"`
	PodSubnet     string `json:"podSubnet,omitempty"`
}

// apiServer is kubeadm's APIServer (its ControlPlaneComponent part
// unused).
type apiServer struct {
	CertSANs []string `json:"certSANs,omitempty"`
}

// apiEndpoint is kubeadm's APIEndpoint.
type apiEndpoint struct {
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	BindPort         int32  `json:"bindPort,omitempty"`
}

// nodeRegistrationOptions is kubeadm's NodeRegistrationOptions. Taints
// has no omitempty upstream: null means kubeadm's default (the
// control-plane taint on control-plane nodes, none on workers).
type nodeRegistrationOptions struct {
	Name             string         `json:"name,omitempty"`
	CRISocket        string         `json:"criSocket,omitempty"`
	Taints           []corev1.Taint `json:"taints"`
	KubeletExtraArgs []arg          `json:"kubeletExtraArgs,omitempty"`
}

// arg is kubeadm's Arg: one flag without its dashes, and its value.
type arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// joinConfiguration is kubeadm's JoinConfiguration.
type joinConfiguration struct {
	metav1.TypeMeta  `json:",inline"`
	NodeRegistration nodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	Discovery        discovery               `json:"discovery"`
	ControlPlane     *joinControlPlane       `json:"controlPlane,omitempty"`
}

// discovery is kubeadm's Discovery, by bootstrap token only.
type discovery struct {
	BootstrapToken *bootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
}

// bootstrapTokenDiscovery is kubeadm's BootstrapTokenDiscovery.
type bootstrapTokenDiscovery struct {
	Token             string   `json:"token"`
	APIServerEndpoint string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes      []string `json:"caCertHashes,omitempty"`
}

// joinControlPlane is kubeadm's JoinControlPlane.
type joinControlPlane struct {
	LocalAPIEndpoint apiEndpoint `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string      `json:"certificateKey,omitempty"`
}

// kubeletConfiguration is the kubelet's KubeletConfiguration: the
// systemd cgroup driver, as containerd's SystemdCgroup = true needs.
type kubeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	CgroupDriver    string `json:"cgroupDriver,omitempty"`
}

// kubeadmMeta returns the TypeMeta of a kubeadm configuration kind.
func kubeadmMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: KubeadmAPIVersion, Kind: kind}
}

// nodeRegistration is how every node registers: its name, containerd,
// and the kubelet's node IP (the NIC address, not whatever interface
// holds the default route).
func nodeRegistration(name, address string) nodeRegistrationOptions {
	return nodeRegistrationOptions{
		Name:             name,
		CRISocket:        CRISocket,
		KubeletExtraArgs: []arg{{Name: "node-ip", Value: address}},
	}
}

// renderInitConfig renders init.yaml: InitConfiguration,
// ClusterConfiguration and KubeletConfiguration. version is the exact
// Kubernetes version ("v1.36.2"). It holds no secret.
func renderInitConfig(o InitOptions, version string) ([]byte, error) {
	return renderDocs(
		initConfiguration{
			TypeMeta:         kubeadmMeta("InitConfiguration"),
			NodeRegistration: nodeRegistration(o.NodeName, o.AdvertiseAddress),
			LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: o.AdvertiseAddress, BindPort: APIServerPort},
			// kubeadm init makes a token whatever the configuration says;
			// named, short-lived, and deleted after init (see
			// [InitTokenDescription]).
			BootstrapTokens: []bootstrapToken{{Description: InitTokenDescription, TTL: InitTokenTTL}},
		},
		clusterConfiguration{
			TypeMeta:             kubeadmMeta("ClusterConfiguration"),
			Networking:           networking{ServiceSubnet: o.ServiceCIDR.String(), PodSubnet: o.PodCIDR.String()},
			KubernetesVersion:    version,
			ControlPlaneEndpoint: o.Endpoint,
			APIServer:            apiServer{CertSANs: o.CertSANs},
		},
		kubeletConfiguration{
			TypeMeta:     metav1.TypeMeta{APIVersion: KubeletAPIVersion, Kind: "KubeletConfiguration"},
			CgroupDriver: "systemd",
		},
	)
}

// renderUploadCertsConfig renders upload-certs.yaml: the certificate
// key; the control plane's own API address, advertiseAddress, which
// kubeadm would otherwise take from the interface of the default route,
// and on a master without one take 0.0.0.0 and refuse ("cannot use
// \"0.0.0.0\" as the bind address for the API Server":
// SetAPIEndpointDynamicDefaults in
// cmd/kubeadm/app/util/config/initconfiguration.go,
// VerifyAPIServerBindAddress in common.go, run by every init phase); and
// the version, so that kubeadm does not look the default "stable-1" up
// on the internet (NormalizeKubernetesVersion in common.go). It holds
// the key: a secret.
func renderUploadCertsConfig(certificateKey, advertiseAddress, version string) ([]byte, error) {
	return renderDocs(
		initConfiguration{
			TypeMeta:         kubeadmMeta("InitConfiguration"),
			NodeRegistration: nodeRegistrationOptions{CRISocket: CRISocket},
			LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: advertiseAddress, BindPort: APIServerPort},
			CertificateKey:   certificateKey,
		},
		clusterConfiguration{
			TypeMeta:          kubeadmMeta("ClusterConfiguration"),
			KubernetesVersion: version,
		},
	)
}

// renderJoinConfig renders join.yaml. It holds the token (and the
// certificate key of a control-plane join): a secret.
func renderJoinConfig(o JoinOptions) ([]byte, error) {
	c := joinConfiguration{
		TypeMeta:         kubeadmMeta("JoinConfiguration"),
		NodeRegistration: nodeRegistration(o.NodeName, o.AdvertiseAddress),
		Discovery: discovery{BootstrapToken: &bootstrapTokenDiscovery{
			Token:             o.Info.Token.Reveal(),
			APIServerEndpoint: o.Info.Endpoint,
			CACertHashes:      []string{o.Info.CACertHash},
		}},
	}
	if o.ControlPlane {
		c.ControlPlane = &joinControlPlane{
			LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: o.AdvertiseAddress, BindPort: APIServerPort},
			CertificateKey:   o.Info.CertificateKey.Reveal(),
		}
	}
	return renderDocs(c)
}

// renderDocs renders each document as YAML (sigs.k8s.io/yaml: through
// the JSON tags, keys sorted) and joins them as a multi-document file.
func renderDocs(docs ...any) ([]byte, error) {
	var b bytes.Buffer
	for i, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			// The types are ours and always marshal; never print d, which
			// may hold a token.
			return nil, fmt.Errorf("kubeadm: rendering configuration document %d: %w", i+1, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
