package kubeadm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// JoinTokenTTL is the lifetime of the bootstrap token [NewJoinInfo]
// creates: long enough for the joins of one hook, short enough that a
// token that leaks is soon useless. (The certificate key's Secret,
// kubeadm-certs, lives 2 hours: kubeadm's CertificateKeyTTL.)
const JoinTokenTTL = time.Hour

// tokenRe is a bootstrap token, "[a-z0-9]{6}.[a-z0-9]{16}":
// BootstrapTokenPattern in
// staging/src/k8s.io/cluster-bootstrap/token/api/types.go.
var tokenRe = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// caHashRe is a CA pin as kubeadm writes and checks them: "sha256:" and
// 64 hex digits (cmd/kubeadm/app/util/pubkeypin/pubkeypin.go).
var caHashRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// certificateKeyRe is a certificate key: an AES-256 key, 32 bytes in hex
// (CertificateKey in cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go).
var certificateKeyRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// JoinInfo is what a node needs to join the cluster: the endpoint, a
// bootstrap token, the CA's public key pin and, for a control-plane
// join, the key of the uploaded control-plane certificates. The token
// and key are secrets: they print as [remote.Redacted] and reach a node
// only in a root-only file.
type JoinInfo struct {
	// Endpoint is the API endpoint the node joins through, host:port.
	Endpoint string
	// Token is the bootstrap token ("abcdef.0123456789abcdef").
	Token remote.Secret
	// CertificateKey decrypts the control-plane certificates kubeadm
	// uploaded; empty for worker joins.
	CertificateKey remote.Secret
	// CACertHash pins the cluster CA: "sha256:" and the hex SHA-256 of
	// its SubjectPublicKeyInfo.
	CACertHash string
}

// NewJoinInfo makes fresh join credentials on the control-plane node cp,
// whose API server's address (its NIC's, as [InitOptions] or
// [JoinOptions] gave it) is cpAddress: a bootstrap token (`kubeadm token
// create --ttl 1h0m0s`, see [JoinTokenTTL]) and the pin of the CA in
// /etc/kubernetes/pki/ca.crt, computed here. With controlPlane it also
// makes a certificate key (32 random bytes, generated here) and uploads
// the control-plane certificates encrypted with it (`kubeadm init phase
// upload-certs --upload-certs --skip-certificate-key-print --config
// /etc/kubernetes/mgmtkit/upload-certs.yaml`; the file names cpAddress,
// without which kubeadm fails on a master without a default route, and
// is removed afterwards). cpAddress is required with controlPlane only.
// Every call creates a new token, so it is not idempotent, and need not
// be: call it once per batch of joins.
func NewJoinInfo(ctx context.Context, cp remote.Host, cpAddress, endpoint string, controlPlane bool) (JoinInfo, error) {
	var p optProblems
	if _, err := netip.ParseAddr(cpAddress); err != nil && (controlPlane || cpAddress != "") {
		p.addf("cpAddress", "must be the control plane's IP address, got %q", clip(cpAddress))
	}
	if msg := endpointMsg(endpoint); msg != "" {
		p.addf("endpoint", "%s", msg)
	}
	if err := p.err(); err != nil {
		return JoinInfo{}, err
	}
	info := JoinInfo{Endpoint: endpoint}
	pemBytes, err := cp.ReadFile(ctx, CACert, remote.FileOptions{Sudo: true})
	if err != nil {
		return JoinInfo{}, fmt.Errorf("join credentials from %s: reading the cluster CA: %w", cp.Name(), err)
	}
	if info.CACertHash, err = CACertHash(pemBytes); err != nil {
		return JoinInfo{}, fmt.Errorf("join credentials from %s: %s: %w", cp.Name(), CACert, err)
	}
	if controlPlane {
		if info.CertificateKey, err = uploadCerts(ctx, cp, cpAddress); err != nil {
			return JoinInfo{}, fmt.Errorf("join credentials from %s: %w", cp.Name(), err)
		}
	}
	out, err := cp.Run(ctx, remote.Cmd{
		// kubeadm's --ttl is a Go duration ("1h0m0s": pflag's DurationVar).
		Args: []string{"kubeadm", "token", "create", "--ttl", JoinTokenTTL.String()},
		Sudo: true,
	})
	if err != nil {
		return JoinInfo{}, fmt.Errorf("join credentials from %s: %w", cp.Name(), err)
	}
	token := strings.TrimSpace(string(out.Stdout))
	if !tokenRe.MatchString(token) {
		// Never print the output: it may be a token of another form.
		return JoinInfo{}, fmt.Errorf("join credentials from %s: kubeadm token create printed no bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})", cp.Name())
	}
	info.Token = remote.NewSecret(token)
	return info, nil
}

