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
// ({{q .Path}} or {{.Path | q}}), which quotes it as one shell word; q
// may not appear anywhere else. Control actions ({{if}}, {{range}},
// {{with}}, variable declarations) need no quoting. Secrets cannot be
// rendered at all: q refuses a [Secret]; pass secrets on standard input.
//
// A quoted word stays literal only where bash reads a plain word, so a
// value may only stand, alone or next to quoted strings and plain
// characters (letters, digits and _@%+=:,./-), as
//
//   - an argument of a command, but not its name: echo {{.X | q}},
//     --opt={{.X | q}}, "$HOME"/{{.X | q}};
//   - the value of a plain assignment: x={{.X | q}} (then use "$x"), or an
//     element of an array: a=({{.X | q}});
//   - the target of <, >, >>, <>, >|, &>, &>> or <<<;
//   - an item of for NAME in ..., or the subject of case ... in.
//
// Anywhere else ParseScript refuses the template, naming the placeholder,
// its line and the place: inside double or single quotes, a heredoc,
// backticks, $(...), <(...), ${...} or [[ ]], in an arithmetic context, a
// comment or a case pattern, next to $ or an unquoted expansion, glob or
// brace, and as an argument of the builtins that evaluate their arguments
// as code or variable names (eval, let, trap, alias, unset, read, mapfile,
// readarray, getopts, declare, local, export, readonly, typeset, and
// printf, test or wait after -v). ParseScript decides from bash's syntax
// tree (mvdan.cc/sh/v3/syntax) of the template with each value replaced by
// a placeholder word and each {{if}}, {{else}} and {{range}} branch taken
// once, and refuses a template that is not valid bash that way. Render
// checks the script it renders in the same way, so branches that combine
// differently than ParseScript saw cannot move a value out of its place.
// Evaluating a value the script holds (eval "$x", bash -c "$x") remains
// the script's own choice.
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
// prints a value ends in q, and stands where q's quoting keeps it one
// literal word (see [Script]).
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
