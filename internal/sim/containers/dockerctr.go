package containers

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// containerInspect is docker container inspect's document (the fields a
// deployment reads, in Docker's order).
type containerInspect struct {
	ID      string `json:"Id"`
	Created string
	Path    string
	Args    []string
	State   struct {
		Status                                       string
		Running, Paused, Restarting, OOMKilled, Dead bool
		Pid, ExitCode                                int
		Error                                        string
		StartedAt, FinishedAt                        string
	}
	Image           string
	ResolvConfPath  string
	HostnamePath    string
	HostsPath       string
	LogPath         string
	Name            string
	RestartCount    int
	Driver          string
	Platform        string
	MountLabel      string
	ProcessLabel    string
	AppArmorProfile string
	ExecIDs         []string
	HostConfig      struct {
		Binds           []string
		ContainerIDFile string
		LogConfig       struct {
			Type   string
			Config map[string]string
		}
		NetworkMode   string
		PortBindings  map[string][]portJSON
		RestartPolicy struct {
			Name              string
			MaximumRetryCount int
		}
		AutoRemove bool
	}
	Mounts []mountJSON
	Config struct {
		Hostname     string
		Domainname   string
		User         string
		ExposedPorts map[string]struct{} `json:",omitempty"`
		Tty          bool
		OpenStdin    bool
		Env          []string
		Cmd          []string
		Image        string
		Volumes      map[string]struct{}
		WorkingDir   string
		Entrypoint   []string
		Labels       map[string]string
	}
	NetworkSettings struct {
		Bridge     string
		SandboxID  string
		Ports      map[string][]portJSON
		IPAddress  string
		Gateway    string
		MacAddress string
	}
}

type portJSON struct {
	HostIP   string `json:"HostIp"`
	HostPort string
}

type mountJSON struct {
	Type        string
	Name        string `json:",omitempty"`
	Source      string
	Destination string
	Driver      string `json:",omitempty"`
	Mode        string
	RW          bool
	Propagation string
}

