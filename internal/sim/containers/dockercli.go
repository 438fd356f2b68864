package containers

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// dockerCLI is one invocation of the docker command line client.
type dockerCLI struct {
	ctx context.Context
	net Network
	m   *ubuntu.Machine
	p   *sshtest.Process
	s   *DockerState
}

// dockerTool is /usr/bin/docker.
func dockerTool(net Network) ubuntu.Tool {
	return func(ctx context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
		c := &dockerCLI{ctx: ctx, net: net, m: m, p: p, s: dockerOf(m)}
		return c.run(p.Args[1:])
	}
}

func (c *dockerCLI) errf(format string, args ...any) {
	fmt.Fprintf(c.p.Stderr, format+"\n", args...)
}

func (c *dockerCLI) outf(format string, args ...any) {
	fmt.Fprintf(c.p.Stdout, format+"\n", args...)
}

// flagFail reports a command line docker refuses: status 125.
func (c *dockerCLI) flagFail(cmd string, err error) int {
	c.errf("%v\nSee 'docker %s --help'.", err, cmd)
	return 125
}

func (c *dockerCLI) run(args []string) int {
	if len(args) == 0 {
		c.outf("\nUsage:  docker [OPTIONS] COMMAND\n\nA self-sufficient runtime for containers")
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		if args[0] == "-v" || args[0] == "--version" {
			c.outf("Docker version %s, build %s", dockerVersion, c.gitCommit())
			return 0
		}
		return c.flagFail("", fmt.Errorf("unknown flag: %s (global options are not modelled by internal/sim/containers)", args[0]))
	}
	cmd, rest := args[0], args[1:]
	if cmd == "image" || cmd == "container" {
		if len(rest) == 0 {
			c.outf("\nUsage:  docker %s COMMAND", cmd)
			return 0
		}
		sub := rest[0]
		rest = rest[1:]
		switch {
		case cmd == "image" && (sub == "ls" || sub == "list"):
			return c.images(rest)
		case cmd == "image" && sub == "rm":
			return c.rmi(rest)
		case cmd == "image" && slices.Contains([]string{"inspect", "load", "pull", "push", "tag"}, sub):
			if sub == "inspect" {
				return c.inspect(rest, "image", "image inspect")
			}
			cmd = sub
		case cmd == "container" && (sub == "ls" || sub == "list" || sub == "ps"):
			return c.ps(rest)
		case cmd == "container" && sub == "inspect":
			return c.inspect(rest, "container", "container inspect")
		case cmd == "container" && slices.Contains([]string{"run", "create", "start", "stop", "restart", "rm", "logs"}, sub):
			cmd = sub
		default:
			c.errf("docker: '%s %s' is not a docker command (not modelled by internal/sim/containers).\nSee 'docker --help'", cmd, sub)
			return 1
		}
	}
	switch cmd {
	case "version":
		return c.version(rest)
	case "info":
		return c.info(rest)
	case "images":
		return c.images(rest)
	case "inspect":
		return c.inspect(rest, "", "inspect")
	case "load":
		return c.load(rest)
	case "pull":
		return c.pullCmd(rest)
	case "push":
		return c.push(rest)
	case "tag":
		return c.tag(rest)
	case "rmi":
		return c.rmi(rest)
	case "login":
		return c.login(rest)
	case "logout":
		return c.logout(rest)
	case "run":
		return c.runContainer(rest, true)
	case "create":
		return c.runContainer(rest, false)
	case "start":
		return c.start(rest)
	case "stop":
		return c.stop(rest, "stop")
	case "restart":
		return c.stop(rest, "restart")
	case "rm":
		return c.rm(rest)
	case "ps":
		return c.ps(rest)
	case "logs":
		return c.logs(rest)
	}
	c.errf("docker: '%s' is not a docker command (not modelled by internal/sim/containers).\nSee 'docker --help'", cmd)
	return 1
}

func (c *dockerCLI) gitCommit() string {
	if c.m.Installed("docker-ce") {
		return "afdd53b"
	}
	return "24.0.7-0ubuntu2~22.04.1"
}

// connect checks that the client may talk to the daemon: the socket is
// root's and the docker group's, and the daemon must be up. api is the
// endpoint named in the permission error.
func (c *dockerCLI) connect(api string) (int, bool) {
	if !c.maySocket() {
		c.errf("permission denied while trying to connect to the Docker daemon socket at unix://%s: Get \"http://%%2Fvar%%2Frun%%2Fdocker.sock/v1.24/%s\": dial unix %s: connect: permission denied", dockerSock, api, dockerSock)
		return 1, false
	}
	if !c.s.Running() {
		c.errf("Cannot connect to the Docker daemon at unix://%s. Is the docker daemon running?", dockerSock)
		return 1, false
	}
	return 0, true
}

// maySocket says the client may open the daemon's socket: root, or a
// member of the docker group.
func (c *dockerCLI) maySocket() bool {
	cred := c.p.FS.Cred()
	if cred.UID == 0 {
		return true
	}
	gid, ok := c.p.Host.FS().LookupGroup("docker")
	return ok && (cred.GID == gid || slices.Contains(cred.Groups, gid))
}

// --- version and info -------------------------------------------------------

