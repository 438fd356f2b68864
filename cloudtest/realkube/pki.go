package realkube

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
)

// authority is a certificate authority that signs the certificates of the
// control plane: the cluster CA of the spec, or a front-proxy CA made up
// here.
type authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	keyPEM  []byte
}

// parseAuthority reads a CA certificate and its key from PEM (kubeadm
// writes RSA keys by default, ECDSA with encryptionAlgorithm ECDSA-P256).
func parseAuthority(certPEM, keyPEM []byte) (*authority, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("CA certificate: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key: %T is not a signer", k)
	}
	return &authority{cert: cert, certPEM: certPEM, key: signer, keyPEM: keyPEM}, nil
}

// newAuthority makes a self-signed CA (the front-proxy CA kubeadm
// generates, cmd/kubeadm/app/phases/certs/certlist.go KubeadmCertFrontProxyCA).
func newAuthority(cn string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, certPEM: pemCert(der), key: key, keyPEM: keyPEM}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n.Add(n, big.NewInt(1))
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// leaf is what a certificate the authority signs says.
type leaf struct {
	cn     string
	orgs   []string
	dns    []string
	ips    []net.IP
	server bool // serverAuth, else clientAuth
}

// sign issues a certificate with a new ECDSA P-256 key, returning the
// certificate and key PEM.
func (a *authority) sign(l leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	usage := x509.ExtKeyUsageClientAuth
	if l.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: l.cn, Organization: l.orgs},
		DNSNames:     l.dns,
		IPAddresses:  l.ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), keyPEM, nil
}

// firstServiceIP is the ClusterIP of the kubernetes Service: the first
// address of the service range (pkg/controlplane/services.go
// ServiceIPRange: "the first IP of the range").
func firstServiceIP(subnet netip.Prefix) net.IP {
	return net.IP(subnet.Masked().Addr().Next().AsSlice())
}

// servingLeaf is the API server's serving certificate as kubeadm makes it
// (cmd/kubeadm/app/util/pkiutil/pki_helpers.go GetAPIServerAltNames):
// the kubernetes Service's names and IP, localhost, and the loopback
// address this API server listens on.
func servingLeaf(nodeName string, serviceSubnet netip.Prefix) leaf {
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	if nodeName != "" {
		dns = append(dns, nodeName)
	}
	return leaf{
		cn:     "kube-apiserver",
		dns:    dns,
		ips:    []net.IP{net.IPv4(127, 0, 0, 1), firstServiceIP(serviceSubnet)},
		server: true,
	}
}

// writeFiles writes name → content under dir with mode 0600.
func writeFiles(dir string, files map[string][]byte) error {
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// kubeconfig returns a kubeconfig for server with a client certificate,
// as kubeadm writes controller-manager.conf and scheduler.conf
// (cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go).
func kubeconfig(server string, caPEM, certPEM, keyPEM []byte, user string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	ctx := user + "@kubernetes"
	cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: user}
	cfg.CurrentContext = ctx
	return clientcmd.Write(*cfg)
}
