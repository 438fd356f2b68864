package sshtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// moreCoreutils returns the fake programs for text processing, file
// management and host information, by name. Each parses its options with
// optionSpec, so that an option it does not model fails loudly, and prints
// what GNU coreutils (or procps, debianutils) print for the options it
// models.
func moreCoreutils() map[string]Program {
	return map[string]Program{
		"grep": grepProgram, "tee": teeProgram, "cp": cpProgram, "ln": lnProgram,
		"touch": touchProgram, "head": headProgram, "tail": tailProgram, "wc": wcProgram,
		"which": whichProgram, "whoami": whoamiProgram, "hostname": hostnameProgram,
		"uname": unameProgram, "basename": basenameProgram, "dirname": dirnameProgram,
		"readlink": readlinkProgram, "sort": sortProgram, "uniq": uniqProgram,
		"tr": trProgram, "cut": cutProgram, "ls": lsProgram, "kill": killProgram,
		"date": dateProgram, "pwd": pwdProgram, "printenv": printenvProgram,
		"realpath": realpathProgram, "dd": ddProgram,
	}
}

// inputs returns the operands that name inputs, standard input ("-") when
// there are none.
func inputs(operands []string) []string {
	if len(operands) == 0 {
		return []string{"-"}
	}
	return operands
}

// splitLines splits data into lines without their newlines; a last line
// without a newline counts.
func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// --- grep -----------------------------------------------------------------

// grepProgram: grep [-qsvcxilnhH] [-F|-G|-E] [-e PATTERN]... [PATTERN]
// [FILE...]. Exit status 0 when a line was selected, 1 when none, 2 on an
// error (0 with -q when a line was selected anyway).
//
// Patterns are translated to Go regular expressions (RE2): basic (-G, the
// default) and extended (-E) syntax with bracket expressions, POSIX classes,
// anchors, intervals, alternation and GNU's \< \> \b \w \s. Back-references
// (\1) are not supported and fail with exit status 2. Matching is by line;
// only whether a line matches is used, so RE2's leftmost-first semantics
// never show. Binary files are searched like text.
func grepProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{
		Short: "qsvcxilnhHFGEe:",
		Long: []string{"quiet", "silent", "no-messages", "invert-match", "count", "line-regexp", "ignore-case",
			"files-with-matches", "line-number", "no-filename", "with-filename", "fixed-strings",
			"basic-regexp", "extended-regexp", "regexp="},
	}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	patterns := c.Values("-e", "--regexp")
	operands := c.Operands
	if len(patterns) == 0 {
		if len(operands) == 0 {
			fmt.Fprintln(p.Stderr, "Usage: grep [OPTION]... PATTERNS [FILE]...")
			fmt.Fprintln(p.Stderr, "Try 'grep --help' for more information.")
			return 2
		}
		patterns, operands = operands[:1], operands[1:]
	}
	var pats []string
	for _, pat := range patterns {
		pats = append(pats, strings.Split(pat, "\n")...)
	}
	syntaxMode := "G"
	switch c.Last("-F", "--fixed-strings", "-E", "--extended-regexp", "-G", "--basic-regexp") {
	case "-F", "--fixed-strings":
		syntaxMode = "F"
	case "-E", "--extended-regexp":
		syntaxMode = "E"
	}
	re, err := compileGrep(pats, syntaxMode, c.Has("-i", "--ignore-case"), c.Has("-x", "--line-regexp"))
	if err != nil {
		return p.Fail(2, "%v", err)
	}
	quiet := c.Has("-q", "--quiet", "--silent")
	noMessages := c.Has("-s", "--no-messages")
	invert := c.Has("-v", "--invert-match")
	files := inputs(operands)
	withName := len(files) > 1
	switch c.Last("-h", "--no-filename", "-H", "--with-filename") {
	case "-h", "--no-filename":
		withName = false
	case "-H", "--with-filename":
		withName = true
	}
	selected, failed := false, false
	for _, name := range files {
		data, err := readInput(p, name)
		display := name
		if name == "-" {
			display = "(standard input)"
		}
		if err != nil {
			if !noMessages {
				p.Errorf("%s: %s", name, ErrMessage(err))
			}
			failed = true
			continue
		}
		prefix := ""
		if withName {
			prefix = display + ":"
		}
		count := 0
		for i, line := range splitLines(data) {
			if re.Match(line) == invert {
				continue
			}
			count++
			selected = true
			switch {
			case quiet:
				return 0
			case c.Has("-c", "--count"), c.Has("-l", "--files-with-matches"):
			case c.Has("-n", "--line-number"):
				fmt.Fprintf(p.Stdout, "%s%d:%s\n", prefix, i+1, line)
			default:
				fmt.Fprintf(p.Stdout, "%s%s\n", prefix, line)
			}
		}
		switch {
		case c.Has("-l", "--files-with-matches"):
			if count > 0 {
				fmt.Fprintln(p.Stdout, display)
			}
		case c.Has("-c", "--count"):
			fmt.Fprintf(p.Stdout, "%s%d\n", prefix, count)
		}
	}
	switch {
	case failed:
		return 2
	case selected:
		return 0
	}
	return 1
}

// compileGrep builds one regular expression matching any of the patterns.
func compileGrep(patterns []string, syntaxMode string, ignoreCase, wholeLine bool) (*regexp.Regexp, error) {
	alts := make([]string, len(patterns))
	for i, pat := range patterns {
		var err error
		switch syntaxMode {
		case "F":
			alts[i] = regexp.QuoteMeta(pat)
		case "E":
			alts[i], err = translateRegexp(pat, true)
		default:
			alts[i], err = translateRegexp(pat, false)
		}
		if err != nil {
			return nil, err
		}
		alts[i] = "(?:" + alts[i] + ")"
	}
	expr := strings.Join(alts, "|")
	if wholeLine {
		expr = "^(?:" + expr + ")$"
	}
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%v (the pattern is translated to Go's regexp syntax by sshtest)", err)
	}
	return re, nil
}

