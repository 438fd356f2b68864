package system

import (
	"context"
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

// HostsEntry is one line of a managed /etc/hosts block: an address and
// the names it carries, the canonical name first (hosts(5)).
type HostsEntry struct {
	IP    string
	Names []string
}

// HostsOptions configure [SetHostsBlock].
type HostsOptions struct {
	// Block names the managed block ("# BEGIN mgmtkit BLOCK" ... "# END
	// mgmtkit BLOCK"); each owner of lines uses its own.
	Block string
	// Entries are the lines the block holds; none removes the block. They
	// are written sorted by address (IPv4 before IPv6), one line per
	// address, so the same entries in any order give the same file. An
	// address may appear once; a name may appear under several addresses
	// (an IPv4 and an IPv6 one).
	Entries []HostsEntry
	// Files are the files to edit, clean absolute paths; [HostsFile]
	// when empty. Where
	// cloud-init renders /etc/hosts at every boot (manage_etc_hosts:
	// true) add its template (/etc/cloud/templates/hosts.debian.tmpl),
	// or the block is gone after a reboot; the lines hold nothing the
	// template's Jinja would interpret.
	Files []string
}

// hostsLines validates the entries and renders them sorted.
func hostsLines(o HostsOptions) ([]string, error) {
	var probs problems
	if o.Block == "" || strings.ContainsAny(o.Block, "\r\n") || strings.TrimSpace(o.Block) != o.Block {
		probs.addf("Block", "%q is not a block name (one line, no surrounding spaces)", o.Block)
	}
	for i, f := range o.Files {
		// Clean, so that the file checked is the file edited ("/etc/../x"
		// and "/etc/hosts/" are refused, not reinterpreted), and not "/".
		if !path.IsAbs(f) || path.Clean(f) != f || f == "/" || strings.ContainsAny(f, "\x00\r\n") {
			probs.addf("Files["+strconv.Itoa(i)+"]", "%q is not a clean absolute path (path.Clean of itself, not /)", f)
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

// SetHostsBlock makes the managed block opts.Block of /etc/hosts (and of
// opts.Files) hold exactly opts.Entries, built on [remote.EditBlock]:
// lines outside the block are kept byte for byte, the file is written
// only when its bytes change, and no entries remove the block. Entries
// are validated (addresses with net/netip, names as RFC 1123 host names)
// before anything runs. Two calls editing the same file of the same host
// must not run concurrently.
func SetHostsBlock(ctx context.Context, h remote.Host, opts HostsOptions) (lcm.Result, error) {
	lines, err := hostsLines(opts)
	if err != nil {
		return lcm.Unchanged, err
	}
	files := opts.Files
	if len(files) == 0 {
		files = []string{HostsFile}
	}
	var did []string
	for _, f := range files {
		changed, err := remote.EditBlock(ctx, h, f, opts.Block, lines, remote.FileOptions{Sudo: true})
		if err != nil {
			return result(did), err
		}
		if changed {
			did = append(did, "updated block "+opts.Block+" of "+f)
		}
	}
	return result(did), nil
}
