package system

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// HostsFile is the static host table, hosts(5).
const HostsFile = "/etc/hosts"

// CloudHostsTemplate is cloud-init's template of /etc/hosts on Debian and
// Ubuntu (their osfamily is debian). With manage_etc_hosts: true (or the
// deprecated "template") in its configuration, cloud-init renders
// /etc/hosts from it at every boot: cc_update_etc_hosts.py runs
// PER_ALWAYS and calls templater.render_to_file on
// cloud.get_template_filename("hosts." + distro.osfamily) into
// distro.hosts_fn (canonical/cloud-init,
// cloudinit/config/cc_update_etc_hosts.py), so a block written to
// /etc/hosts alone is gone after a reboot. With "localhost" or false
// (cloud-init's default) the template is unused. The template's first
// line, "## template:jinja", picks the renderer (cloudinit/templater.py,
// detect_template: the first line is matched and removed; a file
// without it goes to basic_render, which substitutes $name and ${name});
// the rest is a Jinja template (a SandboxedEnvironment with
// trim_blocks), where "{{", "{%" and "{#" open expressions, statements
// and comments. [SetHostsBlock] keeps it in step with /etc/hosts.
const CloudHostsTemplate = "/etc/cloud/templates/hosts.debian.tmpl"

// HostsEntry is one line of a managed /etc/hosts block: an address and
// the names it carries, the canonical name first (hosts(5)).
type HostsEntry struct {
	IP    string
	Names []string
}

// HostsOptions configure [SetHostsBlock].
type HostsOptions struct {
	// Block names the managed block ("# BEGIN mgmtkit BLOCK" ... "# END
	// mgmtkit BLOCK"); each owner of lines uses its own. One line, no
	// surrounding spaces, and none of '{', '}' and '$', which cloud-init's
	// template renderers would interpret ([CloudHostsTemplate]).
	Block string
	// Entries are the lines the block holds; none removes the block. They
	// are written sorted by address (IPv4 before IPv6), one line per
	// address, so the same entries in any order give the same file. An
	// address may appear once; a name may appear under several addresses
	// (an IPv4 and an IPv6 one).
	Entries []HostsEntry
	// Files are the files to edit, clean absolute paths; [HostsFile]
	// when empty. A missing file is created when there are entries. When
	// they include HostsFile, cloud-init's [CloudHostsTemplate] is kept
	// in step too where it exists (it is never created), so that the
	// block survives a reboot under manage_etc_hosts: true; the lines
	// hold nothing the template's Jinja would interpret (addresses and
	// host names).
	Files []string
}

