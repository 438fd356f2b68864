package kubespray

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ansibleOutput is a run realtest captured with Debian 12's ansible-core
// 2.14.18 (realtest/ansible_test.go TestAnsiblePlaybook), from
// testdata/ansible.
type ansibleOutput struct {
	stdout, stderr string
	rc             int
}

func readAnsibleOutput(t *testing.T, name string) ansibleOutput {
	t.Helper()
	read := func(ext string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "ansible", name+ext))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rc, err := strconv.Atoi(strings.TrimSpace(read(".rc")))
	if err != nil {
		t.Fatal(err)
	}
	return ansibleOutput{read(".stdout"), read(".stderr"), rc}
}

// parse feeds text to p line by line, as a stream is read, and returns
// the non-empty events.
func parse(p *RecapParser, text string) []string {
	var events []string
	for l := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
		if ev := p.Line(l); ev != "" {
			events = append(events, ev)
		}
	}
	return events
}

// The hosts of the captured runs.
const (
	master = "master-127-0-1-2"
	worker = "worker-127-0-1-3"
	long   = "worker-127-0-1-4-with-a-longer-name"
	down   = "worker-127-0-1-5"
)

var allUp = []string{master, worker, long}

func TestRecapParserOnRealOutput(t *testing.T) {
	ok := func(ok, changed, skipped int) HostStats { return HostStats{OK: ok, Changed: changed, Skipped: skipped} }
	for _, c := range []struct {
		name     string
		hosts    map[string]HostStats
		failures []Failure
		errors   []string
		// events that must be among Line's (in this order).
		events []string
		// expected hosts for Judge, and what its error must say (nil:
		// accepted).
		expected []string
		judge    []string
	}{{
		name: "pass",
		hosts: map[string]HostStats{
			master: {OK: 5, Changed: 2, Skipped: 1, Rescued: 1, Ignored: 1},
			worker: {OK: 5, Changed: 2, Skipped: 1, Rescued: 1, Ignored: 1},
			long:   {OK: 5, Changed: 2, Skipped: 1, Rescued: 1, Ignored: 1},
		},
		failures: []Failure{
			{Host: master, Task: "Ignored failure", Ignored: true, Message: "ignored"},
			{Host: worker, Task: "Ignored failure", Ignored: true, Message: "ignored"},
			{Host: long, Task: "Ignored failure", Ignored: true, Message: "ignored"},
			{Host: master, Task: "Fails", Message: "rescued"},
			{Host: worker, Task: "Fails", Message: "rescued"},
			{Host: long, Task: "Fails", Message: "rescued"},
		},
		events:   []string{"play Everything passes", "task kubernetes/preinstall : Stop if bad hostname", "task kubernetes/preinstall : Changes something", "task Rescues"},
		expected: allUp,
	}, {
		name: "fail-task",
		hosts: map[string]HostStats{
			master: ok(2, 1, 0),
			worker: {Failed: 1},
			long:   ok(2, 1, 0),
		},
		failures: []Failure{{Host: worker, Task: "kubernetes/preinstall : Stop if the memory is too small", Message: "Not enough memory to run as a node"}},
		events: []string{
			"task kubernetes/preinstall : Stop if the memory is too small",
			"host worker-127-0-1-3 failed in task kubernetes/preinstall : Stop if the memory is too small: Not enough memory to run as a node",
			"task The others go on",
		},
		expected: allUp,
		judge:    []string{"exited 2: one or more hosts failed", "\nhost worker-127-0-1-3 failed in task kubernetes/preinstall : Stop if the memory is too small: Not enough memory to run as a node"},
	}, {
		name:  "fail-command",
		hosts: map[string]HostStats{worker: {Failed: 1}, long: ok(0, 0, 1)},
		failures: []Failure{{Host: worker, Task: "Run kubeadm join",
			Message: "non-zero return code; stderr: line 3 | line 4 | line 5 | line 6 | error execution phase preflight: couldn't validate the identity of the API Server"}},
		expected: allUp,
		judge: []string{
			"host worker-127-0-1-3 failed in task Run kubeadm join: non-zero return code; stderr: line 3 | line 4 | line 5 | line 6 | error execution phase preflight: couldn't validate the identity of the API Server",
			"\nnot in the PLAY RECAP (no play ran for them): master-127-0-1-2",
		},
	}, {
		name:  "fail-item",
		hosts: map[string]HostStats{master: {Failed: 1}},
		failures: []Failure{
			{Host: master, Task: "Download files", Item: "kubelet", Message: "cannot download kubelet"},
			{Host: master, Task: "Download files", Item: "kubectl", Message: "cannot download kubectl"},
		},
		events:   []string{"host master-127-0-1-2 failed in task Download files (item=kubelet): cannot download kubelet"},
		expected: []string{master},
		judge:    []string{"host master-127-0-1-2 failed in task Download files: (item=kubelet) cannot download kubelet: (item=kubectl) cannot download kubectl"},
	}, {
		name:     "fail-delegated",
		hosts:    map[string]HostStats{worker: {Failed: 1}, long: ok(0, 0, 1)},
		failures: []Failure{{Host: worker, Delegate: master, Task: "Drain the node", Message: "error: unable to drain node worker-127-0-1-3"}},
		expected: []string{worker, long},
		judge:    []string{"host worker-127-0-1-3 failed in task Drain the node: (on master-127-0-1-2) error: unable to drain node worker-127-0-1-3"},
	}, {
		name: "unreachable",
		hosts: map[string]HostStats{
			master: {OK: 1, Failed: 1},
			worker: ok(1, 0, 1),
			long:   ok(1, 0, 1),
			down:   {Unreachable: 1},
		},
		failures: []Failure{
			{Host: down, Task: "Ping", Unreachable: true, Message: "Failed to connect to the host via ssh: ssh: connect to host 127.0.1.5 port PORT: Connection refused"},
			{Host: master, Task: "Fail on the master", Message: "master failed"},
		},
		events:   []string{"host worker-127-0-1-5 unreachable in task Ping: Failed to connect to the host via ssh: ssh: connect to host 127.0.1.5 port PORT: Connection refused"},
		expected: append(slices.Clone(allUp), down),
		judge: []string{
			"exited 4: one or more hosts were unreachable",
			"\nhost master-127-0-1-2 failed in task Fail on the master: master failed",
			"\nhost worker-127-0-1-5 unreachable in task Ping: Failed to connect to the host via ssh",
		},
	}, {
		name:  "version-assert",
		hosts: map[string]HostStats{master: {Failed: 1}},
		failures: []Failure{{Host: master, Task: "Check 2.18.0 <= Ansible version < 2.19.0",
			Message: "Ansible must be between 2.18.0 and 2.19.0 exclusive - you have 2.14.18"}},
		expected: allUp,
		judge: []string{
			"host master-127-0-1-2 failed in task Check 2.18.0 <= Ansible version < 2.19.0: Ansible must be between 2.18.0 and 2.19.0 exclusive - you have 2.14.18",
			"not in the PLAY RECAP (no play ran for them): worker-127-0-1-3, worker-127-0-1-4-with-a-longer-name",
		},
	}, {
		name:     "remove-node-no-tty",
		hosts:    map[string]HostStats{worker: {OK: 1, Failed: 1}},
		failures: []Failure{{Host: worker, Task: "Fail if user does not confirm deletion", Message: "Delete nodes confirmation failed"}},
		expected: []string{worker},
		judge:    []string{"host worker-127-0-1-3 failed in task Fail if user does not confirm deletion: Delete nodes confirmation failed"},
	}, {
		name:     "remove-node-skip-confirmation",
		hosts:    map[string]HostStats{worker: {Skipped: 2}},
		expected: []string{worker},
	}, {
		name:     "remove-node-no-match",
		hosts:    map[string]HostStats{},
		events:   []string{"play Confirm node removal", "play Confirm node removal: no hosts matched"},
		expected: []string{"worker-127-0-1-9"},
		judge:    []string{"ansible-playbook exited 0\nnot in the PLAY RECAP (no play ran for them): worker-127-0-1-9"},
	}, {
		name:     "limit-no-match",
		errors:   []string{"ERROR! Specified inventory, host pattern and/or --limit leaves us with no hosts to target."},
		expected: []string{"worker-127-0-1-9"},
		judge:    []string{"exited 1: an error", "\nERROR! Specified inventory, host pattern and/or --limit leaves us with no hosts to target.\nnot in the PLAY RECAP"},
	}, {
		name:     "missing-inventory",
		hosts:    map[string]HostStats{},
		expected: allUp,
		judge:    []string{"exited 0\nnot in the PLAY RECAP (no play ran for them): master-127-0-1-2, worker-127-0-1-3, worker-127-0-1-4-with-a-longer-name"},
	}, {
		name:     "missing-inventory-unparsed-failed",
		errors:   []string{"ERROR! No inventory was parsed, please check your configuration and options."},
		expected: allUp,
		judge:    []string{"exited 1", "ERROR! No inventory was parsed"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			out := readAnsibleOutput(t, c.name)
			var p RecapParser
			events := parse(&p, out.stdout)
			events = append(events, parse(&p, out.stderr)...)
			r := p.Recap()
			if !reflect.DeepEqual(r.Hosts, c.hosts) {
				t.Errorf("Hosts:\n%+v\nwant\n%+v", r.Hosts, c.hosts)
			}
			if !reflect.DeepEqual(r.Failures, c.failures) {
				t.Errorf("Failures:\n%+v\nwant\n%+v", r.Failures, c.failures)
			}
			if !reflect.DeepEqual(r.Errors, c.errors) {
				t.Errorf("Errors: %q, want %q", r.Errors, c.errors)
			}
			at := 0
			for _, ev := range events {
				if at < len(c.events) && ev == c.events[at] {
					at++
				}
			}
			if at < len(c.events) {
				t.Errorf("events:\n%s\nlack, in this order:\n%s", strings.Join(events, "\n"), strings.Join(c.events[at:], "\n"))
			}
			err := r.Judge(out.rc, c.expected)
			if c.judge == nil {
				if err != nil {
					t.Errorf("Judge(%d): %v", out.rc, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Judge(%d, %v) accepted the run", out.rc, c.expected)
			}
			for _, w := range c.judge {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Judge: %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// Lines as ansible-playbook prints them in situations the captured runs
// do not reach.
func TestRecapParserSyntheticLines(t *testing.T) {
	t.Run("colour", func(t *testing.T) {
		// With colour forced, the RECAP pads the host to 37 characters
		// escapes included and wraps non-zero counters in escapes
		// (lib/ansible/utils/color.py hostcolor, colorize).
		text := "\x1b[0;32mPLAY RECAP *********************************************************************\x1b[0m\n" +
			"\x1b[0;31mnode-1\x1b[0m                     : \x1b[0;32mok=3   \x1b[0m changed=0    unreachable=0    \x1b[0;31mfailed=1   \x1b[0m skipped=0    rescued=0    ignored=0   \r\n" +
			"\x1b[0;31mfatal: [node-1]: FAILED! => {\"changed\": false, \"msg\": \"red\"}\x1b[0m\n"
		var p RecapParser
		parse(&p, text)
		r := p.Recap()
		if want := map[string]HostStats{"node-1": {OK: 3, Failed: 1}}; !reflect.DeepEqual(r.Hosts, want) {
			t.Errorf("Hosts %+v, want %+v", r.Hosts, want)
		}
		if len(r.Failures) != 1 || r.Failures[0].Message != "red" {
			t.Errorf("Failures %+v", r.Failures)
		}
	})
	t.Run("profile_tasks", func(t *testing.T) {
		// kubespray's ansible.cfg enables ansible.posix's profile_tasks:
		// a time line after each task banner, and after the PLAY RECAP a
		// TASKS RECAP banner, a time line, a "=" rule and one line per
		// task (plugins/callback/profile_tasks.py tasktime,
		// v2_playbook_on_stats).
		text := `
PLAY [k8s_cluster] *************************************************************

TASK [kubernetes/preinstall : Stop if bad hostname] ****************************
Thursday 26 November 2026  10:00:00 +0000 (0:00:00.031)       0:00:00.031 *****
fatal: [Node_1]: FAILED! => {
    "assertion": "inventory_hostname is match(\"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$\")",
    "changed": false,
    "evaluated_to": false,
    "msg": "Hostname must consist of lower case alphanumeric characters, '.' or '-', and must start and end with an alphanumeric character"
}

NO MORE HOSTS LEFT *************************************************************

PLAY RECAP *********************************************************************
Node_1                     : ok=2    changed=0    unreachable=0    failed=1    skipped=3    rescued=0    ignored=0   

TASKS RECAP ********************************************************************
Thursday 26 November 2026  10:00:01 +0000 (0:00:00.510)       0:00:01.541 *****
===============================================================================
kubernetes/preinstall : Stop if bad hostname ---------------------------- 0.51s
gather facts : ok=3 ------------------------------------------------------ 0.03s
`
		var p RecapParser
		parse(&p, text)
		r := p.Recap()
		if want := map[string]HostStats{"Node_1": {OK: 2, Failed: 1, Skipped: 3}}; !reflect.DeepEqual(r.Hosts, want) {
			t.Errorf("Hosts %+v, want %+v", r.Hosts, want)
		}
		want := []Failure{{Host: "Node_1", Task: "kubernetes/preinstall : Stop if bad hostname",
			Message: "Hostname must consist of lower case alphanumeric characters, '.' or '-', and must start and end with an alphanumeric character"}}
		if !reflect.DeepEqual(r.Failures, want) {
			t.Errorf("Failures %+v, want %+v", r.Failures, want)
		}
	})
	t.Run("braces and quotes in strings", func(t *testing.T) {
		text := "TASK [x] ***\n" +
			`fatal: [h]: FAILED! => {` + "\n" +
			`    "msg": "a } and a \" and a \\ and {{ x }}",` + "\n" +
			`    "stderr": "E1: }\nE2: ]\n"` + "\n" +
			"}\n" +
			"TASK [y] ***\n"
		var p RecapParser
		events := parse(&p, text)
		r := p.Recap()
		want := []Failure{{Host: "h", Task: "x", Message: `a } and a " and a \ and {{ x }}; stderr: E1: } | E2: ]`}}
		if !reflect.DeepEqual(r.Failures, want) {
			t.Errorf("Failures %+v, want %+v", r.Failures, want)
		}
		if !slices.Contains(events, "task y") {
			t.Errorf("events %q lack the next task", events)
		}
	})
	t.Run("items", func(t *testing.T) {
		text := "TASK [loop] ***\n" +
			`failed: [h -> d(10.0.0.9)] (item={'a': ') => {'}) => {"msg": "one"}` + "\n" +
			`failed: [h] (item=x) => {` + "\n" + `    "msg": "two"` + "\n}\n" +
			`failed: [h] (item=y) => {"msg": "three"}` + "\n...ignoring\n" +
			"fatal: [h]: UNREACHABLE! => {\"msg\": \"gone\", \"unreachable\": true}\n...ignoring\n"
		var p RecapParser
		parse(&p, text)
		want := []Failure{
			{Host: "h", Delegate: "d", Task: "loop", Item: `{'a': ') => {'}`, Message: "one", Ignored: true},
			{Host: "h", Task: "loop", Item: "x", Message: "two", Ignored: true},
			{Host: "h", Task: "loop", Item: "y", Message: "three", Ignored: true},
			{Host: "h", Task: "loop", Unreachable: true, Message: "gone", Ignored: true},
		}
		if got := p.Recap().Failures; !reflect.DeepEqual(got, want) {
			t.Errorf("Failures\n%+v\nwant\n%+v", got, want)
		}
	})
	t.Run("module failure", func(t *testing.T) {
		var p RecapParser
		parse(&p, `fatal: [h]: FAILED! => {"changed": false, "module_stderr": "Traceback:\nImportError: no module\n", "module_stdout": "", "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error", "rc": 1}`)
		if got, want := p.Recap().Failures[0].Message, "MODULE FAILURE\nSee stdout/stderr for the exact error; module_stderr: Traceback: | ImportError: no module"; got != want {
			t.Errorf("Message %q, want %q", got, want)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		var p RecapParser
		parse(&p, "fatal: [h]: FAILED! => something else\n")
		if got := p.Recap().Failures; len(got) != 1 || got[0].Message != "something else" {
			t.Errorf("Failures %+v", got)
		}
	})
	t.Run("cut off", func(t *testing.T) {
		var p RecapParser
		parse(&p, "TASK [t] ***\nfatal: [h]: FAILED! => {\n    \"msg\": \"half")
		r := p.Recap()
		if len(r.Failures) != 1 || r.Failures[0].Host != "h" || !strings.Contains(r.Failures[0].Message, `"msg": "half`) {
			t.Errorf("Failures %+v", r.Failures)
		}
		if err := r.Judge(-1, []string{"h"}); err == nil || !strings.Contains(err.Error(), "killed by a signal") || !strings.Contains(err.Error(), "host h failed in task t") {
			t.Errorf("Judge: %v", err)
		}
	})
	t.Run("huge result", func(t *testing.T) {
		// A failed shell task's JSON holds its whole output.
		big := strings.Repeat("x", maxJSON+1024)
		var p RecapParser
		events := parse(&p, "TASK [t] ***\nfatal: [h]: FAILED! => {\"stdout\": \""+big+"\",\n \"msg\": \"m\"}\nTASK [u] ***\n")
		r := p.Recap()
		if len(r.Failures) != 1 || len(r.Failures[0].Message) > maxMessage+3 {
			t.Fatalf("%d failures, message of %d bytes", len(r.Failures), len(r.Failures[0].Message))
		}
		if !slices.Contains(events, "task u") {
			t.Errorf("the parser did not find the end of the JSON")
		}
	})
	t.Run("Recap is a copy", func(t *testing.T) {
		var p RecapParser
		parse(&p, "PLAY RECAP ***\nh : ok=1 changed=0 unreachable=0 failed=0 skipped=0 rescued=0 ignored=0\n")
		r := p.Recap()
		r.Hosts["h"] = HostStats{Failed: 9}
		if p.Recap().Hosts["h"].Failed != 0 {
			t.Error("changing a Recap changed the parser's")
		}
	})
}

func TestJudgeExitStatus(t *testing.T) {
	ok := Recap{Hosts: map[string]HostStats{"h": {OK: 1}}}
	if err := ok.Judge(0, []string{"h"}); err != nil {
		t.Errorf("Judge(0) of a passing run: %v", err)
	}
	if err := ok.Judge(0, nil); err != nil {
		t.Errorf("Judge(0) expecting nothing: %v", err)
	}
	for code, want := range map[int]string{
		1:   "exited 1: an error",
		2:   "exited 2: one or more hosts failed",
		4:   "exited 4: one or more hosts were unreachable, or a playbook or inventory did not parse",
		5:   "exited 5: bad command-line options",
		99:  "exited 99: interrupted",
		250: "exited 250: an unexpected exception",
		255: "exited 255",
		3:   "exited 3",
		-1:  "killed by a signal",
	} {
		err := ok.Judge(code, []string{"h"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Judge(%d) = %v, want it to say %q", code, err, want)
		}
	}
	// A host failed in the RECAP although the exit status is 0 (a RECAP
	// and a status from different runs): refused.
	bad := Recap{Hosts: map[string]HostStats{"h": {Unreachable: 1}}}
	if err := bad.Judge(0, []string{"h"}); err == nil || !strings.Contains(err.Error(), "host h unreachable") {
		t.Errorf("Judge(0) of an unreachable host: %v", err)
	}
}
