package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/mgmtkit/mgmtkit/remote"
)

// valueSeeds are values that would change a script's shape if they were
// not kept literal.
var valueSeeds = []string{
	"", " ", "a b", "$(id)", "`id`", "'", `"`, "it's", "\n", "a\nb", "*", "?", "[a]", "{a,b}", "~", "~root",
	"-n", "-e", "--", "a=b", "=", "\\", "\\\n", "$'x\\n'", "${x}", "$((1+1))", "!", "!!", "#", "a #b", ";", "&", "|",
	"<", ">", "(", ")", "\xff\xfe", "é", "\t", "\r\n", "$", "@(a)", "%", "x,y", ":", ".", "/",
}

// nul is the output of printf '%s\0' WORDS.
func nul(words ...string) string { return strings.Join(words, "\x00") + "\x00" }

// oneArgScripts are accepted templates, each with the output bash prints
// when every value is v: proof that v reached the program as one argument,
// byte for byte. They run as one script, to start one bash per value.
var oneArgScripts = []struct {
	text string
	want func(v string) string
}{
	{`printf '%s\0' {{.X|q}}`, func(v string) string { return nul(v) }},
	{"x={{.X | q}}\nprintf '%s\\0' \"$x\"", func(v string) string { return nul(v) }},
	{`X={{.X|q}} printenv X`, func(v string) string { return v + "\n" }},
	{`printf '%s\0' --opt={{.X|q}} "$HOME"/{{.X|q}} 'a b'{{.X|q}}{{.X|q}} u@{{.X|q}}:/p`, func(v string) string {
		return nul("--opt="+v, "/home/mgmtkit/"+v, "a b"+v+v, "u@"+v+":/p")
	}},
	{`for a in {{range .L}}{{q .}} {{end}}; do printf '%s\0' "$a"; done`, func(v string) string { return nul(v, v) }},
	{`a=({{.X|q}} b); a+=({{.X|q}}); printf '%s\0' "${a[@]}"`, func(v string) string { return nul(v, "b", v) }},
	{`f() { printf '%s\0' "$#" "$@"; }; f {{.X|q}}`, func(v string) string { return nul("1", v) }},
	{"V={{.X|q}}\ncase {{.X|q}} in \"$V\") printf '%s\\0' same;; *) printf '%s\\0' different;; esac", func(string) string { return nul("same") }},
	{`cat <<< {{.X|q}}`, func(v string) string { return v + "\n" }},
	{`{{if .A}}printf '%s\0' {{.X|q}}{{else}}exit 1{{end}}`, func(v string) string { return nul(v) }},
	{"{{define \"p\"}}printf '%s\\0' {{. | q}}{{end}}{{template \"p\" .X}}", func(v string) string { return nul(v) }},
}

// FuzzScriptValueIsOneArgument runs the accepted templates of oneArgScripts
// with real bash, as Cmd runs them on a host, for any value: each program
// receives the value as exactly one literal argument, and nothing else
// happens (the working directory stays empty).
func FuzzScriptValueIsOneArgument(f *testing.F) {
	if _, err := exec.LookPath("bash"); err != nil {
		f.Skip("bash is not installed")
	}
	for _, v := range valueSeeds {
		f.Add(v)
	}
	var texts []string
	for _, c := range oneArgScripts {
		texts = append(texts, c.text)
	}
	s := remote.MustParseScript("one-arg", strings.Join(texts, "\n")+"\n")
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsRune(v, 0) {
			t.Skip("argv cannot hold NUL")
		}
		cmd, err := s.Cmd(map[string]any{"X": v, "L": []string{v, v}, "A": true})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		c := exec.Command(cmd.Args[0], cmd.Args[1:]...)
		c.Dir = dir
		c.Env = []string{"HOME=/home/mgmtkit", "PATH=" + os.Getenv("PATH")}
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Fatalf("value %q: %v: %s\nscript:\n%s", v, err, stderr.Bytes(), cmd.Args[2])
		}
		var want strings.Builder
		for _, c := range oneArgScripts {
			want.WriteString(c.want(v))
		}
		if string(out) != want.String() {
			t.Fatalf("value %q: output\n%q, want\n%q\nscript:\n%s", v, out, want.String(), cmd.Args[2])
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("value %q: the script created %v", v, ents)
		}
	})
}

// canary is a command no accepted template may run: values carry it in
// ways that run it wherever bash reads them as code.
const canary = "mgmtkitcanary"

var canaryValues = []string{
	"$(" + canary + ")", "`" + canary + "`", "x;" + canary, "x\n" + canary, "x' ;" + canary + "; '", `x";` + canary + `;"`,
	"x[$(" + canary + ")]", "$((1+$(" + canary + ")))", "x)\n" + canary + "\n(", "EOF\n" + canary + "\nEOF",
}

// FuzzScriptNeverRunsAValue fuzzes templates: whatever ParseScript accepts
// and Render renders, a value never runs as code. The scripts run in
// mvdan.cc/sh's interpreter with every program, file and network access
// stubbed out; the canary command must never be called.
func FuzzScriptNeverRunsAValue(f *testing.F) {
	for _, seed := range []string{
		// The seeds, which ParseScript must refuse.
		`echo "{{.X | q}}"`, "cat <<EOF\n{{.X|q}}\nEOF\n", "echo `echo {{.X|q}}`", `echo $(echo {{.X|q}})`,
		`echo $(( {{.X|q}} ))`, `(( {{.X|q}} ))`, `echo ${x:-{{.X|q}}}`,
		// Accepted ones.
		`echo {{.X|q}}`, "x={{.X|q}}\necho \"$x\"", `for a in {{range .L}}{{q .}} {{end}}; do echo "$a"; done`,
		`echo {{if .A}}"{{else}}"{{end}}{{.X|q}}{{if .A}}"{{else}}"{{end}}`,
		`cat <<< {{.X|q}}`, `a=({{.X|q}}); echo "${a[@]}"`, `case {{.X|q}} in a) ;; esac`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(strings.ToLower(text), canary) {
			t.Skip("the template itself names the canary")
		}
		s, err := remote.ParseScript("fuzz", text)
		if err != nil {
			return
		}
		for _, v := range canaryValues {
			for _, a := range []bool{true, false} {
				script, err := s.Render(map[string]any{"X": v, "Y": v, "L": []string{v, v}, "A": a})
				if err != nil {
					continue
				}
				if ran := runSandboxed(t, script); ran {
					t.Fatalf("the value %q ran as code in\n%s", v, script)
				}
			}
		}
	})
}

// runSandboxed interprets script with no effect outside the interpreter
// and reports whether it called the canary.
func runSandboxed(t *testing.T, script string) (ranCanary bool) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return false // the interpreter cannot tell; bash would refuse it too
	}
	r, err := interp.New(
		interp.Env(expand.ListEnviron("HOME=/nonexistent", "PATH=/nonexistent")),
		interp.StdIO(nil, io.Discard, io.Discard),
		interp.CallHandler(func(_ context.Context, args []string) ([]string, error) {
			if len(args) > 0 && args[0] == canary {
				ranCanary = true
			}
			return args, nil
		}),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(context.Context, []string) error { return nil }
		}),
		interp.OpenHandler(func(context.Context, string, int, os.FileMode) (io.ReadWriteCloser, error) {
			return nil, errors.New("sandbox: no files")
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	// A guard against fuzzed endless loops, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.Run(ctx, file)
	return ranCanary
}
