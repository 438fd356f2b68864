package kubespray

import (
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file reads what ansible-playbook prints with its default stdout
// callback (lib/ansible/plugins/callback/default.py, ansible-core v2.14.17
// to v2.18.0rc1, the same in v2.9.20). ansible-core has no machine-readable
// stdout callback of its own: "json" is ansible.posix's, and bare
// ansible-core refuses it ("Invalid callback for stdout specified: json",
// facts §2), so the text is parsed. kubespray/testdata/ansible holds real
// outputs of Debian 12's ansible-core 2.14.18, captured by realtest's
// TestAnsiblePlaybook; the tests here run the parser over them.

// Recap is what a playbook run reported: the PLAY RECAP counters per host
// and each failure line.
type Recap struct {
	// Hosts are the PLAY RECAP lines by host name; nil when no PLAY RECAP
	// was printed (ansible-playbook stopped before running a play). A host
	// absent from the inventory or matched by no play is absent here.
	Hosts map[string]HostStats
	// Failures are the failure lines in the order they were printed,
	// ignored and rescued ones included.
	Failures []Failure
	// Errors are the first lines of "ERROR! ..." messages (ansible-playbook
	// prints them on standard error when it stops before or outside the
	// hosts' tasks: no inventory parsed, a --limit matching nothing, a
	// playbook that does not parse). Empty unless standard error is fed
	// too.
	Errors []string
}

// HostStats is one PLAY RECAP line's counters: "%-26s : ok=%-4s
// changed=%-4s unreachable=%-4s failed=%-4s skipped=%-4s rescued=%-4s
// ignored=%-4s" (default.py v2_playbook_on_stats; failed is the
// "failures" stat).
type HostStats struct {
	OK, Changed, Unreachable, Failed, Skipped, Rescued, Ignored int
}

// Failure is one failure line: "fatal: [HOST]: FAILED! => {json}",
// "fatal: [HOST -> DELEGATE]: FAILED! => {json}", "failed: [HOST]
// (item=ITEM) => {json}" or "fatal: [HOST]: UNREACHABLE! => {json}".
type Failure struct {
	// Host is the inventory host the task ran for.
	Host string
	// Delegate is the host a delegated task ran on (delegate_to), "" when
	// not delegated. Ansible prints "HOST -> DELEGATE(ADDRESS)" when the
	// delegate's ansible_host differs from its name (default.py
	// host_label); the address is dropped here.
	Delegate string
	// Task is the name of the preceding "TASK [role : name]" (or "RUNNING
	// HANDLER [...]") banner, as printed: "role : name".
	Task string
	// Item is a loop item's label, "" outside loops.
	Item string
	// Unreachable is set for "UNREACHABLE!".
	Unreachable bool
	// Ignored is set when "...ignoring" followed (ignore_errors,
	// ignore_unreachable): the host went on.
	Ignored bool
	// Message is the result's "msg", followed by the last lines of its
	// stderr (or module_stderr) when it has one; the JSON may have spanned
	// several lines (assert results are printed indented). When the JSON
	// does not parse it is the raw text, cut to [maxMessage].
	Message string
}

// Limits on what a failure keeps: a failed shell task's JSON holds its
// whole stdout and stderr.
const (
	// maxJSON bounds the JSON kept for one failure; beyond it the text is
	// still scanned, to find its end, but not kept.
	maxJSON = 1 << 20
	// maxMessage bounds Failure.Message.
	maxMessage = 2000
	// stderrTail is how many last lines of stderr a Message keeps.
	stderrTail = 5
)

// RecapParser reads ansible-playbook's default-callback output line by
// line (fed as it streams); Line returns a human event for progress (task
// started, host failed) or "". Lines from standard error may be fed too
// (ERROR!, [WARNING]). The zero value is ready to use; it is not safe for
// concurrent use.
type RecapParser struct {
	play, task string
	inRecap    bool
	// pending is the failure whose JSON is being read; json holds its text
	// so far, scan tracks where the JSON ends.
	pending *Failure
	json    strings.Builder
	scan    jsonEnd
	recap   Recap
}

// Patterns of the default callback's lines. Banners are display.banner:
// the message, a space and at least three stars (utils/display.py).
var (
	ansiRE      = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	bannerRE    = regexp.MustCompile(`^(PLAY|TASK|RUNNING HANDLER) \[(.*)\] \*{3,}$`)
	recapRE     = regexp.MustCompile(`^PLAY RECAP \*{3,}$`)
	fatalRE     = regexp.MustCompile(`^fatal: \[(.+?)\]: (FAILED|UNREACHABLE)! => $`)
	statsLineRE = regexp.MustCompile(`^(.+?) +: ((?:[a-z]+=-?[0-9]+ *)+)$`)
	noHostsRE   = regexp.MustCompile(`^skipping: no hosts matched$`)
)

// Line reads one line of output (without its line break) and returns an
// event worth showing ("task kubernetes/preinstall : Stop if bad
// hostname", "host worker-10-0-0-3 failed in task ...: MESSAGE") or "".
func (p *RecapParser) Line(line string) (event string) {
	line = strings.TrimRight(line, "\r")
	if strings.Contains(line, "\x1b[") {
		line = ansiRE.ReplaceAllString(line, "")
	}
	if p.pending != nil {
		return p.continueJSON(line + "\n")
	}
	if p.inRecap {
		if m := statsLineRE.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[2], "ok=") {
			p.addStats(m[1], m[2])
			return ""
		}
		// The block ends at the blank line the default callback prints
		// after it; profile_tasks' TASKS RECAP may follow.
		p.inRecap = false
	}
	switch {
	case line == "":
		return ""
	case recapRE.MatchString(line):
		p.inRecap = true
		if p.recap.Hosts == nil {
			p.recap.Hosts = map[string]HostStats{}
		}
		return ""
	case line == "...ignoring":
		p.markIgnored()
		return ""
	case noHostsRE.MatchString(line):
		return "play " + p.play + ": no hosts matched"
	case strings.HasPrefix(line, "ERROR! "):
		p.recap.Errors = append(p.recap.Errors, line)
		return line
	}
	if strings.HasSuffix(line, "***") {
		if m := bannerRE.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case "PLAY":
				p.play, p.task = m[2], ""
				return "play " + m[2]
			case "TASK":
				p.task = m[2]
				return "task " + m[2]
			default:
				p.task = m[2]
				return "handler " + m[2]
			}
		}
	}
	// The regular expressions see only the head of a failure line: its
	// JSON may be megabytes long.
	if strings.HasPrefix(line, "fatal: [") {
		if i := strings.Index(line, "! => "); i > 0 {
			if m := fatalRE.FindStringSubmatch(line[:i+len("! => ")]); m != nil {
				host, delegate := splitDelegate(m[1])
				f := &Failure{Host: host, Delegate: delegate, Task: p.task, Unreachable: m[2] == "UNREACHABLE"}
				return p.startJSON(f, line[i+len("! => "):])
			}
		}
	}
	if rest, ok := strings.CutPrefix(line, "failed: ["); ok {
		i := strings.Index(rest, "] (item=")
		if i <= 0 {
			return ""
		}
		host, delegate := splitDelegate(rest[:i])
		item, rest := splitItem(rest[i+len("] (item="):])
		f := &Failure{Host: host, Delegate: delegate, Task: p.task, Item: item}
		return p.startJSON(f, rest)
	}
	return ""
}

