package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubeadm configuration API as the fake kubeadm decodes it: our own
// copy of the fields of kubeadm.k8s.io/v1beta4 (kubernetes/kubernetes
// cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go, at v1.36.3) and of
// kubelet.config.k8s.io/v1beta1's KubeletConfiguration
// (staging/src/k8s.io/kubelet/config/v1beta1/types.go) and
// kubeproxy.config.k8s.io/v1alpha1's KubeProxyConfiguration
// (staging/src/k8s.io/kube-proxy/config/v1alpha1/types.go), with the
// JSON names upstream gives them. The kubeadm types carry the v1beta4
// fields (InitConfiguration, ClusterConfiguration, JoinConfiguration and
// what they embed), so that a field unknown to this copy is meant to be
// unknown to kubeadm too (a field this copy lacks would be reported as
// unknown: compare with upstream before trusting such a warning); the
// kubelet and kube-proxy types carry the fields a cluster configuration
// commonly sets, and report the others as unknown.

// Configuration API groups and kinds kubeadm 1.36 reads.
const (
	kubeadmGroupVersion   = "kubeadm.k8s.io/v1beta4"
	kubeletGroupVersion   = "kubelet.config.k8s.io/v1beta1"
	kubeProxyGroupVersion = "kubeproxy.config.k8s.io/v1alpha1"
)

