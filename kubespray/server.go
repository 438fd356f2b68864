package kubespray

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Files of the inventory directory (transferring_inventory_path) that this
// package owns, relative to it. The rest is kubespray's
// inventory/sample, copied there on first use.
const (
	// HostsFile is the inventory: the VNF's masters and workers.
	HostsFile = "hosts.yaml"
	// KnownHostsFile holds the nodes' SSH host keys, which Ansible
	// verifies against (StrictHostKeyChecking=yes): the keys mgmtkit
	// itself verified when it connected to the nodes. ~/.ssh/known_hosts
	// is never touched (Tacker wipes it).
	KnownHostsFile = "known_hosts"
	// OwnerFile records the VNF instance the directory belongs to:
	// terminate removes the directory only when it names the instance.
	OwnerFile = ".mgmtkit-vnf"
)

// Playbooks, relative to kubespray_root_path.
const (
	PlaybookCluster    = "cluster.yml"
	PlaybookScale      = "scale.yml"
	PlaybookRemoveNode = "remove-node.yml"
	// PlaybookFacts is where facts.yml is since kubespray v2.22; before,
	// it was at the top level ([PlaybookFactsOld]).
	PlaybookFacts    = "playbooks/facts.yml"
	PlaybookFactsOld = "facts.yml"
)

// Server is kubespray on the Ansible server, as [Detect] found it.
type Server struct {
	// Ansible are the request's ansible parameters.
	Ansible Ansible
	// Release is kubespray's release (galaxy.yml's version), "" if unknown.
	Release string
	// Core is the ansible-core version of ansible-playbook.
	Core string
	// FactsPlaybook is the facts playbook of this release.
	FactsPlaybook string
	// SSHPass reports whether sshpass is installed, which password
	// logins need.
	SSHPass bool
}

// Detect reads, without changing anything, what the Ansible server runs:
// ansible-core's version (`ansible-playbook --version`), kubespray's
// release and the ansible-core range its playbooks assert
// (playbooks/ansible_version.yml, or the top-level one before v2.22), where
// its facts playbook is, and whether sshpass is installed. A core version
// outside kubespray's range is refused here, naming both ([CheckCore]),
// before any playbook spends minutes gathering facts only to fail the
// same assert; so is kubespray missing at kubespray_root_path.
func Detect(ctx context.Context, h remote.Host, a Ansible) (Server, error) {
	s := Server{Ansible: a}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"ansible-playbook", "--version"}, Idempotent: true, ReadOnly: true})
	if err != nil {
		return s, fmt.Errorf("kubespray: ansible-playbook on the Ansible server: %w", err)
	}
	if s.Core, err = ParseCoreVersion(out.Stdout); err != nil {
		return s, fmt.Errorf("kubespray: %w", err)
	}
	root := a.KubesprayRootPath
	files := []string{
		path.Join(root, "playbooks", "ansible_version.yml"),
		path.Join(root, "ansible_version.yml"),
		path.Join(root, "galaxy.yml"),
		path.Join(root, PlaybookFacts),
		path.Join(root, PlaybookCluster),
	}
	got, err := remote.ReadFiles(ctx, h, files, remote.FileOptions{})
	if err != nil {
		return s, fmt.Errorf("kubespray: reading kubespray at %s: %w", root, err)
	}
	if _, ok := got[files[4]]; !ok {
		return s, fmt.Errorf("kubespray: %s has no %s: kubespray_root_path must be a kubespray checkout", root, PlaybookCluster)
	}
	versions, ok := got[files[0]]
	if !ok {
		versions, ok = got[files[1]]
	}
	if !ok {
		return s, fmt.Errorf("kubespray: %s has no playbooks/ansible_version.yml nor ansible_version.yml: not a kubespray checkout this package knows", root)
	}
	if g, ok := got[files[2]]; ok {
		if s.Release, err = ReleaseOf(g); err != nil {
			return s, fmt.Errorf("kubespray: %s: %w", files[2], err)
		}
	}
	s.FactsPlaybook = PlaybookFactsOld
	if _, ok := got[files[3]]; ok {
		s.FactsPlaybook = PlaybookFacts
	}
	lo, hi, err := AnsibleRange(versions)
	if err != nil {
		return s, fmt.Errorf("kubespray: %w", err)
	}
	if err := CheckCore(s.Release, lo, hi, s.Core); err != nil {
		return s, err
	}
	// command -v exits 1 when the program is missing: an answer.
	out, err = h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", "command -v sshpass", "mgmtkit-which"}, OKExit: []int{1}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return s, fmt.Errorf("kubespray: %w", err)
	}
	s.SSHPass = out.ExitCode == 0
	return s, nil
}

// inventory returns the path of name in the inventory directory.
func (s Server) inventory(name string) string {
	return path.Join(s.Ansible.TransferringInventoryPath, name)
}

