package lb

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/remote"
)

// VIMEndpoint returns the Kubernetes VIM's endpoint through the load
// balancer: "https://LB:PORT" (an IPv6 address in brackets), port
// [DefaultAPIPort] when 0, as the reference registers its VIM
// ("https://" + the load balancer's SSH address + ":8383"). It is
// [kubeapi.VIMOptions].Endpoint of the cluster's VIM credentials:
//
//	info, _, err := kubeapi.CreateVIMCredentials(ctx, kubeapi.Kubectl{Host: master},
//		kubeapi.VIMOptions{Name: vimName, Endpoint: lb.VIMEndpoint(lbNode.SSHAddress, 0)})
//
// The VimConnectionInfo carries the cluster's CA (the service account
// token Secret's ca.crt, which the controller manager fills in from the
// cluster CA), with which the VNFM verifies the API server's certificate
// through the load balancer, whose TCP mode passes TLS through: the
// certificate must name the load balancer's address, which
// [CheckAPICertificate] verifies before the VIM is registered.
func VIMEndpoint(lbAddress string, port int) string {
	return "https://" + net.JoinHostPort(lbAddress, strconv.Itoa(cmp.Or(port, DefaultAPIPort)))
}

// The API server's serving certificate on a master: kubeadm keeps it in
// /etc/kubernetes/pki, kubespray in /etc/kubernetes/ssl (its
// kube_cert_dir, with /etc/kubernetes/pki a link to it:
// kube_cert_compat_dir).
var apiserverCerts = []string{"/etc/kubernetes/pki/apiserver.crt", "/etc/kubernetes/ssl/apiserver.crt"}

// CheckAPICertificate reads the cluster CA (the certificate-authority-data
// of [kubeapi.AdminKubeconfig]) and the API server's serving certificate
// from a master, in one command as root, and checks that the certificate
// is valid, under that CA, for the load balancer's address lbAddress: a
// VNFM that connects to [VIMEndpoint] verifies exactly that. It returns
// the CA in PEM. A certificate that does not name the address is an
// error saying so (kubespray adds the load balancer to the certificate
// with supplementary_addresses_in_ssl_keys); so is a CA that did not
// sign it. The reference registered its VIM without a CA, which a VNFM
// can use only by not verifying the API server at all.
//
// Without a kubeconfig or a certificate at the usual places the error
// names the files looked for.
func CheckAPICertificate(ctx context.Context, master remote.Host, lbAddress string) ([]byte, error) {
	ip := net.ParseIP(lbAddress)
	if ip == nil {
		return nil, fmt.Errorf("lb: the load balancer's address %q is not an IP address", lbAddress)
	}
	files, err := remote.ReadFiles(ctx, master, append([]string{kubeapi.AdminKubeconfig}, apiserverCerts...), remote.FileOptions{Sudo: true})
	if err != nil {
		return nil, stepErr(master, "reading the cluster CA and the API server's certificate", err)
	}
	conf, ok := files[kubeapi.AdminKubeconfig]
	if !ok {
		return nil, fmt.Errorf("lb: %s: %s does not exist: is the node a master of a running cluster?", master.Name(), kubeapi.AdminKubeconfig)
	}
	caPEM, err := kubeconfigCA(conf)
	if err != nil {
		return nil, fmt.Errorf("lb: %s: %s: %w", master.Name(), kubeapi.AdminKubeconfig, err)
	}
	var certFile string
	var certPEM []byte
	for _, f := range apiserverCerts {
		if b, ok := files[f]; ok {
			certFile, certPEM = f, b
			break
		}
	}
	if certFile == "" {
		return nil, fmt.Errorf("lb: %s: the API server's certificate is in none of %v", master.Name(), apiserverCerts)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("lb: %s: %s: %w", master.Name(), certFile, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("lb: %s: %s: certificate-authority-data holds no PEM certificate", master.Name(), kubeapi.AdminKubeconfig)
	}
	// What a TLS client of https://LB:PORT checks (crypto/tls's
	// verifyServerCertificate): the chain to the CA, then the name.
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
		return nil, fmt.Errorf("lb: %s: %s is not signed by the cluster CA of %s: %w", master.Name(), certFile, kubeapi.AdminKubeconfig, err)
	}
	if err := cert.VerifyHostname(ip.String()); err != nil {
		return nil, fmt.Errorf("lb: %s: the API server's certificate (%s) does not name the load balancer %s, so the VIM at %s cannot verify it: add the address to the certificate (kubespray: supplementary_addresses_in_ssl_keys): %w",
			master.Name(), certFile, ip, VIMEndpoint(lbAddress, 0), err)
	}
	return caPEM, nil
}

// kubeconfigCA returns the CA in PEM of a kubeconfig's current context's
// cluster (the only cluster of kubeadm's and kubespray's admin.conf).
func kubeconfigCA(conf []byte) ([]byte, error) {
	var kc struct {
		CurrentContext string `json:"current-context"`
		Clusters       []struct {
			Name    string `json:"name"`
			Cluster struct {
				CAData string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Contexts []struct {
			Name    string `json:"name"`
			Context struct {
				Cluster string `json:"cluster"`
			} `json:"context"`
		} `json:"contexts"`
	}
	if err := yaml.Unmarshal(conf, &kc); err != nil {
		return nil, err
	}
	cluster := ""
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			cluster = c.Context.Cluster
		}
	}
	for _, c := range kc.Clusters {
		if c.Name == cluster || len(kc.Clusters) == 1 {
			if c.Cluster.CAData == "" {
				return nil, errors.New("its cluster has no certificate-authority-data")
			}
			ca, err := base64.StdEncoding.DecodeString(c.Cluster.CAData)
			if err != nil {
				return nil, fmt.Errorf("certificate-authority-data: %w", err)
			}
			return ca, nil
		}
	}
	return nil, fmt.Errorf("no cluster for the current context %q", kc.CurrentContext)
}

// parseCert parses the first PEM certificate of b.
func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("holds no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
