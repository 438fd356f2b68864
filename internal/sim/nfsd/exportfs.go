package nfsd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Paths of nfs-utils (support/include/nfslib.h, exportfs.h) and of the
// state directory Debian and Ubuntu use (NFS_STATEDIR).
const (
	exportsPath    = "/etc/exports"
	exportsDirPath = "/etc/exports.d"
	stateDir       = "/var/lib/nfs"
	etabFile       = stateDir + "/etab"
	etabTmp        = stateDir + "/etab.tmp"
	etabLock       = stateDir + "/.etab.lock"
	exportLock     = stateDir + "/export-lock"
)

// exportfs is one run of exportfs (utils/exportfs/exportfs.c) on a
// machine's filesystem as its caller sees it.
type exportfs struct {
	fs   *sshtest.UserFS
	out  io.Writer
	log  *logger
	tab  *table
	mask int // the flags that may vary by flavor (get_export_features)
}

func newExportfs(view *sshtest.UserFS, stdout, stderr io.Writer) *exportfs {
	log := &logger{w: stderr}
	hosts, _ := view.ReadFile("/etc/hosts")
	r := &exportfs{fs: view, out: stdout, log: log, tab: newTable(newResolver(hosts), log), mask: secinfoMask(view)}
	return r
}

// secinfoMask is get_export_features' secinfo_flags: the second number
// of /proc/fs/nfsd/export_features while nfsd runs, the old set (ro,
// root_squash, all_squash) otherwise. That is why `exportfs -v` shows
// secure or insecure on a running NFS server and not in a chroot.
func secinfoMask(view *sshtest.UserFS) int {
	data, err := view.ReadFile(exportFeaturesFile)
	if err != nil {
		return oldSecinfoFlags
	}
	// sscanf(buf, "%x %x", ...): hexadecimal, with or without 0x.
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return oldSecinfoFlags
	}
	sec, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(f[1], "0x"), "0X"), 16, 32)
	if err != nil {
		return oldSecinfoFlags
	}
	return int(sec)
}

// realpath is realpath(3) as the caller: the path with links resolved
// when it exists.
func (r *exportfs) realpath(p string) (string, bool) {
	real, err := r.fs.Realpath(p)
	return real, err == nil
}

// readFile is setexportent's open: "can't open NAME for reading".
func (r *exportfs) readFile(name string) ([]byte, bool) {
	data, err := r.fs.ReadFile(name)
	if err != nil {
		r.log.errorf("can't open %s for reading", name)
		return nil, false
	}
	return data, true
}

// readExports is export_read(/etc/exports) + export_d_read(/etc/exports.d).
func (r *exportfs) readExports() int {
	n := 0
	if data, ok := r.readFile(exportsPath); ok {
		n += r.tab.read(exportsPath, data, r.mask, r.realpath)
	}
	entries, err := r.fs.ReadDir(exportsDirPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		r.log.warnf("scandir %s: %s", exportsDirPath, sshtest.ErrMessage(err))
	}
	for _, name := range exportsDir(entries) {
		file := exportsDirPath + "/" + name
		if data, ok := r.readFile(file); ok {
			n += r.tab.read(file, data, r.mask, r.realpath)
		}
	}
	return n
}

// lock is xflock (support/nfs/xio.c): open (creating) the lock file;
// failing that, a warning and no lock.
func (r *exportfs) lock(name string, write bool) bool {
	flag := syscall.O_RDONLY | syscall.O_CREAT
	if write {
		flag = syscall.O_RDWR | syscall.O_CREAT
	}
	f, err := r.fs.OpenFile(name, flag, 0o600)
	if err != nil {
		errno := syscall.EIO
		errors.As(err, &errno)
		r.log.warnf("could not open %s for locking: errno %d (%s)", name, int(errno), sshtest.ErrMessage(err))
		return false
	}
	f.Close()
	return true
}

// grabLockfile is grab_lockfile: the export lock, failures ignored.
func (r *exportfs) grabLockfile() {
	if f, err := r.fs.OpenFile(exportLock, syscall.O_RDWR|syscall.O_CREAT, 0o666); err == nil {
		f.Close()
	}
}

