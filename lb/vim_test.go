package lb_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

func TestVIMEndpoint(t *testing.T) {
	for _, tc := range []struct {
		addr string
		port int
		want string
	}{
		{"192.0.2.10", 0, "https://192.0.2.10:8383"},
		{"192.0.2.10", 16443, "https://192.0.2.10:16443"},
		{"2001:db8::10", 0, "https://[2001:db8::10]:8383"},
	} {
		if got := lb.VIMEndpoint(tc.addr, tc.port); got != tc.want {
			t.Errorf("VIMEndpoint(%q, %d) = %q, want %q", tc.addr, tc.port, got, tc.want)
		}
	}
}

// pki is a cluster CA that issues API server certificates.
type pki struct {
	caPEM []byte
	ca    *x509.Certificate
	key   *ecdsa.PrivateKey
}

func newPKI(t *testing.T) pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca: ca, key: key}
}

// issue returns an API server certificate for the IP addresses, in PEM.
func (p pki) issue(t *testing.T, ips ...string) string {
	t.Helper()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"kubernetes", "kubernetes.default"},
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &p.key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// adminConf is kubeadm's admin.conf with the CA p.
func (p pki) adminConf() string {
	return fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://10.0.0.5:6443
  name: cluster.local
contexts:
- context:
    cluster: cluster.local
    user: kubernetes-admin
  name: kubernetes-admin@cluster.local
current-context: kubernetes-admin@cluster.local
kind: Config
users:
- name: kubernetes-admin
  user: {}
`, base64.StdEncoding.EncodeToString(p.caPEM))
}

// master connects to the VM's master and writes files on it as root,
// mode 0600 as kubeadm does.
func (v *lbVM) master(files map[string]string) *remote.SSHHost {
	v.t.Helper()
	h := v.vnf.HostsWithRole(lcm.RoleMaster)[0]
	for f, content := range files {
		if err := h.FS().MkdirAll(f[:strings.LastIndex(f, "/")], 0o755); err != nil {
			v.t.Fatal(err)
		}
		if err := h.FS().WriteFile(f, []byte(content), 0o600); err != nil {
			v.t.Fatal(err)
		}
	}
	ssh, err := v.cloud.Connect(v.ctx, h.Node(), h.Login.User, h.Login.Password)
	if err != nil {
		v.t.Fatal(err)
	}
	v.t.Cleanup(func() { ssh.Close() })
	return ssh
}

func TestCheckAPICertificate(t *testing.T) {
	v := newLBVM(t)
	lbAddr := v.host.SSHAddress
	good, other := newPKI(t), newPKI(t)
	cert := good.issue(t, "10.233.0.1", "10.0.0.5", lbAddr)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // "" for success
	}{{
		name:  "kubeadm's paths",
		files: map[string]string{kubeapi.AdminKubeconfig: good.adminConf(), "/etc/kubernetes/pki/apiserver.crt": cert},
	}, {
		name:  "kubespray's paths",
		files: map[string]string{kubeapi.AdminKubeconfig: good.adminConf(), "/etc/kubernetes/ssl/apiserver.crt": cert},
	}, {
		name:  "a certificate without the load balancer",
		files: map[string]string{kubeapi.AdminKubeconfig: good.adminConf(), "/etc/kubernetes/pki/apiserver.crt": good.issue(t, "10.0.0.5")},
		want:  "the API server's certificate (/etc/kubernetes/pki/apiserver.crt) does not name the load balancer " + lbAddr + ", so the VIM at https://" + lbAddr + ":8383 cannot verify it: add the address to the certificate (kubespray: supplementary_addresses_in_ssl_keys)",
	}, {
		name:  "another CA",
		files: map[string]string{kubeapi.AdminKubeconfig: good.adminConf(), "/etc/kubernetes/pki/apiserver.crt": other.issue(t, lbAddr)},
		want:  "/etc/kubernetes/pki/apiserver.crt is not signed by the cluster CA of /etc/kubernetes/admin.conf",
	}, {
		name:  "no cluster",
		files: map[string]string{},
		want:  "/etc/kubernetes/admin.conf does not exist",
	}, {
		name:  "no certificate",
		files: map[string]string{kubeapi.AdminKubeconfig: good.adminConf()},
		want:  "the API server's certificate is in none of [/etc/kubernetes/pki/apiserver.crt /etc/kubernetes/ssl/apiserver.crt]",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := v.master(tc.files)
			ca, err := lb.CheckAPICertificate(v.ctx, m, lbAddr)
			if tc.want == "" {
				if err != nil || string(ca) != string(good.caPEM) {
					t.Errorf("%v; CA %q", err, ca)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			for f := range tc.files {
				v.vnf.HostsWithRole(lcm.RoleMaster)[0].FS().Remove(f)
			}
		})
	}
	if _, err := lb.CheckAPICertificate(v.ctx, v.ssh, "lb.example"); err == nil || !strings.Contains(err.Error(), `"lb.example" is not an IP address`) {
		t.Errorf("a name: %v", err)
	}
}

func TestServicesFrom(t *testing.T) {
	svc := func(ns, name string, typ corev1.ServiceType, ports ...corev1.ServicePort) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: typ, Ports: ports}}
	}
	got := lb.ServicesFrom([]corev1.Service{
		svc("default", "web", corev1.ServiceTypeNodePort,
			corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
			corev1.ServicePort{Name: "https", Port: 443, NodePort: 30443}),
		svc("default", "internal", corev1.ServiceTypeClusterIP, corev1.ServicePort{Port: 80}),
		svc("kube-system", "dns", corev1.ServiceTypeNodePort,
			corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
			corev1.ServicePort{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, NodePort: 30053}),
		svc("cnf", "udp-only", corev1.ServiceTypeNodePort, corev1.ServicePort{Protocol: corev1.ProtocolUDP, Port: 5060, NodePort: 30060}),
		svc("cnf", "lb", corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 8080, NodePort: 31080}),
	})
	want := []lb.Service{
		{Namespace: "default", Name: "web", NodePorts: []int{30080, 30443}},
		{Namespace: "kube-system", Name: "dns", NodePorts: []int{30053}},
		{Namespace: "cnf", Name: "lb", NodePorts: []int{31080}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	c := lb.NewConfig([]lb.Server{{Name: "m1", Address: "10.0.0.5"}}, nil)
	c.Services = got
	if err := c.Validate(); err != nil {
		t.Errorf("the Services do not validate: %v", err)
	}
}