// translateRegexp turns a POSIX basic (extended when ere) regular
// expression, with GNU extensions, into Go syntax.
func translateRegexp(pat string, ere bool) (string, error) {
	var b strings.Builder
	atStart := true // where * is literal in a BRE and ^ is an anchor
	for i := 0; i < len(pat); i++ {
		ch := pat[i]
		start := atStart
		atStart = false
		switch {
		case ch == '[':
			end, ok := bracketEnd(pat, i)
			if !ok {
				return "", grepError("Unmatched [, [^, [:, [., or [=")
			}
			// Inside brackets a backslash is an ordinary character.
			b.WriteString(strings.ReplaceAll(pat[i:end+1], `\`, `\\`))
			i = end
		case ch == '\\':
			if i+1 == len(pat) {
				return "", grepError("Trailing backslash")
			}
			i++
			e := pat[i]
			switch {
			case e >= '1' && e <= '9':
				return "", fmt.Errorf("back-reference \\%c is not supported by sshtest's grep", e)
			case e == '<' || e == '>':
				b.WriteString(`\b`)
			case strings.IndexByte("wWsSbB", e) >= 0:
				b.WriteByte('\\')
				b.WriteByte(e)
			case !ere && strings.IndexByte("(){}|+?", e) >= 0:
				b.WriteByte(e) // \( \| \+ ... are operators in a BRE
				atStart = e == '(' || e == '|'
			default:
				b.WriteString(regexp.QuoteMeta(string(e)))
			}
		case !ere && strings.IndexByte("(){}|+?", ch) >= 0:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		case ch == '*' && (start || (ere && b.Len() == 0)):
			b.WriteString(`\*`)
		case ch == '^':
			if start || ere {
				b.WriteByte('^')
				atStart = !ere
			} else {
				b.WriteString(`\^`)
			}
		case ch == '$':
			if ere || i == len(pat)-1 || strings.HasPrefix(pat[i+1:], `\)`) || strings.HasPrefix(pat[i+1:], `\|`) {
				b.WriteByte('$')
			} else {
				b.WriteString(`\$`)
			}
		case ere && (ch == '(' || ch == '|'):
			b.WriteByte(ch)
			atStart = true
		case ch == '.' || ch == '*' || (ere && strings.IndexByte("(){}|+?", ch) >= 0):
			b.WriteByte(ch)
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	return b.String(), nil
}

// grepError is a pattern error worded as GNU grep words it.
type grepError string

func (e grepError) Error() string { return string(e) }

// bracketEnd finds the ] closing the bracket expression opened at pat[i].
func bracketEnd(pat string, i int) (int, bool) {
	j := i + 1
	if j < len(pat) && pat[j] == '^' {
		j++
	}
	if j < len(pat) && pat[j] == ']' {
		j++ // a leading ] is literal
	}
	for ; j < len(pat); j++ {
		switch {
		case pat[j] == '[' && j+1 < len(pat) && strings.IndexByte(":.=", pat[j+1]) >= 0:
			close := strings.Index(pat[j+2:], string(pat[j+1])+"]")
			if close < 0 {
				return 0, false
			}
			j += 2 + close + 1
		case pat[j] == ']':
			return j, true
		}
	}
	return 0, false
}

// --- tee, cp, ln, touch -------------------------------------------------------

// teeProgram: tee [-a] [-i] [FILE...]. /dev/stdout and /dev/stderr are the
// process's streams.
func teeProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "ai", Long: []string{"append", "ignore-interrupts"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	flag := syscall.O_WRONLY | syscall.O_CREAT | syscall.O_TRUNC
	if c.Has("-a", "--append") {
		flag = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_APPEND
	}
	status := 0
	type sink struct {
		name string
		w    io.Writer
	}
	sinks := []sink{{"standard output", p.Stdout}}
	for _, name := range c.Operands {
		switch name {
		case "/dev/stdout":
			sinks = append(sinks, sink{name, p.Stdout})
			continue
		case "/dev/stderr":
			sinks = append(sinks, sink{name, p.Stderr})
			continue
		}
		f, err := p.FS.OpenFile(name, flag, 0o666)
		if err != nil {
			status = p.Errorf("%s: %s", name, ErrMessage(err))
			continue
		}
		defer f.Close()
		sinks = append(sinks, sink{name, f})
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := p.Stdin.Read(buf)
		for i := range sinks {
			if n == 0 || sinks[i].w == nil {
				continue
			}
			if _, werr := sinks[i].w.Write(buf[:n]); werr != nil {
				status = p.Errorf("%s: %s", sinks[i].name, ErrMessage(werr))
				sinks[i].w = nil
			}
		}
		if err == io.EOF {
			return status
		}
		if err != nil {
			return p.Errorf("read error: %s", ErrMessage(err))
		}
	}
}

// cpProgram: cp [-f] [-p] [-r|-R|-a] [-T] SOURCE DEST, or SOURCE... DIR.
// Without -p a new file gets the source's mode less the umask and an
// existing one keeps its mode and owner (it is rewritten in place); -p
// keeps mode, times and (for root) ownership; -r copies directories,
// and symbolic links as links; -a is -rp.
func cpProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "fprRaT", Long: []string{"force", "preserve", "recursive", "archive", "no-target-directory"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	cp := copier{
		p:         p,
		force:     c.Has("-f", "--force"),
		preserve:  c.Has("-p", "--preserve", "-a", "--archive"),
		recursive: c.Has("-r", "-R", "--recursive", "-a", "--archive"),
	}
	srcs, dst, dstIsDir, code, ok := copyOperands(p, c)
	if !ok {
		return code
	}
	for _, src := range srcs {
		target := dst
		if dstIsDir {
			target = path.Join(dst, path.Base(src))
		}
		cp.copy(src, target)
	}
	return cp.status
}

type copier struct {
	p                          *Process
	force, preserve, recursive bool
	status                     int
}

func (cp *copier) fail(format string, args ...any) {
	cp.status = cp.p.Errorf(format, args...)
}

func (cp *copier) copy(src, dst string) {
	u := cp.p.FS
	var fi fs.FileInfo
	var err error
	if cp.recursive {
		fi, err = u.Lstat(src)
	} else {
		fi, err = u.Stat(src)
	}
	if err != nil {
		cp.fail("cannot stat %s: %s", qa(src), ErrMessage(err))
		return
	}
	dfi, derr := u.Stat(dst)
	switch {
	case fi.IsDir():
		cp.copyDir(src, dst, fi, dfi, derr)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := u.Readlink(src)
		if err == nil {
			if lfi, lerr := u.Lstat(dst); lerr == nil && !lfi.IsDir() {
				err = u.Remove(dst)
			}
		}
		if err == nil {
			err = u.Symlink(target, dst)
		}
		if err != nil {
			cp.fail("cannot create symbolic link %s: %s", qa(dst), ErrMessage(err))
		}
	default:
		cp.copyFile(src, dst, fi, dfi, derr)
	}
}

func (cp *copier) copyDir(src, dst string, fi, dfi fs.FileInfo, derr error) {
	u := cp.p.FS
	if !cp.recursive {
		cp.fail("-r not specified; omitting directory %s", qa(src))
		return
	}
	if a, b := u.Abs(src), u.Abs(dst); b == a || strings.HasPrefix(b, a+"/") {
		cp.fail("cannot copy a directory, %s, into itself, %s", qa(src), qa(dst))
		return
	}
	switch {
	case derr == nil && !dfi.IsDir():
		cp.fail("cannot overwrite non-directory %s with directory %s", qa(dst), qa(src))
		return
	case derr != nil:
		if err := u.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil {
			cp.fail("cannot create directory %s: %s", qa(dst), ErrMessage(err))
			return
		}
	}
	entries, err := u.ReadDir(src)
	if err != nil {
		cp.fail("cannot access %s: %s", qa(src), ErrMessage(err))
		return
	}
	for _, e := range entries {
		cp.copy(path.Join(src, e.Name()), path.Join(dst, e.Name()))
	}
	if derr != nil || cp.preserve {
		mode := fi.Mode().Perm() &^ u.Umask()
		if cp.preserve {
			mode = fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid | fs.ModeSetuid)
		}
		u.Chmod(dst, mode)
	}
	if cp.preserve {
		cp.preserveAttrs(src, dst, fi)
	}
}

func (cp *copier) copyFile(src, dst string, fi, dfi fs.FileInfo, derr error) {
	u := cp.p.FS
	if derr == nil {
		if dfi.IsDir() {
			cp.fail("cannot overwrite directory %s with non-directory", qa(dst))
			return
		}
		if a, err1 := u.Realpath(src); err1 == nil {
			if b, err2 := u.Realpath(dst); err2 == nil && a == b {
				cp.fail("%s and %s are the same file", qa(src), qa(dst))
				return
			}
		}
	}
	data, err := readInput(cp.p, src)
	if err != nil {
		cp.fail("cannot open %s for reading: %s", qa(src), ErrMessage(err))
		return
	}
	flag := syscall.O_WRONLY | syscall.O_CREAT | syscall.O_TRUNC
	f, err := u.OpenFile(dst, flag, fi.Mode().Perm())
	if err != nil && cp.force && derr == nil {
		if rerr := u.Remove(dst); rerr == nil {
			f, err = u.OpenFile(dst, flag, fi.Mode().Perm())
		}
	}
	if err != nil {
		cp.fail("cannot create regular file %s: %s", qa(dst), ErrMessage(err))
		return
	}
	_, err = f.Write(data)
	f.Close()
	if err != nil {
		cp.fail("error writing %s: %s", qa(dst), ErrMessage(err))
		return
	}
	if cp.preserve {
		u.Chmod(dst, fi.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid|fs.ModeSetuid))
		cp.preserveAttrs(src, dst, fi)
	}
}

// preserveAttrs copies ownership (when allowed: root, or a group the user
// is in) and the modification time, silently as cp -p does.
func (cp *copier) preserveAttrs(src, dst string, fi fs.FileInfo) {
	u := cp.p.FS
	uid, gid := Owner(fi)
	if u.Chown(dst, uid, gid) != nil {
		u.Chown(dst, -1, gid)
	}
	u.Chtimes(dst, fi.ModTime())
}

// lnProgram: ln [-s] [-f] [-n] [-T] TARGET [LINK], or TARGET... DIR.
// Without -s it makes hard links. With -f an existing LINK is replaced
// atomically (the new link is made under a temporary name and renamed).
func lnProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "sfnT", Long: []string{"symbolic", "force", "no-dereference", "no-target-directory"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	symbolic := c.Has("-s", "--symbolic")
	noTarget := c.Has("-T", "--no-target-directory")
	var targets []string
	var dest string
	switch len(c.Operands) {
	case 0:
		return p.usage(1, "missing file operand")
	case 1:
		targets, dest = c.Operands, "."
	default:
		targets, dest = c.Operands[:len(c.Operands)-1], c.Operands[len(c.Operands)-1]
	}
	destIsDir := false
	if !noTarget {
		stat := p.FS.Stat
		if c.Has("-n", "--no-dereference") {
			stat = p.FS.Lstat
		}
		if fi, err := stat(dest); err == nil && fi.IsDir() {
			destIsDir = true
		}
	}
	if len(targets) > 1 && !destIsDir {
		return p.Errorf("target %s is not a directory", qa(dest))
	}
	if noTarget && len(c.Operands) > 2 {
		return p.usage(1, "extra operand %s", qa(c.Operands[2]))
	}
	status := 0
	for _, target := range targets {
		link := dest
		if destIsDir {
			link = path.Join(dest, path.Base(target))
		}
		if !symbolic {
			if _, err := p.FS.Lstat(target); err != nil {
				status = p.Errorf("failed to access %s: %s", qa(target), ErrMessage(err))
				continue
			}
		}
		create := func(name string) error {
			if symbolic {
				return p.FS.Symlink(target, name)
			}
			return p.FS.Link(target, name)
		}
		err := create(link)
		if errors.Is(err, fs.ErrExist) && c.Has("-f", "--force") {
			if fi, lerr := p.FS.Lstat(link); lerr == nil && fi.IsDir() {
				status = p.Errorf("%s: cannot overwrite directory", qa(link))
				continue
			}
			tmp := path.Join(path.Dir(link), fmt.Sprintf(".%s.sshtest-ln%d", path.Base(link), time.Now().UnixNano()))
			if err = create(tmp); err == nil {
				if err = p.FS.Rename(tmp, link); err != nil {
					p.FS.Remove(tmp)
				}
			}
		}
		switch {
		case err == nil:
		case symbolic:
			status = p.Errorf("failed to create symbolic link %s: %s", qa(link), ErrMessage(err))
		case errors.Is(err, fs.ErrExist):
			status = p.Errorf("failed to create hard link %s: %s", qa(link), ErrMessage(err))
		default:
			status = p.Errorf("failed to create hard link %s => %s: %s", qa(link), qa(target), ErrMessage(err))
		}
	}
	return status
}

// touchProgram: touch [-c] [-a] [-m] FILE...: creates missing files (mode
// 0666 less the umask) and sets the modification time of existing ones to
// now.
func touchProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "cam", Long: []string{"no-create"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing file operand")
	}
	status := 0
	for _, name := range c.Operands {
		_, err := p.FS.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist) && c.Has("-c", "--no-create"):
			continue
		case errors.Is(err, fs.ErrNotExist):
			var f *File
			if f, err = p.FS.OpenFile(name, syscall.O_WRONLY|syscall.O_CREAT, 0o666); err == nil {
				f.Close()
			}
		case err == nil:
			err = p.FS.Chtimes(name, p.Host.fs.now())
			if errors.Is(err, syscall.EPERM) {
				err = syscall.EACCES // utimensat(2) to now: EACCES without write access
			}
		}
		if err != nil {
			status = p.Errorf("cannot touch %s: %s", qa(name), ErrMessage(err))
		}
	}
	return status
}

// --- head, tail, wc -------------------------------------------------------------

// obsoleteCount rewrites the obsolete count option of head and tail (-5)
// as -n 5.
func obsoleteCount(args []string) []string {
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "0123456789") == "" {
		return append([]string{"-n", args[0][1:]}, args[1:]...)
	}
	return args
}

// headProgram: head [-n [-]N | -c [-]N] [-q|-v] [FILE...]; -N is -n N.
// A negative count prints all but the last N lines or bytes.
func headProgram(_ context.Context, p *Process) int {
	return headTail(p, true)
}

// tailProgram: tail [-n [+]N | -c [+]N] [-q|-v] [FILE...]; -N is -n N.
// +N starts at line or byte N. -f is not modelled.
func tailProgram(_ context.Context, p *Process) int {
	return headTail(p, false)
}

func headTail(p *Process, head bool) int {
	c, code, ok := OptionSpec{Short: "n:c:qv", Long: []string{"lines=", "bytes=", "quiet", "silent", "verbose"}}.Parse(p, obsoleteCount(p.Args[1:]), false)
	if !ok {
		return code
	}
	spec, bytesMode := "10", false
	if opt := c.Last("-n", "--lines", "-c", "--bytes"); opt != "" {
		spec, _ = c.Value(opt)
		bytesMode = opt == "-c" || opt == "--bytes"
	}
	sign := ""
	if spec != "" && (spec[0] == '-' || spec[0] == '+') {
		sign, spec = spec[:1], spec[1:]
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 0 {
		what := "lines"
		if bytesMode {
			what = "bytes"
		}
		return p.Errorf("invalid number of %s: %s", what, p.q(sign+spec))
	}
	files := inputs(c.Operands)
	headers := (len(files) > 1 || c.Has("-v", "--verbose")) && !c.Has("-q", "--quiet", "--silent")
	status := 0
	for i, name := range files {
		data, err := readInput(p, name)
		if err != nil {
			if errors.Is(err, syscall.EISDIR) {
				status = p.Errorf("error reading %s: %s", qa(name), ErrMessage(err))
			} else {
				status = p.Errorf("cannot open %s for reading: %s", qa(name), ErrMessage(err))
			}
			continue
		}
		if headers {
			display := name
			if name == "-" {
				display = "standard input"
			}
			if i > 0 {
				fmt.Fprintln(p.Stdout)
			}
			fmt.Fprintf(p.Stdout, "==> %s <==\n", display)
		}
		p.Stdout.Write(cutCount(data, n, sign, head, bytesMode))
	}
	return status
}

// cutCount selects what head or tail prints.
func cutCount(data []byte, n int, sign string, head, bytesMode bool) []byte {
	// Offsets of the starts of lines (or bytes), plus the end.
	var bounds []int
	if bytesMode {
		bounds = make([]int, len(data)+1)
		for i := range bounds {
			bounds[i] = i
		}
	} else {
		bounds = []int{0}
		for i, b := range data {
			if b == '\n' {
				bounds = append(bounds, i+1)
			}
		}
		if bounds[len(bounds)-1] != len(data) {
			bounds = append(bounds, len(data))
		}
	}
	units := len(bounds) - 1
	from, to := 0, units
	switch {
	case head && sign == "-":
		to = max(units-n, 0)
	case head:
		to = min(n, units)
	case sign == "+":
		from = min(max(n-1, 0), units)
	default:
		from = max(units-n, 0)
	}
	return data[bounds[from]:bounds[to]]
}

// wcProgram: wc [-l] [-w] [-c] [FILE...], with GNU's column widths.
func wcProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "lwc", Long: []string{"lines", "words", "bytes"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	lines, words, chars := c.Has("-l", "--lines"), c.Has("-w", "--words"), c.Has("-c", "--bytes")
	if !lines && !words && !chars {
		lines, words, chars = true, true, true
	}
	files := inputs(c.Operands)
	type counts struct {
		l, w, c int
		name    string
		err     error
	}
	var results []counts
	var total counts
	width, regular := 1, 0
	minWidth := 1
	for _, name := range files {
		data, err := readInput(p, name)
		r := counts{name: name, err: err}
		if name == "-" {
			r.name = ""
			minWidth = 7
		}
		if err == nil {
			r.l = bytes.Count(data, []byte("\n"))
			r.w = len(bytes.Fields(data))
			r.c = len(data)
			if name != "-" {
				regular += len(data)
			}
		}
		total.l, total.w, total.c = total.l+r.l, total.w+r.w, total.c+r.c
		results = append(results, r)
	}
	single := len(files) == 1 && btoi(lines)+btoi(words)+btoi(chars) == 1
	if !single {
		for v := regular; v >= 10; v /= 10 {
			width++
		}
		width = max(width, minWidth)
	}
	print := func(r counts) {
		var fields []string
		if lines {
			fields = append(fields, fmt.Sprintf("%*d", width, r.l))
		}
		if words {
			fields = append(fields, fmt.Sprintf("%*d", width, r.w))
		}
		if chars {
			fields = append(fields, fmt.Sprintf("%*d", width, r.c))
		}
		if r.name != "" {
			fields = append(fields, r.name)
		}
		fmt.Fprintln(p.Stdout, strings.Join(fields, " "))
	}
	status := 0
	for _, r := range results {
		if r.err != nil {
			status = p.Errorf("%s: %s", r.name, ErrMessage(r.err))
			if !errors.Is(r.err, syscall.EISDIR) {
				continue
			}
		}
		print(r)
	}
	if len(files) > 1 {
		total.name = "total"
		print(total)
	}
	return status
}

// --- host information ---------------------------------------------------------------

// whichProgram: which [-a] NAME...: the path of each program found on PATH,
// exit status 1 when any is missing (debianutils' which).
func whichProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "a"}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return 1
	}
	pathEnv, set := lookupEnv(p.Env, "PATH")
	if !set {
		pathEnv = defaultPath
	}
	status := 0
	for _, name := range c.Operands {
		if strings.Contains(name, "/") {
			if checkExecutable(p.FS, name, p.FS.Abs(name)) == nil {
				fmt.Fprintln(p.Stdout, name)
			} else {
				status = 1
			}
			continue
		}
		found := false
		for _, dir := range strings.Split(pathEnv, ":") {
			f, _ := findOnPath(p.FS, dir, name)
			if f == "" {
				continue
			}
			fmt.Fprintln(p.Stdout, f)
			found = true
			if !c.Has("-a") {
				break
			}
		}
		if !found {
			status = 1
		}
	}
	return status
}

// whoamiProgram: whoami, the name of the effective user.
func whoamiProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) > 0 {
		return p.usage(1, "extra operand %s", p.q(c.Operands[0]))
	}
	uid := p.FS.Cred().UID
	name := userNameOr(p, uid, "")
	if name == "" {
		return p.Errorf("cannot find name for user ID %d", uid)
	}
	fmt.Fprintln(p.Stdout, name)
	return 0
}

// hostName is the host's name as /etc/hostname has it.
func hostName(p *Process) string {
	data, err := p.Host.fs.ReadFile("/etc/hostname")
	if err != nil {
		return "localhost"
	}
	name, _, _ := strings.Cut(string(data), "\n")
	if name = strings.TrimSpace(name); name == "" {
		return "localhost"
	}
	return name
}

// hostnameProgram: hostname [-s|-f|-i|-I]: the name in /etc/hostname (the
// short one with -s), or the server's IP address with -i and -I. Setting
// the name is not modelled.
func hostnameProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "sfAiI", Long: []string{"short", "fqdn", "long", "all-fqdns", "ip-address", "all-ip-addresses"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) > 0 {
		return p.Fail(2, "setting the host name is not modelled by sshtest")
	}
	name := hostName(p)
	switch c.Last("-s", "--short", "-f", "--fqdn", "--long", "-A", "--all-fqdns", "-i", "--ip-address", "-I", "--all-ip-addresses") {
	case "-s", "--short":
		name, _, _ = strings.Cut(name, ".")
	case "-A", "--all-fqdns":
		name += " " // the real one ends the list with a space
	case "-I", "--all-ip-addresses":
		name = p.Host.IP() + " "
	case "-i", "--ip-address":
		name = p.Host.IP()
	}
	fmt.Fprintln(p.Stdout, name)
	return 0
}

// Fixed answers of uname: an x86_64 Ubuntu kernel.
const (
	unameRelease = "5.15.0-fake"
	unameVersion = "#1 SMP sshtest"
	unameMachine = "x86_64"
)

// unameProgram: uname [-asnrvmpio].
func unameProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "asnrvmpio", Long: []string{"all", "kernel-name", "nodename", "kernel-release", "kernel-version", "machine", "processor", "hardware-platform", "operating-system"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) > 0 {
		return p.usage(1, "extra operand %s", p.q(c.Operands[0]))
	}
	all := c.Has("-a", "--all")
	fields := []struct {
		short, long, value string
	}{
		{"-s", "--kernel-name", "Linux"},
		{"-n", "--nodename", hostName(p)},
		{"-r", "--kernel-release", unameRelease},
		{"-v", "--kernel-version", unameVersion},
		{"-m", "--machine", unameMachine},
		{"-p", "--processor", unameMachine},
		{"-i", "--hardware-platform", unameMachine},
		{"-o", "--operating-system", "GNU/Linux"},
	}
	var out []string
	for _, f := range fields {
		if all || c.Has(f.short, f.long) {
			out = append(out, f.value)
		}
	}
	if len(out) == 0 {
		out = []string{"Linux"}
	}
	fmt.Fprintln(p.Stdout, strings.Join(out, " "))
	return 0
}

// --- names ----------------------------------------------------------------------------

// basenameProgram: basename NAME [SUFFIX], or basename [-a] [-s SUFFIX]
// NAME...
func basenameProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "as:", Long: []string{"multiple", "suffix="}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	suffix, hasSuffix := c.Value("-s", "--suffix")
	multiple := c.Has("-a", "--multiple") || hasSuffix
	names := c.Operands
	switch {
	case len(names) == 0:
		return p.usage(1, "missing operand")
	case !multiple && len(names) > 2:
		return p.usage(1, "extra operand %s", p.q(names[2]))
	case !multiple && len(names) == 2:
		suffix, names = names[1], names[:1]
	}
	for _, name := range names {
		fmt.Fprintln(p.Stdout, baseName(name, suffix))
	}
	return 0
}

// baseName strips directories and a suffix as basename(1) does.
func baseName(name, suffix string) string {
	trimmed := strings.TrimRight(name, "/")
	if trimmed == "" {
		if name == "" {
			return ""
		}
		return "/"
	}
	base := trimmed[strings.LastIndexByte(trimmed, '/')+1:]
	if suffix != "" && base != suffix {
		base = strings.TrimSuffix(base, suffix)
	}
	return base
}

// dirnameProgram: dirname NAME...
func dirnameProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing operand")
	}
	for _, name := range c.Operands {
		fmt.Fprintln(p.Stdout, dirName(name))
	}
	return 0
}

// dirName strips the last element of a name as dirname(1) does.
func dirName(name string) string {
	abs := strings.HasPrefix(name, "/")
	d := strings.TrimRight(name, "/")
	if i := strings.LastIndexByte(d, '/'); i >= 0 {
		d = strings.TrimRight(d[:i], "/")
	} else {
		d = ""
	}
	switch {
	case d != "":
		return d
	case abs:
		return "/"
	}
	return "."
}

// pwdProgram: pwd [-L|-P], the coreutils program: -P (resolve links) is
// the default, unlike the shell builtin.
func pwdProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "LP", Long: []string{"logical", "physical"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) > 0 {
		return p.usage(1, "extra operand %s", p.q(c.Operands[0]))
	}
	if mode := c.Last("-L", "--logical", "-P", "--physical"); mode == "-L" || mode == "--logical" {
		if pwd := p.Getenv("PWD"); path.IsAbs(pwd) {
			if real, err := p.FS.Realpath(pwd); err == nil {
				if cur, err := p.FS.Realpath(p.Dir); err == nil && real == cur {
					fmt.Fprintln(p.Stdout, pwd)
					return 0
				}
			}
		}
	}
	dir, err := p.FS.Realpath(p.Dir)
	if err != nil {
		return p.Errorf("couldn't find directory entry in %s with matching i-node", p.q(".."))
	}
	fmt.Fprintln(p.Stdout, dir)
	return 0
}

// printenvProgram: printenv [NAME...]: the whole environment, or the values
// of the named variables (exit status 1 when one is unset).
func printenvProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		for _, kv := range p.Env {
			fmt.Fprintln(p.Stdout, kv)
		}
		return 0
	}
	status := 0
	for _, name := range c.Operands {
		if v, ok := lookupEnv(p.Env, name); ok && !strings.Contains(name, "=") {
			fmt.Fprintln(p.Stdout, v)
		} else {
			status = 1
		}
	}
	return status
}

// realpathProgram: realpath [-e|-m] [-s] NAME...: the absolute name with
// links resolved; the last element may be missing unless -e.
func realpathProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "eqs", Long: []string{"canonicalize-existing", "quiet", "strip", "no-symlinks"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing operand")
	}
	status := 0
	for _, name := range c.Operands {
		var out string
		var err error
		switch {
		case c.Has("-s", "--strip", "--no-symlinks"):
			out = p.FS.Abs(name)
		case c.Has("-e", "--canonicalize-existing"):
			out, err = p.FS.Realpath(name)
		default:
			out, err = p.FS.canonical(name, false)
		}
		if err != nil {
			if !c.Has("-q", "--quiet") {
				p.Errorf("%s: %s", name, ErrMessage(err))
			}
			status = 1
			continue
		}
		fmt.Fprintln(p.Stdout, out)
	}
	return status
}

// readlinkProgram: readlink [-f|-e] [-n] [-q|-s|-v] NAME... Without -f
// or -e it prints a symbolic link's target; -f resolves every link (the
// last element may be missing), -e requires that everything exists.
func readlinkProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "fenqsv", Long: []string{"canonicalize", "canonicalize-existing", "no-newline", "quiet", "silent", "verbose"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing operand")
	}
	end := "\n"
	if c.Has("-n", "--no-newline") && len(c.Operands) == 1 {
		end = ""
	}
	mode := c.Last("-f", "--canonicalize", "-e", "--canonicalize-existing")
	verbose := c.Has("-v", "--verbose") && !c.Has("-q", "--quiet", "-s", "--silent")
	status := 0
	for _, name := range c.Operands {
		var out string
		var err error
		switch mode {
		case "-f", "--canonicalize":
			out, err = p.FS.canonical(name, false)
		case "-e", "--canonicalize-existing":
			out, err = p.FS.Realpath(name)
		default:
			out, err = p.FS.Readlink(name)
		}
		if err != nil {
			if verbose {
				p.Errorf("%s: %s", name, ErrMessage(err))
			}
			status = 1
			continue
		}
		fmt.Fprint(p.Stdout, out+end)
	}
	return status
}

// --- sort, uniq, tr, cut ------------------------------------------------------------------

// sortProgram: sort [-u] [-n] [-r] [FILE...], in byte order (the C.UTF-8
// locale's). -n compares leading numbers (lines without one count as 0);
// ties are broken by comparing whole lines, except that with -u lines with
// equal keys are duplicates and only the first is kept.
func sortProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "unr", Long: []string{"unique", "numeric-sort", "reverse"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	var lines [][]byte
	for _, name := range inputs(c.Operands) {
		data, err := readInput(p, name)
		if err != nil {
			return p.Fail(2, "cannot read: %s: %s", name, ErrMessage(err))
		}
		lines = append(lines, splitLines(data)...)
	}
	numeric := c.Has("-n", "--numeric-sort")
	reverse := c.Has("-r", "--reverse")
	unique := c.Has("-u", "--unique")
	key := func(a, b []byte) int {
		if numeric {
			return compareNumeric(a, b)
		}
		return bytes.Compare(a, b)
	}
	cmp := func(a, b []byte) int {
		r := key(a, b)
		if r == 0 && !unique {
			r = bytes.Compare(a, b)
		}
		if reverse {
			r = -r
		}
		return r
	}
	slices.SortStableFunc(lines, cmp)
	for i, line := range lines {
		if unique && i > 0 && key(lines[i-1], line) == 0 {
			continue
		}
		fmt.Fprintf(p.Stdout, "%s\n", line)
	}
	return 0
}

// compareNumeric compares the numbers at the start of two lines as sort -n
// does, exactly (no floating point): optional blanks, an optional minus
// sign, digits, an optional fraction.
func compareNumeric(a, b []byte) int {
	na, ia, fa := parseSortNumber(a)
	nb, ib, fb := parseSortNumber(b)
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	r := compareMagnitude(ia, fa, ib, fb)
	if na {
		r = -r
	}
	return r
}

func parseSortNumber(s []byte) (neg bool, intPart, frac string) {
	s = bytes.TrimLeft(s, " \t")
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart = strings.TrimLeft(string(s[:i]), "0")
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		frac = strings.TrimRight(string(s[i+1:j]), "0")
	}
	if intPart == "" && frac == "" {
		neg = false // -0 is 0
	}
	return neg, intPart, frac
}

func compareMagnitude(ia, fa, ib, fb string) int {
	if len(ia) != len(ib) {
		if len(ia) < len(ib) {
			return -1
		}
		return 1
	}
	if r := strings.Compare(ia, ib); r != 0 {
		return r
	}
	return strings.Compare(fa, fb)
}

// uniqProgram: uniq [-c] [-d] [-u] [-i] [INPUT [OUTPUT]].
func uniqProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "cdui", Long: []string{"count", "repeated", "unique", "ignore-case"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) > 2 {
		return p.usage(1, "extra operand %s", p.q(c.Operands[2]))
	}
	in := "-"
	if len(c.Operands) > 0 {
		in = c.Operands[0]
	}
	data, err := readInput(p, in)
	if err != nil {
		return p.Errorf("%s: %s", in, ErrMessage(err))
	}
	out := p.Stdout
	if len(c.Operands) == 2 && c.Operands[1] != "-" {
		f, err := p.FS.OpenFile(c.Operands[1], syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o666)
		if err != nil {
			return p.Errorf("%s: %s", c.Operands[1], ErrMessage(err))
		}
		defer f.Close()
		out = f
	}
	equal := bytes.Equal
	if c.Has("-i", "--ignore-case") {
		equal = bytes.EqualFold
	}
	lines := splitLines(data)
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && equal(lines[i], lines[j]) {
			j++
		}
		n := j - i
		switch {
		case c.Has("-d", "--repeated") && n == 1:
		case c.Has("-u", "--unique") && n > 1:
		case c.Has("-c", "--count"):
			fmt.Fprintf(out, "%7d %s\n", n, lines[i])
		default:
			fmt.Fprintf(out, "%s\n", lines[i])
		}
		i = j
	}
	return 0
}

// trProgram: tr [-d] [-s] SET1 [SET2], bytewise. Sets are characters,
// ranges (a-z), backslash escapes (\n \t \\ \NNN) and the classes
// [:alpha:] [:digit:] [:alnum:] [:lower:] [:upper:] [:space:] [:blank:]
// [:punct:]. SET2 is padded with its last character. -c and [c*n] are not
// modelled.
func trProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "ds", Long: []string{"delete", "squeeze-repeats"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	del, squeeze := c.Has("-d", "--delete"), c.Has("-s", "--squeeze-repeats")
	ops := c.Operands
	switch {
	case len(ops) == 0:
		return p.usage(1, "missing operand")
	case del && !squeeze && len(ops) > 1:
		p.Errorf("extra operand %s", p.q(ops[1]))
		fmt.Fprintln(p.Stderr, "Only one string may be given when deleting without squeezing repeats.")
		fmt.Fprintf(p.Stderr, "Try '%s --help' for more information.\n", p.Name())
		return 1
	case !del && !squeeze && len(ops) == 1:
		p.Errorf("missing operand after %s", p.q(ops[0]))
		fmt.Fprintln(p.Stderr, "Two strings must be given when translating.")
		fmt.Fprintf(p.Stderr, "Try '%s --help' for more information.\n", p.Name())
		return 1
	case len(ops) > 2:
		return p.usage(1, "extra operand %s", p.q(ops[2]))
	}
	set1, err := expandTrSet(ops[0])
	if err != nil {
		return p.Errorf("%v", err)
	}
	var set2 []byte
	if len(ops) == 2 {
		if set2, err = expandTrSet(ops[1]); err != nil {
			return p.Errorf("%v", err)
		}
	}
	var table [256]int // -1 delete, else the replacement byte
	for i := range table {
		table[i] = i
	}
	translate := !del && len(ops) == 2
	if translate {
		if len(set2) == 0 {
			return p.Errorf("when not truncating set1, string2 must be non-empty")
		}
		for i, b := range set1 {
			table[b] = int(set2[min(i, len(set2)-1)])
		}
	}
	if del {
		for _, b := range set1 {
			table[b] = -1
		}
	}
	var squeezeSet [256]bool
	if squeeze {
		s := set1
		if len(ops) == 2 {
			s = set2
		}
		for _, b := range s {
			squeezeSet[b] = true
		}
	}
	data, err := io.ReadAll(p.Stdin)
	if err != nil {
		return p.Errorf("read error: %s", ErrMessage(err))
	}
	out := make([]byte, 0, len(data))
	for _, b := range data {
		t := table[b]
		if t < 0 {
			continue
		}
		if squeeze && squeezeSet[t] && len(out) > 0 && out[len(out)-1] == byte(t) {
			continue
		}
		out = append(out, byte(t))
	}
	p.Stdout.Write(out)
	return 0
}

// trClasses are the character classes tr knows, in the C locale.
var trClasses = map[string]func(b byte) bool{
	"alpha": func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' },
	"digit": func(b byte) bool { return b >= '0' && b <= '9' },
	"alnum": func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' },
	"lower": func(b byte) bool { return b >= 'a' && b <= 'z' },
	"upper": func(b byte) bool { return b >= 'A' && b <= 'Z' },
	"space": func(b byte) bool { return b == ' ' || b >= '\t' && b <= '\r' },
	"blank": func(b byte) bool { return b == ' ' || b == '\t' },
	"punct": func(b byte) bool {
		return b > ' ' && b < 0x7f && !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9')
	},
}

// expandTrSet expands a tr set into its bytes, in order.
func expandTrSet(s string) ([]byte, error) {
	// First the escapes and classes, into tokens, so that a range can be
	// recognised between them; an escaped dash is not a range.
	type token struct {
		b       byte
		class   []byte
		escaped bool
	}
	var toks []token
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			if s[i] >= '0' && s[i] <= '7' {
				v, j := 0, i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					v = v*8 + int(s[j]-'0')
					j++
				}
				toks = append(toks, token{b: byte(v), escaped: true})
				i = j - 1
				continue
			}
			toks = append(toks, token{b: unescapeByte(s[i]), escaped: true})
		case strings.HasPrefix(s[i:], "[:") && strings.Contains(s[i:], ":]"):
			end := strings.Index(s[i:], ":]")
			name := s[i+2 : i+end]
			class, ok := trClasses[name]
			if !ok {
				return nil, fmt.Errorf("invalid character class %s", "'"+name+"'")
			}
			var members []byte
			for b := 0; b < 256; b++ {
				if class(byte(b)) {
					members = append(members, byte(b))
				}
			}
			toks = append(toks, token{class: members})
			i += end + 1
		default:
			toks = append(toks, token{b: s[i]})
		}
	}
	var chars []byte
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.class != nil {
			chars = append(chars, t.class...)
			continue
		}
		if i+2 < len(toks) && toks[i+1].b == '-' && !toks[i+1].escaped && toks[i+1].class == nil && toks[i+2].class == nil {
			lo, hi := t.b, toks[i+2].b
			if hi < lo {
				return nil, fmt.Errorf("range-endpoints of '%c-%c' are in reverse collating sequence order", lo, hi)
			}
			for b := int(lo); b <= int(hi); b++ {
				chars = append(chars, byte(b))
			}
			i += 2
			continue
		}
		chars = append(chars, t.b)
	}
	return chars, nil
}

// unescapeByte maps the letter of a C escape (n in \n) to its byte; other
// bytes stand for themselves.
func unescapeByte(e byte) byte {
	switch e {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'v':
		return '\v'
	}
	return e
}

// cutProgram: cut -f LIST [-d DELIM] [-s] [--output-delimiter=STRING]
// [FILE...], or cut -b LIST / -c LIST (bytes). LIST is N, N-M, N-, -M,
// separated by commas.
func cutProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "d:f:sb:c:", Long: []string{"delimiter=", "fields=", "only-delimited", "bytes=", "characters=", "output-delimiter="}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	kinds := 0
	for _, names := range [][]string{{"-f", "--fields"}, {"-b", "--bytes"}, {"-c", "--characters"}} {
		if c.Has(names...) {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return p.usage(1, "you must specify a list of bytes, characters, or fields")
	case kinds > 1:
		return p.usage(1, "only one type of list may be specified")
	}
	fields := c.Has("-f", "--fields")
	list, _ := c.Value("-f", "--fields", "-b", "--bytes", "-c", "--characters")
	delim, hasDelim := c.Value("-d", "--delimiter")
	switch {
	case !fields && hasDelim:
		return p.usage(1, "an input delimiter may be specified only when operating on fields")
	case !fields && c.Has("-s", "--only-delimited"):
		return p.usage(1, "suppressing non-delimited lines makes sense\n\tonly when operating on fields")
	case !hasDelim:
		delim = "\t"
	case len(delim) != 1:
		return p.usage(1, "the delimiter must be a single character")
	}
	ranges, msg := parseCutList(list, fields)
	if msg != "" {
		return p.usage(1, "%s", msg)
	}
	outDelim, ok := c.Value("--output-delimiter")
	if !ok {
		outDelim = delim
	}
	selected := func(n int) bool {
		for _, r := range ranges {
			if n >= r[0] && n <= r[1] {
				return true
			}
		}
		return false
	}
	status := 0
	for _, name := range inputs(c.Operands) {
		data, err := readInput(p, name)
		if err != nil {
			status = p.Errorf("%s: %s", name, ErrMessage(err))
			continue
		}
		for _, line := range splitLines(data) {
			var out []byte
			if fields {
				if bytes.IndexByte(line, delim[0]) < 0 {
					if !c.Has("-s", "--only-delimited") {
						fmt.Fprintf(p.Stdout, "%s\n", line)
					}
					continue
				}
				var picked [][]byte
				for i, f := range bytes.Split(line, []byte(delim)) {
					if selected(i + 1) {
						picked = append(picked, f)
					}
				}
				out = bytes.Join(picked, []byte(outDelim))
			} else {
				for i, b := range line {
					if selected(i + 1) {
						out = append(out, b)
					}
				}
			}
			fmt.Fprintf(p.Stdout, "%s\n", out)
		}
	}
	return status
}

// parseCutList parses a cut list into inclusive ranges (1-based).
func parseCutList(list string, fields bool) ([][2]int, string) {
	numbered := "byte/character positions are numbered from 1"
	invalid := "invalid byte/character position " + "'" + list + "'"
	if fields {
		numbered = "fields are numbered from 1"
		invalid = "invalid field value " + "'" + list + "'"
	}
	var out [][2]int
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		r := [2]int{1, 1 << 30}
		var err error
		if lo != "" {
			if r[0], err = strconv.Atoi(lo); err != nil {
				return nil, invalid
			}
		}
		switch {
		case !isRange:
			r[1] = r[0]
		case hi != "":
			if r[1], err = strconv.Atoi(hi); err != nil {
				return nil, invalid
			}
		case lo == "":
			return nil, "invalid range with no endpoint: -"
		}
		if r[0] == 0 || r[1] == 0 {
			return nil, numbered
		}
		if r[1] < r[0] {
			return nil, "invalid decreasing range"
		}
		out = append(out, r)
	}
	return out, ""
}

// --- ls ---------------------------------------------------------------------------------------

// lsProgram: ls [-1] [-a|-A] [-d] [-l] [NAME...], one name per line (as
// when the output is not a terminal), sorted by byte value. -l prints mode,
// link count (1 for files, 2 plus subdirectories for directories), owner,
// group, size (major, minor for a device), modification time and name, with
// "-> target" for a link, and a "total" of 1K blocks (4K per non-empty
// block) per directory.
func lsProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "1aAdl", Long: []string{"all", "almost-all", "directory"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	long := c.Has("-l")
	listDirs := !c.Has("-d", "--directory")
	names := c.Operands
	if len(names) == 0 {
		names = []string{"."}
	}
	type entry struct {
		name string
		fi   fs.FileInfo
		path string // for reading a link target
	}
	var files []entry
	var dirs []string
	status := 0
	for _, name := range names {
		fi, err := p.FS.Lstat(name)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 && (!long || strings.HasSuffix(name, "/")) && listDirs {
			if tfi, terr := p.FS.Stat(name); terr == nil {
				fi = tfi
			}
		}
		if err != nil {
			fmt.Fprintf(p.Stderr, "%s: cannot access %s: %s\n", p.Name(), qa(name), ErrMessage(err))
			status = 2
			continue
		}
		if fi.IsDir() && listDirs {
			dirs = append(dirs, name)
		} else {
			files = append(files, entry{name, fi, name})
		}
	}
	slices.SortFunc(files, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	slices.Sort(dirs)

	print := func(list []entry, total bool) {
		if !long {
			for _, e := range list {
				fmt.Fprintln(p.Stdout, e.name)
			}
			return
		}
		rows := make([][]string, len(list))
		blocks := int64(0)
		for i, e := range list {
			uid, gid := Owner(e.fi)
			size := strconv.FormatInt(e.fi.Size(), 10)
			if e.fi.Mode()&fs.ModeDevice != 0 {
				size = "1, 3" // /dev/null is the only device
			}
			links := "1"
			if e.fi.IsDir() {
				n := 2
				if sub, err := p.FS.ReadDir(e.path); err == nil {
					for _, s := range sub {
						if s.IsDir() {
							n++
						}
					}
				}
				links = strconv.Itoa(n)
			}
			name := e.name
			if e.fi.Mode()&fs.ModeSymlink != 0 {
				if t, err := p.FS.Readlink(e.path); err == nil {
					name += " -> " + t
				}
			}
			if e.fi.Mode().IsRegular() || e.fi.IsDir() {
				blocks += (e.fi.Size() + 4095) / 4096 * 4
			}
			rows[i] = []string{lsMode(e.fi.Mode()), links, userNameOr(p, uid, strconv.Itoa(uid)), groupNameOr(p, gid, strconv.Itoa(gid)), size, lsTime(e.fi.ModTime(), p.Host.fs.now()), name}
		}
		if total {
			fmt.Fprintf(p.Stdout, "total %d\n", blocks)
		}
		widths := make([]int, 7)
		for _, r := range rows {
			for j, f := range r {
				widths[j] = max(widths[j], len(f))
			}
		}
		for _, r := range rows {
			fmt.Fprintf(p.Stdout, "%s %*s %-*s %-*s %*s %s %s\n", r[0], widths[1], r[1], widths[2], r[2], widths[3], r[3], widths[4], r[4], r[5], r[6])
		}
	}

	print(files, false)
	for i, dir := range dirs {
		if len(files) > 0 || i > 0 {
			fmt.Fprintln(p.Stdout)
		}
		if len(names) > 1 {
			fmt.Fprintf(p.Stdout, "%s:\n", dir)
		}
		entries, err := p.FS.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(p.Stderr, "%s: cannot open directory %s: %s\n", p.Name(), qa(dir), ErrMessage(err))
			status = 2
			continue
		}
		var list []entry
		if c.Has("-a", "--all") {
			for _, dot := range []string{".", ".."} {
				if fi, err := p.FS.Stat(path.Join(dir, dot)); err == nil {
					list = append(list, entry{dot, fi, path.Join(dir, dot)})
				}
			}
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && !c.Has("-a", "--all", "-A", "--almost-all") {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			list = append(list, entry{e.Name(), fi, path.Join(dir, e.Name())})
		}
		print(list, true)
	}
	return status
}

// lsMode renders a mode as ls -l does: drwxr-sr-t.
func lsMode(m fs.FileMode) string {
	b := []byte("----------")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeDevice != 0:
		b[0] = 'b'
	}
	for i, c := range "rwxrwxrwx" {
		if m&(1<<(8-i)) != 0 {
			b[i+1] = byte(c)
		}
	}
	special := func(i int, set bool, exec, noExec byte) {
		if !set {
			return
		}
		if b[i] == 'x' {
			b[i] = exec
		} else {
			b[i] = noExec
		}
	}
	special(3, m&fs.ModeSetuid != 0, 's', 'S')
	special(6, m&fs.ModeSetgid != 0, 's', 'S')
	special(9, m&fs.ModeSticky != 0, 't', 'T')
	return string(b)
}

// lsTime renders a modification time as ls -l does: the time of day
// within six months of now, the year otherwise.
func lsTime(t, now time.Time) string {
	if d := now.Sub(t); d < 182*24*time.Hour && d > -time.Hour {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}

// --- kill, date -----------------------------------------------------------------------------

// killProgram: procps' kill [-s SIGNAL | -SIGNAL] PID... There are no
// processes on a fake host, so every PID is unknown: exit status 1.
func killProgram(_ context.Context, p *Process) int {
	pids, problem := killOperands(p.Args[1:])
	switch {
	case problem != "":
		return p.Fail(2, "%s", problem)
	case len(pids) == 0:
		return p.Fail(2, "not enough arguments")
	}
	for _, pid := range pids {
		if _, err := strconv.Atoi(pid); err != nil {
			fmt.Fprintf(p.Stderr, "%s: failed to parse argument: '%s'\n", p.Args[0], pid)
			continue
		}
		fmt.Fprintf(p.Stderr, "%s: (%s): No such process\n", p.Args[0], pid)
	}
	return 1
}

// dateProgram: date [-u] +%s, the seconds since the epoch. Other formats
// are not modelled.
func dateProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "u", Long: []string{"utc", "universal"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) != 1 || c.Operands[0] != "+%s" {
		return p.Fail(2, "only 'date +%%s' is modelled by sshtest")
	}
	fmt.Fprintln(p.Stdout, p.Host.fs.now().Unix())
	return 0
}