// hostsLines validates the entries and renders them sorted.
func hostsLines(o HostsOptions) ([]string, error) {
	var probs problems
	if o.Block == "" || strings.ContainsAny(o.Block, "\r\n{}$") || strings.TrimSpace(o.Block) != o.Block {
		probs.addf("Block", "%q is not a block name (one line, no surrounding spaces, no '{', '}' or '$')", o.Block)
	}
	for i, f := range o.Files {
		// Clean, so that the file checked is the file edited ("/etc/../x"
		// and "/etc/hosts/" are refused, not reinterpreted), and not "/".
		switch {
		case !path.IsAbs(f) || path.Clean(f) != f || f == "/" || strings.ContainsAny(f, "\x00\r\n"):
			probs.addf("Files["+strconv.Itoa(i)+"]", "%q is not a clean absolute path (path.Clean of itself, not /)", f)
		case slices.Contains(o.Files[:i], f):
			probs.addf("Files["+strconv.Itoa(i)+"]", "%q is listed twice", f)
		}
	}
	type line struct {
		ip    netip.Addr
		names []string
	}
	var lines []line
	seen := map[netip.Addr]string{}
	for i, e := range o.Entries {
		at := "Entries[" + strconv.Itoa(i) + "]"
		ip, err := netip.ParseAddr(e.IP)
		switch {
		case err != nil || ip.Zone() != "":
			probs.addf(at+".IP", "%q is not an IP address", e.IP)
			continue
		case seen[ip.Unmap()] != "":
			probs.addf(at+".IP", "%s is also %s: give each address once, with all its names", e.IP, seen[ip.Unmap()])
			continue
		}
		ip = ip.Unmap()
		seen[ip] = at
		if len(e.Names) == 0 {
			probs.addf(at+".Names", "no name for %s", e.IP)
		}
		var names []string
		for j, n := range e.Names {
			if msg := checkDNSName(n, 253); msg != "" {
				probs.addf(at+".Names["+strconv.Itoa(j)+"]", "%s", msg)
				continue
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		lines = append(lines, line{ip, names})
	}
	if err := probs.err(); err != nil {
		return nil, err
	}
	slices.SortFunc(lines, func(a, b line) int { return a.ip.Compare(b.ip) })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.ip.String() + "\t" + strings.Join(l.names, " ")
	}
	return out, nil
}

// HostsBlockFiles returns the files [SetHostsBlock] reads for opts:
// opts.Files ([HostsFile] when empty) and, when they include HostsFile,
// [CloudHostsTemplate]. A step that batches its reads (one
// [remote.ReadFiles] for all it needs) reads these and hands them to
// [PlanHostsBlock].
func HostsBlockFiles(opts HostsOptions) []string {
	files := slices.Clone(opts.Files)
	if len(files) == 0 {
		files = []string{HostsFile}
	}
	if slices.Contains(files, HostsFile) && !slices.Contains(files, CloudHostsTemplate) {
		files = append(files, CloudHostsTemplate)
	}
	return files
}

// PlanHostsBlock returns the writes that make the block of opts hold
// its entries, given the current contents of [HostsBlockFiles] as
// [remote.ReadFiles] returns them (a missing file absent): one
// [remote.FileWrite] per file whose bytes change, as root, keeping the
// file's mode and owner. Lines outside the block are kept byte for byte;
// a missing file is created only when it is one of opts.Files and there
// are entries, [CloudHostsTemplate] only ever edited. It runs nothing:
// [SetHostsBlock] is it with the read and the writes, and a step that
// batches its commands writes these with its own. Bad options are an
// *lcm.ParamsError.
func PlanHostsBlock(current map[string][]byte, opts HostsOptions) ([]remote.FileWrite, error) {
	lines, err := hostsLines(opts)
	if err != nil {
		return nil, err
	}
	var writes []remote.FileWrite
	for _, f := range HostsBlockFiles(opts) {
		old, exists := current[f]
		optional := f == CloudHostsTemplate && !slices.Contains(opts.Files, f)
		if !exists && (optional || len(lines) == 0) {
			continue
		}
		content, err := remote.ReplaceBlock(old, opts.Block, lines)
		if err != nil {
			return nil, fmt.Errorf("system: %s: %w", f, err)
		}
		if exists && bytes.Equal(old, content) {
			continue
		}
		writes = append(writes, remote.FileWrite{Path: f, Content: content, Options: remote.FileOptions{Sudo: true}})
	}
	return writes, nil
}

// SetHostsBlock makes the managed block opts.Block of /etc/hosts (or of
// opts.Files) hold exactly opts.Entries, and of cloud-init's
// [CloudHostsTemplate] too where it exists, so that a reboot under
// manage_etc_hosts: true keeps it: lines outside the block are kept byte
// for byte, a file is written only when its bytes change, and no entries
// remove the block. Entries are validated (addresses with net/netip,
// names as RFC 1123 host names) before anything runs. One command reads
// the files ([HostsBlockFiles]), so a converged host costs one; the files
// that change are written together ([remote.WriteFiles]). Two calls
// editing the same file of the same host must not run concurrently.
func SetHostsBlock(ctx context.Context, h remote.Host, opts HostsOptions) (lcm.Result, error) {
	if _, err := hostsLines(opts); err != nil {
		return lcm.Unchanged, err
	}
	current, err := remote.ReadFiles(ctx, h, HostsBlockFiles(opts), remote.FileOptions{Sudo: true})
	if err != nil {
		return lcm.Unchanged, err
	}
	writes, err := PlanHostsBlock(current, opts)
	if err != nil || len(writes) == 0 {
		return lcm.Unchanged, err
	}
	changed, err := remote.WriteFiles(ctx, h, writes)
	var did []string
	for i, w := range writes {
		if i < len(changed) && changed[i] {
			did = append(did, "updated block "+opts.Block+" of "+w.Path)
		}
	}
	return result(did), err
}