type versionInfo struct {
	Client struct {
		Platform   struct{ Name string }
		Version    string
		APIVersion string `json:"ApiVersion"`
		GoVersion  string
		GitCommit  string
		Os, Arch   string
		Context    string
	}
	Server *struct {
		Platform      struct{ Name string }
		Version       string
		APIVersion    string `json:"ApiVersion"`
		MinAPIVersion string `json:"MinAPIVersion"`
		GitCommit     string
		GoVersion     string
		Os, Arch      string
		KernelVersion string
	}
}

func (c *dockerCLI) version(args []string) int {
	f, err := flagSpec{"f|format="}.parse(args, true)
	if err != nil {
		return c.flagFail("version", err)
	}
	var v versionInfo
	v.Client.Version, v.Client.APIVersion, v.Client.GoVersion = dockerVersion, dockerAPIVersion, "go1.21.1"
	v.Client.GitCommit, v.Client.Os, v.Client.Arch, v.Client.Context = c.gitCommit(), "linux", c.m.Arch(), "default"
	code, ok := c.connect("version")
	if ok {
		v.Server = &struct {
			Platform      struct{ Name string }
			Version       string
			APIVersion    string `json:"ApiVersion"`
			MinAPIVersion string `json:"MinAPIVersion"`
			GitCommit     string
			GoVersion     string
			Os, Arch      string
			KernelVersion string
		}{Version: dockerVersion, APIVersion: dockerAPIVersion, MinAPIVersion: "1.12", GitCommit: c.gitCommit(), GoVersion: "go1.21.1", Os: "linux", Arch: c.m.Arch(), KernelVersion: "5.15.0-fake"}
	}
	if format, set := f.value("format"); set {
		if !ok {
			return code
		}
		out, err := renderTemplate(format, v)
		if err != nil {
			c.errf("%v", err)
			return 1
		}
		c.outf("%s", out)
		return 0
	}
	c.outf("Client:\n Version:           %s\n API version:       %s\n Go version:        go1.21.1\n Git commit:        %s\n Built:             Wed Mar 13 20:23:54 2024\n OS/Arch:           linux/%s\n Context:           default", dockerVersion, dockerAPIVersion, c.gitCommit(), c.m.Arch())
	if !ok {
		return code
	}
	c.outf("\nServer:\n Engine:\n  Version:          %s\n  API version:      %s (minimum version 1.12)\n  Go version:       go1.21.1\n  Git commit:       %s\n  Built:            Wed Mar 13 20:23:54 2024\n  OS/Arch:          linux/%s\n  Experimental:     false\n containerd:\n  Version:          1.7.12\n  GitCommit:        \n runc:\n  Version:          1.1.12-0ubuntu2~22.04.1\n  GitCommit:        \n docker-init:\n  Version:          0.19.0\n  GitCommit:        ", dockerVersion, dockerAPIVersion, c.gitCommit(), c.m.Arch())
	return 0
}

type infoData struct {
	ServerVersion                                            string
	Containers, ContainersRunning, ContainersStopped, Images int
	Driver                                                   string
	HTTPProxy                                                string `json:"HttpProxy"`
	HTTPSProxy                                               string `json:"HttpsProxy"`
	NoProxy                                                  string
	RegistryConfig                                           struct {
		InsecureRegistryCIDRs []string
		IndexConfigs          map[string]struct {
			Name     string
			Mirrors  []string
			Secure   bool
			Official bool
		}
		Mirrors []string
	}
	Name, OperatingSystem, Architecture string
	LiveRestoreEnabled                  bool
}

