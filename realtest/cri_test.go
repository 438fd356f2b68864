package realtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// kubelet plays the kubelet's part in an image pull: it looks the image's
// registry up in the credentials file mgmtkit wrote, then asks the
// runtime's CRI image service to pull, as the kubelet does for a pod.
type kubelet struct {
	conn   *grpc.ClientConn
	images runtimeapi.ImageServiceClient
	// authFile is the kubelet's config.json (registry.KubeletAuthFile).
	authFile string
}

// newKubelet connects to the CRI socket of a containerd. The connection
// is lazy and survives containerd's restarts.
func newKubelet(socket, authFile string) (*kubelet, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &kubelet{conn: conn, images: runtimeapi.NewImageServiceClient(conn), authFile: authFile}, nil
}

// pull pulls image through runtime.v1.ImageService/PullImage with the
// credentials the kubelet would send, and returns the image reference
// the runtime reports.
func (k *kubelet) pull(ctx context.Context, image string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	auth, err := k.credentials(image)
	if err != nil {
		return "", err
	}
	resp, err := k.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}, Auth: auth}, grpc.WaitForReady(true))
	if err != nil {
		return "", err
	}
	return resp.ImageRef, nil
}

// remove removes image from the runtime (runtime.v1.ImageService/RemoveImage;
// removing an absent image succeeds).
func (k *kubelet) remove(ctx context.Context, image string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := k.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}, grpc.WaitForReady(true))
	return err
}

// ready tells whether the CRI image service answers.
func (k *kubelet) ready(ctx context.Context) error {
	_, err := k.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	return err
}

// credentials returns the auth the kubelet would send for image, nil for
// none.
//
// The kubelet reads config.json from its root directory first
// (kubernetes/kubernetes pkg/credentialprovider/config.go,
// ReadDockerConfigJSONFile: preferredPath then the working directory,
// $HOME/.docker, /.docker), in the Docker config format
// ({"auths": {"host": {"auth": base64("user:password")}}},
// https://docs.docker.com/reference/cli/docker/#configuration-files), and
// matches its keys against the image with urlsMatch
// (pkg/credentialprovider/keyring.go): the key is a scheme-less URL whose
// port must equal the image's, whose host has as many dot-separated parts,
// each a filepath.Match glob, and whose path is a prefix of the image's.
// The longest key is tried first (the keyring sorts them in reverse).
func (k *kubelet) credentials(image string) (*runtimeapi.AuthConfig, error) {
	b, err := os.ReadFile(k.authFile)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %v", k.authFile, err)
	}
	keys := make([]string, 0, len(cfg.Auths))
	for key := range cfg.Auths {
		keys = append(keys, key)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	for _, key := range keys {
		if !urlsMatch(strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://"), image) {
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(cfg.Auths[key].Auth)
		if err != nil {
			return nil, fmt.Errorf("%s: auths[%q].auth: %v", k.authFile, key, err)
		}
		user, pass, ok := strings.Cut(string(dec), ":")
		if !ok {
			return nil, fmt.Errorf("%s: auths[%q].auth is not user:password", k.authFile, key)
		}
		return &runtimeapi.AuthConfig{Username: user, Password: pass}, nil
	}
	return nil, nil
}

// urlsMatch is the kubelet keyring's rule for a credential key (glob)
// applying to an image (target); see [kubelet.credentials].
func urlsMatch(glob, target string) bool {
	g, err1 := url.Parse("https://" + glob)
	tg, err2 := url.Parse("https://" + target)
	if err1 != nil || err2 != nil || g.Port() != tg.Port() || !strings.HasPrefix(tg.Path, g.Path) {
		return false
	}
	gp, tp := strings.Split(g.Hostname(), "."), strings.Split(tg.Hostname(), ".")
	if len(gp) != len(tp) {
		return false
	}
	for i := range gp {
		if ok, err := filepath.Match(gp[i], tp[i]); err != nil || !ok {
			return false
		}
	}
	return true
}
