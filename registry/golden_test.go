package registry_test

// Golden transcripts: what ConfigureRegistryTrust and the registry VNF's
// instantiate_end send to a simulated node, command by command, and what
// they leave there. A step that gains or loses a command, or renders a
// file differently, fails these tests with a line diff; when the change is
// intended, rewrite the files and review them in the same commit:
//
//	go test ./registry -run Golden -update

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// volatile are the parts of a command that differ from run to run, and
// what a transcript shows instead. Add here what a new source of noise
// needs; never a part that a reviewer should see change.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	// remote stages uploads under random names (remote.WriteFile,
	// remote.WriteFiles).
	{regexp.MustCompile(`\.mgmtkit-staging/mgmtkit-[0-9a-f]+`), ".mgmtkit-staging/STAGED"},
	// remote bounds each command by the time left before the context's
	// deadline, in whole seconds (remote.Cmd: timeout -k KILL SECONDS).
	{regexp.MustCompile(`\btimeout -k (\d+) \d+ `), "timeout -k $1 SECS "},
}

// transcript renders the exec requests of a run, after normalising them
// with volatile and then replacing each old string of names with its new
// one (addresses and host names the cloud chose); see words for the
// layout.
func transcript(execs []sshtest.Exec, names ...string) string {
	rep := strings.NewReplacer(names...)
	var b strings.Builder
	fmt.Fprintf(&b, "%d commands\n", len(execs))
	for _, e := range execs {
		cmd := e.Command
		for _, v := range volatile {
			cmd = v.re.ReplaceAllString(cmd, v.repl)
		}
		cmd = rep.Replace(cmd)
		// Unnumbered, so that an added command is one hunk of a diff.
		fmt.Fprintf(&b, "\n--- as %s, exit %d\n", e.User, e.Exit)
		for _, w := range words(cmd) {
			b.WriteString(w)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// words splits a command that runs a script (a word with newlines) into
// the command up to and including the script, then each argument after
// it on a line of its own, indented, as the command's text spells them
// (quotes included), so that a diff points at the argument that changed.
// Any other command is one line.
func words(cmd string) []string {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil || len(f.Stmts) != 1 {
		return []string{cmd}
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return []string{cmd}
	}
	script := slices.IndexFunc(call.Args, func(w *syntax.Word) bool {
		return strings.Contains(cmd[w.Pos().Offset():w.End().Offset()], "\n")
	})
	if script < 0 {
		return []string{cmd}
	}
	out := []string{cmd[:call.Args[script].End().Offset()]}
	for _, w := range call.Args[script+1:] {
		out = append(out, "    "+cmd[w.Pos().Offset():w.End().Offset()])
	}
	return out
}

// fileSnapshot renders the regular files under roots on a simulated host:
// path, mode, owner and content, in path order. A file whose content is one
// of shown's keys is shown by that key's value instead (a CA the package
// holds), and replace rewrites secrets in what is shown. Managed blocks of
// line files are shown alone (blockOnly).
type fileSnapshot struct {
	roots     []string
	blockOnly []string
	shown     map[string]string
	replace   *strings.Replacer
}

func (s fileSnapshot) render(t *testing.T, fsys *sshtest.FS) string {
	t.Helper()
	var files []string
	for _, root := range s.roots {
		fi, err := fsys.Stat(root)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			files = append(files, root)
			continue
		}
		var walk func(dir string)
		walk = func(dir string) {
			entries, err := fsys.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				p := path.Join(dir, e.Name())
				switch {
				case e.IsDir():
					walk(p)
				case e.Type().IsRegular():
					files = append(files, p)
				}
			}
		}
		walk(root)
	}
	slices.Sort(files)
	var b strings.Builder
	for _, f := range files {
		fi, err := fsys.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		content, err := fsys.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		uid, gid := sshtest.Owner(fi)
		fmt.Fprintf(&b, "\n=== %s %04o %s:%s\n", f, fi.Mode()&fs.ModePerm, fsys.UserName(uid), fsys.GroupName(gid))
		text := string(content)
		if slices.Contains(s.blockOnly, f) {
			b.WriteString("(managed block only)\n")
			text = block(text, registry.HostsBlock)
		}
		if name, ok := s.shown[text]; ok {
			text = name + "\n"
		}
		if s.replace != nil {
			text = s.replace.Replace(text)
		}
		b.WriteString(text)
	}
	return b.String()
}

// block returns the managed block name of a line file, BEGIN and END
// lines included.
func block(text, name string) string {
	begin, end := "# BEGIN mgmtkit "+name+"\n", "# END mgmtkit "+name+"\n"
	i := strings.Index(text, begin)
	j := strings.Index(text, end)
	if i < 0 || j < i {
		return "(no block)\n"
	}
	return text[i : j+len(end)]
}

// trustFiles are the files ConfigureRegistryTrust writes, under the
// directories it writes to; the kubelet's credentials are shown without
// their secret.
func (w *trustWorld) trustFiles(conns []registry.Connection) fileSnapshot {
	w.t.Helper()
	ca, err := w.pkg.ReadFile("Files/registries/ca.crt")
	if err != nil {
		w.t.Fatal(err)
	}
	var secrets []string
	for _, c := range conns {
		if c.Username != "" {
			auth := base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password.Reveal()))
			secrets = append(secrets, auth, "base64("+c.Username+":REDACTED)")
		}
	}
	return fileSnapshot{
		roots: []string{registry.HostsFile, registry.HostsTemplate, "/etc/docker", registry.ContainerdConfig, registry.ContainerdCertsDir,
			"/etc/containers", registry.KubeletAuthFile, "/var/lib/mgmtkit"},
		blockOnly: []string{registry.HostsFile, registry.HostsTemplate},
		shown:     map[string]string{string(ca): "(the package's Files/registries/ca.crt)"},
		replace:   strings.NewReplacer(secrets...),
	}
}