// xtabRead is xtab_export_read: the exports in etab, marked to stay.
func (r *exportfs) xtabRead() {
	if !r.lock(etabLock, false) {
		return
	}
	data, ok := r.readFile(etabFile)
	if !ok {
		return
	}
	f := newExportsFile(etabFile, data, r.log, r.mask, r.realpath)
	for {
		e, ok := f.next(false)
		if !ok {
			return
		}
		x := r.tab.lookup(e.hostname, e.path)
		if x == nil {
			x = r.tab.create(e)
		}
		if x != nil {
			x.xtabent = true
		}
	}
}

// xtabWrite is xtab_export_write: etab rewritten from the exports marked
// to stay, each under its client's canonical name, replacing the file
// only when it changed (cond_rename).
func (r *exportfs) xtabWrite() {
	if !r.lock(etabLock, true) {
		r.log.errorf("can't lock %s for writing", etabFile)
		return
	}
	var b strings.Builder
	r.tab.each(func(x *export) {
		if x.xtabent {
			b.WriteString(etabLine(x.e, x.client.hostname, r.mask))
		}
	})
	if err := r.fs.WriteFile(etabTmp, []byte(b.String()), 0o644); err != nil {
		r.log.errorf("can't open %s for writing", etabTmp)
		return
	}
	if old, err := r.fs.ReadFile(etabFile); err == nil && string(old) == b.String() {
		r.fs.Remove(etabTmp)
		return
	}
	r.fs.Rename(etabTmp, etabFile)
}

// validate is validate_export: warnings, counted as errors, for a path
// that cannot be stat'ed or is not a directory. The entry stays exported
// (listed by exportfs -v and -s) all the same.
func (r *exportfs) validate(x *export) {
	fi, err := r.fs.Stat(x.e.path)
	switch {
	case err != nil:
		r.log.errorf("Failed to stat %s: %s", x.e.path, sshtest.ErrMessage(err))
	case !fi.IsDir():
		r.log.errorf("%s is not a directory. Remote access will fail", x.e.path)
	}
}

// exportAll is export_all: every export read from the files is marked.
func (r *exportfs) exportAll(verbose bool) {
	r.tab.each(func(x *export) {
		if verbose {
			fmt.Fprintf(r.out, "exporting %s:%s\n", x.client.hostname, x.e.path)
		}
		x.xtabent = true
		x.warned = false
		r.validate(x)
	})
}

// splitArg is the host:/path parsing of exportfs_generic and
// exportfs_ipv6 ("[addr]:/path", "[addr/prefix]:/path"). On failure it
// returns the text exportfs names: the argument cut at its first colon.
func splitArg(arg string) (host, path string, ok bool) {
	if strings.HasPrefix(arg, "[") {
		inner := arg[1:]
		c := strings.IndexByte(inner, ']')
		if c < 0 {
			return arg, "", false
		}
		if strings.Contains(inner[:c], ":") {
			i := strings.Index(inner[c:], ":/")
			if i < 0 {
				return arg, "", false
			}
			return inner[:c] + inner[c+1:c+i], inner[c+i+1:], true
		}
	}
	host, path, found := strings.Cut(arg, ":")
	if !found || !strings.HasPrefix(path, "/") {
		return host, "", false
	}
	return host, path, true
}

// exportArg is exportfs() for one host:/path operand, with -o options.
func (r *exportfs) exportArg(arg string, options *string, verbose bool) {
	hname, path, ok := splitArg(arg)
	if !ok {
		r.log.errorf("Invalid export syntax: %s", hname)
		return
	}
	var x *export
	if clientType(hname) == mclFQDN {
		if canon, addrs, ok := r.tab.names.lookup(hname); ok {
			x = r.find(addrs, canon, path)
			hname = canon
		}
	} else {
		x = r.tab.lookup(hname, path)
	}
	opts, present := "", options != nil
	if present {
		opts = *options
	}
	if x == nil {
		e := newEntry()
		e.hostname, e.path = hname, path
		if _, ok := parseOptions(opts, present, &e, r.log, "command line", 0, r.mask); !ok {
			return
		}
		if x = r.tab.create(e); x == nil {
			return
		}
	} else if _, ok := parseOptions(opts, present, &x.e, r.log, "command line", 0, r.mask); !ok {
		return
	}
	if verbose {
		fmt.Fprintf(r.out, "exporting %s:%s\n", x.client.hostname, x.e.path)
	}
	x.xtabent = true
	x.warned = false
	r.validate(x)
}

