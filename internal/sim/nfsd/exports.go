package nfsd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The export flags of nfs-utils and the kernel (nfs-utils
// support/include/nfs/export.h, Linux include/uapi/linux/nfsd/export.h).
// Their values matter: exportfs prints them in hex for incompatible
// duplicates ("(0x424) [IGNORED]").
const (
	flagReadOnly       = 0x0001
	flagInsecurePort   = 0x0002
	flagRootSquash     = 0x0004
	flagAllSquash      = 0x0008
	flagAsync          = 0x0010
	flagGatheredWrites = 0x0020
	flagNoReaddirPlus  = 0x0040
	flagSecurityLabel  = 0x0080
	flagNoHide         = 0x0200
	flagNoSubtreeCheck = 0x0400
	flagNoAuthNLM      = 0x0800
	flagFSID           = 0x2000
	flagCrossMount     = 0x4000
	flagNoACL          = 0x8000
	flagV4Root         = 0x10000
	flagPNFS           = 0x20000

	// defaultFlags is EXPORT_DEFAULT_FLAGS (support/nfs/exports.c): ro,
	// root_squash, wdelay, no_subtree_check.
	defaultFlags = flagReadOnly | flagRootSquash | flagGatheredWrites | flagNoSubtreeCheck
	// oldSecinfoFlags is NFSEXP_OLD_SECINFO_FLAGS, what exportfs assumes
	// may vary by security flavor when /proc/fs/nfsd/export_features
	// cannot be read (no nfsd in the kernel).
	oldSecinfoFlags = flagReadOnly | flagRootSquash | flagAllSquash
	// kernelSecinfoFlags is the kernel's NFSEXP_SECINFO_FLAGS, the second
	// number of /proc/fs/nfsd/export_features once nfsd runs.
	kernelSecinfoFlags = flagReadOnly | flagRootSquash | flagAllSquash | flagInsecurePort
	// kernelAllFlags is the kernel's NFSEXP_ALLFLAGS (Linux 5.15).
	kernelAllFlags = 0x3FEFF
)

// exportFeaturesFile is where nfsd reports the flags it supports
// (fs/nfsd/nfsctl.c, export_features_show: "0x%x 0x%x\n"); it exists
// while the nfsd filesystem is mounted (proc-fs-nfsd.mount, which
// nfs-server.service requires).
const exportFeaturesFile = "/proc/fs/nfsd/export_features"

// exportFeatures is the content nfsd gives exportFeaturesFile.
var exportFeatures = fmt.Sprintf("0x%x 0x%x\n", kernelAllFlags, kernelSecinfoFlags)

// flavors are the security flavors exports(5) names (flav_map in
// support/nfs/exports.c), with their RPC numbers (unix and sys are both
// AUTH_SYS, null and none AUTH_NULL).
var flavors = []struct {
	name string
	num  int
}{
	{"krb5", 390003}, {"krb5i", 390004}, {"krb5p", 390005},
	{"unix", 1}, {"sys", 1}, {"null", 0}, {"none", 0},
}

// secEntry is one flavor of an export's sec= list, with the flags that
// may vary by flavor (struct sec_entry).
type secEntry struct {
	flavor string
	num    int
	flags  int
}

// entry is an export entry, struct exportent: a path exported to one
// client with its options.
type entry struct {
	path       string
	hostname   string
	flags      int
	anonuid    int
	anongid    int
	fsid       int
	uuid       string
	mountpoint *string
	fslocKind  string // "", "refer" or "replicas"
	fslocData  string
	sec        []secEntry
}

// newEntry returns an entry with init_exportent's defaults.
func newEntry() entry {
	return entry{flags: defaultFlags, anonuid: 65534, anongid: 65534}
}

// clone returns a copy that shares nothing with e (dupexportent).
func (e entry) clone() entry {
	c := e
	c.sec = append([]secEntry(nil), e.sec...)
	if e.mountpoint != nil {
		mp := *e.mountpoint
		c.mountpoint = &mp
	}
	return c
}

// addFlavor is secinfo_addflavor: the index of the flavor in e.sec,
// appended with the entry's current flags when new.
func (e *entry) addFlavor(name string, num int) int {
	for i, s := range e.sec {
		if s.flavor == name || s.num == num {
			return i
		}
	}
	e.sec = append(e.sec, secEntry{flavor: name, num: num, flags: e.flags})
	return len(e.sec) - 1
}

// setFlags and clearFlags are setflags and clearflags: the entry's flags
// and those of the active flavors.
func (e *entry) setFlags(mask int, active []int) {
	e.flags |= mask
	for _, i := range active {
		e.sec[i].flags |= mask
	}
}

func (e *entry) clearFlags(mask int, active []int) {
	e.flags &^= mask
	for _, i := range active {
		e.sec[i].flags &^= mask
	}
}

// logger prints exportfs's messages as xlog does to standard error
// ("exportfs: MESSAGE\n") and keeps its export_errno, which every
// L_ERROR message sets (support/nfs/xlog.c). Where nobody reads the
// messages (mountd's view, a unit's exportfs) w is io.Discard.
type logger struct {
	w      io.Writer
	failed bool
}

func (l *logger) errorf(format string, args ...any) {
	l.failed = true
	l.warnf(format, args...)
}

func (l *logger) warnf(format string, args ...any) {
	fmt.Fprintf(l.w, "exportfs: %s\n", fmt.Sprintf(format, args...))
}

// --- XFILE -------------------------------------------------------------------

// eof is EOF for xfile.
const eof = -1

// xfile is nfs-utils' XFILE (support/nfs/xio.c): a stream with a line
// counter, backslash-newline continuation and pushback. Its quirks are
// kept on purpose, because they show in messages: a comment is skipped
// with plain getc, so its newline is not counted and every line number
// after a comment line is one lower than the line's real number.
type xfile struct {
	data []byte
	pos  int
	back []int // pushed-back characters (ungetc)
	line int
}

func newXfile(data []byte) *xfile { return &xfile{data: data, line: 1} }

// rawGetc and rawUngetc are getc and ungetc on the underlying FILE.
func (x *xfile) rawGetc() int {
	if n := len(x.back); n > 0 {
		c := x.back[n-1]
		x.back = x.back[:n-1]
		return c
	}
	if x.pos >= len(x.data) {
		return eof
	}
	c := int(x.data[x.pos])
	x.pos++
	return c
}

func (x *xfile) rawUngetc(c int) {
	if c != eof {
		x.back = append(x.back, c)
	}
}

// getc is xgetc: a backslash before a newline joins the lines (the
// next line's leading blanks are dropped) and reads as a space.
func (x *xfile) getc() int {
	c := x.rawGetc()
	if c == eof {
		return c
	}
	if c == '\\' {
		if c = x.rawGetc(); c != '\n' {
			x.rawUngetc(c)
			return '\\'
		}
		x.line++
		for c = x.rawGetc(); c == ' ' || c == '\t'; c = x.rawGetc() {
		}
		x.rawUngetc(c)
		return ' '
	}
	if c == '\n' {
		x.line++
	}
	return c
}

// ungetc is xungetc.
func (x *xfile) ungetc(c int) {
	if c == eof {
		return
	}
	x.rawUngetc(c)
	if c == '\n' {
		x.line--
	}
}

// skipComment is xskipcomment: plain getc up to the newline, which is
// returned (and not counted).
func (x *xfile) skipComment() int {
	c := x.rawGetc()
	for c != eof && c != '\n' {
		c = x.rawGetc()
	}
	return c
}

// skip is xskip: characters of set, and comments, are skipped.
func (x *xfile) skip(set string) {
	c := x.getc()
	for c != eof {
		if c == '#' {
			c = x.skipComment()
		}
		if c == eof || !strings.ContainsRune(set, rune(c)) {
			break
		}
		c = x.getc()
	}
	x.ungetc(c)
}

func isSpace(c int) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// gettok is xgettok with no separator: a token up to white space, double
// quotes toggling quoting (and dropped), \ooo octal escapes decoded. It
// returns 1 with a token, 0 when there is none before the end of the
// line.
func (x *xfile) gettok() (string, int) {
	var tok []byte
	quoted := false
	c := 0
	for {
		c = x.getc()
		if c == eof || (!quoted && isSpace(c)) {
			break
		}
		if c == '"' {
			quoted = !quoted
			continue
		}
		tok = append(tok, byte(c))
		if i := len(tok); i >= 4 && tok[i-4] == '\\' && isOctal(tok[i-3]) && isOctal(tok[i-2]) && isOctal(tok[i-1]) {
			if v, _ := strconv.ParseInt(string(tok[i-3:]), 8, 32); v < 256 {
				tok = append(tok[:i-4], byte(v))
			}
		}
	}
	if c == '\n' {
		x.ungetc(c)
	}
	if len(tok) == 0 {
		return "", 0
	}
	return string(tok), 1
}

// --- getexportent ------------------------------------------------------------

// exportsFile reads export entries from one file, as setexportent and
// getexportent do (support/nfs/exports.c): a path, then clients
// separated by white space up to the end of the line, each client
// optionally followed by "(options)"; "-options" after the path are
// default options for the rest of the line.
type exportsFile struct {
	x       *xfile
	name    string // efname, as messages print it
	log     *logger
	first   bool
	def     entry
	hasDef  bool                        // has_default_opts
	defSub  bool                        // has_default_subtree_opts
	mask    int                         // the flags that may vary by flavor
	realDir func(string) (string, bool) // realpath(3) on the host
}

func newExportsFile(name string, data []byte, log *logger, mask int, realpath func(string) (string, bool)) *exportsFile {
	return &exportsFile{x: newXfile(data), name: name, log: log, first: true, mask: mask, realDir: realpath}
}

// getpath and getexport are the reads of a path and of a client token.
func (f *exportsFile) getpath() (string, int) {
	f.x.skip(" \t\n")
	return f.x.gettok()
}

func (f *exportsFile) getexport() (string, int) {
	f.x.skip(" \t")
	return f.x.gettok()
}

// next is getexportent(0, fromExports): the next entry, or false at the
// end of the file or at the first bad entry (the rest of the file is not
// read, as export_read stops at the first NULL).
func (f *exportsFile) next(fromExports bool) (entry, bool) {
	var exp string
	ok := 0
	if !f.first {
		exp, ok = f.getexport()
	}
	if f.first || ok == 0 {
		f.hasDef, f.defSub = false, false
		f.def = newEntry()
		path, pok := f.getpath()
		if pok <= 0 {
			return entry{}, false
		}
		f.def.path = path
		exp, ok = f.getexport()
	}
	f.first = false
	if strings.HasPrefix(exp, "-") && ok > 0 {
		sub, good := f.parseopts(exp[1:], &f.def, false)
		if !good {
			return entry{}, false
		}
		f.defSub = sub
		f.hasDef = true
		exp, ok = f.getexport()
	}
	ee := f.def.clone()
	if ok == 0 {
		exp = ""
	}
	hostname := exp
	var opts *string
	if i := strings.IndexByte(exp, '('); i >= 0 {
		if i == 0 {
			f.log.warnf("No host name given with %s %s, suggest *%s to avoid warning", ee.path, exp, exp)
			hostname = "*"
		} else {
			hostname = exp[:i]
		}
		rest := exp[i+1:]
		j := strings.IndexByte(rest, ')')
		if j < 0 || j != len(rest)-1 {
			f.log.errorf("%s:%d: syntax error: bad option list", f.name, f.x.line)
			return entry{}, false
		}
		o := rest[:j]
		opts = &o
	} else if !f.hasDef {
		f.log.warnf("No options for %s %s: suggest %s(sync) to avoid warning", ee.path, exp, exp)
	}
	ee.hostname = hostname
	optText := ""
	if opts != nil {
		optText = *opts
	}
	warn := fromExports && !f.defSub
	if _, good := f.parseoptsWarn(optText, opts != nil, &ee, warn); !good {
		return entry{}, false
	}
	if f.realDir != nil {
		if real, ok := f.realDir(ee.path); ok {
			ee.path = real
		}
	}
	return ee, true
}

// parseopts is parseopts without the subtree warning.
func (f *exportsFile) parseopts(cp string, e *entry, warn bool) (hadSubtree, ok bool) {
	return f.parseoptsWarn(cp, true, e, warn)
}

// parseoptsWarn is parseopts (support/nfs/exports.c): it applies a
// comma-separated option list to e, reports whether it named
// subtree_check or no_subtree_check, and fails on an unknown keyword or
// a bad value. present is false for an entry without "(...)".
func (f *exportsFile) parseoptsWarn(cp string, present bool, e *entry, warn bool) (hadSubtree, ok bool) {
	fname, line := f.name, f.x.line
	had, ok := parseOptions(cp, present, e, f.log, fname, line, f.mask)
	if !ok {
		return false, false
	}
	if warn && !had {
		f.log.warnf("%s [%d]: Neither 'subtree_check' or 'no_subtree_check' specified for export \"%s:%s\".\n"+
			"  Assuming default behaviour ('no_subtree_check').\n"+
			"  NOTE: this default has changed since nfs-utils version 1.0.x\n", fname, line, e.hostname, e.path)
	}
	return had, true
}

// parseOptions applies an option list to e as parseopts does; fname and
// line name the source in messages ("command line" and 0 for exportfs
// -o); mask is the set of flags that may vary by flavor.
func parseOptions(cp string, present bool, e *entry, log *logger, fname string, line, mask int) (hadSubtree, ok bool) {
	if !present {
		return false, true
	}
	var active []int
	cp = strings.TrimLeft(cp, " \t")
	for cp != "" {
		opt := cp
		if i := strings.IndexByte(cp, ','); i >= 0 {
			opt, cp = cp[:i], cp[i+1:]
		} else {
			cp = ""
		}
		switch {
		case opt == "ro":
			e.setFlags(flagReadOnly, active)
		case opt == "rw":
			e.clearFlags(flagReadOnly, active)
		case opt == "secure":
			e.clearFlags(flagInsecurePort, active)
		case opt == "insecure":
			e.setFlags(flagInsecurePort, active)
		case opt == "sync":
			e.clearFlags(flagAsync, active)
		case opt == "async":
			e.setFlags(flagAsync, active)
		case opt == "nordirplus":
			e.setFlags(flagNoReaddirPlus, active)
		case opt == "security_label":
			e.setFlags(flagSecurityLabel, active)
		case opt == "nohide":
			e.setFlags(flagNoHide, active)
		case opt == "hide":
			e.clearFlags(flagNoHide, active)
		case opt == "crossmnt":
			e.setFlags(flagCrossMount, active)
		case opt == "nocrossmnt":
			e.clearFlags(flagCrossMount, active)
		case opt == "wdelay":
			e.setFlags(flagGatheredWrites, active)
		case opt == "no_wdelay":
			e.clearFlags(flagGatheredWrites, active)
		case opt == "root_squash":
			e.setFlags(flagRootSquash, active)
		case opt == "no_root_squash":
			e.clearFlags(flagRootSquash, active)
		case opt == "all_squash":
			e.setFlags(flagAllSquash, active)
		case opt == "no_all_squash":
			e.clearFlags(flagAllSquash, active)
		case opt == "subtree_check":
			hadSubtree = true
			e.clearFlags(flagNoSubtreeCheck, active)
		case opt == "no_subtree_check":
			hadSubtree = true
			e.setFlags(flagNoSubtreeCheck, active)
		case opt == "auth_nlm", opt == "secure_locks":
			e.clearFlags(flagNoAuthNLM, active)
		case opt == "no_auth_nlm", opt == "insecure_locks":
			e.setFlags(flagNoAuthNLM, active)
		case opt == "acl":
			e.clearFlags(flagNoACL, active)
		case opt == "no_acl":
			e.setFlags(flagNoACL, active)
		case opt == "pnfs":
			e.setFlags(flagPNFS, active)
		case opt == "no_pnfs":
			e.clearFlags(flagPNFS, active)
		case strings.HasPrefix(opt, "anonuid="), strings.HasPrefix(opt, "anongid="):
			v, err := strconv.ParseInt(opt[8:], 10, 64)
			if opt[8:] == "" || err != nil {
				log.errorf("%s: %d: bad %s \"%s\"\n", fname, line, opt[:7], opt)
				return false, false
			}
			if opt[4] == 'u' {
				e.anonuid = int(int32(v))
			} else {
				e.anongid = int(int32(v))
			}
		case strings.HasPrefix(opt, "squash_uids="), strings.HasPrefix(opt, "squash_gids="):
			log.errorf("%s:%d: %s is not modelled by internal/sim/nfsd", fname, line, opt[:11])
			return false, false
		case strings.HasPrefix(opt, "fsid="):
			v := opt[5:]
			if v == "root" {
				e.fsid = 0
				e.setFlags(flagFSID, active)
				break
			}
			if n, err := parseCUlong(v); v != "" && err == nil {
				e.fsid = int(int32(n))
				e.setFlags(flagFSID, active)
			} else if validUUID(v) {
				e.uuid = v
			} else {
				log.errorf("%s: %d: bad fsid \"%s\"\n", fname, line, opt)
				return false, false
			}
		case opt == "mountpoint", opt == "mp", strings.HasPrefix(opt, "mountpoint="), strings.HasPrefix(opt, "mp="):
			mp := ""
			if _, v, ok := strings.Cut(opt, "="); ok {
				mp = v
			}
			e.mountpoint = &mp
		case strings.HasPrefix(opt, "refer="):
			e.fslocKind, e.fslocData = "refer", opt[6:]
		case strings.HasPrefix(opt, "replicas="):
			e.fslocKind, e.fslocData = "replicas", opt[9:]
		case strings.HasPrefix(opt, "sec="):
			active = nil
			for _, name := range strings.Split(opt[4:], ":") {
				num := -1
				for _, f := range flavors {
					if f.name == name {
						num = f.num
					}
				}
				if num < 0 {
					log.errorf("unknown flavor %s\n", name)
					return false, false
				}
				active = append(active, e.addFlavor(name, num))
			}
		default:
			log.errorf("%s:%d: unknown keyword \"%s\"\n", fname, line, opt)
			return false, false
		}
		cp = strings.TrimLeft(cp, " \t")
	}
	// fix_pseudoflavor_flags: the flags that cannot vary by flavor.
	for i := range e.sec {
		e.sec[i].flags |= e.flags &^ mask
	}
	return hadSubtree, true
}

// parseCUlong parses a number as strtoul(s, &end, 0) does when it must
// consume all of s: decimal, 0x hexadecimal or 0 octal (no underscores or
// 0b/0o prefixes, which Go's base 0 would take).
func parseCUlong(s string) (uint64, error) {
	base, digits := 10, s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	if strings.ContainsAny(digits, "_+-") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(digits, base, 64)
}

// validUUID is valid_uuid: 32 hex digits, anything else ignored.
func validUUID(s string) bool {
	n := 0
	for _, c := range s {
		if strings.ContainsRune("0123456789abcdefABCDEF", c) {
			n++
		}
	}
	return n == 32
}

// --- writing ---------------------------------------------------------------------

// printPath is fprintpath: control characters, white space, '"', '\\'
// and '#' as \ooo.
func printPath(b *strings.Builder, p string) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == '#' || c == ' ' {
			fmt.Fprintf(b, "\\%03o", c)
		} else {
			b.WriteByte(c)
		}
	}
}

