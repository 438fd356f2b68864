package realtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/bcrypt"
)

// registryProgram is Debian's build of the CNCF distribution registry.
const registryProgram = "/usr/bin/docker-registry"

// pki is a CA the test creates and a server certificate it signed.
type pki struct {
	caPEM             []byte
	pool              *x509.CertPool
	certFile, keyFile string
}

// newPKI makes a CA and a certificate for names (and 127.0.0.1), written
// under dir.
func newPKI(t *testing.T, dir string, names ...string) *pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mgmtkit realtest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: names, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{
		caPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:     x509.NewCertPool(),
		certFile: filepath.Join(dir, "server.crt"),
		keyFile:  filepath.Join(dir, "server.key"),
	}
	p.pool.AddCert(ca)
	writeFile(t, p.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	writeFile(t, p.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	return p
}

func writeFile(t *testing.T, file string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, mode); err != nil {
		t.Fatal(err)
	}
}

// registryServer is a running distribution registry on 127.0.0.1.
type registryServer struct {
	// host is the DNS name the nodes reach it by (through hosts_string).
	host string
	port int
	tls  *pki
	// user and password are its only htpasswd account; empty without auth.
	user, password string
}

// server is host:port, the registry as image names start with it.
func (r *registryServer) server() string { return net.JoinHostPort(r.host, strconv.Itoa(r.port)) }

// image is the reference of the tiny image pushed into the registry.
func (r *registryServer) image() string { return r.server() + "/mgmtkit/tiny:1" }

// startRegistry runs `docker-registry serve` with its storage under dir:
// plain HTTP, or TLS with p's certificate, and htpasswd basic auth when
// user is set. The configuration keys are those of distribution 2.8's
// docs/configuration.md (storage.filesystem.rootdirectory, http.addr,
// http.tls.certificate/key, auth.htpasswd.realm/path).
func startRegistry(t *testing.T, dir, host string, p *pki, user, password string) *registryServer {
	t.Helper()
	r := &registryServer{host: host, port: freePort(t), tls: p, user: user, password: password}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%d\n",
		filepath.Join(dir, "data"), r.port)
	if p != nil {
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", p.certFile, p.keyFile)
	}
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "htpasswd"), []byte(user+":"+string(hash)+"\n"), 0o600)
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: mgmtkit-realtest\n    path: %s\n", filepath.Join(dir, "htpasswd"))
	}
	writeFile(t, filepath.Join(dir, "config.yml"), []byte(cfg), 0o644)
	d := &daemon{
		name: "registry " + host, path: need(t, registryProgram),
		args: []string{"serve", filepath.Join(dir, "config.yml")}, log: filepath.Join(dir, "registry.log"),
		ready: func(ctx context.Context) error {
			resp, err := r.client().Get(r.url() + "/v2/")
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		},
	}
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	return r
}

// url is the registry's base URL, reached at 127.0.0.1 by the test.
func (r *registryServer) url() string {
	if r.tls != nil {
		return "https://" + r.server()
	}
	return "http://" + r.server()
}

// client is an HTTP client that reaches the registry by its name without
// DNS (the test pushes before any node knows the name) and trusts its CA.
func (r *registryServer) client() *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)))
		},
	}
	if r.tls != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: r.tls.pool}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// tinyImage is a one-layer image for the machine's platform (containerd
// unpacks only images whose config names a platform it runs).
func tinyImage(t *testing.T) v1.Image {
	t.Helper()
	layer, err := random.Layer(512, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Cmd = []string{"/tiny"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// push writes img into the registry as r.image().
func (r *registryServer) push(t *testing.T, img v1.Image) {
	t.Helper()
	var opts []name.Option
	if r.tls == nil {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(r.image(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	auth := authn.Anonymous
	if r.user != "" {
		auth = &authn.Basic{Username: r.user, Password: r.password}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithTransport(r.client().Transport), remote.WithAuth(auth)); err != nil {
		t.Fatalf("push %s: %v", r.image(), err)
	}
}