// kubeadmInit is v1beta4 InitConfiguration.
type kubeadmInit struct {
	metav1.TypeMeta  `json:",inline"`
	BootstrapTokens  []kubeadmBootstrapToken `json:"bootstrapTokens,omitempty"`
	DryRun           bool                    `json:"dryRun,omitempty"`
	NodeRegistration kubeadmNodeRegistration `json:"nodeRegistration,omitempty"`
	LocalAPIEndpoint kubeadmAPIEndpoint      `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string                  `json:"certificateKey,omitempty"`
	SkipPhases       []string                `json:"skipPhases,omitempty"`
	Patches          *kubeadmPatches         `json:"patches,omitempty"`
	Timeouts         *kubeadmTimeouts        `json:"timeouts,omitempty"`
}

// kubeadmCluster is v1beta4 ClusterConfiguration.
type kubeadmCluster struct {
	metav1.TypeMeta             `json:",inline"`
	Etcd                        kubeadmEtcd       `json:"etcd,omitempty"`
	Networking                  kubeadmNetworking `json:"networking,omitempty"`
	KubernetesVersion           string            `json:"kubernetesVersion,omitempty"`
	ControlPlaneEndpoint        string            `json:"controlPlaneEndpoint,omitempty"`
	APIServer                   kubeadmAPIServer  `json:"apiServer,omitempty"`
	ControllerManager           kubeadmComponent  `json:"controllerManager,omitempty"`
	Scheduler                   kubeadmComponent  `json:"scheduler,omitempty"`
	DNS                         kubeadmDNS        `json:"dns,omitempty"`
	Proxy                       kubeadmProxy      `json:"proxy,omitempty"`
	CertificatesDir             string            `json:"certificatesDir,omitempty"`
	ImageRepository             string            `json:"imageRepository,omitempty"`
	FeatureGates                map[string]bool   `json:"featureGates,omitempty"`
	ClusterName                 string            `json:"clusterName,omitempty"`
	EncryptionAlgorithm         string            `json:"encryptionAlgorithm,omitempty"`
	CertificateValidityPeriod   *metav1.Duration  `json:"certificateValidityPeriod,omitempty"`
	CACertificateValidityPeriod *metav1.Duration  `json:"caCertificateValidityPeriod,omitempty"`
}

// kubeadmJoin is v1beta4 JoinConfiguration.
type kubeadmJoin struct {
	metav1.TypeMeta  `json:",inline"`
	DryRun           bool                     `json:"dryRun,omitempty"`
	NodeRegistration kubeadmNodeRegistration  `json:"nodeRegistration,omitempty"`
	CACertPath       string                   `json:"caCertPath,omitempty"`
	Discovery        kubeadmDiscovery         `json:"discovery"`
	ControlPlane     *kubeadmJoinControlPlane `json:"controlPlane,omitempty"`
	SkipPhases       []string                 `json:"skipPhases,omitempty"`
	Patches          *kubeadmPatches          `json:"patches,omitempty"`
	Timeouts         *kubeadmTimeouts         `json:"timeouts,omitempty"`
}

type kubeadmBootstrapToken struct {
	Token       string           `json:"token"`
	Description string           `json:"description,omitempty"`
	TTL         *metav1.Duration `json:"ttl,omitempty"`
	Expires     *metav1.Time     `json:"expires,omitempty"`
	Usages      []string         `json:"usages,omitempty"`
	Groups      []string         `json:"groups,omitempty"`
}

type kubeadmArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type kubeadmNodeRegistration struct {
	Name                  string            `json:"name,omitempty"`
	CRISocket             string            `json:"criSocket,omitempty"`
	Taints                []corev1.Taint    `json:"taints"`
	KubeletExtraArgs      []kubeadmArg      `json:"kubeletExtraArgs,omitempty"`
	IgnorePreflightErrors []string          `json:"ignorePreflightErrors,omitempty"`
	ImagePullPolicy       corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	ImagePullSerial       *bool             `json:"imagePullSerial,omitempty"`
}

type kubeadmAPIEndpoint struct {
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	BindPort         int32  `json:"bindPort,omitempty"`
}

type kubeadmPatches struct {
	Directory string `json:"directory,omitempty"`
}

type kubeadmTimeouts struct {
	ControlPlaneComponentHealthCheck *metav1.Duration `json:"controlPlaneComponentHealthCheck,omitempty"`
	KubeletHealthCheck               *metav1.Duration `json:"kubeletHealthCheck,omitempty"`
	KubernetesAPICall                *metav1.Duration `json:"kubernetesAPICall,omitempty"`
	EtcdAPICall                      *metav1.Duration `json:"etcdAPICall,omitempty"`
	TLSBootstrap                     *metav1.Duration `json:"tlsBootstrap,omitempty"`
	Discovery                        *metav1.Duration `json:"discovery,omitempty"`
	UpgradeManifests                 *metav1.Duration `json:"upgradeManifests,omitempty"`
}

type kubeadmEnvVar struct {
	corev1.EnvVar `json:",inline"`
}

type kubeadmHostPathMount struct {
	Name      string              `json:"name"`
	HostPath  string              `json:"hostPath"`
	MountPath string              `json:"mountPath"`
	ReadOnly  bool                `json:"readOnly,omitempty"`
	PathType  corev1.HostPathType `json:"pathType,omitempty"`
}

type kubeadmComponent struct {
	ExtraArgs    []kubeadmArg           `json:"extraArgs,omitempty"`
	ExtraVolumes []kubeadmHostPathMount `json:"extraVolumes,omitempty"`
	ExtraEnvs    []kubeadmEnvVar        `json:"extraEnvs,omitempty"`
}

type kubeadmAPIServer struct {
	kubeadmComponent `json:",inline"`
	CertSANs         []string `json:"certSANs,omitempty"`
}

type kubeadmImageMeta struct {
	ImageRepository string `json:"imageRepository,omitempty"`
	ImageTag        string `json:"imageTag,omitempty"`
}

type kubeadmDNS struct {
	kubeadmImageMeta `json:",inline"`
	Disabled         bool `json:"disabled,omitempty"`
}

type kubeadmProxy struct {
	Disabled bool `json:"disabled,omitempty"`
}

type kubeadmNetworking struct {
	ServiceSubnet string `json:"serviceSubnet,omitempty"`
	PodSubnet     string `json:"podSubnet,omitempty"`
	DNSDomain     string `json:"dnsDomain,omitempty"`
}

type kubeadmEtcd struct {
	Local    *kubeadmLocalEtcd    `json:"local,omitempty"`
	External *kubeadmExternalEtcd `json:"external,omitempty"`
}

type kubeadmLocalEtcd struct {
	kubeadmImageMeta `json:",inline"`
	DataDir          string          `json:"dataDir"`
	ExtraArgs        []kubeadmArg    `json:"extraArgs,omitempty"`
	ExtraEnvs        []kubeadmEnvVar `json:"extraEnvs,omitempty"`
	ServerCertSANs   []string        `json:"serverCertSANs,omitempty"`
	PeerCertSANs     []string        `json:"peerCertSANs,omitempty"`
}

type kubeadmExternalEtcd struct {
	Endpoints []string `json:"endpoints"`
	// HTTPEndpoints is new in 1.36 (v1beta4 types.go ExternalEtcd).
	HTTPEndpoints []string `json:"httpEndpoints,omitempty"`
	CAFile        string   `json:"caFile"`
	CertFile      string   `json:"certFile"`
	KeyFile       string   `json:"keyFile"`
}

type kubeadmDiscovery struct {
	BootstrapToken    *kubeadmBootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
	File              *kubeadmFileDiscovery           `json:"file,omitempty"`
	TLSBootstrapToken string                          `json:"tlsBootstrapToken,omitempty"`
}

type kubeadmBootstrapTokenDiscovery struct {
	Token                    string   `json:"token"`
	APIServerEndpoint        string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes             []string `json:"caCertHashes,omitempty"`
	UnsafeSkipCAVerification bool     `json:"unsafeSkipCAVerification,omitempty"`
}

type kubeadmFileDiscovery struct {
	KubeConfigPath string `json:"kubeConfigPath"`
}

type kubeadmJoinControlPlane struct {
	LocalAPIEndpoint kubeadmAPIEndpoint `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string             `json:"certificateKey,omitempty"`
}

