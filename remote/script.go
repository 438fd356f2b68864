package remote

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"

	"al.essio.dev/pkg/shellescape"
)

// ScriptPreamble starts every rendered [Script]: stop at the first failing
// command, unset variable or failing pipeline stage.
const ScriptPreamble = "set -euo pipefail\n"

// Script is a compound command: a bash program written as a text/template
// in which every value is quoted.
//
// Every action that prints a value must end in the q function
// ({{q .Path}} or {{.Path | q}}), which quotes it as one shell word;
// [ParseScript] rejects a template with an unquoted action, so a value can
// never change the shape of the script. Control actions ({{if}}, {{range}},
// {{with}}, variable declarations) need no quoting. Secrets cannot be
// rendered at all: q refuses a [Secret]; pass secrets on standard input.
//
// A Script runs as `bash -c SCRIPT NAME` (with sudo when Cmd.Sudo is set).
type Script struct {
	name string
	tmpl *template.Template
}

var scriptFuncs = template.FuncMap{"q": quoteValue}

// quoteValue is the template's q function.
func quoteValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return shellescape.Quote(v), nil
	case Secret, *Secret:
		return "", errors.New("a Secret cannot be rendered into a script; pass it on standard input")
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, bool:
		return shellescape.Quote(fmt.Sprint(v)), nil
	case fmt.Stringer:
		return shellescape.Quote(v.String()), nil
	case nil:
		return "", errors.New("q: nil value")
	default:
		return "", fmt.Errorf("q: cannot quote a %T", v)
	}
}

// ParseScript parses a script template and checks that every action that
// prints a value ends in q.
func ParseScript(name, text string) (*Script, error) {
	t, err := template.New(name).Funcs(scriptFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("remote: script %s: %w", name, err)
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkQuoted(tt.Tree.Root); err != nil {
			return nil, fmt.Errorf("remote: script %s: %s: %w", name, tt.Name(), err)
		}
	}
	return &Script{name: name, tmpl: t}, nil
}

// MustParseScript is ParseScript for scripts known at compile time; it
// panics on error.
func MustParseScript(name, text string) *Script {
	s, err := ParseScript(name, text)
	if err != nil {
		panic(err)
	}
	return s
}

func checkQuoted(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkQuoted(c); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) > 0 {
			return nil
		}
		last := n.Pipe.Cmds[len(n.Pipe.Cmds)-1]
		if id, ok := last.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "q" {
			return fmt.Errorf("line %d: %s prints a value without quoting it; end the action with | q", n.Line, n)
		}
	case *parse.IfNode:
		return checkBranches(n.List, n.ElseList)
	case *parse.RangeNode:
		return checkBranches(n.List, n.ElseList)
	case *parse.WithNode:
		return checkBranches(n.List, n.ElseList)
	}
	return nil
}

func checkBranches(list, elseList *parse.ListNode) error {
	if err := checkQuoted(list); err != nil {
		return err
	}
	return checkQuoted(elseList)
}

// Render returns the script text for data, preamble included. Use it in
// golden tests.
func (s *Script) Render(data any) (string, error) {
	var b strings.Builder
	b.WriteString(ScriptPreamble)
	if err := s.tmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("remote: script %s: %w", s.name, err)
	}
	return b.String(), nil
}

// Cmd renders the script for data as a command: bash -c SCRIPT NAME.
func (s *Script) Cmd(data any) (Cmd, error) {
	text, err := s.Render(data)
	if err != nil {
		return Cmd{}, err
	}
	return Cmd{Args: []string{"bash", "-c", text, s.name}}, nil
}

// Name returns the script's name, which is also its $0 on the host.
func (s *Script) Name() string { return s.name }
