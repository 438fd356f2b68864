package ansible

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The output of ansible-core's default stdout callback, not a TTY, no
// colour (lib/ansible/plugins/callback/default.py and
// lib/ansible/utils/display.py at v2.14.17 and v2.16.12; checked against
// Debian 12's ansible-playbook 2.14.18 here): banners padded with '*' to
// 80 columns (display.columns = max(79, tty_size-1) = 79 without a
// terminal; banner prints "\n" + msg + " " + '*' × (79 - len(msg))),
// results as "ok: [H]", "changed: [H]", "fatal: [H]: FAILED! => JSON",
// "fatal: [H]: UNREACHABLE! => JSON", and the PLAY RECAP.

// columns is display.columns without a terminal.
const columns = 79

// display writes what ansible-playbook prints, line by line: every line
// reaches the writer as soon as it is complete, as Python's line-buffered
// stdout does, so that a reader sees a playbook's progress.
type display struct {
	out, errOut io.Writer
	// lazyBanners is display_skipped_hosts = no (kubespray's
	// ansible.cfg): a task's banner is printed with its first shown
	// result only (default.py _task_start / _print_task_banner).
	lazyBanners bool
	// profile is ansible.posix.profile_tasks, enabled by kubespray's
	// callbacks_enabled.
	profile *profileTasks
	// pending is the banner of the current task not printed yet.
	pending string
}

func (d *display) line(s string) { fmt.Fprintln(d.out, s) }

// banner is Display.banner: "\nMSG ****...".
func (d *display) banner(msg string) {
	d.line("\n" + bannerLine(msg))
}

func bannerLine(msg string) string {
	n := columns - utf8.RuneCountInString(msg)
	if n <= 3 {
		n = 3
	}
	return msg + " " + strings.Repeat("*", n)
}

// playStart is v2_playbook_on_play_start.
func (d *display) playStart(name string) {
	d.pending = ""
	if strings.TrimSpace(name) == "" {
		d.banner("PLAY")
		return
	}
	d.banner("PLAY [" + strings.TrimSpace(name) + "]")
}

// taskStart is v2_playbook_on_task_start: the banner at once unless
// banners are lazy; profile_tasks' time line either way.
func (d *display) taskStart(name string) {
	b := "TASK [" + strings.TrimSpace(name) + "]"
	if d.lazyBanners {
		d.pending = b
	} else {
		d.banner(b)
		d.pending = ""
	}
	if d.profile != nil {
		d.profile.taskStart(d, name)
	}
}

// flushBanner prints the pending banner before a shown result.
func (d *display) flushBanner() {
	if d.pending != "" {
		d.banner(d.pending)
		d.pending = ""
	}
}

// result prints one task result as default.py does.
func (d *display) result(host, delegate string, r result) {
	label := host
	if delegate != "" && delegate != host {
		label = host + " -> " + delegate
	}
	switch r.status {
	case statusSkipped:
		if !d.lazyBanners {
			d.flushBanner()
			d.line("skipping: [" + host + "]")
		}
		return
	case statusFailed:
		d.flushBanner()
		d.line(fmt.Sprintf("fatal: [%s]: FAILED! => %s", label, dumpResult(r.data, r.verbose)))
		if r.ignored {
			d.line("...ignoring")
		}
		return
	case statusUnreachable:
		d.flushBanner()
		d.line(fmt.Sprintf("fatal: [%s]: UNREACHABLE! => %s", label, dumpResult(r.data, false)))
		return
	}
	d.flushBanner()
	for _, it := range r.items {
		word := "ok"
		if it.changed {
			word = "changed"
		}
		d.line(fmt.Sprintf("%s: [%s] => (item=%s)", word, label, it.label))
	}
	word := "ok"
	if r.status == statusChanged {
		word = "changed"
	}
	if len(r.items) > 0 {
		return // v2_runner_on_ok prints the items only
	}
	msg := word + ": [" + label + "]"
	if r.verbose {
		msg += " => " + dumpResult(r.data, true)
	}
	d.line(msg)
}

// noHostsMatched is v2_playbook_on_no_hosts_matched.
func (d *display) noHostsMatched() { d.line("skipping: no hosts matched") }

// noHostsRemaining is v2_playbook_on_no_hosts_remaining.
func (d *display) noHostsRemaining() { d.banner("NO MORE HOSTS LEFT") }

// warning is Display.warning: "[WARNING]: msg" on standard error,
// wrapped at the columns.
func (d *display) warning(msg string) {
	fmt.Fprintln(d.errOut, wrap("[WARNING]: "+msg))
}

