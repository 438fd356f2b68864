package containers

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// criRuntime is a CRI runtime behind a socket: containerd or CRI-O.
type criRuntime struct {
	name, version, sock string
	available           func(service string) error
	pull                func(ctx context.Context, n Network, r ref, auth creds) (string, error)
	lock                func() (images map[string]*localImage, tags map[string]string, unlock func())
}

// runtimeAt returns the runtime serving a CRI endpoint on m; ok false for
// a socket nothing provides.
func runtimeAt(m *ubuntu.Machine, ep string) (criRuntime, bool) {
	sock := strings.TrimPrefix(ep, "unix://")
	sock = strings.Replace(sock, "/var/run/", "/run/", 1)
	switch sock {
	case containerdSock:
		s := containerdOf(m)
		return criRuntime{
			name: "containerd", version: "v" + containerdReleaseOf(m).String(), sock: containerdSock,
			available: s.criAvailable, pull: s.criPull,
			lock: func() (map[string]*localImage, map[string]string, func()) {
				s.mu.Lock()
				return s.images, s.tags, s.mu.Unlock
			},
		}, true
	case strings.Replace(crioSock, "/var/run/", "/run/", 1):
		s := crioOf(m)
		return criRuntime{
			name: "cri-o", version: crioVersion, sock: crioSock,
			available: func(string) error { return s.criAvailable() }, pull: s.criPull,
			lock: func() (map[string]*localImage, map[string]string, func()) {
				s.mu.Lock()
				return s.images, s.tags, s.mu.Unlock
			},
		}, true
	}
	return criRuntime{sock: sock}, false
}

// defaultCRIEndpoints are crictl 1.26's deprecated defaults, tried in
// order when neither --runtime-endpoint nor /etc/crictl.yaml names one.
var defaultCRIEndpoints = []string{"unix:///run/containerd/containerd.sock", "unix:///run/crio/crio.sock", "unix:///var/run/cri-dockerd.sock"}

// crictlConfig reads /etc/crictl.yaml (or --config): runtime-endpoint
// and image-endpoint.
func crictlConfig(m *ubuntu.Machine, file string) map[string]string {
	out := map[string]string{}
	data, err := m.Server().FS().ReadFile(file)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(strings.TrimSpace(k), "#") {
			continue
		}
		out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return out
}

// crictlCLI is one invocation of crictl.
type crictlCLI struct {
	ctx context.Context
	net Network
	m   *ubuntu.Machine
	p   *sshtest.Process
	now time.Time
}

func (c *crictlCLI) fatal(format string, args ...any) int {
	fmt.Fprintf(c.p.Stderr, "time=%q level=fatal msg=%s\n", logrusTime(c.now), strconv.Quote(fmt.Sprintf(format, args...)))
	return 1
}

func (c *crictlCLI) warn(format string, args ...any) {
	fmt.Fprintf(c.p.Stderr, "time=%q level=warning msg=%s\n", logrusTime(c.now), strconv.Quote(fmt.Sprintf(format, args...)))
}

// crictlTool is /usr/bin/crictl: pull, images, inspecti, rmi, version.
func crictlTool(net Network) ubuntu.Tool {
	return func(ctx context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
		c := &crictlCLI{ctx: ctx, net: net, m: m, p: p, now: time.Now()}
		return c.run(p.Args[1:])
	}
}

