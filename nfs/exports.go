package nfs

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ExportOptions returns the options of every export mgmtkit writes, in
// the order they are written: "rw", "sync", "no_subtree_check",
// "insecure", "all_squash", the set Tacker's reference driver writes
// (samples/mgmt_driver/kubernetes/kubernetes_mgmt.py). Each call returns
// a fresh slice.
//
// all_squash is the trade-off: it maps every client uid and gid to the
// anonymous uid and gid 65534 (exports(5) "all_squash", anonuid and
// anongid default to 65534), and the steps make the export directories
// owned by nobody:nogroup (65534:65534), as Tacker does. So a pod of any
// uid, root or not, can write into the volume, where a root-owned export
// gives non-root containers "Permission denied"
// (kubernetes-csi/csi-driver-nfs #434); and no pod gets root over the
// server's files (no_root_squash, the usual advice for that error, would
// give every root in the export_to network root over the volume). The
// cost: every file in the volume belongs to 65534, so chown and chmod to
// another owner inside the volume fail with EPERM, and an image that
// chowns its data directory at start (as some database images do) does
// not run on these exports. mgmtkit offers no other export options.
//
// The others: sync, the server commits a write to stable storage before
// it replies (exports(5), the default since nfs-utils 1.0.1, written to
// say so); no_subtree_check, the default since nfs-utils 1.1.0, written
// because exportfs warns when neither subtree_check nor no_subtree_check
// is given (support/nfs/exports.c parseopts); insecure, clients may use
// source ports of 1024 and above (nodes behind NAT; the kubelet's mount
// uses a privileged port anyway); rw, read-write (the default is ro).
func ExportOptions() []string {
	return []string{"rw", "sync", "no_subtree_check", "insecure", "all_squash"}
}

// exportsDir is where nfs-utils reads extra export tables: "After reading
// /etc/exports exportfs reads files in the /etc/exports.d directory as
// extra export tables. Only files ending in .exports are considered.
// Files beginning with a dot are ignored." (exports(5), nfs-utils 2.6.2).
const exportsDir = "/etc/exports.d"

// exportsName is a name ExportsFile accepts: it starts with a letter or
// digit, so it neither begins with a dot (ignored) nor a dash.
var exportsName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// maxExportsName keeps <name>.exports within NAME_MAX (255 bytes, Linux
// include/uapi/linux/limits.h).
const maxExportsName = 255 - len(".exports")

// ExportsFile is the path of mgmtkit's exports file for name:
// /etc/exports.d/<name>.exports. name must be a safe file name
// ([a-z0-9][a-z0-9-]*, at most 247 bytes so the file name fits
// NAME_MAX); an error otherwise.
func ExportsFile(name string) (string, error) {
	if !exportsName.MatchString(name) {
		return "", fmt.Errorf("exports file name %q: must be lower-case letters, digits and dashes, starting with a letter or digit", name)
	}
	if len(name) > maxExportsName {
		return "", fmt.Errorf("exports file name %q: longer than %d bytes", name, maxExportsName)
	}
	return exportsDir + "/" + name + ".exports", nil
}

// exportsHeader opens every file RenderExports writes. exports(5): "A
// pound sign ('#') introduces a comment to the end of the line."
const exportsHeader = "# Written by mgmtkit, which owns this file and rewrites it from the VNF's\n" +
	"# nfs_server_setup_params on every run: changes made here are lost.\n"

// misread are the characters exportfs reads as something other than part
// of a path or an address, each refused in a directory or a client
// (exports(5) of nfs-utils 2.6.2 and local experiments with its exportfs):
//   - whitespace separates the path, the clients and their options
//     (support/nfs/xio.c xgettok): "/d 10.10.0.0/24 (rw)" exports /d
//     read-only to the network and read-write to the world ("*"), and
//     "/d x 10.10.0.0/24(rw)" exports /d (not "/d x") to a host named x
//     as well (both rc 0). exports(5): "No whitespace is permitted
//     between a client and its option list";
//   - '"' quotes an export name and '\' starts an octal escape ("\040")
//     or continues a line (exports(5));
//   - '#' "introduces a comment to the end of the line" (exports(5));
//     2.6.2 keeps it inside a path, other versions need not;
//   - '(' and ')' open and close the option list: the client ends at the
//     first '(' (support/nfs/exports.c getexportent);
//   - '*' and '?' are wildcards, '@' names a netgroup, and a client such
//     as "*;reboot" is taken verbatim as a wildcard name (rc 0);
//   - ',' separates options and ';' is no part of an address;
//   - '[' and ']' are exportfs's IPv6 brackets in its client:path syntax.
const misread = "()#\"\\*?@;,[]"