// CACertHash returns kubeadm's pin of the first certificate in pemBytes:
// "sha256:" and the hex SHA-256 of its DER SubjectPublicKeyInfo, as
// Hash in cmd/kubeadm/app/util/pubkeypin/pubkeypin.go computes it (and
// `openssl x509 -pubkey | openssl rsa -pubin -outform der | sha256sum`,
// as the reference did).
func CACertHash(pemBytes []byte) (string, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// uploadCerts makes a certificate key and uploads the control-plane
// certificates encrypted with it, through a root-only configuration
// file removed afterwards; address is cp's API server address.
func uploadCerts(ctx context.Context, cp remote.Host, address string) (remote.Secret, error) {
	version, err := kubeadmVersion(ctx, cp)
	if err != nil {
		return remote.Secret{}, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return remote.Secret{}, err
	}
	key := remote.NewSecret(hex.EncodeToString(raw[:]))
	cfg, err := renderUploadCertsConfig(key.Reveal(), address, version)
	if err != nil {
		return remote.Secret{}, err
	}
	defer removeSecretFile(ctx, cp, UploadCertsConfigFile)
	if err := writeConfig(ctx, cp, UploadCertsConfigFile, cfg); err != nil {
		return remote.Secret{}, err
	}
	_, err = cp.Run(ctx, remote.Cmd{
		Args:    []string{"kubeadm", "init", "phase", "upload-certs", "--upload-certs", "--skip-certificate-key-print", "--config", UploadCertsConfigFile},
		Sudo:    true,
		Secrets: []remote.Secret{key},
		// Printing nothing of the key, and discarded all the same.
		Stdout:     io.Discard,
		Idempotent: true,
	})
	if err != nil {
		return remote.Secret{}, err
	}
	return key, nil
}

// removeSecretFile removes a file that held a secret, even when ctx has
// ended (with a bound of its own); a failure leaves a root-only file
// that the next run overwrites, so it is not reported.
func removeSecretFile(ctx context.Context, h remote.Host, file string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = remote.RemoveFiles(ctx, h, []string{file}, nil, remote.FileOptions{Sudo: true})
}

// JoinOptions says how [JoinNode] joins a node.
type JoinOptions struct {
	// NodeName is the node's name ([NodeName]).
	NodeName string
	// AdvertiseAddress is the IP address of the node's NIC: its kubelet's
	// address and, for a control plane, its API server's.
	AdvertiseAddress string
	// ControlPlane joins the node as a master (Info must then carry a
	// certificate key).
	ControlPlane bool
	// Info holds the credentials of [NewJoinInfo].
	Info JoinInfo
}

// checkNode returns an *lcm.ParamsError for every bad option about the
// node itself.
func (o JoinOptions) checkNode() error {
	var p optProblems
	if msg := kubeapi.ObjectNameProblem(o.NodeName); msg != "" {
		p.addf("JoinOptions.NodeName", "%s", msg)
	}
	if _, err := netip.ParseAddr(o.AdvertiseAddress); err != nil {
		p.addf("JoinOptions.AdvertiseAddress", "must be an IP address, got %q", o.AdvertiseAddress)
	}
	return p.err()
}

// checkInfo returns an *lcm.ParamsError for every bad credential of
// o.Info, needed by a node that joins. It never prints the token or key.
func (o JoinOptions) checkInfo() error {
	var p optProblems
	if msg := endpointMsg(o.Info.Endpoint); msg != "" {
		p.addf("JoinOptions.Info.Endpoint", "%s", msg)
	}
	if !tokenRe.MatchString(o.Info.Token.Reveal()) {
		p.addf("JoinOptions.Info.Token", "must be a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}, from NewJoinInfo)")
	}
	if !caHashRe.MatchString(o.Info.CACertHash) {
		p.addf("JoinOptions.Info.CACertHash", "must be sha256: and 64 lower-case hex digits, got %q", clip(o.Info.CACertHash))
	}
	if o.ControlPlane && !certificateKeyRe.MatchString(o.Info.CertificateKey.Reveal()) {
		p.addf("JoinOptions.Info.CertificateKey", "must be 64 hex digits for a control-plane join (NewJoinInfo with controlPlane)")
	}
	return p.err()
}

// Joined reports whether the node h is a member of a cluster, as
// [JoinNode] and [InitControlPlane] judge it: kubeadm init and join
// leave the kubelet's kubeconfig, [KubeletKubeconfig], and kubeadm reset
// removes it. (Whether the cluster still has the node's Node object is
// another question, for the API.)
func Joined(ctx context.Context, h remote.Host) (bool, error) {
	present, err := existingFiles(ctx, h, KubeletKubeconfig)
	if err != nil {
		return false, fmt.Errorf("kubeadm: is %s a member: %w", h.Name(), err)
	}
	return present[KubeletKubeconfig], nil
}

// JoinNode joins the node h to the cluster as a worker or, with
// o.ControlPlane, as a further master: it writes [JoinConfigFile] (root,
// 0600; it holds the token) and runs `kubeadm join --config
// /etc/kubernetes/mgmtkit/join.yaml`, then removes the file, whether the
// join worked or not: a rerun makes fresh credentials anyway.
//
// A node that is a member already (/etc/kubernetes/kubelet.conf exists,
// see [Joined]) is left alone ([lcm.Unchanged]) and needs no o.Info:
// the credentials are checked only when the node must join; a worker
// asked to become a control plane is refused (reset it first). A node that is not a member but
// holds what an unfinished join left (the CA, a bootstrap kubeconfig,
// static pod manifests) is reset with `kubeadm reset --force` first, so
// that a join cut short (a dropped connection, a timeout) converges on
// the next run instead of failing kubeadm's preflight.
//
// JoinNode does not wait for the node to be Ready: see
// [kubeapi.WaitNodeReady].
func JoinNode(ctx context.Context, h remote.Host, o JoinOptions) (lcm.Result, error) {
	if err := o.checkNode(); err != nil {
		return lcm.Unchanged, err
	}
	role := "worker"
	if o.ControlPlane {
		role = "control plane"
	}
	fail := func(res lcm.Result, err error) (lcm.Result, error) {
		return res, fmt.Errorf("kubeadm join of %s on %s: %w", o.NodeName, h.Name(), err)
	}
	present, err := existingFiles(ctx, h, KubeletKubeconfig, APIServerManifest, etcdManifest, CACert, bootstrapKubeconfig, kubeapi.AdminKubeconfig)
	if err != nil {
		return fail(lcm.Unchanged, err)
	}
	if present[KubeletKubeconfig] {
		if o.ControlPlane && !present[APIServerManifest] {
			return fail(lcm.Unchanged, errors.New("the node is a worker of a cluster already: reset it before joining it as a control plane"))
		}
		return lcm.Unchanged, nil
	}
	if err := o.checkInfo(); err != nil {
		return lcm.Unchanged, err
	}
	res := lcm.Unchanged
	if leftovers := presentList(present); len(leftovers) > 0 {
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"kubeadm", "reset", "--force"}, Sudo: true, Idempotent: true}); err != nil {
			return fail(res, fmt.Errorf("resetting what an unfinished join left (%s): %w", strings.Join(leftovers, ", "), err))
		}
		res = lcm.Changed("kubeadm reset: an unfinished join had left " + strings.Join(leftovers, ", "))
	}
	cfg, err := renderJoinConfig(o)
	if err != nil {
		return fail(res, err)
	}
	defer removeSecretFile(ctx, h, JoinConfigFile)
	if err := writeConfig(ctx, h, JoinConfigFile, cfg); err != nil {
		return fail(res, err)
	}
	_, err = h.Run(ctx, remote.Cmd{
		Args:    []string{"kubeadm", "join", "--config", JoinConfigFile},
		Sudo:    true,
		Secrets: []remote.Secret{o.Info.Token, o.Info.CertificateKey},
		Stdout:  io.Discard,
	})
	if err != nil {
		return fail(res, err)
	}
	return res.And(lcm.Changed(fmt.Sprintf("kubeadm join: %s joined as a %s through %s", o.NodeName, role, o.Info.Endpoint))), nil
}