// find is export_find: the first export of path whose client admits one
// of addrs; one of another type is copied for the host (export_dup).
func (r *exportfs) find(addrs []netip.Addr, canon, path string) *export {
	for typ := range mclMax {
		for _, x := range r.tab.exports[typ] {
			if x.e.path != path || !r.admitsAny(x.client, addrs) {
				continue
			}
			if typ == mclFQDN {
				return x
			}
			c := &client{typ: mclFQDN, hostname: canon, addrs: addrs[:min(len(addrs), 16)]}
			r.tab.clients[mclFQDN] = append(r.tab.clients[mclFQDN], c)
			dup := &export{e: x.e.clone(), client: c}
			r.tab.add(dup)
			return dup
		}
	}
	return nil
}

func (r *exportfs) admitsAny(c *client, addrs []netip.Addr) bool {
	for _, a := range addrs {
		if r.tab.check(c, a) {
			return true
		}
	}
	return false
}

// unexportArg is unexportfs() for one host:/path operand.
func (r *exportfs) unexportArg(arg string, verbose bool) {
	hname, path, ok := splitArg(arg)
	if !ok {
		r.log.errorf("Invalid export syntax: %s", hname)
		return
	}
	typ := clientType(hname)
	if typ == mclFQDN {
		if canon, _, ok := r.tab.names.lookup(hname); ok {
			hname = canon
		}
	}
	trimmed := path
	for len(trimmed) > 1 && strings.HasSuffix(trimmed, "/") {
		trimmed = trimmed[:len(trimmed)-1]
	}
	found := false
	for _, x := range r.tab.exports[typ] {
		if x.e.path != trimmed {
			continue
		}
		if typ == mclFQDN && !r.matchHostname(x.e.hostname, hname) || typ != mclFQDN && !strings.EqualFold(x.e.hostname, hname) {
			continue
		}
		if verbose {
			fmt.Fprintf(r.out, "unexporting %s:%s\n", x.client.hostname, x.e.path)
		}
		x.xtabent = false
		found = true
	}
	if !found {
		r.log.errorf("Could not find '%s:%s' to unexport.", hname, path)
	}
}

// matchHostname is matchhostname: the same name, or (for host names, not
// patterns) the same canonical name or a common address.
func (r *exportfs) matchHostname(h1, h2 string) bool {
	if strings.EqualFold(h1, h2) {
		return true
	}
	isName := func(s string) bool {
		return s != "" && !strings.HasPrefix(s, "@") && !strings.ContainsAny(s, "*?[/")
	}
	if !isName(h1) || !isName(h2) {
		return false
	}
	c1, a1, ok1 := r.tab.names.lookup(h1)
	c2, a2, ok2 := r.tab.names.lookup(h2)
	if !ok1 || !ok2 {
		return false
	}
	if strings.EqualFold(c1, c2) {
		return true
	}
	for _, a := range a1 {
		for _, b := range a2 {
			if a == b {
				return true
			}
		}
	}
	return false
}

// dump is dump(): the exports of etab, type by type: `exportfs` prints
// path and client, `exportfs -v` adds the options, `exportfs -s` prints
// one line per export ("PATH  CLIENT(OPTIONS)", the path escaped). A path
// longer than 14 characters puts the client on the next line, after two
// tabs; "*" is "<world>" except with -s.
func (r *exportfs) dump(verbose, exportFormat bool) {
	r.tab.each(func(x *export) {
		if !x.xtabent {
			return
		}
		hname := x.e.hostname
		if x.client.typ == mclAnonymous {
			hname = "<world>"
			if exportFormat {
				hname = "*"
			}
		}
		switch {
		case len(x.e.path) > 14 && !exportFormat:
			fmt.Fprintf(r.out, "%-14s\n\t\t%s", x.e.path, hname)
		case exportFormat:
			fmt.Fprintf(r.out, "%s %s", qword(x.e.path)+" ", hname)
		default:
			fmt.Fprintf(r.out, "%-14s\t%s", x.e.path, hname)
		}
		if !verbose && !exportFormat {
			fmt.Fprintln(r.out)
			return
		}
		fmt.Fprintln(r.out, dumpOptions(x.e, r.mask))
	})
}

