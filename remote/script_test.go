package remote_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/remote"
)

var exportScript = remote.MustParseScript("export-dirs", `{{range .Dirs -}}
mkdir -p -- {{q .Path}}
chown {{printf "%s:%s" .Owner .Group | q}} {{.Path | q}}
{{end -}}
exportfs -ra
`)

type exportDir struct{ Path, Owner, Group string }

func TestScriptQuotesEveryValue(t *testing.T) {
	data := struct{ Dirs []exportDir }{Dirs: []exportDir{
		{"/volume/nfs/pv1", "nobody", "nogroup"},
		{"/volume/it's; rm -rf /", "nobody", "nogroup"},
	}}
	text, err := exportScript.Render(data)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "export-dirs", []byte(text))
	cmd, err := exportScript.Cmd(data)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Args[0] != "bash" || cmd.Args[1] != "-c" || cmd.Args[2] != text || cmd.Args[3] != "export-dirs" {
		t.Fatalf("Cmd = %q", cmd.Args)
	}
}

func TestScriptRunsOnHost(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	s := remote.MustParseScript("mkdirs", `{{range .}}mkdir -p -- {{q .}}
{{end}}`)
	cmd, err := s.Cmd([]string{"/tmp/a b", "/tmp/$(touch pwned)"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(testContext(t), cmd); err != nil {
		t.Fatal(err)
	}
	if !srv.FS().Exists("/tmp/a b") || !srv.FS().Exists("/tmp/$(touch pwned)") || srv.FS().Exists("/home/ubuntu/pwned") {
		t.Fatal("the values were not passed literally")
	}
}

func TestScriptRejectsUnquotedValues(t *testing.T) {
	for _, text := range []string{
		`echo {{.X}}`,
		`{{if .Y}}echo {{.X}}{{end}}`,
		`{{range .Z}}{{.}}{{end}}`,
		`{{define "sub"}}{{.}}{{end}}echo {{template "sub" .}}`,
		`{{.X | printf "%s"}}`,
	} {
		if _, err := remote.ParseScript("t", text); err == nil || !strings.Contains(err.Error(), "without quoting") {
			t.Errorf("%s: err = %v, want a quoting error", text, err)
		}
	}
	for _, text := range []string{`{{$x := .X}}echo {{q $x}}`, `{{with .X}}echo {{. | q}}{{end}}`} {
		if _, err := remote.ParseScript("t", text); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
}

func TestScriptRefusesSecrets(t *testing.T) {
	s := remote.MustParseScript("login", `docker login -p {{q .}}`)
	_, err := s.Render(remote.NewSecret("registry-Pa55"))
	if err == nil || strings.Contains(err.Error(), "registry-Pa55") {
		t.Fatalf("err = %v, want a refusal that does not echo the secret", err)
	}
}

// TestScriptRejectsPlaceholdersWhereQuotingFails pins issue #8 item 6: q
// quotes a value as one shell word, which keeps it literal only where bash
// reads a plain word. Inside double quotes, a heredoc, a substitution or
// an arithmetic context the quotes are themselves literal or the text is
// evaluated again, so ParseScript must refuse the template.
func TestScriptRejectsPlaceholdersWhereQuotingFails(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		// The seeds of the issue.
		{`echo "{{.X | q}}"`, `placeholder {{.X | q}} at line 1: inside double quotes`},
		{"cat <<EOF\n{{.X|q}}\nEOF\n", "line 2: inside a heredoc"},
		{"echo `echo {{.X|q}}`", "inside backticks"},
		{`echo $(echo {{.X|q}})`, "inside a command substitution"},
		{`echo $(( {{.X|q}} ))`, "arithmetic"},
		{`(( {{.X|q}} ))`, "arithmetic"},
		{`echo ${x:-{{.X|q}}}`, "inside a parameter expansion"},
		// More places where a quoted value is not one literal word.
		{"set -e\n\necho \"a {{.X | q}}\"\n", `placeholder {{.X | q}} at line 3: inside double quotes`},
		{"cat <<'EOF'\n{{.X|q}}\nEOF\n", "inside a heredoc"},
		{"cat <<-EOF\n\t{{.X|q}}\n\tEOF\n", "inside a heredoc"},
		{`echo "$(echo {{.X|q}})"`, "inside a command substitution"},
		{`diff <(echo {{.X|q}}) /dev/null`, "inside a process substitution"},
		{`echo '{{.X|q}}'`, "inside single quotes"},
		{`echo ${{.X|q}}`, "inside a parameter expansion"},
		{`echo ${x[{{.X|q}}]}`, "inside a parameter expansion"},
		{`a[{{.X|q}}]=1`, "in an array index"},
		{`{{.X|q}}=1 env`, "not in a word"},
		{`echo $x{{.X|q}}`, "inside a parameter expansion"},
		{`a=([{{.X|q}}]=1)`, "indexed array element"},
		{`let x={{.X|q}}`, "arithmetic"},
		{`[[ -n {{.X|q}} ]]`, "inside [[ ]]"},
		{`[[ $a -eq {{.X|q}} ]]`, "inside [[ ]]"},
		{`echo a # {{.X|q}}`, "inside a comment"},
		{`{{.X|q}} --help`, "as the command name"},
		{`command {{.X|q}} --help`, "as the command name"},
		{`eval {{.X|q}}`, "argument of eval"},
		{`builtin eval {{.X|q}}`, "argument of eval"},
		{`unset {{.X|q}}`, "argument of unset"},
		{`read -r {{.X|q}}`, "argument of read"},
		{`trap {{.X|q}} EXIT`, "argument of trap"},
		{`printf -v {{.X|q}} %s y`, "after printf -v"},
		{`test -v {{.X|q}}`, "after test -v"},
		{`declare x={{.X|q}}`, "argument of declare"},
		{`f() { local x={{.X|q}}; }`, "argument of local"},
		{`export {{.X|q}}`, "argument of export"},
		{`declare -a x=({{.X|q}})`, "argument of declare"},
		{`case a in {{.X|q}}) ;; esac`, "in a case pattern"},
		{`cat <<{{.X|q}}` + "\nx\n", "here-document"},
		{`exec 3>&{{.X|q}}`, "as the target of >&"},
		{`function {{.X|q}} { :; }`, "not in a word"},
		{`echo \{{.X|q}}`, "unquoted special characters"},
		{`echo *{{.X|q}}`, "unquoted special characters"},
		{`echo {a,{{.X|q}}}`, "unquoted special characters"},
		{`echo ~{{.X|q}}`, "unquoted special characters"},
		{`echo $HOME/{{.X|q}}`, "unquoted expansion"},
		{`echo @({{.X|q}})`, "not in a word"},
		// Sub-templates, and {{if}} branches taken together.
		{"{{define \"s\"}}\n\"{{. | q}}\"{{end}}echo {{template \"s\" .X}}", `placeholder {{. | q}} at line 2: inside double quotes`},
		{`echo {{if .A}}"{{end}}{{.X|q}}{{if .A}}"{{end}}`, "inside double quotes"},
		{"{{if .A}}if a; then\n{{else}}if b; then\n{{end}}echo\nfi\n", "not valid bash"},
		// q only ends a printing action.
		{`echo {{q .X | printf "%s" | q}}`, "q may only end an action"},
		{`echo {{printf "%s" (q .X) | q}}`, "q may only end an action"},
		{`{{if q .X}}echo{{end}}`, "q may only end an action"},
		{`{{$x := q .X}}echo {{q $x}}`, "q may only end an action"},
		{`echo MGMTKITPLACEHOLDER0X {{.X|q}}`, "reserved"},
		{`echo MGMTKIT{{$x := 1}}PLACEHOLDER0X {{.X|q}}`, "reserved"},
	} {
		_, err := remote.ParseScript("t", c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want one containing %q", c.text, err, c.want)
		}
	}
}

// TestScriptAcceptsPlainWords lists the places where a value may stand.
func TestScriptAcceptsPlainWords(t *testing.T) {
	for _, text := range []string{
		`echo {{.X|q}}`,
		"x={{.X|q}}\necho \"$x\"",
		`X={{.X|q}} env`,
		`a=({{.X|q}} b); a+=({{.X|q}})`,
		`echo --opt={{.X|q}} user@{{.X|q}}:/srv,x%{{.X|q}}+`,
		`echo "$HOME"/{{.X|q}} 'a b'{{.X|q}} "$(pwd)"{{.X|q}}`,
		`echo {{.X|q}}{{.X|q}}`,
		`cat < {{.X|q}} > {{.X|q}} 2>> {{.X|q}} &> {{.X|q}}`,
		`cat <<< {{.X|q}}`,
		`for f in {{range .L}}{{q .}} {{end}}; do echo "$f"; done`,
		`case {{.X|q}} in a) echo {{.X|q}};; esac`,
		`f() { echo {{.X|q}}; }; ( echo {{.X|q}} ) | cat; { echo {{.X|q}}; }`,
		`if test -n {{.X|q}}; then echo {{.X|q}}; elif [ -e {{.X|q}} ]; then :; fi`,
		`while false; do echo {{.X|q}}; done; time echo {{.X|q}}`,
		`sudo -u {{.X|q}} -- printf '%s' {{.X|q}}`,
		"cat <<EOF\n$HOME\nEOF\necho {{.X|q}}",
		`{{define "s"}}echo {{. | q}}{{end}}{{template "s" .X}}`,
		`{{if .A}}echo {{.X|q}}{{else}}echo {{.Y|q}}{{end}}`,
	} {
		if _, err := remote.ParseScript("t", text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// TestScriptRenderChecksWhatItRenders pins the second half of item 6:
// ParseScript sees every branch once, in order, but a rendering takes some
// of them; when that puts a value where quoting fails, Render refuses it.
func TestScriptRenderChecksWhatItRenders(t *testing.T) {
	s, err := remote.ParseScript("t", `echo {{if .A}}"{{else}}"{{end}}{{.X|q}}{{if .A}}"{{else}}"{{end}}`)
	if err != nil {
		t.Fatal(err) // ParseScript saw echo ""X"": X is a plain word there
	}
	data := map[string]any{"A": true, "X": "$(id)"}
	if text, err := s.Render(data); err == nil || !strings.Contains(err.Error(), "inside double quotes") || strings.Contains(err.Error(), "$(id)") {
		t.Fatalf("Render = %q, %v; want a refusal that does not echo the value", text, err)
	}
	if _, err := s.Cmd(data); err == nil {
		t.Fatal("Cmd accepted what Render refuses")
	}
}

// TestScriptRendersConcurrently checks that renders, which each record
// their own values, do not mix them up.
func TestScriptRendersConcurrently(t *testing.T) {
	s := remote.MustParseScript("t", `echo {{.X | q}}`)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			v := strings.Repeat("x y", i)
			text, err := s.Render(map[string]string{"X": v})
			if err == nil && text != remote.ScriptPreamble+"echo "+remote.Quote(v) {
				err = fmt.Errorf("render %d = %q", i, text)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