// kubeletConfig is the part of kubelet.config.k8s.io/v1beta1
// KubeletConfiguration this copy knows (staging/src/k8s.io/kubelet/
// config/v1beta1/types.go).
type kubeletConfig struct {
	metav1.TypeMeta                  `json:",inline"`
	CgroupDriver                     string            `json:"cgroupDriver,omitempty"`
	ContainerRuntimeEndpoint         string            `json:"containerRuntimeEndpoint,omitempty"`
	ClusterDNS                       []string          `json:"clusterDNS,omitempty"`
	ClusterDomain                    string            `json:"clusterDomain,omitempty"`
	FailSwapOn                       *bool             `json:"failSwapOn,omitempty"`
	MaxPods                          int32             `json:"maxPods,omitempty"`
	ResolverConfig                   *string           `json:"resolvConf,omitempty"`
	RotateCertificates               bool              `json:"rotateCertificates,omitempty"`
	ServerTLSBootstrap               bool              `json:"serverTLSBootstrap,omitempty"`
	StaticPodPath                    string            `json:"staticPodPath,omitempty"`
	SystemReserved                   map[string]string `json:"systemReserved,omitempty"`
	KubeReserved                     map[string]string `json:"kubeReserved,omitempty"`
	EvictionHard                     map[string]string `json:"evictionHard,omitempty"`
	ProtectKernelDefaults            bool              `json:"protectKernelDefaults,omitempty"`
	ShutdownGracePeriod              metav1.Duration   `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodCriticalPods  metav1.Duration   `json:"shutdownGracePeriodCriticalPods,omitempty"`
	ImageMinimumGCAge                metav1.Duration   `json:"imageMinimumGCAge,omitempty"`
	ImageGCHighThresholdPercent      *int32            `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent       *int32            `json:"imageGCLowThresholdPercent,omitempty"`
	SerializeImagePulls              *bool             `json:"serializeImagePulls,omitempty"`
	Address                          string            `json:"address,omitempty"`
	HealthzBindAddress               string            `json:"healthzBindAddress,omitempty"`
	HealthzPort                      *int32            `json:"healthzPort,omitempty"`
	CPUManagerPolicy                 string            `json:"cpuManagerPolicy,omitempty"`
	FeatureGates                     map[string]bool   `json:"featureGates,omitempty"`
	Authentication                   map[string]any    `json:"authentication,omitempty"`
	Authorization                    map[string]any    `json:"authorization,omitempty"`
	Logging                          map[string]any    `json:"logging,omitempty"`
	ContainerLogMaxSize              string            `json:"containerLogMaxSize,omitempty"`
	ContainerLogMaxFiles             *int32            `json:"containerLogMaxFiles,omitempty"`
	NodeStatusReportFrequency        metav1.Duration   `json:"nodeStatusReportFrequency,omitempty"`
	NodeStatusUpdateFrequency        metav1.Duration   `json:"nodeStatusUpdateFrequency,omitempty"`
	StreamingConnectionIdleTimeout   metav1.Duration   `json:"streamingConnectionIdleTimeout,omitempty"`
	SyncFrequency                    metav1.Duration   `json:"syncFrequency,omitempty"`
	FileCheckFrequency               metav1.Duration   `json:"fileCheckFrequency,omitempty"`
	HTTPCheckFrequency               metav1.Duration   `json:"httpCheckFrequency,omitempty"`
	RuntimeRequestTimeout            metav1.Duration   `json:"runtimeRequestTimeout,omitempty"`
	CgroupsPerQOS                    *bool             `json:"cgroupsPerQOS,omitempty"`
	TLSCipherSuites                  []string          `json:"tlsCipherSuites,omitempty"`
	TLSMinVersion                    string            `json:"tlsMinVersion,omitempty"`
	MemorySwap                       map[string]any    `json:"memorySwap,omitempty"`
	EnforceNodeAllocatable           []string          `json:"enforceNodeAllocatable,omitempty"`
	ReadOnlyPort                     int32             `json:"readOnlyPort,omitempty"`
	ProviderID                       string            `json:"providerID,omitempty"`
	RegisterNode                     *bool             `json:"registerNode,omitempty"`
	RegisterWithTaints               []corev1.Taint    `json:"registerWithTaints,omitempty"`
	CPUCFSQuota                      *bool             `json:"cpuCFSQuota,omitempty"`
	VolumeStatsAggPeriod             metav1.Duration   `json:"volumeStatsAggPeriod,omitempty"`
	EvictionPressureTransitionPeriod metav1.Duration   `json:"evictionPressureTransitionPeriod,omitempty"`
	AllowedUnsafeSysctls             []string          `json:"allowedUnsafeSysctls,omitempty"`
	PodPidsLimit                     *int64            `json:"podPidsLimit,omitempty"`
}