// RenderExports renders mgmtkit's exports file: a header comment saying
// mgmtkit owns the file, then one line per export, "DIR CLIENT(OPTS)\n",
// with no space between the client and "(" (exports(5): "No whitespace is
// permitted between a client and its option list") and the options of
// [ExportOptions]. CLIENT is the export_to network in CIDR notation
// ("10.10.0.0/24", "10.10.0.5/32"). An empty list renders the header
// alone, a file that exports nothing.
//
// It refuses, with an error naming the export's index and field
// ("nfs_server_setup_params[1].export_dir: ..."), a directory that is not
// absolute, is not UTF-8 or holds whitespace (any Unicode space), a
// control character or one of the characters exportfs reads specially
// ('(' ')' '#' '"' '\' '*' '?' '@' ';' ',' '[' ']'), an invalid network,
// and a directory and network given twice (10.10.0.5/24 is 10.10.0.0/24). So it never writes "path client (opts)", which exports
// read-write to the world, nor a client such as "*;reboot".
func RenderExports(exports []Export) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(exportsHeader)
	opts := strings.Join(ExportOptions(), ",")
	var errs []error
	seen := map[Export]int{}
	for i, e := range exports {
		at := fmt.Sprintf("nfs_server_setup_params[%d]", i)
		dirErr := checkExportDir(e.ExportDir)
		if dirErr != nil {
			errs = append(errs, fmt.Errorf("%s.export_dir: %w", at, dirErr))
		}
		client, clientErr := exportClient(e.ExportTo)
		if clientErr != nil {
			errs = append(errs, fmt.Errorf("%s.export_to: %w", at, clientErr))
		}
		if dirErr != nil || clientErr != nil {
			continue
		}
		if j, dup := seen[e]; dup {
			errs = append(errs, fmt.Errorf("%s: repeats nfs_server_setup_params[%d]: %s to %s", at, j, e.ExportDir, client))
			continue
		}
		seen[e] = i
		fmt.Fprintf(&b, "%s %s(%s)\n", e.ExportDir, client, opts)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkExportDir says why exportfs would misread dir, or nil.
func checkExportDir(dir string) error {
	if !strings.HasPrefix(dir, "/") {
		return fmt.Errorf("%q is not an absolute path", dir)
	}
	return checkToken(dir)
}

// checkToken says why exportfs would not read s as one plain token, or
// nil: invalid UTF-8, whitespace (Unicode's, which includes what C's
// isspace matches), control characters and [misread].
func checkToken(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			return fmt.Errorf("%q holds whitespace, which separates fields of an exports line (exports(5))", s)
		case unicode.IsControl(r):
			return fmt.Errorf("%q holds a control character", s)
		case strings.ContainsRune(misread, r):
			return fmt.Errorf("%q holds %q, which exportfs reads as syntax (a comment, an option list, a wildcard, a netgroup or a quote)", s, r)
		}
	}
	return nil
}

// exportClient returns the client field of n's exports line: the network
// in CIDR notation, checked to be a plain token that reads back as n.
func exportClient(n Network) (string, error) {
	if !n.IsValid() {
		return "", errors.New("is not a network")
	}
	s := n.String()
	if err := checkToken(s); err != nil {
		return "", err
	}
	if back, ok := parseClient(s); !ok || back != n.Prefix() {
		return "", fmt.Errorf("%q does not read back as the network %s", s, n.Prefix())
	}
	return s, nil
}

// parseClient reads an exports client as a network, as [ParseNetwork]
// reads export_to: a prefix in CIDR notation (host bits cleared) or a
// single address (/32, /128). Host names, wildcards ("*", "*;reboot") and
// netgroups are not networks.
func parseClient(s string) (netip.Prefix, bool) {
	n, err := ParseNetwork(s)
	if err != nil || !n.IsValid() {
		return netip.Prefix{}, false
	}
	return n.Prefix(), true
}

// Exported is one line of `exportfs -s`: the exported directory, the
// client as exportfs prints it ("10.10.0.0/24", "*") and its options in
// the printed order.
type Exported struct {
	Dir, Client string
	Options     []string
}

// ParseExportfsS parses the output of `exportfs -s`, one export per
// line: "DIR  CLIENT(OPTS)". nfs-utils prints the directory through
// qword_add, which escapes space, tab, newline and '\' as a backslash and
// three octal digits and appends a space, then " CLIENT", then the
// options in parentheses (utils/exportfs/exportfs.c dump,
// support/nfs/cacheio.c qword_add); Debian's nfs-utils 2.6.2 prints, for
// example,
//
//	/volume/nfs/pv1  10.10.0.0/24(sync,wdelay,hide,no_subtree_check,sec=sys,rw,root_squash,all_squash)
//
// The directory is returned unescaped. Blank lines are skipped; a line
// that is not of this form is an error naming its line number.
func ParseExportfsS(out []byte) ([]Exported, error) {
	var shown []Exported
	for n, line := range strings.Split(string(out), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		e, err := parseExportfsLine(line)
		if err != nil {
			return nil, fmt.Errorf("exportfs -s line %d %q: %w", n+1, line, err)
		}
		shown = append(shown, e)
	}
	return shown, nil
}