// secinfoShow is secinfo_show: ",sec=FLAVOR[:FLAVOR...]" per group of
// flavors with equal flags, each followed by the flags that may vary by
// flavor (mask). An entry without sec= gets sys, as there.
func secinfoShow(b *strings.Builder, e *entry, mask int) {
	if len(e.sec) == 0 {
		e.addFlavor("sys", 1)
	}
	for i := 0; i < len(e.sec); {
		p1 := e.sec[i]
		b.WriteString(",sec=" + p1.flavor)
		j := i + 1
		for ; j < len(e.sec) && e.sec[j].flags == p1.flags; j++ {
			b.WriteString(":" + e.sec[j].flavor)
		}
		for _, f := range []struct {
			flag       int
			set, unset string
		}{
			{flagReadOnly, "ro", "rw"}, {flagInsecurePort, "insecure", "secure"},
			{flagRootSquash, "root_squash", "no_root_squash"}, {flagAllSquash, "all_squash", "no_all_squash"},
		} {
			if mask&f.flag == 0 {
				continue
			}
			if p1.flags&f.flag != 0 {
				b.WriteString("," + f.set)
			} else {
				b.WriteString("," + f.unset)
			}
		}
		i = j
	}
}

// etabLine is putexportent: the entry as /var/lib/nfs/etab holds it,
// with hostname as the client's (canonical) name.
func etabLine(e entry, hostname string, mask int) string {
	var b strings.Builder
	printPath(&b, e.path)
	b.WriteString("\t" + hostname + "(")
	pick := func(flag int, set, unset string) {
		if e.flags&flag != 0 {
			b.WriteString(set + ",")
		} else {
			b.WriteString(unset + ",")
		}
	}
	pick(flagReadOnly, "ro", "rw")
	pick(flagAsync, "async", "sync")
	pick(flagGatheredWrites, "wdelay", "no_wdelay")
	pick(flagNoHide, "nohide", "hide")
	pick(flagCrossMount, "crossmnt", "nocrossmnt")
	pick(flagInsecurePort, "insecure", "secure")
	pick(flagRootSquash, "root_squash", "no_root_squash")
	pick(flagAllSquash, "all_squash", "no_all_squash")
	pick(flagNoSubtreeCheck, "no_subtree_check", "subtree_check")
	pick(flagNoAuthNLM, "insecure_locks", "secure_locks")
	pick(flagNoACL, "no_acl", "acl")
	if e.flags&flagNoReaddirPlus != 0 {
		b.WriteString("nordirplus,")
	}
	if e.flags&flagSecurityLabel != 0 {
		b.WriteString("security_label,")
	}
	pick(flagPNFS, "pnfs", "no_pnfs")
	if e.flags&flagFSID != 0 {
		fmt.Fprintf(&b, "fsid=%d,", e.fsid)
	}
	if e.uuid != "" {
		fmt.Fprintf(&b, "fsid=%s,", e.uuid)
	}
	if e.mountpoint != nil {
		if *e.mountpoint != "" {
			b.WriteString("mountpoint=" + *e.mountpoint + ",")
		} else {
			b.WriteString("mountpoint,")
		}
	}
	if e.fslocKind != "" {
		b.WriteString(e.fslocKind + "=")
		printPath(&b, e.fslocData)
		b.WriteString(",")
	}
	fmt.Fprintf(&b, "anonuid=%d,anongid=%d", e.anonuid, e.anongid)
	secinfoShow(&b, &e, mask)
	b.WriteString(")\n")
	return b.String()
}