func (c *dockerCLI) info(args []string) int {
	f, err := flagSpec{"f|format="}.parse(args, true)
	if err != nil {
		return c.flagFail("info", err)
	}
	if code, ok := c.connect("info"); !ok {
		return code
	}
	cfg := c.s.Config()
	var d infoData
	d.ServerVersion, d.Driver, d.Name = dockerVersion, "overlay2", c.m.Hostname()
	d.OperatingSystem, d.Architecture = "Ubuntu 22.04.4 LTS", "x86_64"
	if c.m.Arch() == "arm64" {
		d.Architecture = "aarch64"
	}
	d.HTTPProxy, d.HTTPSProxy, d.NoProxy = cfg.HTTPProxy, cfg.HTTPSProxy, cfg.NoProxy
	c.s.mu.Lock()
	for _, ct := range c.s.containers {
		d.Containers++
		if ct.state == "running" {
			d.ContainersRunning++
		} else {
			d.ContainersStopped++
		}
	}
	d.Images = len(c.s.images)
	c.s.mu.Unlock()
	d.RegistryConfig.IndexConfigs = map[string]struct {
		Name     string
		Mirrors  []string
		Secure   bool
		Official bool
	}{"docker.io": {Name: "docker.io", Mirrors: cfg.RegistryMirrors, Secure: true, Official: true}}
	var names []string
	for _, r := range cfg.InsecureRegistries {
		if _, err := netip.ParsePrefix(r); err == nil {
			d.RegistryConfig.InsecureRegistryCIDRs = append(d.RegistryConfig.InsecureRegistryCIDRs, r)
			continue
		}
		names = append(names, r)
		d.RegistryConfig.IndexConfigs[r] = struct {
			Name     string
			Mirrors  []string
			Secure   bool
			Official bool
		}{Name: r}
	}
	d.RegistryConfig.InsecureRegistryCIDRs = append(d.RegistryConfig.InsecureRegistryCIDRs, "127.0.0.0/8")
	d.RegistryConfig.Mirrors = cfg.RegistryMirrors
	if format, set := f.value("format"); set {
		out, err := renderTemplate(format, d)
		if err != nil {
			c.errf("%v", err)
			return 1
		}
		c.outf("%s", out)
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Client:\n Version:    %s\n Context:    default\n Debug Mode: false\n\nServer:\n", dockerVersion)
	fmt.Fprintf(&b, " Containers: %d\n  Running: %d\n  Paused: 0\n  Stopped: %d\n Images: %d\n", d.Containers, d.ContainersRunning, d.ContainersStopped, d.Images)
	fmt.Fprintf(&b, " Server Version: %s\n Storage Driver: overlay2\n Logging Driver: json-file\n Cgroup Driver: systemd\n Cgroup Version: 2\n", dockerVersion)
	fmt.Fprintf(&b, " Operating System: %s\n OSType: linux\n Architecture: %s\n Name: %s\n Docker Root Dir: /var/lib/docker\n Debug Mode: false\n", d.OperatingSystem, d.Architecture, d.Name)
	if d.HTTPProxy != "" {
		fmt.Fprintf(&b, " HTTP Proxy: %s\n", d.HTTPProxy)
	}
	if d.HTTPSProxy != "" {
		fmt.Fprintf(&b, " HTTPS Proxy: %s\n", d.HTTPSProxy)
	}
	if d.NoProxy != "" {
		fmt.Fprintf(&b, " No Proxy: %s\n", d.NoProxy)
	}
	b.WriteString(" Experimental: false\n Insecure Registries:\n")
	slices.Sort(names)
	for _, n := range append(names, d.RegistryConfig.InsecureRegistryCIDRs...) {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	if len(cfg.RegistryMirrors) > 0 {
		b.WriteString(" Registry Mirrors:\n")
		for _, mr := range cfg.RegistryMirrors {
			fmt.Fprintf(&b, "  %s\n", mr)
		}
	}
	b.WriteString(" Live Restore Enabled: false\n")
	io.WriteString(c.p.Stdout, b.String())
	return 0
}

// --- images -----------------------------------------------------------------

// imageInspect is docker image inspect's document.
type imageInspect struct {
	ID            string `json:"Id"`
	RepoTags      []string
	RepoDigests   []string
	Parent        string
	Comment       string
	Created       string
	DockerVersion string
	Author        string
	Config        json.RawMessage
	Architecture  string
	Os            string
	Size          int64
	VirtualSize   int64
	GraphDriver   struct {
		Data map[string]string
		Name string
	}
	RootFS struct {
		Type   string
		Layers []string
	}
	Metadata struct{ LastTagTime string }
}

func (c *dockerCLI) imageInspectLocked(id string) imageInspect {
	li := c.s.images[id]
	cfg := li.im.parsedConfig()
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	json.Unmarshal(li.im.config.data, &raw)
	ii := imageInspect{ID: id, RepoTags: []string{}, RepoDigests: []string{}, Created: cfg.Created, Config: raw.Config,
		Architecture: cfg.Architecture, Os: cfg.OS, Size: li.im.size(), VirtualSize: li.im.size()}
	if len(ii.Config) == 0 {
		ii.Config = json.RawMessage("{}")
	}
	for _, t := range c.s.tagsOfLocked(id) {
		r, _ := parseRef(t)
		ii.RepoTags = append(ii.RepoTags, r.familiar())
	}
	for _, d := range li.digests {
		r, _ := parseRef(d)
		ii.RepoDigests = append(ii.RepoDigests, r.familiar())
	}
	ii.GraphDriver.Name = "overlay2"
	ii.GraphDriver.Data = map[string]string{"MergedDir": "/var/lib/docker/overlay2/" + strings.TrimPrefix(id, "sha256:")[:26] + "/merged"}
	ii.RootFS.Type, ii.RootFS.Layers = "layers", cfg.RootFS.DiffIDs
	ii.Metadata.LastTagTime = li.tagged.UTC().Format(time.RFC3339Nano)
	return ii
}

// inspect is docker inspect, docker image inspect and docker container
// inspect; kind is "", "image" or "container".
func (c *dockerCLI) inspect(args []string, kind, cmd string) int {
	spec := flagSpec{"f|format=", "s|size"}
	if kind == "" {
		spec = append(spec, "type=")
	}
	f, err := spec.parse(args, true)
	if err != nil {
		return c.flagFail(cmd, err)
	}
	if t, ok := f.value("type"); ok {
		if t != "container" && t != "image" {
			c.errf("\"%s\" is not a valid value for --type", t)
			return 1
		}
		kind = t
	}
	if len(f.args) == 0 {
		c.errf("\"docker %s\" requires at least 1 argument.\nSee 'docker %s --help'.", cmd, cmd)
		return 1
	}
	api := "containers/" + f.args[0] + "/json"
	if kind == "image" {
		api = "images/" + f.args[0] + "/json"
	}
	if code, ok := c.connect(api); !ok {
		return code
	}
	var docs []any
	var missing []string
	c.s.mu.Lock()
	for _, name := range f.args {
		if kind != "image" {
			if ct := c.s.findLocked(name); ct != nil {
				docs = append(docs, c.containerInspectLocked(ct))
				continue
			}
		}
		if kind != "container" {
			if id, ok := c.s.resolveImageLocked(name); ok {
				docs = append(docs, c.imageInspectLocked(id))
				continue
			}
		}
		missing = append(missing, name)
	}
	c.s.mu.Unlock()
	format, hasFormat := f.value("format")
	if hasFormat {
		for _, d := range docs {
			out, err := renderTemplate(format, d)
			if err != nil {
				c.errf("%v", err)
				return 1
			}
			c.outf("%s", out)
		}
	} else {
		if docs == nil {
			docs = []any{}
		}
		c.p.Stdout.Write(indentJSON(docs))
	}
	if len(missing) > 0 {
		what := map[string]string{"": "object", "image": "image", "container": "container"}[kind]
		for _, name := range missing {
			c.errf("Error: No such %s: %s", what, name)
		}
		return 1
	}
	return 0
}

func (c *dockerCLI) images(args []string) int {
	f, err := flagSpec{"q|quiet", "a|all", "no-trunc", "digests", "format="}.parse(args, true)
	if err != nil {
		return c.flagFail("images", err)
	}
	if code, ok := c.connect("images/json"); !ok {
		return code
	}
	var filter *ref
	if len(f.args) > 0 {
		r, err := parseRef(f.args[0])
		if err != nil {
			c.errf("invalid reference format")
			return 1
		}
		filter = &r
		if !strings.Contains(f.args[0], ":") || strings.HasSuffix(f.args[0], "/") {
			filter.tag = ""
		}
	}
	type row struct {
		Repository, Tag, ID, CreatedSince, CreatedAt, Size, Digest string
	}
	var rows []row
	c.s.mu.Lock()
	for _, id := range slices.Sorted(maps.Keys(c.s.images)) {
		li := c.s.images[id]
		created, _ := time.Parse(time.RFC3339, li.im.parsedConfig().Created)
		short := strings.TrimPrefix(id, "sha256:")[:12]
		if f.has("no-trunc") {
			short = id
		}
		base := row{ID: short, CreatedSince: humanDuration(time.Since(created)) + " ago", CreatedAt: created.Format("2006-01-02 15:04:05 -0700 MST"), Size: humanSize(li.im.size()), Digest: "<none>"}
		tags := c.s.tagsOfLocked(id)
		if len(tags) == 0 {
			if filter == nil {
				r := base
				r.Repository, r.Tag = "<none>", "<none>"
				rows = append(rows, r)
			}
			continue
		}
		for _, t := range tags {
			tr, _ := parseRef(t)
			if filter != nil && (tr.name() != filter.name() || (filter.tag != "" && tr.tag != filter.tag)) {
				continue
			}
			r := base
			r.Repository, r.Tag = tr.familiarName(), tr.tag
			rows = append(rows, r)
		}
	}
	c.s.mu.Unlock()
	if f.has("quiet") {
		var seen []string
		for _, r := range rows {
			if !slices.Contains(seen, r.ID) {
				seen = append(seen, r.ID)
				c.outf("%s", r.ID)
			}
		}
		return 0
	}
	if format, ok := f.value("format"); ok {
		return printFormatted(c, "images", format, rows)
	}
	tbl := [][]string{{"REPOSITORY", "TAG", "IMAGE ID", "CREATED", "SIZE"}}
	for _, r := range rows {
		tbl = append(tbl, []string{r.Repository, r.Tag, r.ID, r.CreatedSince, r.Size})
	}
	var b bytes.Buffer
	table(&b, tbl)
	c.p.Stdout.Write(b.Bytes())
	return 0
}

func (c *dockerCLI) tag(args []string) int {
	f, err := flagSpec{}.parse(args, true)
	if err != nil {
		return c.flagFail("tag", err)
	}
	if len(f.args) != 2 {
		c.errf("\"docker tag\" requires exactly 2 arguments.\nSee 'docker tag --help'.\n\nUsage:  docker tag SOURCE_IMAGE[:TAG] TARGET_IMAGE[:TAG]\n\nCreate a tag TARGET_IMAGE that refers to SOURCE_IMAGE")
		return 1
	}
	if code, ok := c.connect("images/" + f.args[0] + "/tag"); !ok {
		return code
	}
	dst, err := parseRef(f.args[1])
	if err != nil || dst.tag == "" {
		c.errf("Error parsing reference: %q is not a valid repository/tag: %v", f.args[1], errBadRef)
		return 1
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	id, ok := c.s.resolveImageLocked(f.args[0])
	if !ok {
		c.errf("Error response from daemon: No such image: %s", f.args[0])
		return 1
	}
	c.s.tagLocked(dst, c.s.images[id].im, "")
	return 0
}

func (c *dockerCLI) rmi(args []string) int {
	f, err := flagSpec{"f|force", "no-prune"}.parse(args, true)
	if err != nil {
		return c.flagFail("rmi", err)
	}
	if len(f.args) == 0 {
		c.errf("\"docker rmi\" requires at least 1 argument.\nSee 'docker rmi --help'.")
		return 1
	}
	if code, ok := c.connect("images/" + f.args[0]); !ok {
		return code
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	status := 0
	for _, name := range f.args {
		id, ok := c.s.resolveImageLocked(name)
		if !ok {
			c.errf("Error response from daemon: No such image: %s", name)
			status = 1
			continue
		}
		var user *container
		for _, ct := range c.s.containers {
			if ct.imageID == id {
				user = ct
				break
			}
		}
		tags := c.s.tagsOfLocked(id)
		r, err := parseRef(name)
		byTag := err == nil && slices.Contains(tags, r.name()+":"+r.tag)
		if byTag && (len(tags) > 1 || f.has("force") || user == nil) {
			delete(c.s.tags, r.name()+":"+r.tag)
			c.outf("Untagged: %s", r.familiar())
			if len(tags) > 1 || user != nil {
				continue
			}
		} else if user != nil {
			if byTag {
				c.errf("Error response from daemon: conflict: unable to remove repository reference %q (must force) - container %s is using its referenced image %s", name, user.id[:12], strings.TrimPrefix(id, "sha256:")[:12])
			} else {
				c.errf("Error response from daemon: conflict: unable to delete %s (cannot be forced) - image is being used by running container %s", strings.TrimPrefix(id, "sha256:")[:12], user.id[:12])
			}
			status = 1
			continue
		} else if len(tags) > 1 && !f.has("force") {
			c.errf("Error response from daemon: conflict: unable to delete %s (must be forced) - image is referenced in multiple repositories", strings.TrimPrefix(id, "sha256:")[:12])
			status = 1
			continue
		} else {
			for _, t := range tags {
				tr, _ := parseRef(t)
				delete(c.s.tags, t)
				c.outf("Untagged: %s", tr.familiar())
			}
		}
		for _, d := range c.s.images[id].digests {
			dr, _ := parseRef(d)
			c.outf("Untagged: %s", dr.familiar())
		}
		delete(c.s.images, id)
		c.outf("Deleted: %s", id)
	}
	return status
}

// --- docker load --------------------------------------------------------------

func (c *dockerCLI) load(args []string) int {
	f, err := flagSpec{"i|input=", "q|quiet"}.parse(args, true)
	if err != nil {
		return c.flagFail("load", err)
	}
	if len(f.args) > 0 {
		c.errf("\"docker load\" accepts no arguments.\nSee 'docker load --help'.")
		return 1
	}
	var data []byte
	if file, ok := f.value("input"); ok {
		data, err = c.p.FS.ReadFile(file)
		if err != nil {
			c.errf("open %s: %s", file, strings.ToLower(sshtest.ErrMessage(err)[:1])+sshtest.ErrMessage(err)[1:])
			return 1
		}
	} else {
		data, err = io.ReadAll(c.p.Stdin)
		if err != nil {
			return 1
		}
		if len(data) == 0 {
			c.errf("requested load from stdin, but stdin is empty")
			return 1
		}
	}
	if code, ok := c.connect("images/load"); !ok {
		return code
	}
	images, err := readSaveArchive(data)
	if err != nil {
		c.errf("Error response from daemon: %v", err)
		return 1
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, li := range images {
		if len(li.tags) == 0 {
			c.s.tagLocked(ref{}, li.im, "docker load")
			c.outf("Loaded image ID: %s", li.im.id())
			continue
		}
		for _, t := range li.tags {
			r, err := parseRef(t)
			if err != nil {
				c.errf("Error response from daemon: invalid reference format: %s", t)
				return 1
			}
			if old := c.s.tagLocked(r, li.im, "docker load"); old != "" {
				c.outf("The image %s already exists, renaming the old one with ID %s to empty string", r.familiar(), old)
			}
			c.outf("Loaded image: %s", r.familiar())
		}
	}
	return 0
}

// savedImage is one image of a `docker save` archive.
type savedImage struct {
	im   *image
	tags []string
}

// readSaveArchive reads a `docker save` tar (the legacy layout of Docker
// before 25 or the OCI layout of 25+, both with manifest.json) as the
// daemon does: the image ID is the config's digest, and every layer must
// match its diff ID.
func readSaveArchive(data []byte) ([]savedImage, error) {
	tmp := fmt.Sprintf("/var/lib/docker/tmp/docker-import-%d", 100000000+len(data)%900000000)
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("Error processing tar file(exit status 1): unexpected EOF")
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("Error processing tar file(exit status 1): unexpected EOF")
		}
		files[path.Clean(hdr.Name)] = b
	}
	raw, ok := files["manifest.json"]
	if !ok {
		return nil, fmt.Errorf("open %s/repositories: no such file or directory", tmp)
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return nil, fmt.Errorf("%v", err)
	}
	var out []savedImage
	for _, e := range manifest {
		cfgData, ok := files[path.Clean(e.Config)]
		if !ok {
			return nil, fmt.Errorf("open %s/%s: no such file or directory", tmp, e.Config)
		}
		im := &image{config: newBlob(cfgData)}
		cfg := im.parsedConfig()
		if len(cfg.RootFS.DiffIDs) != len(e.Layers) {
			return nil, fmt.Errorf("invalid manifest, layers length mismatch: expected %d, got %d", len(cfg.RootFS.DiffIDs), len(e.Layers))
		}
		for i, l := range e.Layers {
			ld, ok := files[path.Clean(l)]
			if !ok {
				return nil, fmt.Errorf("open %s/%s: no such file or directory", tmp, l)
			}
			b := newBlob(ld)
			if b.digest != cfg.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("invalid diffID for layer %d: expected %q, got %q", i, cfg.RootFS.DiffIDs[i], b.digest)
			}
			im.layers = append(im.layers, b)
		}
		out = append(out, savedImage{im: im, tags: e.RepoTags})
	}
	return out, nil
}

// --- pull, push, login ----------------------------------------------------------

// pullError is a pull the daemon refused; msg is its message without the
// "Error response from daemon: " prefix.
type pullError struct{ msg string }

func (e *pullError) Error() string { return e.msg }

// endpoints are the URLs Docker tries for a registry, with the TLS it
// uses: HTTPS only for a secure registry; HTTPS without verification, then
// HTTP, for an insecure one.
func (c *dockerCLI) endpoints(domain string, cfg DockerConfig) ([]endpoint, dialOptions) {
	o := dialOptions{internet: c.net.Internet() || cfg.HTTPSProxy != "" || cfg.HTTPProxy != "",
		proxy: proxyConfig{HTTP: cfg.HTTPProxy, HTTPS: cfg.HTTPSProxy, NoProxy: cfg.NoProxy}}
	if domain == hubDomain {
		return []endpoint{{"https", hubHost}}, o
	}
	o.tls.cas = readCAFiles(c.m, path.Join(dockerCertsDir, domain))
	eps := []endpoint{{"https", domain}}
	if c.insecure(domain, cfg) {
		o.tls.skipVerify = true
		eps = append(eps, endpoint{"http", domain})
	}
	return eps, o
}

// insecure is dockerd's isSecureIndex, negated: the registry is named in
// insecure-registries, or one of its addresses is in an insecure CIDR
// (127.0.0.0/8 always is). An address of a machine of the simulated
// network is never loopback for this purpose, whatever the simulation
// gave it: it stands for a real VM's address.
func (c *dockerCLI) insecure(domain string, cfg DockerConfig) bool {
	if slices.Contains(cfg.InsecureRegistries, domain) {
		return true
	}
	host, _ := splitHostPort(domain)
	ip, ok := lookupHost(c.m, host)
	if !ok {
		return false
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	if a.IsLoopback() && c.net.Machine(ip) == nil {
		return true
	}
	for _, r := range cfg.InsecureRegistries {
		if p, err := netip.ParsePrefix(r); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// creds returns the client's credentials for a registry, from
// $DOCKER_CONFIG/config.json or ~/.docker/config.json.
func (c *dockerCLI) creds(domain string) creds {
	auths, _ := readAuths(c.m, c.configFile())
	return credsFor(auths, domain)
}

func (c *dockerCLI) configFile() string {
	if d := c.p.Getenv("DOCKER_CONFIG"); d != "" {
		return path.Join(d, "config.json")
	}
	home := c.p.Getenv("HOME")
	if home == "" {
		home = "/root"
		if c.p.User != "root" {
			home = "/home/" + c.p.User
		}
	}
	return path.Join(home, ".docker/config.json")
}

// connectRegistry reaches a registry through Docker's endpoints; the
// error is the last endpoint's, as dockerd reports it.
func (c *dockerCLI) connectRegistry(domain string) (server, endpoint, error) {
	return c.connectRegistryWith(domain, c.s.Config())
}

// connectRegistryWith is connectRegistry under a daemon configuration.
func (c *dockerCLI) connectRegistryWith(domain string, cfg DockerConfig) (server, endpoint, error) {
	eps, o := c.endpoints(domain, cfg)
	var last error
	for _, e := range eps {
		srv, f := dial(c.net, c.m, e, o)
		if f == nil {
			return srv, e, nil
		}
		last = &pullError{fmt.Sprintf("Get %q: %s", e.url("/v2/"), f.goErr())}
	}
	return nil, endpoint{}, last
}

// pull pulls r into the daemon, writing Docker's progress to out; quiet
// prints only the reference.
func (c *dockerCLI) pull(r ref, out io.Writer, quiet bool) error {
	srv, e, err := c.connectRegistry(r.domain)
	if err != nil {
		return err
	}
	manifestURL := e.url("/v2/" + r.path + "/manifests/" + r.reference())
	rec := PullRecord{Host: c.m.Hostname(), Runtime: "docker", Image: r.path + ":" + r.reference()}
	if r.tag == "" {
		rec.Image = r.path + "@" + r.digest
	}
	switch authorize(srv, c.creds(r.domain)) {
	case authMissing:
		srv.record(rec)
		return &pullError{fmt.Sprintf("Head %q: no basic auth credentials", manifestURL)}
	case authWrong:
		srv.record(rec)
		return &pullError{fmt.Sprintf("Head %q: unauthorized: authentication required", manifestURL)}
	}
	im, ok := srv.lookup(r.path, r.reference())
	if !ok {
		srv.record(rec)
		if r.domain == hubDomain && !hubRepoExists(r) {
			return &pullError{fmt.Sprintf("pull access denied for %s, repository does not exist or may require 'docker login': denied: requested access to the resource is denied", r.familiarName())}
		}
		return &pullError{fmt.Sprintf("manifest for %s not found: manifest unknown: manifest unknown", r.familiar())}
	}
	rec.OK = true
	srv.record(rec)
	c.s.mu.Lock()
	prev, had := c.s.tags[r.name()+":"+r.tag]
	_, present := c.s.images[im.id()]
	if r.tag != "" {
		c.s.tagLocked(r, im, r.domain)
	} else {
		c.s.tagLocked(ref{}, im, r.domain)
	}
	c.s.addDigestLocked(r, im.id(), im.digest())
	c.s.mu.Unlock()
	full := r.String()
	if quiet {
		fmt.Fprintln(out, full)
		return nil
	}
	fmt.Fprintf(out, "%s: Pulling from %s\n", r.reference(), r.path)
	upToDate := had && prev == im.id()
	if !upToDate {
		for _, l := range im.layers {
			short := strings.TrimPrefix(l.digest, "sha256:")[:12]
			if present {
				fmt.Fprintf(out, "%s: Already exists\n", short)
				continue
			}
			fmt.Fprintf(out, "%s: Pulling fs layer\n%s: Verifying Checksum\n%s: Download complete\n%s: Pull complete\n", short, short, short, short)
		}
	}
	fmt.Fprintf(out, "Digest: %s\n", im.digest())
	if upToDate {
		fmt.Fprintf(out, "Status: Image is up to date for %s\n", r.familiar())
	} else {
		fmt.Fprintf(out, "Status: Downloaded newer image for %s\n", r.familiar())
	}
	fmt.Fprintln(out, full)
	return nil
}

func (c *dockerCLI) pullCmd(args []string) int {
	f, err := flagSpec{"q|quiet", "disable-content-trust"}.parse(args, true)
	if err != nil {
		return c.flagFail("pull", err)
	}
	if len(f.args) != 1 {
		c.errf("\"docker pull\" requires exactly 1 argument.\nSee 'docker pull --help'.\n\nUsage:  docker pull [OPTIONS] NAME[:TAG|@DIGEST]\n\nDownload an image from a registry")
		return 1
	}
	r, err := parseRef(f.args[0])
	if err != nil {
		c.errf("%v", err)
		return 1
	}
	if code, ok := c.connect("images/create?fromImage=" + r.familiarName()); !ok {
		return code
	}
	if err := c.pull(r, c.p.Stdout, f.has("quiet")); err != nil {
		c.errf("Error response from daemon: %v", err)
		return 1
	}
	return 0
}

func (c *dockerCLI) push(args []string) int {
	f, err := flagSpec{"q|quiet", "a|all-tags", "disable-content-trust"}.parse(args, true)
	if err != nil {
		return c.flagFail("push", err)
	}
	if len(f.args) != 1 {
		c.errf("\"docker push\" requires exactly 1 argument.\nSee 'docker push --help'.")
		return 1
	}
	if f.has("all-tags") {
		c.errf("docker push --all-tags: not modelled by internal/sim/containers")
		return 1
	}
	r, err := parseRef(f.args[0])
	if err != nil || r.tag == "" {
		c.errf("invalid reference format")
		return 1
	}
	if code, ok := c.connect("images/" + r.familiarName() + "/push"); !ok {
		return code
	}
	c.s.mu.Lock()
	id, ok := c.s.tags[r.name()+":"+r.tag]
	var im *image
	if ok {
		im = c.s.images[id].im
	}
	c.s.mu.Unlock()
	if !ok {
		c.errf("An image does not exist locally with the tag: %s", r.familiarName())
		return 1
	}
	c.outf("The push refers to repository [%s]", r.name())
	if r.domain == hubDomain {
		c.errf("denied: requested access to the resource is denied")
		return 1
	}
	srv, _, err := c.connectRegistry(r.domain)
	if err != nil {
		c.errf("%v", err)
		return 1
	}
	switch authorize(srv, c.creds(r.domain)) {
	case authMissing:
		c.errf("no basic auth credentials")
		return 1
	case authWrong:
		c.errf("unauthorized: authentication required")
		return 1
	}
	exists := map[string]bool{}
	if old, ok := srv.lookup(r.path, r.tag); ok {
		for _, l := range old.layers {
			exists[l.digest] = true
		}
	}
	for _, l := range im.layers {
		short := strings.TrimPrefix(l.digest, "sha256:")[:12]
		c.outf("%s: Preparing", short)
		if exists[l.digest] {
			c.outf("%s: Layer already exists", short)
		} else {
			c.outf("%s: Pushed", short)
		}
	}
	if err := srv.put(r.path, r.tag, im); err != nil {
		c.errf("%v", err)
		return 1
	}
	c.s.mu.Lock()
	c.s.addDigestLocked(r, im.id(), im.digest())
	c.s.mu.Unlock()
	c.outf("%s: digest: %s size: %d", r.tag, im.digest(), len(im.manifestJSON()))
	return 0
}

func (c *dockerCLI) login(args []string) int {
	f, err := flagSpec{"u|username=", "p|password=", "password-stdin"}.parse(args, true)
	if err != nil {
		return c.flagFail("login", err)
	}
	if len(f.args) > 1 {
		c.errf("\"docker login\" requires at most 1 argument.\nSee 'docker login --help'.")
		return 1
	}
	server := hubLoginURL
	if len(f.args) == 1 {
		server = f.args[0]
	}
	user, _ := f.value("username")
	password, hasPassword := f.value("password")
	if hasPassword {
		c.errf("WARNING! Using --password via the CLI is insecure. Use --password-stdin.")
	}
	if f.has("password-stdin") {
		if hasPassword {
			c.errf("--password and --password-stdin are mutually exclusive")
			return 1
		}
		if user == "" {
			c.errf("Must provide --username with --password-stdin")
			return 1
		}
		data, err := io.ReadAll(c.p.Stdin)
		if err != nil {
			return 1
		}
		password = strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	}
	if user == "" || password == "" {
		c.errf("Error: Cannot perform an interactive login from a non TTY device")
		return 1
	}
	// With the daemon down (a connection failure, not a permission
	// error), the CLI logs in by itself: docker/cli
	// cli/command/registry/login.go (v20.10.24 runLogin, current
	// loginWithRegistry) falls back to loginClientSide on
	// client.IsErrConnectionFailed, with registry.NewService(
	// registry.ServiceOptions{}): no insecure-registries from daemon.json
	// (only 127.0.0.0/8 is insecure), the CAs of /etc/docker/certs.d/HOST
	// (registry.CertsDir), and errors without the daemon's prefix.
	prefix, cfg := "Error response from daemon: ", c.s.Config()
	if !c.s.Running() && c.maySocket() {
		prefix, cfg = "", DockerConfig{}
	} else if code, ok := c.connect("auth"); !ok {
		return code
	}
	domain := serverKey(server)
	if domain == hubDomain {
		c.errf("%sGet \"https://registry-1.docker.io/v2/\": unauthorized: incorrect username or password", prefix)
		return 1
	}
	srv, e, err := c.connectRegistryWith(domain, cfg)
	if err != nil {
		c.errf("%s%v", prefix, err)
		return 1
	}
	if authorize(srv, creds{user: user, password: password, set: true}) != authOK {
		c.errf("%slogin attempt to %s failed with status: 401 Unauthorized", prefix, e.url("/v2/"))
		return 1
	}
	file := c.configFile()
	if err := c.editConfig(file, func(auths map[string]json.RawMessage) {
		auths[server], _ = json.Marshal(authEntry{Auth: basicAuth(user, password)})
	}); err != nil {
		c.errf("Error saving credentials: %v", err)
		return 1
	}
	c.errf("WARNING! Your password will be stored unencrypted in %s.\nConfigure a credential helper to remove this warning. See\nhttps://docs.docker.com/engine/reference/commandline/login/#credentials-store\n", file)
	c.outf("Login Succeeded")
	return 0
}

// editConfig rewrites the CLI's config.json as docker does: other keys
// kept, tab-indented, mode 0600 in a 0700 directory.
func (c *dockerCLI) editConfig(file string, edit func(auths map[string]json.RawMessage)) error {
	top := map[string]json.RawMessage{}
	if data, err := c.p.FS.ReadFile(file); err == nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &top); err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
	}
	auths := map[string]json.RawMessage{}
	if raw, ok := top["auths"]; ok {
		json.Unmarshal(raw, &auths)
	}
	edit(auths)
	top["auths"], _ = json.Marshal(auths)
	out, err := json.MarshalIndent(top, "", "\t")
	if err != nil {
		return err
	}
	if err := c.p.FS.MkdirAll(path.Dir(file), 0o700); err != nil {
		return err
	}
	if err := c.p.FS.WriteFile(file, out, 0o600); err != nil {
		return err
	}
	return c.p.FS.Chmod(file, 0o600)
}

func (c *dockerCLI) logout(args []string) int {
	f, err := flagSpec{}.parse(args, true)
	if err != nil {
		return c.flagFail("logout", err)
	}
	server := hubLoginURL
	if len(f.args) > 0 {
		server = f.args[0]
	}
	file := c.configFile()
	auths, _ := readAuths(c.m, file)
	var keys []string
	for k := range auths {
		if k == server || serverKey(k) == serverKey(server) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		c.outf("Not logged in to %s", server)
		return 0
	}
	c.outf("Removing login credentials for %s", server)
	if err := c.editConfig(file, func(a map[string]json.RawMessage) {
		for _, k := range keys {
			delete(a, k)
		}
	}); err != nil {
		c.errf("WARNING: could not erase credentials: %v", err)
	}
	return 0
}

// printFormatted prints one line per row through a --format template, as
// `docker images` and `docker ps` do; table formats are not modelled.
func printFormatted[R any](c *dockerCLI, cmd, format string, rows []R) int {
	if strings.HasPrefix(format, "table") {
		c.errf("docker %s --format table…: not modelled by internal/sim/containers", cmd)
		return 1
	}
	for _, r := range rows {
		out, err := renderTemplate(format, r)
		if err != nil {
			c.errf("%v", err)
			return 1
		}
		c.outf("%s", out)
	}
	return 0
}
