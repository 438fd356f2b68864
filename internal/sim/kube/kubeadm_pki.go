package kube

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// keyPair is a certificate with its private key, PEM encoded as kubeadm
// writes them under /etc/kubernetes/pki.
type keyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// newKeyPair makes a certificate signed by ca (self-signed when ca is
// nil, a CA then). kubeadm's default key type is RSA 2048
// (ClusterConfiguration.encryptionAlgorithm); the simulation uses ECDSA
// P-256, which kubeadm also supports ("ECDSA-P256"), because RSA key
// generation would dominate the run time of the tests.
func newKeyPair(ca *keyPair, cn string, orgs []string, sans []string, usage []x509.ExtKeyUsage) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
	}
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	parent, signer := tmpl, crypto.Signer(key)
	if ca == nil {
		// kubeadm's CAs: 10 years, CA:TRUE (pkiutil.NewSelfSignedCACert).
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign
		tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
	} else {
		parent, signer = ca.Cert, ca.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		Cert: cert, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parseKeyPair reads a PEM certificate and EC key back.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("failed to decode PEM data")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &keyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// CACertHash is the pin kubeadm prints and checks for a CA certificate:
// "sha256:" and the hex SHA-256 of its DER SubjectPublicKeyInfo
// (cmd/kubeadm/app/util/pubkeypin/pubkeypin.go Hash). It returns "" for a
// PEM it cannot parse.
func CACertHash(caPEM []byte) string {
	b, _ := pem.Decode(caPEM)
	if b == nil {
		return ""
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// encryptCerts is kubeadm's encryption of the kubeadm-certs Secret's
// data: AES-GCM with the hex-decoded certificate key, the nonce before
// the ciphertext (cmd/kubeadm/app/phases/copycerts/copycerts.go and
// cmd/kubeadm/app/util/crypto/crypto.go EncryptBytes).
func encryptCerts(data []byte, key []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, data, nil), nil
}

// decryptCerts is crypto.go DecryptBytes.
func decryptCerts(data []byte, key []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(data) < gcm.NonceSize() {
		return nil, errors.New("size of data is less than the nonce")
	}
	return gcm.Open(nil, data[:gcm.NonceSize()], data[gcm.NonceSize():], nil)
}

// detachedJWS is the bootstrap signer's signature of the cluster-info
// kubeconfig for one token: a JWS (HS256, key = the token secret, kid =
// the token ID) with its payload cut out, "header..signature"
// (staging/src/k8s.io/cluster-bootstrap/token/jws/jws.go
// ComputeDetachedSignature).
func detachedJWS(content, tokenID, tokenSecret string) string {
	header := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"alg":"HS256","kid":%q}`, tokenID)))
	payload := base64.RawURLEncoding.EncodeToString([]byte(content))
	mac := hmac.New(sha256.New, []byte(tokenSecret))
	mac.Write([]byte(header + "." + payload))
	return header + ".." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// detachedJWSValid is jws.go DetachedTokenIsValid.
func detachedJWSValid(detached, content, tokenID, tokenSecret string) bool {
	return hmac.Equal([]byte(detached), []byte(detachedJWS(content, tokenID, tokenSecret)))
}

// renderKubeconfig renders a kubeconfig as kubeadm writes admin.conf,
// kubelet.conf and the cluster-info kubeconfig (clientcmd's v1 format).
// With no user, it is cluster-info's: one cluster, no context's user.
func renderKubeconfig(server string, caPEM []byte, user string, client *keyPair) string {
	var b strings.Builder
	ca := base64.StdEncoding.EncodeToString(caPEM)
	fmt.Fprintf(&b, "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: %s\n  name: kubernetes\n", ca, server)
	if user == "" {
		b.WriteString("contexts: null\ncurrent-context: \"\"\nkind: Config\npreferences: {}\nusers: null\n")
		return b.String()
	}
	fmt.Fprintf(&b, "contexts:\n- context:\n    cluster: kubernetes\n    user: %s\n  name: %s@kubernetes\ncurrent-context: %s@kubernetes\nkind: Config\npreferences: {}\nusers:\n- name: %s\n  user:\n", user, user, user, user)
	fmt.Fprintf(&b, "    client-certificate-data: %s\n    client-key-data: %s\n",
		base64.StdEncoding.EncodeToString(client.CertPEM), base64.StdEncoding.EncodeToString(client.KeyPEM))
	return b.String()
}

// randomToken is a bootstrap token "[a-z0-9]{6}.[a-z0-9]{16}"
// (cmd/kubeadm/app/apis/bootstraptoken/v1 and
// k8s.io/cluster-bootstrap/token/util GenerateBootstrapToken).
func randomToken() (id, secret string) {
	const chars = "0123456789abcdefghijklmnopqrstuvwxyz"
	gen := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			v, _ := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
			b[i] = chars[v.Int64()]
		}
		return string(b)
	}
	return gen(6), gen(16)
}
