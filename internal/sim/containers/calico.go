package containers

import (
	_ "embed" // the reduced Calico manifest
	"net/http"
	"strings"
)

// CalicoVersion is the Calico release whose manifest the simulated
// raw.githubusercontent.com serves (kubeadm.DefaultCalicoVersion, the
// pod network mgmtkit installs by default).
const CalicoVersion = "v3.32.1"

// CalicoManifestURL is where Calico's docs have a manifest-based install
// fetch the manifest of release version ("curl
// https://raw.githubusercontent.com/projectcalico/calico/v3.32.1/manifests/calico.yaml -O",
// docs.tigera.io "Install Calico networking and network policy for
// on-premises deployments"): the file manifests/calico.yaml at the
// release's tag of github.com/projectcalico/calico.
func CalicoManifestURL(version string) string {
	return "https://raw.githubusercontent.com/projectcalico/calico/" + version + "/manifests/calico.yaml"
}

// calicoManifest is calico.yaml of [CalicoVersion], reduced to what the
// simulated cluster acts on (see the file's header).
//
//go:embed calico.yaml
var calicoManifest string

// CalicoManifest returns the manifest the simulated
// raw.githubusercontent.com serves at [CalicoManifestURL]([CalicoVersion]).
func CalicoManifest() []byte { return []byte(calicoManifest) }

// githubRawGet is raw.githubusercontent.com's answer to a GET of
// urlPath: Calico's manifest of [CalicoVersion], and for every other
// path the 404 the site gives a file that does not exist ("404: Not
// Found", text/plain).
func githubRawGet(urlPath string) (int, string) {
	if urlPath == strings.TrimPrefix(CalicoManifestURL(CalicoVersion), "https://raw.githubusercontent.com") {
		return http.StatusOK, calicoManifest
	}
	return http.StatusNotFound, "404: Not Found"
}