// parseExportfsLine parses one non-blank line of `exportfs -s`.
func parseExportfsLine(line string) (Exported, error) {
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return Exported{}, errors.New("no space between the directory and the client")
	}
	rawDir, rest := strings.TrimRight(line[:sp], " "), line[sp+1:]
	if rawDir == "" {
		return Exported{}, errors.New("no directory")
	}
	dir := unescapeQword(rawDir)
	open := strings.IndexByte(rest, '(')
	if open <= 0 || !strings.HasSuffix(rest, ")") {
		return Exported{}, errors.New(`want CLIENT(OPTIONS) after the directory`)
	}
	client, list := rest[:open], rest[open+1:len(rest)-1]
	if list == "" || strings.ContainsAny(list, "()") {
		return Exported{}, fmt.Errorf("bad option list %q", list)
	}
	return Exported{Dir: dir, Client: client, Options: strings.Split(list, ",")}, nil
}

// unescapeQword undoes qword_add's escapes: a backslash and three octal
// digits (the first 0-3) is that byte (support/nfs/cacheio.c qword_get);
// any other backslash stands for itself.
func unescapeQword(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// opposite returns the opposite of an export option exportfs shows, and
// whether it has one (support/nfs/exports.c parseopts and
// secinfo_flag_displaymap, utils/exportfs/exportfs.c dump).
func opposite(option string) (string, bool) {
	for _, pair := range [][2]string{
		{"rw", "ro"},
		{"sync", "async"},
		{"subtree_check", "no_subtree_check"},
		{"secure", "insecure"},
		{"root_squash", "no_root_squash"},
		{"all_squash", "no_all_squash"},
		{"wdelay", "no_wdelay"},
		{"hide", "nohide"},
	} {
		switch option {
		case pair[0]:
			return pair[1], true
		case pair[1]:
			return pair[0], true
		}
	}
	return "", false
}

// CheckExported reports whether `exportfs -s` (shown, as
// [ParseExportfsS] returns it) shows every export with mgmtkit's options.
// An export is shown when a line has its directory and a client that,
// read as a network, is its export_to ("10.10.0.5" and "10.10.0.5/32"
// are one network; a host name or a wildcard is none). Its options are
// compared as a set: an option of [ExportOptions] is wrong only when the
// line shows its opposite (rw and ro, sync and async, subtree_check and
// no_subtree_check, secure and insecure, root_squash and no_root_squash,
// all_squash and no_all_squash, wdelay and no_wdelay, hide and nohide),
// and is not judged when the line shows neither: what exportfs prints
// differs across nfs-utils versions and kernels (2.6.2 prints secure or
// insecure only when /proc/fs/nfsd/export_features lists the flag, so
// not where no nfsd runs: support/nfs/exports.c get_export_features and
// secinfo_flags_show; Ubuntu 20.04's prints insecure twice), and a line
// may show an option twice. Lines for other exports are ignored. The
// error names every export missing or shown with an opposite option.
func CheckExported(shown []Exported, exports []Export) error {
	want := ExportOptions()
	var errs []error
	for i, e := range exports {
		var line *Exported
		for j := range shown {
			if shown[j].Dir != e.ExportDir {
				continue
			}
			if p, ok := parseClient(shown[j].Client); ok && e.ExportTo.IsValid() && p == e.ExportTo.Prefix() {
				line = &shown[j]
				break
			}
		}
		if line == nil {
			errs = append(errs, fmt.Errorf("nfs_server_setup_params[%d]: %s is not exported to %s", i, e.ExportDir, e.ExportTo))
			continue
		}
		has := map[string]bool{}
		for _, o := range line.Options {
			has[o] = true
		}
		var wrong []string
		for _, o := range want {
			opp, ok := opposite(o)
			switch {
			case !ok || !has[opp]:
			case has[o]:
				wrong = append(wrong, fmt.Sprintf("both %s and %s", o, opp))
			default:
				wrong = append(wrong, fmt.Sprintf("%s instead of %s", opp, o))
			}
		}
		if len(wrong) > 0 {
			errs = append(errs, fmt.Errorf("nfs_server_setup_params[%d]: %s is exported to %s with %s (%s)", i, e.ExportDir, line.Client, strings.Join(wrong, ", "), strings.Join(line.Options, ",")))
		}
	}
	return errors.Join(errs...)
}