func (c *crictlCLI) run(args []string) int {
	g, err := flagSpec{"r|runtime-endpoint=", "i|image-endpoint=", "c|config=", "t|timeout=", "D|debug"}.parse(args, false)
	if err != nil {
		return c.fatal("%v", err)
	}
	if len(g.args) == 0 {
		fmt.Fprintln(c.p.Stdout, "NAME:\n   crictl - client for CRI\n\nUSAGE:\n   crictl [global options] command [command options] [arguments...]")
		return 0
	}
	cfgFile, _ := g.value("config")
	if cfgFile == "" {
		cfgFile = "/etc/crictl.yaml"
	}
	conf := crictlConfig(c.m, cfgFile)
	endpoint, _ := g.value("runtime-endpoint")
	if endpoint == "" {
		endpoint = conf["runtime-endpoint"]
	}
	imageEndpoint, _ := g.value("image-endpoint")
	if imageEndpoint == "" {
		imageEndpoint = conf["image-endpoint"]
	}
	cmd, rest := g.args[0], g.args[1:]
	image := cmd != "version" && cmd != "info"
	ep := endpoint
	if image && imageEndpoint != "" {
		ep = imageEndpoint
	}
	api := "runtime"
	if image {
		api = "image"
	}
	var rt criRuntime
	if ep == "" {
		c.warn("%s connect using default endpoints: [%s]. As the default settings are now deprecated, you should set the endpoint instead.", api, strings.Join(defaultCRIEndpoints, " "))
		for _, d := range defaultCRIEndpoints {
			ep = d
			r, ok := runtimeAt(c.m, d)
			if ok && (r.available("") == nil || !isUnavailable(r.available(""))) {
				break
			}
		}
	}
	rt, known := runtimeAt(c.m, ep)
	service := "runtime.v1.RuntimeService"
	if image {
		service = "runtime.v1.ImageService"
	}
	var connErr error
	switch {
	case !known:
		connErr = criUnavailable(rt.sock, "no such file or directory")
	case c.p.FS.Cred().UID != 0:
		connErr = criUnavailable(rt.sock, "permission denied")
	default:
		connErr = rt.available(service)
	}
	if connErr != nil {
		return c.fatal("validate service connection: validate CRI v1 %s API for endpoint %q: %v", api, ep, connErr)
	}
	switch cmd {
	case "pull":
		return c.pull(rt, rest)
	case "images", "image", "img":
		return c.images(rt, rest)
	case "inspecti":
		return c.inspecti(rt, rest)
	case "rmi":
		return c.rmi(rt, rest)
	case "version":
		fmt.Fprintf(c.p.Stdout, "Version:  0.1.0\nRuntimeName:  %s\nRuntimeVersion:  %s\nRuntimeApiVersion:  v1\n", rt.name, rt.version)
		return 0
	}
	return c.fatal("crictl %s: not modelled by internal/sim/containers", cmd)
}

func isUnavailable(err error) bool {
	ce, ok := err.(*criError)
	return ok && ce.code == "Unavailable"
}

func (c *crictlCLI) pull(rt criRuntime, args []string) int {
	f, err := flagSpec{"creds=", "auth=", "u|username=", "p|pod-config=", "a|annotation="}.parse(args, false)
	if err != nil {
		return c.fatal("%v", err)
	}
	if len(f.args) != 1 {
		return c.fatal("Incorrect Usage: crictl pull takes exactly one image")
	}
	var auth creds
	if v, ok := f.value("creds"); ok {
		u, pw, _ := strings.Cut(v, ":")
		auth = creds{user: u, password: pw, set: true}
	}
	if v, ok := f.value("auth"); ok {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return c.fatal("pulling image: %v", err)
		}
		u, pw, _ := strings.Cut(string(raw), ":")
		auth = creds{user: u, password: pw, set: true}
	}
	if _, ok := f.value("username"); ok {
		return c.fatal("crictl pull --username prompts for a password: not modelled by internal/sim/containers (use --creds)")
	}
	name := f.args[0]
	r, err := parseRef(name)
	if err != nil {
		err = &criError{"Unknown", fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %v", name, name, err)}
	} else {
		var id string
		id, err = rt.pull(c.ctx, c.net, r, auth)
		if err == nil {
			fmt.Fprintf(c.p.Stdout, "Image is up to date for %s\n", id)
			return 0
		}
	}
	fmt.Fprintf(c.p.Stderr, "E%s    %d remote_image.go:171] \"PullImage from image service failed\" err=%s image=%s\n", klogTime(c.now), 4000+len(name), strconv.Quote(err.Error()), strconv.Quote(name))
	return c.fatal("pulling image: %v", err)
}