// kubeProxyConfig is the part of kubeproxy.config.k8s.io/v1alpha1
// KubeProxyConfiguration this copy knows.
type kubeProxyConfig struct {
	metav1.TypeMeta    `json:",inline"`
	Mode               string          `json:"mode,omitempty"`
	ClusterCIDR        string          `json:"clusterCIDR,omitempty"`
	BindAddress        string          `json:"bindAddress,omitempty"`
	MetricsBindAddress string          `json:"metricsBindAddress,omitempty"`
	FeatureGates       map[string]bool `json:"featureGates,omitempty"`
	IPVS               map[string]any  `json:"ipvs,omitempty"`
	IPTables           map[string]any  `json:"iptables,omitempty"`
	NFTables           map[string]any  `json:"nftables,omitempty"`
	Conntrack          map[string]any  `json:"conntrack,omitempty"`
	ClientConnection   map[string]any  `json:"clientConnection,omitempty"`
	Logging            map[string]any  `json:"logging,omitempty"`
	DetectLocalMode    string          `json:"detectLocalMode,omitempty"`
	NodePortAddresses  []string        `json:"nodePortAddresses,omitempty"`
	HostnameOverride   string          `json:"hostnameOverride,omitempty"`
	ConfigSyncPeriod   metav1.Duration `json:"configSyncPeriod,omitempty"`
	Winkernel          map[string]any  `json:"winkernel,omitempty"`
	ShowHiddenMetrics  string          `json:"showHiddenMetricsForVersion,omitempty"`
	HealthzBindAddress string          `json:"healthzBindAddress,omitempty"`
	PortRange          string          `json:"portRange,omitempty"`
	OOMScoreAdj        *int32          `json:"oomScoreAdj,omitempty"`
	EnableProfiling    bool            `json:"enableProfiling,omitempty"`
}
