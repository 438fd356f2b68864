package kubeadm_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/remote"
)

// testCA returns a self-signed CA certificate in PEM and the pin kubeadm
// computes for it, derived independently of kubeadm.CACertHash (from
// the public key re-encoded by x509.MarshalPKIXPublicKey).
func testCA(t *testing.T) (pemBytes []byte, pin string) {
	t.Helper()
	pemBytes, key := scripted.TestCA(t)
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pemBytes, pinOf(spki)
}

// pinOf is "sha256:" and the hex SHA-256 of a DER SubjectPublicKeyInfo.
func pinOf(spki []byte) string {
	sum := sha256.Sum256(spki)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// secret wraps s.
func secret(s string) remote.Secret { return remote.NewSecret(s) }