// exportfsOptions is the parsed command line of exportfs: getopt(3) with
// "ad:fhio:ruvs", operands anywhere (GNU getopt permutes them).
type exportfsOptions struct {
	all, ignore, reexport, verbose, exportFormat, flush bool
	unexport                                            bool
	options                                             *string
	operands                                            []string
}

const exportfsUsage = "usage: exportfs [-adfhioruvs] [host:/path]"

// debugFacilities are the facilities xlog_sconfig knows (-d).
var debugFacilities = []string{"general", "call", "auth", "parse", "all"}

// parseExportfsArgs parses the command line; it returns the exit status
// and false when exportfs stops (usage, -h, a bad option).
func parseExportfsArgs(args []string, stdout, stderr io.Writer, log *logger) (exportfsOptions, int, bool) {
	var o exportfsOptions
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.operands = append(o.operands, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			o.operands = append(o.operands, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			switch c := a[j]; c {
			case 'a':
				o.all = true
			case 'f':
				o.flush = true
			case 'i':
				o.ignore = true
			case 'r':
				o.reexport, o.all = true, true
			case 'u':
				o.unexport = true
			case 'v':
				o.verbose = true
			case 's':
				o.exportFormat = true
			case 'h':
				fmt.Fprintln(stderr, exportfsUsage)
				return o, 0, false
			case 'd', 'o':
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						fmt.Fprintf(stderr, "exportfs: option requires an argument -- '%c'\n%s\n", c, exportfsUsage)
						return o, 1, false
					}
					i++
					val = args[i]
				}
				if c == 'o' {
					o.options = &val
				} else {
					for _, f := range strings.Split(val, ",") {
						found := false
						for _, k := range debugFacilities {
							found = found || k == f
						}
						if !found {
							log.warnf("Invalid debug facility: %s\n", f)
						}
					}
				}
				j = len(a)
			default:
				fmt.Fprintf(stderr, "exportfs: invalid option -- '%c'\n%s\n", c, exportfsUsage)
				return o, 1, false
			}
		}
	}
	return o, 0, true
}

// runExportfs is exportfs's main: it returns the exit status, export_errno
// once the etab is written.
func runExportfs(view *sshtest.UserFS, args []string, stdout, stderr io.Writer) int {
	r := newExportfs(view, stdout, stderr)
	o, code, ok := parseExportfsArgs(args, stdout, stderr, r.log)
	if !ok {
		return code
	}
	export := !o.unexport
	switch {
	case len(o.operands) > 0 && o.all:
		r.log.errorf("extra arguments are not permitted with -a or -r")
		return 1
	case o.ignore && (o.all || !export):
		r.log.errorf("-i not meaningful with -a, -r or -u")
		return 1
	case o.reexport && !export:
		r.log.errorf("-r and -u are incompatible")
		return 1
	}
	if len(o.operands) == 0 && !o.all {
		if o.flush {
			return 0
		}
		r.xtabRead()
		r.dump(o.verbose, o.exportFormat)
		return 0
	}
	r.grabLockfile()
	if export && !o.ignore {
		if r.readExports() == 0 && o.verbose {
			r.log.warnf("No file systems exported!")
		}
	}
	if export {
		if o.all {
			r.exportAll(o.verbose)
		} else {
			for _, a := range o.operands {
				r.exportArg(a, o.options, o.verbose)
			}
		}
	}
	if export || !o.all {
		if !o.reexport {
			r.xtabRead()
		}
		if !export {
			for _, a := range o.operands {
				r.unexportArg(a, o.verbose)
			}
		}
	}
	r.xtabWrite()
	if r.log.failed {
		return 1
	}
	return 0
}