// splitDelegate splits "HOST -> DELEGATE" and "HOST -> DELEGATE(ADDRESS)".
func splitDelegate(s string) (host, delegate string) {
	h, d, ok := strings.Cut(s, " -> ")
	if !ok {
		return s, ""
	}
	if i := strings.LastIndexByte(d, '('); i > 0 && strings.HasSuffix(d, ")") {
		d = d[:i]
	}
	return h, d
}

// splitItem splits the text after "(item=" into the item's label and the
// JSON: "LABEL) => {json}". The label may itself hold ") => {" (an item
// that is a dict prints as one), so the JSON starts at the first such
// place where the rest is a whole JSON object, or at the last one when the
// JSON goes on over the next lines (then the line ends with "{").
func splitItem(s string) (item, rest string) {
	const sep = ") => "
	last := -1
	for i := 0; ; {
		j := strings.Index(s[i:], sep)
		if j < 0 {
			break
		}
		at := i + j
		if after := s[at+len(sep):]; strings.HasPrefix(after, "{") && json.Valid([]byte(after)) {
			return s[:at], after
		}
		last = at
		i = at + len(sep)
	}
	if last < 0 {
		return strings.TrimSuffix(s, ")"), ""
	}
	return s[:last], s[last+len(sep):]
}

// startJSON begins reading a failure's JSON from text, the rest of its
// line; the failure is recorded when the JSON ends.
func (p *RecapParser) startJSON(f *Failure, text string) string {
	p.pending = f
	p.json.Reset()
	p.scan = jsonEnd{}
	if !strings.HasPrefix(text, "{") {
		// Not JSON: keep the text as it is.
		p.json.WriteString(text)
		return p.finish()
	}
	return p.continueJSON(text + "\n")
}

