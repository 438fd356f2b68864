package nfsd

import (
	"io/fs"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Client types, in the order of enum MCL_* (support/include/exportfs.h):
// exportfs lists, and mountd matches, exports type by type in this order.
const (
	mclFQDN = iota
	mclSubnet
	mclWildcard
	mclNetgroup
	mclAnonymous
	mclGSS
	mclMax
)

// clientType is client_gettype (support/export/client.c): "" and "*" are
// anonymous, "gss/..." GSS, "@..." a netgroup; a name with '*', '?' or
// '[' (before any '/') is a wildcard, one with '/' a subnetwork; anything
// else, an IP address included, is a host name.
func clientType(ident string) int {
	switch {
	case ident == "" || ident == "*":
		return mclAnonymous
	case strings.HasPrefix(ident, "gss/"):
		return mclGSS
	case strings.HasPrefix(ident, "@"):
		return mclNetgroup
	}
	for i := 0; i < len(ident); i++ {
		switch ident[i] {
		case '*', '?', '[':
			return mclWildcard
		case '/':
			return mclSubnet
		case '\\':
			if i+1 < len(ident) {
				i++
			}
		}
	}
	return mclFQDN
}

// client is an nfs_client: who an export is for.
type client struct {
	typ      int
	hostname string
	addrs    []netip.Addr // a host name's addresses
	network  netip.Addr   // a subnetwork's address...
	mask     []byte       // ...and mask, 4 or 16 bytes
}

// export is an nfs_export: an entry and its client, with exportfs's
// marks.
type export struct {
	e       entry
	client  *client
	xtabent bool // to be written to etab
	warned  bool
}

// resolver is the server's name service as glibc's files backend sees
// /etc/hosts (nsswitch's "hosts: files dns", and the simulated cloud has
// no DNS).
type resolver struct {
	lines []hostsLine
}

type hostsLine struct {
	addr  netip.Addr
	names []string
}

// newResolver parses /etc/hosts.
func newResolver(hosts []byte) resolver {
	var r resolver
	for _, line := range strings.Split(string(hosts), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		r.lines = append(r.lines, hostsLine{addr: a.Unmap(), names: f[1:]})
	}
	return r
}

// lookup is getaddrinfo with AI_CANONNAME: a numeric address is its own
// canonical name; a name's addresses are those of every /etc/hosts line
// naming it, its canonical name the first name of the first such line.
func (r resolver) lookup(name string) (canon string, addrs []netip.Addr, ok bool) {
	if a, err := netip.ParseAddr(name); err == nil {
		return name, []netip.Addr{a.Unmap()}, true
	}
	for _, l := range r.lines {
		if slices.ContainsFunc(l.names, func(n string) bool { return strings.EqualFold(n, name) }) {
			if canon == "" {
				canon = l.names[0]
			}
			if !slices.Contains(addrs, l.addr) {
				addrs = append(addrs, l.addr)
			}
		}
	}
	return canon, addrs, canon != ""
}

// reverse is getnameinfo with NI_NAMEREQD and the aliases of the entry:
// the names of the first /etc/hosts line with the address.
func (r resolver) reverse(a netip.Addr) (name string, aliases []string, ok bool) {
	for _, l := range r.lines {
		if l.addr == a.Unmap() {
			return l.names[0], l.names[1:], true
		}
	}
	return "", nil, false
}

// hashSize is HASH_TABLE_SIZE (support/include/exportfs.h).
const hashSize = 1021

// exportHash is export_hash (support/export/export.c).
func exportHash(path string) int {
	var n uint32
	for i := 0; i < len(path); i++ {
		n += uint32(int32(int8(path[i])) * int32(i))
	}
	return int(n % hashSize)
}

// table is exportfs's (and mountd's) in-core state: the clients and the
// export lists, one per client type (support/export/client.c and
// export.c).
type table struct {
	names   resolver
	log     *logger
	clients [mclMax][]*client
	exports [mclMax][]*export
}

func newTable(names resolver, log *logger) *table { return &table{names: names, log: log} }

// add is export_add: the list of a type is ordered by hash bucket, a new
// bucket going first and an entry of a known bucket after the bucket's
// last entry. So `exportfs -ra` writes etab with the last path of the
// files first, and what reads etab back (exportfs -v, mountd) sees the
// first path first.
func (t *table) add(x *export) {
	list := t.exports[x.client.typ]
	h := exportHash(x.e.path)
	last := -1
	for i, o := range list {
		if exportHash(o.e.path) == h {
			last = i
		}
	}
	if last < 0 {
		t.exports[x.client.typ] = append([]*export{x}, list...)
		return
	}
	t.exports[x.client.typ] = slices.Insert(list, last+1, x)
}

// each calls fn for every export, type by type in list order.
func (t *table) each(fn func(*export)) {
	for typ := range mclMax {
		for _, x := range t.exports[typ] {
			fn(x)
		}
	}
}

// lookupClient is client_lookup: the known client hname names, or a new
// one. A host name is resolved first ("Failed to resolve NAME" when it
// cannot be) and stands for the client with one of its addresses; a
// subnetwork's address and mask are parsed ("Invalid IP address",
// "Invalid prefix", "Invalid netmask").
func (t *table) lookupClient(hname string) *client {
	typ := clientType(hname)
	var found *client
	var addrs []netip.Addr
	if typ == mclFQDN {
		canon, as, ok := t.names.lookup(hname)
		if !ok {
			t.log.warnf("Failed to resolve %s", hname)
			return nil
		}
		hname, addrs = canon, as
		for _, c := range t.clients[typ] {
			if c.matchesAny(addrs) {
				found = c
				break
			}
		}
	} else {
		for _, c := range t.clients[typ] {
			if strings.EqualFold(hname, c.hostname) {
				found = c
				break
			}
		}
	}
	if found == nil {
		found = &client{typ: typ, hostname: hname}
		if typ == mclSubnet && !t.initSubnet(found) {
			return nil
		}
		t.clients[typ] = append(t.clients[typ], found)
	}
	if typ == mclFQDN && len(found.addrs) == 0 {
		found.addrs = addrs[:min(len(addrs), 16)] // NFSCLNT_ADDRMAX
	}
	return found
}

// initSubnet is init_subnetwork: ADDRESS[/PREFIX|/NETMASK], the address
// strict (inet_pton), the prefix read as strtoul reads it.
func (t *table) initSubnet(c *client) bool {
	addrText, maskText, hasSlash := strings.Cut(c.hostname, "/")
	a, err := netip.ParseAddr(addrText)
	if err != nil || a.Zone() != "" {
		t.log.errorf("Invalid IP address %s", c.hostname)
		return false
	}
	c.network = a
	bits := a.BitLen()
	switch {
	case !hasSlash:
		c.mask = prefixMask(bits, bits)
	case a.Is4() && strings.Contains(maskText, "."), a.Is6() && strings.Contains(maskText, ":"):
		m, err := netip.ParseAddr(maskText)
		if err != nil || m.BitLen() != bits {
			t.log.errorf("Invalid netmask `%s' for %s", maskText, c.hostname)
			return false
		}
		c.mask = m.AsSlice()
	default:
		n, ok := strtoulPrefix(maskText)
		if !ok || n > uint64(bits) {
			t.log.errorf("Invalid prefix `%s' for %s", maskText, c.hostname)
			return false
		}
		c.mask = prefixMask(bits, int(n))
	}
	return true
}

// strtoulPrefix reads a prefix length as init_netmask4 does with
// strtoul: leading blanks and a sign allowed, nothing after the digits,
// and an empty string reads as 0.
func strtoulPrefix(s string) (uint64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	digits := len(t) - len(strings.TrimLeft(t, "0123456789"))
	switch {
	case digits == 0:
		return 0, s == ""
	case digits != len(t):
		return 0, false
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || neg && n != 0 {
		return ^uint64(0), true // ERANGE or a negated value: too large
	}
	return n, true
}

func prefixMask(bits, ones int) []byte {
	m := make([]byte, bits/8)
	for i := range m {
		switch {
		case ones >= 8:
			m[i] = 0xff
			ones -= 8
		case ones > 0:
			m[i] = byte(0xff << (8 - ones))
			ones = 0
		}
	}
	return m
}

// matchesAny is check_fqdn: one of the client's addresses is one of addrs.
func (c *client) matchesAny(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if slices.Contains(c.addrs, a) {
			return true
		}
	}
	return false
}

// check is client_check: does the client admit a caller at addr? A host
// name matches its addresses; a subnetwork by mask (host bits in the
// export ignored); a wildcard the caller's name and aliases, as the
// server's /etc/hosts gives them for its address (no name, no match);
// "*" everyone. Netgroups need NIS, which the simulation has not, and
// GSS clients use Kerberos, not AUTH_SYS: neither matches.
func (t *table) check(c *client, addr netip.Addr) bool {
	addr = addr.Unmap()
	switch c.typ {
	case mclFQDN:
		return slices.Contains(c.addrs, addr)
	case mclSubnet:
		if addr.BitLen() != c.network.BitLen() {
			return false
		}
		a, n := addr.AsSlice(), c.network.AsSlice()
		for i := range a {
			if (a[i]^n[i])&c.mask[i] != 0 {
				return false
			}
		}
		return true
	case mclWildcard:
		name, aliases, ok := t.names.reverse(addr)
		if !ok {
			return false
		}
		for _, n := range append([]string{name}, aliases...) {
			if wildmat(n, c.hostname) {
				return true
			}
		}
		return false
	case mclAnonymous:
		return true
	}
	return false
}

// wildmat is nfs-utils' wildmat (support/nfs/wildmat.c): '*', '?' and
// '[...]' (with '^' negation and ranges), '\' quoting, compared without
// case.
func wildmat(text, pattern string) bool {
	return doMatch(strings.ToUpper(text), strings.ToUpper(pattern)) == 1
}

// doMatch returns 1 for a match, 0 for none, -1 to abort the '*' search.
func doMatch(text, p string) int {
	ti := 0
	for pi := 0; pi < len(p); pi, ti = pi+1, ti+1 {
		if ti >= len(text) && p[pi] != '*' {
			return -1
		}
		switch p[pi] {
		case '\\':
			pi++
			if pi >= len(p) || text[ti] != p[pi] {
				return 0
			}
		case '?':
		case '*':
			for pi+1 < len(p) && p[pi+1] == '*' {
				pi++
			}
			if pi+1 >= len(p) {
				return 1
			}
			for ; ti < len(text); ti++ {
				if r := doMatch(text[ti:], p[pi+1:]); r != 0 {
					return r
				}
			}
			return -1
		case '[':
			rev := pi+1 < len(p) && p[pi+1] == '^'
			if rev {
				pi++
			}
			matched := false
			if pi+1 < len(p) && (p[pi+1] == ']' || p[pi+1] == '-') {
				pi++
				matched = p[pi] == text[ti]
			}
			last := p[pi]
			for pi++; pi < len(p) && p[pi] != ']'; pi++ {
				if p[pi] == '-' && pi+1 < len(p) && p[pi+1] != ']' {
					pi++
					if text[ti] <= p[pi] && text[ti] >= last {
						matched = true
					}
				} else if text[ti] == p[pi] {
					matched = true
				}
				last = p[pi]
			}
			if matched == rev {
				return 0
			}
		default:
			if text[ti] != p[pi] {
				return 0
			}
		}
	}
	if ti == len(text) {
		return 1
	}
	return 0
}

// lookup is export_lookup: the export of hname (resolved as a client)
// and path, nil if none.
func (t *table) lookup(hname, path string) *export {
	c := t.lookupClient(hname)
	if c == nil {
		return nil
	}
	for _, x := range t.exports[c.typ] {
		if x.client == c && x.e.path == path {
			return x
		}
	}
	return nil
}

// create is export_create: a new export for the entry, nil when its
// client is bad (the complaint already logged).
func (t *table) create(e entry) *export {
	c := t.lookupClient(e.hostname)
	if c == nil {
		return nil
	}
	x := &export{e: e.clone(), client: c}
	t.add(x)
	return x
}

// read is export_read: the entries of one exports file, up to its end or
// its first bad entry; it returns how many exports it created. An entry
// for a client and path already known is a duplicate, an error.
func (t *table) read(name string, data []byte, mask int, realpath func(string) (string, bool)) int {
	f := newExportsFile(name, data, t.log, mask, realpath)
	n := 0
	for {
		e, ok := f.next(true)
		if !ok {
			return n
		}
		x := t.lookup(e.hostname, e.path)
		if x == nil {
			if t.create(e) != nil {
				n++
			}
			continue
		}
		if x.e.flags != e.flags {
			t.log.errorf("incompatible duplicated export entries:")
			t.log.errorf("\t%s:%s (0x%x) [IGNORED]", e.hostname, e.path, e.flags)
			t.log.errorf("\t%s:%s (0x%x)", x.e.hostname, x.e.path, x.e.flags)
		} else {
			t.log.errorf("duplicated export entries:")
			t.log.errorf("\t%s:%s", e.hostname, e.path)
			t.log.errorf("\t%s:%s", x.e.hostname, x.e.path)
		}
	}
}

// exportsDir lists the files export_d_read reads in a directory: regular
// files and symbolic links whose names end in ".exports" (with something
// before it) and do not start with '.', in versionsort order.
func exportsDir(entries []fs.DirEntry) []string {
	var names []string
	for _, d := range entries {
		t := d.Type()
		if !t.IsRegular() && t&fs.ModeSymlink == 0 {
			continue
		}
		n := d.Name()
		if strings.HasPrefix(n, ".") || len(n) < len(".exports")+1 || !strings.HasSuffix(n, ".exports") {
			continue
		}
		names = append(names, n)
	}
	slices.SortFunc(names, strverscmp)
	return names
}

// strverscmp is glibc's strverscmp (string/strverscmp.c), which
// versionsort uses: digit runs compare as numbers, leading zeros as
// fractions.
func strverscmp(s1, s2 string) int {
	const (
		sN, sI, sF, sZ = 0, 3, 6, 9
		cmp, length    = 2, 3
	)
	next := []int{sN, sI, sZ, sN, sI, sI, sN, sF, sF, sN, sF, sZ}
	result := []int{
		cmp, cmp, cmp, cmp, length, cmp, cmp, cmp, cmp,
		cmp, -1, -1, +1, length, length, +1, length, length,
		cmp, cmp, cmp, cmp, cmp, cmp, cmp, cmp, cmp,
		cmp, +1, +1, -1, cmp, cmp, -1, cmp, cmp,
	}
	at := func(s string, i int) int {
		if i < len(s) {
			return int(s[i])
		}
		return 0
	}
	isDigit := func(c int) bool { return c >= '0' && c <= '9' }
	class := func(c int) int {
		n := 0
		if c == '0' {
			n++
		}
		if isDigit(c) {
			n++
		}
		return n
	}
	i := 0
	c1, c2 := at(s1, 0), at(s2, 0)
	i++
	state := sN + class(c1)
	for c1 == c2 {
		if c1 == 0 {
			return 0
		}
		state = next[state]
		c1, c2 = at(s1, i), at(s2, i)
		i++
		state += class(c1)
	}
	diff := c1 - c2
	switch r := result[state*3+class(c2)]; r {
	case cmp:
		return diff
	case length:
		j := i
		for isDigit(at(s1, j)) {
			if !isDigit(at(s2, j)) {
				return 1
			}
			j++
		}
		if isDigit(at(s2, j)) {
			return -1
		}
		return diff
	default:
		return r
	}
}