func (c *crictlCLI) images(rt criRuntime, args []string) int {
	f, err := flagSpec{"q|quiet", "digests", "no-trunc", "v|verbose", "o|output="}.parse(args, false)
	if err != nil {
		return c.fatal("%v", err)
	}
	if o, ok := f.value("output"); ok && o != "table" {
		return c.fatal("crictl images -o %s: not modelled by internal/sim/containers", o)
	}
	images, tags, unlock := rt.lock()
	list := criImages(images, tags)
	sizes := map[string]int64{}
	for id, li := range images {
		sizes[id] = li.im.size()
	}
	unlock()
	var filter *ref
	if len(f.args) > 0 {
		r, err := parseRef(f.args[0])
		if err == nil {
			filter = &r
		}
	}
	if f.has("quiet") {
		for _, im := range list {
			if filter == nil || slices.ContainsFunc(im.Tags, func(t string) bool { tr, _ := parseRef(t); return tr.name() == filter.name() }) {
				fmt.Fprintln(c.p.Stdout, im.ID)
			}
		}
		return 0
	}
	rows := [][]string{{"IMAGE", "TAG", "IMAGE ID", "SIZE"}}
	for _, im := range list {
		short := strings.TrimPrefix(im.ID, "sha256:")[:13]
		if f.has("no-trunc") {
			short = im.ID
		}
		for _, t := range im.Tags {
			tr, _ := parseRef(t)
			if filter != nil && tr.name() != filter.name() {
				continue
			}
			rows = append(rows, []string{tr.name(), tr.tag, short, humanSize(sizes[im.ID])})
		}
		if len(im.Tags) == 0 && filter == nil {
			rows = append(rows, []string{"<none>", "<none>", short, humanSize(sizes[im.ID])})
		}
	}
	var b bytes.Buffer
	table(&b, rows)
	c.p.Stdout.Write(b.Bytes())
	return 0
}

func (c *crictlCLI) inspecti(rt criRuntime, args []string) int {
	f, err := flagSpec{"o|output=", "q|quiet"}.parse(args, false)
	if err != nil {
		return c.fatal("%v", err)
	}
	if o, ok := f.value("output"); ok && o != "json" {
		return c.fatal("crictl inspecti -o %s: not modelled by internal/sim/containers", o)
	}
	if len(f.args) == 0 {
		return c.fatal("ID cannot be empty")
	}
	images, tags, unlock := rt.lock()
	defer unlock()
	for _, name := range f.args {
		img, ok := criImage(images, tags, name)
		if !ok {
			return c.fatal("no such image %q present", name)
		}
		doc := map[string]any{
			"status": map[string]any{
				"id": img.ID, "repoTags": nonNil(img.Tags), "repoDigests": nonNil(img.Digests),
				"size": strconv.FormatInt(images[img.ID].im.size(), 10), "uid": nil, "username": "", "spec": nil, "pinned": false,
			},
		}
		if !f.has("quiet") {
			doc["info"] = map[string]any{"imageSpec": json.RawMessage(images[img.ID].im.config.data)}
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		fmt.Fprintf(c.p.Stdout, "%s\n", b)
	}
	return 0
}

func (c *crictlCLI) rmi(rt criRuntime, args []string) int {
	f, err := flagSpec{"a|all", "q|prune"}.parse(args, false)
	if err != nil {
		return c.fatal("%v", err)
	}
	images, tags, unlock := rt.lock()
	defer unlock()
	for _, name := range f.args {
		id, ok := criResolve(images, tags, name)
		if !ok {
			return c.fatal("no such image %s", name)
		}
		for t, tid := range tags {
			if tid == id {
				delete(tags, t)
			}
		}
		delete(images, id)
		fmt.Fprintf(c.p.Stdout, "Deleted: %s\n", name)
	}
	return 0
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