// continueJSON adds text to the pending JSON and finishes the failure
// when the JSON's outermost object closes.
func (p *RecapParser) continueJSON(text string) string {
	done := p.scan.feed(text)
	if p.json.Len()+len(text) <= maxJSON {
		p.json.WriteString(text)
	}
	if !done {
		return ""
	}
	return p.finish()
}

// finish records the pending failure and returns its event.
func (p *RecapParser) finish() string {
	f := p.pending
	p.pending = nil
	f.Message = message(p.json.String())
	p.json.Reset()
	p.recap.Failures = append(p.recap.Failures, *f)
	what := "failed"
	if f.Unreachable {
		what = "unreachable"
	}
	ev := "host " + f.Host + " " + what
	if f.Task != "" {
		ev += " in task " + f.Task
	}
	if f.Item != "" {
		ev += " (item=" + f.Item + ")"
	}
	if f.Message != "" {
		ev += ": " + f.Message
	}
	return ev
}

// markIgnored marks the failures "...ignoring" follows: the last one and,
// for a loop, the item failures of the same host and task before it.
func (p *RecapParser) markIgnored() {
	fs := p.recap.Failures
	if len(fs) == 0 {
		return
	}
	last := fs[len(fs)-1]
	for i := len(fs) - 1; i >= 0 && fs[i].Host == last.Host && fs[i].Task == last.Task && !fs[i].Ignored; i-- {
		fs[i].Ignored = true
		if fs[i].Item == "" {
			break
		}
	}
}

// addStats records one PLAY RECAP line: "ok=1    changed=0 ...".
func (p *RecapParser) addStats(host, fields string) {
	var s HostStats
	for f := range strings.FieldsSeq(fields) {
		k, v, _ := strings.Cut(f, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "ok":
			s.OK = n
		case "changed":
			s.Changed = n
		case "unreachable":
			s.Unreachable = n
		case "failed":
			s.Failed = n
		case "skipped":
			s.Skipped = n
		case "rescued":
			s.Rescued = n
		case "ignored":
			s.Ignored = n
		}
	}
	p.recap.Hosts[host] = s
}

// Recap returns what was read so far. A failure whose JSON has not ended
// (the output was cut) is included with the text read. The Recap shares
// no memory with the parser.
func (p *RecapParser) Recap() Recap {
	r := Recap{Failures: slices.Clone(p.recap.Failures), Errors: slices.Clone(p.recap.Errors)}
	if p.pending != nil {
		f := *p.pending
		f.Message = message(p.json.String())
		r.Failures = append(r.Failures, f)
	}
	if p.recap.Hosts != nil {
		r.Hosts = make(map[string]HostStats, len(p.recap.Hosts))
		for h, s := range p.recap.Hosts {
			r.Hosts[h] = s
		}
	}
	return r
}

// message extracts a failure's message from its JSON: "msg", then the
// last lines of "stderr" or "module_stderr". Text that is not a JSON
// object is returned as it is, cut.
func message(text string) string {
	text = strings.TrimSpace(text)
	var res map[string]any
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		return cut(text)
	}
	var parts []string
	switch msg := res["msg"].(type) {
	case nil:
	case string:
		if msg != "" {
			parts = append(parts, strings.TrimSpace(msg))
		}
	default:
		b, _ := json.Marshal(msg)
		parts = append(parts, string(b))
	}
	for _, k := range []string{"stderr", "module_stderr"} {
		if s, _ := res[k].(string); strings.TrimSpace(s) != "" {
			parts = append(parts, k+": "+tail(s, stderrTail))
			break
		}
	}
	return cut(strings.Join(parts, "; "))
}

// tail returns the last n non-empty lines of s, joined by " | ".
func tail(s string, n int) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func cut(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage] + "..."
}

// jsonEnd finds where a JSON value that starts with "{" ends: it counts
// braces and brackets outside strings.
type jsonEnd struct {
	depth    int
	started  bool
	inString bool
	escaped  bool
}