// TestGoldenRegistryTrust pins the commands and files of a fresh and of a
// converged ConfigureRegistryTrust with the cir sample's two registries on
// a node with Docker and containerd, each run on a new connection as a
// driver's hook makes one: 5 commands, then 2.
func TestGoldenRegistryTrust(t *testing.T) {
	w := newTrustWorld(t)
	conns := w.sampleConns()
	snap := w.trustFiles(conns)
	run := func() string {
		c, err := w.cloud.Connect(w.ctx, w.host.Node(), "ubuntu", "ubuntu")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		before := len(w.host.SSH.Transcript())
		res, err := registry.ConfigureRegistryTrust(w.ctx, c, conns, registry.TrustOptions{Package: w.pkg})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("result: %s\n\n%s", res, transcript(w.host.SSH.Transcript()[before:], w.host.Name(), "NODE"))
	}
	fresh := run()
	files := snap.render(t, w.host.FS())
	golden.Assert(t, "trust-fresh", []byte("# ConfigureRegistryTrust on a fresh node (Docker, containerd; the cir sample's two registries)\n\n"+fresh+"\n# Files afterwards\n"+files))
	converged := run()
	golden.Assert(t, "trust-converged", []byte("# ConfigureRegistryTrust again on the converged node: no change\n\n"+converged))
	if again := snap.render(t, w.host.FS()); again != files {
		t.Errorf("the converged run changed files:\n%s", golden.Diff(files, again))
	}
}

// TestGoldenRegistryVNFInstantiate pins the commands instantiate_end of
// the registry VNF's driver sends to its VM for the cir sample request,
// the results it reports and the container it leaves running, then the
// same for a second instantiate_end, which changes nothing.
func TestGoldenRegistryVNFInstantiate(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	h := r.host()
	run := func() string {
		before := len(h.SSH.Transcript())
		res, err := r.instantiate()
		if err != nil {
			t.Fatalf("instantiate_end: %v\n%s", err, r.log)
		}
		return hookResult(res, h) + "\n" + transcript(h.SSH.Transcript()[before:], h.NICAddress, "VM_ADDR", h.Name(), "VM")
	}
	first := run()
	golden.Assert(t, "vnf-instantiate", []byte("# Registry VNF instantiate_end (cir sample request)\n\n"+first+"\n# The VM afterwards\n"+registryVM(t, r.cloud, h)))
	again := run()
	golden.Assert(t, "vnf-instantiate-again", []byte("# Registry VNF instantiate_end again: no change\n\n"+again))
}

// hookResult renders a hook's per-step, per-host results without their
// durations, the host named as the transcript names it.
func hookResult(res *lcm.HookResult, h *sim.Host) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hook %s\n", res.Hook)
	for _, s := range res.Steps {
		for _, hr := range s.Hosts {
			host := strings.ReplaceAll(hr.Host, h.Name(), "VM")
			fmt.Fprintf(&b, "  %s on %s: %s", s.Step, host, hr.Result)
			if hr.Skipped {
				b.WriteString(" (skipped)")
			}
			if hr.Err != nil {
				fmt.Fprintf(&b, " error: %v", hr.Err)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// registryVM renders the outcome on the registry's VM: Docker's package
// and service, the registry container, and whether it answers.
func registryVM(t *testing.T, cloud *sim.Cloud, h *sim.Host) string {
	t.Helper()
	var b strings.Builder
	svc := h.Machine.Service("docker")
	fmt.Fprintf(&b, "docker.io %s; docker.service enabled=%v active=%v\n", h.Machine.Version("docker.io"), svc.Enabled, svc.Active)
	c, ok := containers.Docker(h.Machine).Container(registry.ContainerName)
	if !ok {
		b.WriteString("no container " + registry.ContainerName + "\n")
		return b.String()
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d->%d/tcp", cmp.Or(p.HostIP, "*"), p.HostPort, p.ContainerPort))
	}
	fmt.Fprintf(&b, "container %s: image %s (%s), %s, ports %s, binds %q, restart %s, serves a registry: %v\n",
		c.Name, c.Image, c.ImageID, c.Status, strings.Join(ports, " "), c.Binds, c.Restart, c.Registry)
	_, serving := containers.RegistryAt(cloud, h.NICAddress, registry.DefaultPort)
	fmt.Fprintf(&b, "a registry answers at VM_ADDR:%d: %v\n", registry.DefaultPort, serving)
	return b.String()
}