// wrap is textwrap.wrap(text, 79) joined by newlines, for warnings.
func wrap(s string) string {
	var lines []string
	line := ""
	for _, w := range strings.Split(s, " ") {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= columns:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return strings.Join(append(lines, line), "\n")
}

// recap is v2_playbook_on_stats: the banner, a line per processed host
// sorted by name, then an empty line.
func (d *display) recap(s *stats) {
	d.banner("PLAY RECAP")
	for _, h := range s.hosts() {
		d.line(RecapLine(h, s.of(h)))
	}
	d.line("")
	if d.profile != nil {
		d.profile.recap(d)
	}
}

// Counts are one host's counters of the PLAY RECAP
// (lib/ansible/executor/stats.py summarize).
type Counts struct {
	OK, Changed, Unreachable, Failed, Skipped, Rescued, Ignored int
}

// RecapLine is one host's line of the PLAY RECAP without colour, exactly
// as default.py prints it: "%-26s : ok=%-4s changed=%-4s
// unreachable=%-4s failed=%-4s skipped=%-4s rescued=%-4s ignored=%-4s"
// (lib/ansible/utils/color.py hostcolor and colorize), trailing spaces
// included.
func RecapLine(host string, c Counts) string {
	return fmt.Sprintf("%-26s : ok=%-4d changed=%-4d unreachable=%-4d failed=%-4d skipped=%-4d rescued=%-4d ignored=%-4d",
		host, c.OK, c.Changed, c.Unreachable, c.Failed, c.Skipped, c.Rescued, c.Ignored)
}

// stats is AggregateStats: counters per processed host.
type stats struct {
	m map[string]*Counts
}

func (s *stats) of(h string) Counts {
	if c := s.m[h]; c != nil {
		return *c
	}
	return Counts{}
}

func (s *stats) get(h string) *Counts {
	if s.m == nil {
		s.m = map[string]*Counts{}
	}
	c := s.m[h]
	if c == nil {
		c = &Counts{}
		s.m[h] = c
	}
	return c
}

func (s *stats) hosts() []string {
	var hs []string
	for h := range s.m {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}

// add counts a result as the strategy's _process_pending_results does: a
// changed result counts as ok and changed.
func (s *stats) add(h string, r result) {
	c := s.get(h)
	switch r.status {
	case statusOK:
		c.OK++
	case statusChanged:
		c.OK++
		c.Changed++
	case statusSkipped:
		c.Skipped++
	case statusUnreachable:
		c.Unreachable++
	case statusFailed:
		if r.ignored {
			c.OK++
			c.Ignored++
		} else {
			c.Failed++
		}
	}
}

// dumpResult is CallbackBase._dump_results: the result as Python's
// json.dumps(sort_keys=True, ensure_ascii=False), with indent=4 when the
// result asks to be verbose (_ansible_verbose_always: assert, debug).
func dumpResult(v map[string]any, indent bool) string {
	var b strings.Builder
	ind := ""
	if indent {
		ind = "    "
	}
	pyJSON(&b, v, ind, "")
	return b.String()
}

// pyJSON writes v as Python's json module does: ", " and ": " between
// items without indent, "," and newlines with it; keys sorted; strings
// with only '"', '\\' and control characters escaped (ensure_ascii=False).
func pyJSON(b *strings.Builder, v any, ind, cur string) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case string:
		pyString(b, x)
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		pyJSON(b, l, ind, cur)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(",")
				if ind == "" {
					b.WriteString(" ")
				}
			}
			if ind != "" {
				b.WriteString("\n" + cur + ind)
			}
			pyJSON(b, e, ind, cur+ind)
		}
		if ind != "" {
			b.WriteString("\n" + cur)
		}
		b.WriteString("]")
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
				if ind == "" {
					b.WriteString(" ")
				}
			}
			if ind != "" {
				b.WriteString("\n" + cur + ind)
			}
			pyString(b, k)
			b.WriteString(": ")
			pyJSON(b, x[k], ind, cur+ind)
		}
		if ind != "" {
			b.WriteString("\n" + cur)
		}
		b.WriteString("}")
	default:
		pyString(b, fmt.Sprint(x))
	}
}

func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// profileTasks is ansible.posix's profile_tasks callback
// (plugins/callback/profile_tasks.py, ansible.posix 2.x): a time line
// after each task start, and after the PLAY RECAP a "TASKS RECAP" banner,
// a time line, a line of '=' and each task's duration, longest first, at
// most 20.
type profileTasks struct {
	now          func() time.Time
	start, last  time.Time
	tasks        []profiledTask
	current      int
	hasCurrent   bool
	currentStart time.Time
}

type profiledTask struct {
	name    string
	elapsed time.Duration
}

func newProfileTasks(now func() time.Time) *profileTasks {
	t := now()
	return &profileTasks{now: now, start: t, last: t}
}

// filled is profile_tasks' filled(): msg, a space and fill to 79, then a
// space.
func filled(msg string, fill string) string {
	width := 79
	if msg != "" {
		msg += " "
		width = 79 - len(msg)
	}
	if width < 3 {
		width = 3
	}
	return msg + strings.Repeat(fill, width) + " "
}

func secondsToStr(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}

func (p *profileTasks) tasktime() string {
	now := p.now()
	s := fmt.Sprintf("%s (%s)%s%s", now.Format("Monday 02 January 2006  15:04:05 -0700"), secondsToStr(now.Sub(p.last)), strings.Repeat(" ", 7), secondsToStr(now.Sub(p.start)))
	p.last = now
	return filled(s, "*")
}

func (p *profileTasks) stop() {
	if p.hasCurrent {
		p.tasks[p.current].elapsed += p.now().Sub(p.currentStart)
		p.hasCurrent = false
	}
}

func (p *profileTasks) taskStart(d *display, name string) {
	d.line(p.tasktime())
	p.stop()
	p.tasks = append(p.tasks, profiledTask{name: name})
	p.current, p.hasCurrent, p.currentStart = len(p.tasks)-1, true, p.now()
}

func (p *profileTasks) recap(d *display) {
	d.banner("TASKS RECAP")
	d.line(p.tasktime())
	d.line(filled("", "="))
	p.stop()
	ts := slices.Clone(p.tasks)
	slices.SortStableFunc(ts, func(a, b profiledTask) int { return int(b.elapsed - a.elapsed) })
	if len(ts) > 20 {
		ts = ts[:20]
	}
	for _, t := range ts {
		name := t.name + " "
		dur := fmt.Sprintf(" %.02fs", t.elapsed.Seconds())
		pad := columns - 9 - utf8.RuneCountInString(name)
		if pad < 0 {
			pad = 0
		}
		dpad := 9 - len(dur)
		if dpad < 0 {
			dpad = 0
		}
		d.line(name + strings.Repeat("-", pad) + strings.Repeat("-", dpad) + dur)
	}
}