// feed scans text and reports whether the outermost object has closed.
// Text after the close is ignored.
func (j *jsonEnd) feed(text string) bool {
	for i := 0; i < len(text); i++ {
		if j.inString && !j.escaped {
			// Skip to the string's next quote or backslash: a result's
			// stdout may be megabytes long.
			k := strings.IndexAny(text[i:], `"\`)
			if k < 0 {
				return false
			}
			i += k
		}
		c := text[i]
		switch {
		case j.inString && j.escaped:
			j.escaped = false
		case j.inString && c == '\\':
			j.escaped = true
		case j.inString && c == '"':
			j.inString = false
		case j.inString:
		case c == '"':
			j.inString = true
		case c == '{' || c == '[':
			j.depth++
			j.started = true
		case c == '}' || c == ']':
			j.depth--
			if j.started && j.depth == 0 {
				return true
			}
		}
	}
	return false
}

// Judge returns nil when the exit status is 0 and every expected host is
// in the RECAP with failed=0 and unreachable=0; otherwise an error naming
// each failed or unreachable host with its failing task and message, what
// the exit status means, the ERROR! lines, and the expected hosts missing
// from the RECAP (a play that matched no host exits 0 with an empty
// RECAP: facts §1.5, §2).
func (r Recap) Judge(exitCode int, expected []string) error {
	var problems []string
	bad := map[string]bool{}
	for _, h := range slices.Sorted(maps.Keys(r.Hosts)) {
		s := r.Hosts[h]
		if s.Failed == 0 && s.Unreachable == 0 {
			continue
		}
		bad[h] = true
		what := "failed"
		if s.Unreachable > 0 {
			what = "unreachable"
		}
		if f, ok := r.stopped(h); ok {
			problems = append(problems, "host "+h+" "+what+f)
		} else {
			problems = append(problems, "host "+h+" "+what)
		}
	}
	// A failure line of a host the RECAP does not count as failed (or a
	// RECAP cut off) still explains a non-zero exit.
	if exitCode != 0 {
		for _, f := range r.Failures {
			if _, inRecap := r.Hosts[f.Host]; !f.Ignored && !bad[f.Host] && !inRecap {
				bad[f.Host] = true
				what := "failed"
				if f.Unreachable {
					what = "unreachable"
				}
				d, _ := r.stopped(f.Host)
				problems = append(problems, "host "+f.Host+" "+what+d)
			}
		}
	}
	var missing []string
	for _, h := range expected {
		if _, ok := r.Hosts[h]; !ok && !bad[h] {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "not in the PLAY RECAP (no play ran for them): "+strings.Join(missing, ", "))
	}
	if exitCode == 0 && len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("ansible-playbook ")
	if exitCode == 0 {
		b.WriteString("exited 0")
	} else {
		b.WriteString(exitMeaning(exitCode))
	}
	for _, e := range r.Errors {
		b.WriteString("\n" + e)
	}
	for _, p := range problems {
		b.WriteString("\n" + p)
	}
	return errors.New(b.String())
}

// stopped describes the failures that stopped host: those of the last
// task in which it failed without "...ignoring" (a rescued failure is
// earlier, as the host went on after it).
func (r Recap) stopped(host string) (string, bool) {
	last := -1
	for i, f := range r.Failures {
		if f.Host == host && !f.Ignored {
			last = i
		}
	}
	if last < 0 {
		return "", false
	}
	task := r.Failures[last].Task
	var b strings.Builder
	if task != "" {
		b.WriteString(" in task " + task)
	}
	for _, f := range r.Failures[:last+1] {
		if f.Host != host || f.Ignored || f.Task != task {
			continue
		}
		b.WriteString(":")
		if f.Delegate != "" {
			b.WriteString(" (on " + f.Delegate + ")")
		}
		if f.Item != "" {
			b.WriteString(" (item=" + f.Item + ")")
		}
		if f.Message != "" {
			b.WriteString(" " + f.Message)
		}
	}
	return b.String(), true
}

// exitMeaning says what ansible-playbook's exit status means
// (lib/ansible/executor/task_queue_manager.py RUN_*, lib/ansible/cli/__init__.py).
func exitMeaning(code int) string {
	switch code {
	case 1:
		return "exited 1: an error (the message starts with ERROR! on standard error)"
	case 2:
		return "exited 2: one or more hosts failed"
	case 4:
		return "exited 4: one or more hosts were unreachable, or a playbook or inventory did not parse"
	case 5:
		return "exited 5: bad command-line options"
	case 99:
		return "exited 99: interrupted"
	case 250:
		return "exited 250: an unexpected exception in Ansible"
	case 255:
		return "exited 255: an unknown error"
	}
	if code < 0 {
		return "was killed by a signal"
	}
	return "exited " + strconv.Itoa(code)
}