// InventoryFiles are the files [PrepareInventory] writes, paths relative to
// the inventory directory ([HostsFile], [KnownHostsFile], group_vars).
// Secret marks the ones that hold credentials: written 0600. Absent are
// files of this package that must not be there (the other layout of the
// login files: [LoginFilePaths]).
type InventoryFiles struct {
	Files  map[string][]byte
	Secret map[string]bool
	Absent []string
}

// PrepareInventory makes the inventory directory hold files: it is first
// copied from kubespray's inventory/sample (`cp -a`, as kubespray's docs
// say) when it does not exist, with [OwnerFile] naming instance; a
// directory that exists and names another instance (or none) is refused,
// untouched (Tacker refuses any existing directory, which makes a hook
// that failed half-way impossible to run again). Files are written
// atomically, only when they differ; those marked secret 0600.
func PrepareInventory(ctx context.Context, h remote.Host, s Server, instance string, files InventoryFiles) (lcm.Result, error) {
	inv := s.Ansible.TransferringInventoryPath
	exists, mark, err := inventoryOwner(ctx, h, inv)
	if err != nil {
		return lcm.Unchanged, err
	}
	res := lcm.Unchanged
	switch {
	case exists && mark != instance && mark != "":
		return res, fmt.Errorf("kubespray: %s belongs to VNF instance %q, not %q: choose another transferring_inventory_path", inv, mark, instance)
	case exists && mark == "":
		return res, fmt.Errorf("kubespray: %s exists and is not an inventory mgmtkit made for this VNF (no %s): choose another transferring_inventory_path, or remove it", inv, OwnerFile)
	case !exists:
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"mkdir", "-p", "--", path.Dir(inv)}, Idempotent: true, Brief: true}); err != nil {
			return res, fmt.Errorf("kubespray: %w", err)
		}
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"cp", "-a", "--", s.Ansible.SampleInventory(), inv}}); err != nil {
			return res, fmt.Errorf("kubespray: copying kubespray's sample inventory: %w", err)
		}
		if _, err := h.WriteFile(ctx, s.inventory(OwnerFile), strings.NewReader(instance+"\n"), remote.FileOptions{Mode: 0o644}); err != nil {
			return res, fmt.Errorf("kubespray: %w", err)
		}
		res = res.And(lcm.Changed("copied " + s.Ansible.SampleInventory() + " to " + inv))
	}
	var writes []remote.FileWrite
	for _, name := range slices.Sorted(maps.Keys(files.Files)) {
		mode := fs.FileMode(0o644)
		if files.Secret[name] {
			mode = 0o600
		}
		writes = append(writes, remote.FileWrite{Path: s.inventory(name), Content: files.Files[name], Options: remote.FileOptions{Mode: mode}})
	}
	wrote, err := remote.WriteFiles(ctx, h, writes)
	if err != nil {
		return res, fmt.Errorf("kubespray: writing the inventory: %w", err)
	}
	var changed []string
	for i, w := range wrote {
		if w {
			changed = append(changed, path.Base(writes[i].Path))
		}
	}
	if len(files.Absent) > 0 {
		var absent []string
		for _, name := range files.Absent {
			absent = append(absent, s.inventory(name))
		}
		removed, err := remote.RemoveFiles(ctx, h, absent, nil, remote.FileOptions{})
		if err != nil {
			return res, fmt.Errorf("kubespray: removing stale inventory files: %w", err)
		}
		for i, r := range removed {
			if r {
				changed = append(changed, "removed "+path.Base(absent[i]))
			}
		}
	}
	if len(changed) > 0 {
		res = res.And(lcm.Changed("wrote " + strings.Join(changed, ", ") + " in " + inv))
	}
	return res, nil
}

// RemoveInventory removes the inventory directory, when [OwnerFile] names
// instance: terminate_end's work. A directory that names another
// instance is left, and an error; one that does not exist is unchanged.
func RemoveInventory(ctx context.Context, h remote.Host, a Ansible, instance string) (lcm.Result, error) {
	inv := a.TransferringInventoryPath
	exists, mark, err := inventoryOwner(ctx, h, inv)
	if err != nil || !exists {
		return lcm.Unchanged, err
	}
	if mark != instance {
		return lcm.Unchanged, fmt.Errorf("kubespray: %s is not this VNF's inventory (%s names %q): left as it is", inv, OwnerFile, mark)
	}
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"rm", "-rf", "--", inv}, Idempotent: true}); err != nil {
		return lcm.Unchanged, fmt.Errorf("kubespray: removing %s: %w", inv, err)
	}
	return lcm.Changed("removed " + inv), nil
}

