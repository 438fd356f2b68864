package remote_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/NAME.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", name, file, got, want)
	}
}

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
	golden(t, "export-dirs", text)
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