func dockerTime(t time.Time) string {
	if t.IsZero() {
		return "0001-01-01T00:00:00Z"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (c *dockerCLI) containerInspectLocked(ct *container) containerInspect {
	var ci containerInspect
	li := c.s.images[ct.imageID]
	var cfg imageConfig
	if li != nil {
		cfg = li.im.parsedConfig()
	}
	argv := append(slices.Clone(cfg.Config.Entrypoint), ct.cmd...)
	ci.ID, ci.Created = ct.id, dockerTime(ct.created)
	ci.Args = []string{}
	if len(argv) > 0 {
		ci.Path, ci.Args = argv[0], argv[1:]
	}
	ci.State.Status = ct.state
	ci.State.Running = ct.state == "running"
	ci.State.ExitCode = ct.exitCode
	if ci.State.Running {
		ci.State.Pid = 4000 + int(ct.created.UnixNano()%1000)
	}
	ci.State.StartedAt, ci.State.FinishedAt = dockerTime(ct.started), dockerTime(ct.finished)
	ci.Image = ct.imageID
	base := "/var/lib/docker/containers/" + ct.id
	ci.ResolvConfPath, ci.HostnamePath, ci.HostsPath = base+"/resolv.conf", base+"/hostname", base+"/hosts"
	ci.LogPath = base + "/" + ct.id + "-json.log"
	ci.Name = "/" + ct.name
	ci.RestartCount = ct.restartCount
	ci.Driver, ci.Platform, ci.AppArmorProfile = "overlay2", "linux", "docker-default"
	ci.HostConfig.Binds = slices.Clone(ct.binds)
	ci.HostConfig.LogConfig.Type, ci.HostConfig.LogConfig.Config = "json-file", map[string]string{}
	ci.HostConfig.NetworkMode = "default"
	ci.HostConfig.PortBindings = map[string][]portJSON{}
	ci.NetworkSettings.Ports = map[string][]portJSON{}
	for _, p := range ct.ports {
		key := strconv.Itoa(p.ContainerPort) + "/tcp"
		hp := ""
		if p.HostPort != 0 {
			hp = strconv.Itoa(p.HostPort)
		}
		ci.HostConfig.PortBindings[key] = append(ci.HostConfig.PortBindings[key], portJSON{HostIP: p.HostIP, HostPort: hp})
		if ct.state == "running" {
			if p.HostIP == "" {
				ci.NetworkSettings.Ports[key] = append(ci.NetworkSettings.Ports[key], portJSON{"0.0.0.0", strconv.Itoa(p.HostPort)}, portJSON{"::", strconv.Itoa(p.HostPort)})
			} else {
				ci.NetworkSettings.Ports[key] = append(ci.NetworkSettings.Ports[key], portJSON{p.HostIP, strconv.Itoa(p.HostPort)})
			}
		}
	}
	ci.HostConfig.RestartPolicy.Name = ct.restart
	ci.HostConfig.RestartPolicy.MaximumRetryCount = ct.restartMax
	ci.Mounts = []mountJSON{}
	for _, mt := range ct.mounts {
		if mt.typ == "bind" {
			ci.Mounts = append(ci.Mounts, mountJSON{Type: "bind", Source: mt.source, Destination: mt.dest, RW: mt.rw, Propagation: "rprivate"})
		} else {
			ci.Mounts = append(ci.Mounts, mountJSON{Type: "volume", Name: mt.name, Source: mt.source, Destination: mt.dest, Driver: "local", Mode: "z", RW: mt.rw})
		}
	}
	ci.Config.Hostname = ct.id[:12]
	ci.Config.ExposedPorts = map[string]struct{}{}
	for p := range cfg.Config.ExposedPorts {
		ci.Config.ExposedPorts[p] = struct{}{}
	}
	for _, p := range ct.ports {
		ci.Config.ExposedPorts[strconv.Itoa(p.ContainerPort)+"/tcp"] = struct{}{}
	}
	ci.Config.Env = nonNil(append(slices.Clone(ct.env), cfg.Config.Env...))
	ci.Config.Cmd = ct.cmd
	ci.Config.Image = ct.image
	ci.Config.Volumes = cfg.Config.Volumes
	ci.Config.WorkingDir = cfg.Config.WorkingDir
	ci.Config.Entrypoint = cfg.Config.Entrypoint
	ci.Config.Labels = map[string]string{}
	ci.NetworkSettings.Bridge = ""
	ci.NetworkSettings.SandboxID = strings.TrimPrefix(digestOf([]byte("sandbox "+ct.id)), "sha256:")
	if ct.state == "running" {
		ci.NetworkSettings.IPAddress = fmt.Sprintf("172.17.0.%d", 2+slices.Index(c.s.containers, ct)%250)
		ci.NetworkSettings.Gateway = "172.17.0.1"
		ci.NetworkSettings.MacAddress = fmt.Sprintf("02:42:ac:11:00:%02x", 2+slices.Index(c.s.containers, ct)%250)
	}
	return ci
}

var containerName = regexp.MustCompile(`^/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// parsePublish parses one -p value: [IP:][HOSTPORT:]CONTAINERPORT[/tcp].
func parsePublish(s string) (PortBinding, error) {
	spec, proto, _ := strings.Cut(s, "/")
	if proto != "" && proto != "tcp" {
		return PortBinding{}, fmt.Errorf("invalid proto: %s (only tcp is modelled by internal/sim/containers)", proto)
	}
	parts := strings.Split(spec, ":")
	var ip, host, cport string
	switch len(parts) {
	case 1:
		cport = parts[0]
	case 2:
		host, cport = parts[0], parts[1]
	case 3:
		ip, host, cport = parts[0], parts[1], parts[2]
	default:
		return PortBinding{}, fmt.Errorf("invalid port format for --publish: %s", s)
	}
	cp, err := strconv.Atoi(cport)
	if err != nil || cp < 1 || cp > 65535 {
		return PortBinding{}, fmt.Errorf("invalid containerPort: %s", cport)
	}
	hp := 0
	if host != "" {
		hp, err = strconv.Atoi(host)
		if err != nil || hp < 1 || hp > 65535 {
			return PortBinding{}, fmt.Errorf("invalid hostPort: %s", host)
		}
	}
	return PortBinding{HostIP: ip, HostPort: hp, ContainerPort: cp}, nil
}

// runContainer is docker run (start true) and docker create.
func (c *dockerCLI) runContainer(args []string, start bool) int {
	cmd := "create"
	if start {
		cmd = "run"
	}
	spec := flagSpec{"p|publish=", "v|volume=", "restart=", "name=", "e|env=", "i|interactive", "t|tty", "entrypoint=", "pull=", "l|label="}
	if start {
		spec = append(spec, "d|detach", "rm")
	}
	f, err := spec.parse(args, false)
	if err != nil {
		return c.flagFail(cmd, err)
	}
	fail := func(format string, a ...any) int {
		c.errf("docker: %s.\nSee 'docker %s --help'.", fmt.Sprintf(format, a...), cmd)
		return 125
	}
	if len(f.args) == 0 {
		c.errf("\"docker %s\" requires at least 1 argument.\nSee 'docker %s --help'.\n\nUsage:  docker %s [OPTIONS] IMAGE [COMMAND] [ARG...]", cmd, cmd, cmd)
		return 1
	}
	if f.has("interactive") || f.has("tty") {
		return fail("-i and -t are not modelled by internal/sim/containers")
	}
	if _, ok := f.value("entrypoint"); ok {
		return fail("--entrypoint is not modelled by internal/sim/containers")
	}
	imageArg, cmdArgs := f.args[0], f.args[1:]
	r, err := parseRef(imageArg)
	if err != nil {
		return fail("%v", err)
	}
	var ports []PortBinding
	for _, v := range f.values("publish") {
		pb, err := parsePublish(v)
		if err != nil {
			return fail("%v", err)
		}
		ports = append(ports, pb)
	}
	restart, restartMax := "no", 0
	if v, ok := f.value("restart"); ok {
		name, max, hasMax := strings.Cut(v, ":")
		switch {
		case name == "no" || name == "always" || name == "unless-stopped":
			if hasMax {
				return fail("invalid restart policy format: maximum retry count can only be used with 'on-failure'")
			}
		case name == "on-failure":
			if hasMax {
				restartMax, err = strconv.Atoi(max)
				if err != nil {
					return fail("invalid restart policy format: maximum retry count must be an integer")
				}
			}
		default:
			return fail("invalid restart policy format: unknown policy '%s'; use one of 'no', 'always', 'on-failure', or 'unless-stopped'", name)
		}
		restart = name
	}
	if f.has("rm") && restart != "no" {
		return fail("Conflicting options: --restart and --rm")
	}
	name, named := f.value("name")
	if named && !containerName.MatchString(name) {
		return fail("Error response from daemon: Invalid container name (%s), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed", name)
	}
	name = strings.TrimPrefix(name, "/")
	if code, ok := c.connect("containers/create"); !ok {
		return code
	}

	// The image: pulled when missing, as the CLI does after the daemon
	// answers "No such image".
	c.s.mu.Lock()
	id, ok := c.s.resolveImageLocked(imageArg)
	c.s.mu.Unlock()
	pullPolicy, _ := f.value("pull")
	if !ok || pullPolicy == "always" {
		if pullPolicy == "never" {
			return fail("Error response from daemon: No such image: %s", r.familiar())
		}
		if !ok {
			c.errf("Unable to find image '%s' locally", r.familiar())
		}
		if err := c.pull(r, c.p.Stderr, false); err != nil {
			return fail("Error response from daemon: %v", err)
		}
		c.s.mu.Lock()
		id, _ = c.s.resolveImageLocked(imageArg)
		c.s.mu.Unlock()
	}

	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	li := c.s.images[id]
	if li == nil {
		return fail("Error response from daemon: No such image: %s", r.familiar())
	}
	if named {
		if other := c.s.findLocked(name); other != nil && other.name == name {
			return fail("Error response from daemon: Conflict. The container name \"/%s\" is already in use by container \"%s\". You have to remove (or rename) that container to be able to reuse that name", name, other.id)
		}
	} else {
		name = c.randomNameLocked()
	}
	ct := &container{
		id: randomHex(32), name: name, image: imageArg, imageID: id, cmd: cmdArgs,
		env: f.values("env"), restart: restart, restartMax: restartMax, state: "created", created: time.Now(),
	}
	ct.registry = isRegistryImage(r)
	for _, t := range c.s.tagsOfLocked(id) {
		if tr, _ := parseRef(t); isRegistryImage(tr) {
			ct.registry = true
		}
	}
	if len(ct.cmd) == 0 {
		ct.cmd = li.im.parsedConfig().Config.Cmd
	}
	for i, pb := range ports {
		if pb.HostPort == 0 {
			ports[i].HostPort = c.freePortLocked()
		}
	}
	ct.ports = ports
	fs := c.m.Server().FS()
	for _, v := range f.values("volume") {
		parts := strings.Split(v, ":")
		mt := mount{rw: true}
		switch len(parts) {
		case 1:
			mt.dest = parts[0]
		case 2, 3:
			mt.source, mt.dest = parts[0], parts[1]
			if len(parts) == 3 {
				mt.rw = !slices.Contains(strings.Split(parts[2], ","), "ro")
			}
		default:
			return fail("Error response from daemon: invalid volume specification: '%s'", v)
		}
		if !path.IsAbs(mt.dest) {
			return fail("Error response from daemon: invalid volume specification: '%s': invalid mount config for type \"volume\": invalid mount path: '%s' mount path must be absolute", v, mt.dest)
		}
		switch {
		case mt.source == "":
			mt.typ, mt.name = "volume", randomHex(32)
		case path.IsAbs(mt.source):
			mt.typ = "bind"
			if !fs.Exists(mt.source) {
				if err := fs.MkdirAll(mt.source, 0o755); err != nil {
					return fail("Error response from daemon: %v", err)
				}
			}
			ct.binds = append(ct.binds, v)
		default:
			mt.typ, mt.name = "volume", mt.source
			ct.binds = append(ct.binds, v)
		}
		if mt.typ == "volume" {
			mt.source = "/var/lib/docker/volumes/" + mt.name + "/_data"
			fs.MkdirAll(mt.source, 0o755)
		}
		ct.mounts = append(ct.mounts, mt)
	}
	// The image's volumes that no -v covers get anonymous volumes.
	for _, dest := range slices.Sorted(maps.Keys(li.im.parsedConfig().Config.Volumes)) {
		if !slices.ContainsFunc(ct.mounts, func(mt mount) bool { return mt.dest == dest }) {
			vol := randomHex(32)
			src := "/var/lib/docker/volumes/" + vol + "/_data"
			fs.MkdirAll(src, 0o755)
			ct.mounts = append(ct.mounts, mount{typ: "volume", name: vol, source: src, dest: dest, rw: true})
		}
	}
	c.s.containers = append(c.s.containers, ct)
	if !start {
		c.outf("%s", ct.id)
		return 0
	}
	if err := c.s.startLocked(ct); err != nil {
		c.outf("%s", ct.id)
		return fail("Error response from daemon: %v", err)
	}
	if f.has("detach") {
		c.outf("%s", ct.id)
		return 0
	}
	if ct.servesRegistry() || ct.registry {
		c.s.stopLocked(ct, true)
		return fail("a foreground registry never exits: run it with -d (docker run without -d for a long-running image is not modelled by internal/sim/containers)")
	}
	// A short-lived container: it runs and exits.
	if r.path == "library/hello-world" {
		c.outf("\nHello from Docker!\nThis message shows that your installation appears to be working correctly.")
	}
	c.s.stopLocked(ct, false)
	if f.has("rm") {
		c.s.removeLocked(ct)
	}
	return 0
}

// randomNameLocked picks a free adjective_surname, as Docker names
// containers.
func (c *dockerCLI) randomNameLocked() string {
	adjectives := []string{"admiring", "brave", "clever", "dazzling", "eager", "focused", "gallant", "happy", "jolly", "keen"}
	names := []string{"hopper", "lovelace", "turing", "ritchie", "thompson", "pike", "knuth", "liskov", "hamilton", "dijkstra"}
	for i := 0; ; i++ {
		n := adjectives[(len(c.s.containers)+i)%len(adjectives)] + "_" + names[(len(c.s.containers)*3+i)%len(names)]
		if i >= len(adjectives)*len(names) {
			n += strconv.Itoa(i)
		}
		if c.s.findLocked(n) == nil {
			return n
		}
	}
}

// freePortLocked is a host port for -p CONTAINERPORT: the first free one
// of the ephemeral range.
func (c *dockerCLI) freePortLocked() int {
	for p := 32768; ; p++ {
		other, taken := c.s.portUserLocked(nil, PortBinding{HostPort: p})
		used := other != nil || taken
		for _, ct := range c.s.containers {
			for _, q := range ct.ports {
				used = used || q.HostPort == p
			}
		}
		if !used {
			return p
		}
	}
}

// removeLocked deletes a container (its named and bound volumes stay).
func (s *DockerState) removeLocked(ct *container) {
	s.containers = slices.DeleteFunc(s.containers, func(x *container) bool { return x == ct })
}

// noSuchContainer is the daemon's answer for a name it does not know.
func (c *dockerCLI) noSuchContainer(name string) {
	c.errf("Error response from daemon: No such container: %s", name)
}

func (c *dockerCLI) start(args []string) int {
	f, err := flagSpec{"a|attach", "i|interactive"}.parse(args, true)
	if err != nil {
		return c.flagFail("start", err)
	}
	if f.has("attach") || f.has("interactive") {
		c.errf("docker start -a/-i: not modelled by internal/sim/containers")
		return 1
	}
	if len(f.args) == 0 {
		c.errf("\"docker start\" requires at least 1 argument.\nSee 'docker start --help'.")
		return 1
	}
	if code, ok := c.connect("containers/" + f.args[0] + "/start"); !ok {
		return code
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var failed []string
	for _, name := range f.args {
		ct := c.s.findLocked(name)
		if ct == nil {
			c.noSuchContainer(name)
			failed = append(failed, name)
			continue
		}
		if err := c.s.startLocked(ct); err != nil {
			c.errf("Error response from daemon: %v", err)
			failed = append(failed, name)
			continue
		}
		c.outf("%s", name)
	}
	if len(failed) > 0 {
		c.errf("Error: failed to start containers: %s", strings.Join(failed, ", "))
		return 1
	}
	return 0
}

// stop is docker stop and docker restart.
func (c *dockerCLI) stop(args []string, cmd string) int {
	f, err := flagSpec{"t|time=", "s|signal="}.parse(args, true)
	if err != nil {
		return c.flagFail(cmd, err)
	}
	if len(f.args) == 0 {
		c.errf("\"docker %s\" requires at least 1 argument.\nSee 'docker %s --help'.", cmd, cmd)
		return 1
	}
	if code, ok := c.connect("containers/" + f.args[0] + "/" + cmd); !ok {
		return code
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	status := 0
	for _, name := range f.args {
		ct := c.s.findLocked(name)
		if ct == nil {
			c.noSuchContainer(name)
			status = 1
			continue
		}
		c.s.stopLocked(ct, cmd == "stop")
		if cmd == "restart" {
			if err := c.s.startLocked(ct); err != nil {
				c.errf("Error response from daemon: Cannot restart container %s: %v", name, err)
				status = 1
				continue
			}
		}
		c.outf("%s", name)
	}
	return status
}

func (c *dockerCLI) rm(args []string) int {
	f, err := flagSpec{"f|force", "v|volumes"}.parse(args, true)
	if err != nil {
		return c.flagFail("rm", err)
	}
	if len(f.args) == 0 {
		c.errf("\"docker rm\" requires at least 1 argument.\nSee 'docker rm --help'.")
		return 1
	}
	if code, ok := c.connect("containers/" + f.args[0]); !ok {
		return code
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	status := 0
	for _, name := range f.args {
		ct := c.s.findLocked(name)
		if ct == nil {
			c.noSuchContainer(name)
			status = 1
			continue
		}
		if ct.state == "running" && !f.has("force") {
			c.errf("Error response from daemon: You cannot remove a running container %s. Stop the container before attempting removal or force remove", ct.id)
			status = 1
			continue
		}
		c.s.stopLocked(ct, true)
		c.s.removeLocked(ct)
		if f.has("volumes") {
			for _, mt := range ct.mounts {
				if mt.typ == "volume" && len(mt.name) == 64 && isHex(mt.name) {
					removeAll(c.m.Server().FS(), path.Dir(mt.source))
				}
			}
		}
		c.outf("%s", name)
	}
	return status
}

// psRow is one container as docker ps --format sees it.
type psRow struct {
	ID, Image, Command, CreatedAt, RunningFor, Ports, State, Status, Names, Labels, Mounts, Networks, Size string
}

func (c *dockerCLI) ps(args []string) int {
	f, err := flagSpec{"a|all", "q|quiet", "f|filter=", "format=", "no-trunc", "n|last=", "l|latest", "s|size"}.parse(args, true)
	if err != nil {
		return c.flagFail("ps", err)
	}
	if code, ok := c.connect("containers/json"); !ok {
		return code
	}
	type filter struct{ key, value string }
	var filters []filter
	for _, v := range f.values("filter") {
		k, val, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains([]string{"name", "id", "status", "ancestor"}, k) {
			c.errf("Error response from daemon: invalid filter '%s' (not modelled by internal/sim/containers)", v)
			return 1
		}
		filters = append(filters, filter{k, val})
	}
	c.s.mu.Lock()
	var rows []psRow
	var ids []string
	list := slices.Clone(c.s.containers)
	slices.Reverse(list)
	for _, ct := range list {
		if !f.has("all") && ct.state != "running" && !slices.ContainsFunc(filters, func(x filter) bool { return x.key == "status" }) {
			continue
		}
		match := true
		for _, x := range filters {
			switch x.key {
			case "name":
				re, err := regexp.Compile(x.value)
				match = match && err == nil && re.MatchString("/"+ct.name)
			case "id":
				match = match && strings.HasPrefix(ct.id, x.value)
			case "status":
				match = match && ct.state == x.value
			case "ancestor":
				id, ok := c.s.resolveImageLocked(x.value)
				match = match && ok && id == ct.imageID
			}
		}
		if !match {
			continue
		}
		rows = append(rows, c.psRowLocked(ct, f.has("no-trunc")))
		ids = append(ids, ct.id)
	}
	c.s.mu.Unlock()
	if f.has("quiet") {
		for i, r := range rows {
			if f.has("no-trunc") {
				c.outf("%s", ids[i])
			} else {
				c.outf("%s", r.ID)
			}
		}
		return 0
	}
	if format, ok := f.value("format"); ok {
		return printFormatted(c, "ps", format, rows)
	}
	tbl := [][]string{{"CONTAINER ID", "IMAGE", "COMMAND", "CREATED", "STATUS", "PORTS", "NAMES"}}
	for _, r := range rows {
		tbl = append(tbl, []string{r.ID, r.Image, r.Command, r.RunningFor, r.Status, r.Ports, r.Names})
	}
	var b bytes.Buffer
	table(&b, tbl)
	c.p.Stdout.Write(b.Bytes())
	return 0
}

func (c *dockerCLI) psRowLocked(ct *container, noTrunc bool) psRow {
	var cfg imageConfig
	if li := c.s.images[ct.imageID]; li != nil {
		cfg = li.im.parsedConfig()
	}
	command := strings.Join(append(slices.Clone(cfg.Config.Entrypoint), ct.cmd...), " ")
	r := psRow{ID: ct.id[:12], Image: ct.image, Names: ct.name, State: ct.state,
		Command:    `"` + ellipsis(command, 20) + `"`,
		CreatedAt:  ct.created.Format("2006-01-02 15:04:05 -0700 MST"),
		RunningFor: humanDuration(time.Since(ct.created)) + " ago",
	}
	if noTrunc {
		r.ID, r.Command = ct.id, `"`+command+`"`
	}
	switch ct.state {
	case "running":
		r.Status = "Up " + humanDuration(time.Since(ct.started))
		var ports []string
		for _, p := range ct.ports {
			if p.HostIP == "" {
				ports = append(ports, fmt.Sprintf("0.0.0.0:%d->%d/tcp", p.HostPort, p.ContainerPort), fmt.Sprintf(":::%d->%d/tcp", p.HostPort, p.ContainerPort))
			} else {
				ports = append(ports, fmt.Sprintf("%s:%d->%d/tcp", p.HostIP, p.HostPort, p.ContainerPort))
			}
		}
		r.Ports = strings.Join(ports, ", ")
	case "exited":
		r.Status = fmt.Sprintf("Exited (%d) %s ago", ct.exitCode, humanDuration(time.Since(ct.finished)))
	default:
		r.Status = "Created"
	}
	return r
}

func (c *dockerCLI) logs(args []string) int {
	f, err := flagSpec{"tail=", "t|timestamps"}.parse(args, true)
	if err != nil {
		return c.flagFail("logs", err)
	}
	if len(f.args) != 1 {
		c.errf("\"docker logs\" requires exactly 1 argument.\nSee 'docker logs --help'.")
		return 1
	}
	if code, ok := c.connect("containers/" + f.args[0] + "/logs"); !ok {
		return code
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	ct := c.s.findLocked(f.args[0])
	if ct == nil {
		c.noSuchContainer(f.args[0])
		return 1
	}
	if ct.registry && !ct.started.IsZero() {
		ts := logrusTime(ct.started)
		io.WriteString(c.p.Stderr, fmt.Sprintf("time=%q level=warning msg=\"No HTTP secret provided - generated random secret. This may cause problems with uploads if multiple registries are behind a load-balancer. To provide a shared secret, fill in http.secret in the configuration file or set the REGISTRY_HTTP_SECRET environment variable.\" go.version=go1.20.8 instance.id=%s service=registry version=2.8.3\n", ts, ct.id[:36]))
		io.WriteString(c.p.Stderr, fmt.Sprintf("time=%q level=info msg=\"listening on [::]:5000\" go.version=go1.20.8 instance.id=%s service=registry version=2.8.3\n", ts, ct.id[:36]))
	}
	return 0
}