// inventoryOwner reports whether the inventory directory inv exists and
// the instance its [OwnerFile] names ("" when it has none).
func inventoryOwner(ctx context.Context, h remote.Host, inv string) (exists bool, owner string, err error) {
	// test exits 1 for a missing directory: an answer.
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"test", "-e", inv}, OKExit: []int{1}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return false, "", fmt.Errorf("kubespray: %w", err)
	}
	if out.ExitCode != 0 {
		return false, "", nil
	}
	got, err := remote.ReadFiles(ctx, h, []string{path.Join(inv, OwnerFile)}, remote.FileOptions{})
	if err != nil {
		return true, "", fmt.Errorf("kubespray: reading %s: %w", inv, err)
	}
	return true, strings.TrimSpace(string(got[path.Join(inv, OwnerFile)])), nil
}

// Play is one ansible-playbook run.
type Play struct {
	// Playbook is relative to kubespray_root_path ([PlaybookCluster], ...).
	Playbook string
	// Limit restricts the run to these hosts (--limit); empty: every host.
	Limit []string
	// ExtraVars are -e key=value, in order. Never secrets: they are on
	// the command line.
	ExtraVars [][2]string
	// Expect are the hosts that must be in the PLAY RECAP: a host the
	// playbook skipped (a remove-node.yml whose node matches nothing
	// exits 0 doing nothing) is a failure.
	Expect []string
}

// RunPlaybook runs play on the Ansible server as kubespray's docs say:
// from kubespray_root_path, with its ansible.cfg, the inventory
// [HostsFile], `--become --become-user=root`, without a terminal;
// ANSIBLE_NOCOLOR and ANSIBLE_NOCOWS keep the output parseable and
// ANSIBLE_INVENTORY_UNPARSED_FAILED makes a bad inventory an error (it
// otherwise runs nothing and exits 0). Each line of output is parsed as it
// arrives ([RecapParser]) and reported as an event (task banners, failed
// hosts); the run ends with the context. Its result is judged by
// [Recap.Judge]: the exit status, and every host of play.Expect in the
// RECAP without failures, each failed host named with its failing task.
func RunPlaybook(ctx context.Context, h remote.Host, s Server, play Play) (Recap, error) {
	a := s.Ansible
	args := []string{"env", "-C", a.KubesprayRootPath,
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_NOCOWS=1", "ANSIBLE_INVENTORY_UNPARSED_FAILED=True",
		"ANSIBLE_CONFIG=" + path.Join(a.KubesprayRootPath, "ansible.cfg"),
		"ansible-playbook", "-i", s.inventory(HostsFile), "--become", "--become-user=root"}
	for _, kv := range play.ExtraVars {
		args = append(args, "-e", kv[0]+"="+kv[1])
	}
	if len(play.Limit) > 0 {
		args = append(args, "--limit", strings.Join(play.Limit, ","))
	}
	args = append(args, play.Playbook)
	w := &lineWriter{logger: lcm.LoggerFrom(ctx), playbook: play.Playbook, host: h.Name()}
	out, err := h.Run(ctx, remote.Cmd{Args: args, Stdout: w, OKExit: []int{1, 2, 3, 4, 5, 99, 250}})
	w.flush()
	recap := w.parser.Recap()
	if err != nil {
		return recap, fmt.Errorf("kubespray: %s: %w", play.Playbook, err)
	}
	if err := recap.Judge(out.ExitCode, play.Expect); err != nil {
		if tail := strings.TrimSpace(string(out.Stderr)); tail != "" && out.ExitCode != 0 {
			err = fmt.Errorf("%w; stderr: %s", err, lastLines(tail, 5))
		}
		return recap, fmt.Errorf("kubespray: %s: %w", play.Playbook, err)
	}
	return recap, nil
}

// lineWriter feeds ansible-playbook's output to a [RecapParser] line by
// line, logging the events it returns.
type lineWriter struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	parser   RecapParser
	logger   *slog.Logger
	playbook string
	host     string
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf.Next(i + 1))
		w.line(strings.TrimRight(line, "\r\n"))
	}
}

// flush parses what is left after the last newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() > 0 {
		w.line(w.buf.String())
		w.buf.Reset()
	}
}

// line parses one line and logs its event.
func (w *lineWriter) line(line string) {
	if ev := w.parser.Line(line); ev != "" && w.logger != nil {
		w.logger.Info("ansible-playbook", slog.String("playbook", w.playbook), slog.String("host", w.host), slog.String("event", ev))
	}
}

var _ io.Writer = (*lineWriter)(nil)

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// errNoMaster is the refusal of a control-plane heal.
var errNoMaster = errors.New("kubespray cannot heal a control-plane node: its scale.yml adds workers only and remove-node.yml cannot remove the first control plane (docs/operations/nodes.md); heal the entire VNF instead")