// dumpOptions is the option list `exportfs -v` and `exportfs -s` print
// (dump in utils/exportfs/exportfs.c): "(sync,wdelay,hide,...)".
func dumpOptions(e entry, mask int) string {
	var opts []string
	add := func(s string) { opts = append(opts, s) }
	if e.flags&flagAsync != 0 {
		add("async")
	} else {
		add("sync")
	}
	if e.flags&flagGatheredWrites != 0 {
		add("wdelay")
	} else {
		add("no_wdelay")
	}
	if e.flags&flagNoHide != 0 {
		add("nohide")
	} else {
		add("hide")
	}
	for _, f := range []struct {
		flag int
		name string
	}{
		{flagCrossMount, "crossmnt"}, {flagNoSubtreeCheck, "no_subtree_check"}, {flagNoAuthNLM, "insecure_locks"},
		{flagNoReaddirPlus, "nordirplus"}, {flagSecurityLabel, "security_label"}, {flagNoACL, "no_acl"}, {flagPNFS, "pnfs"},
	} {
		if e.flags&f.flag != 0 {
			add(f.name)
		}
	}
	if e.flags&flagFSID != 0 {
		add(fmt.Sprintf("fsid=%d", e.fsid))
	}
	if e.uuid != "" {
		add("fsid=" + e.uuid)
	}
	if e.mountpoint != nil {
		if *e.mountpoint != "" {
			add("mountpoint=" + *e.mountpoint)
		} else {
			add("mountpoint")
		}
	}
	if e.anonuid != 65534 {
		add(fmt.Sprintf("anonuid=%d", e.anonuid))
	}
	if e.anongid != 65534 {
		add(fmt.Sprintf("anongid=%d", e.anongid))
	}
	if e.fslocKind != "" {
		add(e.fslocKind + "=" + e.fslocData)
	}
	var b strings.Builder
	b.WriteString("(" + strings.Join(opts, ","))
	secinfoShow(&b, &e, mask)
	b.WriteString(")")
	return b.String()
}

// qword is qword_add for `exportfs -s`: space, tab, newline and
// backslash as \ooo.
func qword(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
