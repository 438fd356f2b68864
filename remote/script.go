package remote

import (
	"errors"
	"fmt"
	"strconv"
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
	if t.Tree == nil {
		return &Script{name: name, tmpl: t}, nil
	}
	flat, actions, err := flattenScript(t)
	if err != nil {
		return nil, fmt.Errorf("remote: script %s: %w", name, err)
	}
	places, err := placeholderContexts(flat, len(actions))
	if err != nil {
		return nil, fmt.Errorf("remote: script %s: not valid bash with each {{if}}, {{else}} and {{range}} branch taken once (keep each branch whole commands or words): %w", name, err)
	}
	for i, p := range places {
		if p.reason != "" {
			return nil, fmt.Errorf("remote: script %s: placeholder %s at %s: %s; a value may only be a plain word (assign it first, x=%s, then use \"$x\")",
				name, actions[i], location(t, actions[i]), p.reason, actions[i])
		}
	}
	return &Script{name: name, tmpl: t}, nil
}

// location is "line N" of an action in the text given to ParseScript.
func location(t *template.Template, n parse.Node) string {
	loc, _ := t.Tree.ErrorContext(n) // NAME:LINE:COL
	loc = loc[:strings.LastIndex(loc, ":")]
	return "line " + loc[strings.LastIndex(loc, ":")+1:]
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
			return qOnlyAtEnd(n.Line, n.Pipe)
		}
		last := n.Pipe.Cmds[len(n.Pipe.Cmds)-1]
		if id, ok := last.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "q" {
			return fmt.Errorf("line %d: %s prints a value without quoting it; end the action with | q", n.Line, n)
		}
		for _, c := range n.Pipe.Cmds[:len(n.Pipe.Cmds)-1] {
			if usesQ(c) {
				return fmt.Errorf("line %d: %s uses q before its end; q may only end an action", n.Line, n)
			}
		}
		for _, a := range last.Args[1:] {
			if usesQ(a) {
				return fmt.Errorf("line %d: %s uses q before its end; q may only end an action", n.Line, n)
			}
		}
	case *parse.IfNode:
		return checkBranches(n.Line, n.Pipe, n.List, n.ElseList)
	case *parse.RangeNode:
		return checkBranches(n.Line, n.Pipe, n.List, n.ElseList)
	case *parse.WithNode:
		return checkBranches(n.Line, n.Pipe, n.List, n.ElseList)
	case *parse.TemplateNode:
		return qOnlyAtEnd(n.Line, n.Pipe)
	}
	return nil
}

func checkBranches(line int, pipe *parse.PipeNode, list, elseList *parse.ListNode) error {
	if err := qOnlyAtEnd(line, pipe); err != nil {
		return err
	}
	if err := checkQuoted(list); err != nil {
		return err
	}
	return checkQuoted(elseList)
}

// qOnlyAtEnd refuses q in a pipeline whose value is not printed: q may
// only end a printing action, where Render knows its output is a value.
func qOnlyAtEnd(line int, pipe *parse.PipeNode) error {
	if pipe != nil && usesQ(pipe) {
		return fmt.Errorf("line %d: %s uses q where it does not print a value; q may only end an action", line, pipe)
	}
	return nil
}

// usesQ reports whether n calls q anywhere.
func usesQ(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.IdentifierNode:
		return n.Ident == "q"
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			if usesQ(c) {
				return true
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if usesQ(a) {
				return true
			}
		}
	case *parse.ChainNode:
		return usesQ(n.Node)
	}
	return false
}

// Render returns the script text for data, preamble included. Use it in
// golden tests.
//
// Render checks the text it produced as ParseScript checks the template:
// it renders every value as a placeholder, parses the result as bash and
// refuses it unless each placeholder stands where a quoted value stays one
// literal word; only then does it put the quoted values in. So a template
// whose {{if}} or {{range}} branches combine into a different shape than
// ParseScript saw still cannot run a value.
func (s *Script) Render(data any) (string, error) {
	t, err := s.tmpl.Clone()
	if err != nil {
		return "", fmt.Errorf("remote: script %s: %w", s.name, err)
	}
	var values []string
	t.Funcs(template.FuncMap{"q": func(v any) (string, error) {
		quoted, err := quoteValue(v)
		if err != nil {
			return "", err
		}
		values = append(values, quoted)
		return placeholder(len(values) - 1), nil
	}})
	var b strings.Builder
	b.WriteString(ScriptPreamble)
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("remote: script %s: %w", s.name, err)
	}
	text := b.String()
	places, err := placeholderContexts(text, len(values))
	if err != nil {
		return "", fmt.Errorf("remote: script %s: rendered with values as placeholders, it is not valid bash: %w", s.name, err)
	}
	for i, p := range places {
		if p.reason != "" {
			return "", fmt.Errorf("remote: script %s: rendered, value %d: %s (line %d of the script)", s.name, i+1, p.reason, p.line)
		}
	}
	return placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		i, _ := strconv.Atoi(placeholderRE.FindStringSubmatch(m)[1])
		return values[i]
	}), nil
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
