package remote

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"mvdan.cc/sh/v3/syntax"
)

// A placeholder stands for one value while a Script's shell syntax is
// checked: a plain shell word of letters and digits, so that bash parses
// it as one token wherever it stands (in an arithmetic expression, after
// $, as a name) and the checker finds it there. The checked text holds no
// value at all, only placeholders. Where a placeholder is a safe part of a
// word, so is q's output: both are word pieces without special characters.
const placeholderPrefix = "MGMTKITPLACEHOLDER"

var placeholderRE = regexp.MustCompile(placeholderPrefix + `([0-9]+)X`)

func placeholder(i int) string { return placeholderPrefix + strconv.Itoa(i) + "X" }

// flattenScript returns the text of t's template with every printing
// action replaced by a placeholder, and those actions in order. Control
// actions are dropped and every branch is kept once, in order: the else
// branch follows the if branch, a range body appears once. {{template}}
// calls are inlined.
func flattenScript(t *template.Template) (string, []*parse.ActionNode, error) {
	f := flattener{set: t}
	if err := f.list(t.Tree.Root); err != nil {
		return "", nil, err
	}
	return f.b.String(), f.actions, nil
}

type flattener struct {
	set     *template.Template
	b       strings.Builder
	actions []*parse.ActionNode
	calls   []string // the {{template}} calls being inlined
}

func (f *flattener) list(l *parse.ListNode) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := f.node(n); err != nil {
			return err
		}
	}
	return nil
}

func (f *flattener) node(n parse.Node) error {
	switch n := n.(type) {
	case *parse.TextNode:
		if strings.Contains(string(n.Text), placeholderPrefix) {
			return fmt.Errorf("line %d: the text contains %s, which is reserved", lineOf(n), placeholderPrefix)
		}
		f.b.Write(n.Text)
	case *parse.ActionNode:
		if len(n.Pipe.Decl) == 0 {
			f.b.WriteString(placeholder(len(f.actions)))
			f.actions = append(f.actions, n)
		}
	case *parse.IfNode:
		return f.branches(n.List, n.ElseList)
	case *parse.RangeNode:
		return f.branches(n.List, n.ElseList)
	case *parse.WithNode:
		return f.branches(n.List, n.ElseList)
	case *parse.ListNode:
		return f.list(n)
	case *parse.TemplateNode:
		for _, c := range f.calls {
			if c == n.Name {
				return fmt.Errorf("line %d: template %q calls itself", lineOf(n), n.Name)
			}
		}
		sub := f.set.Lookup(n.Name)
		if sub == nil || sub.Tree == nil {
			return fmt.Errorf("line %d: no template %q", lineOf(n), n.Name)
		}
		f.calls = append(f.calls, n.Name)
		defer func() { f.calls = f.calls[:len(f.calls)-1] }()
		return f.list(sub.Tree.Root)
	}
	// Comments, {{break}} and {{continue}} print nothing.
	return nil
}

func (f *flattener) branches(list, elseList *parse.ListNode) error {
	if err := f.list(list); err != nil {
		return err
	}
	return f.list(elseList)
}

// lineOf is the line of n in its template.
func lineOf(n parse.Node) int {
	switch n := n.(type) {
	case *parse.ActionNode:
		return n.Line
	case *parse.TemplateNode:
		return n.Line
	}
	return 0
}

// placement is where one placeholder landed in a script's shell syntax.
type placement struct {
	line   uint   // line in the checked text
	reason string // why the placeholder is not allowed there; "" when it is
}

// placeholderContexts parses src as bash and tells, for each of the n
// placeholders in it, whether it stands in a place where a quoted value
// stays one literal word (see [Script]) and, if not, why.
func placeholderContexts(src string, n int) ([]placement, error) {
	if strings.Count(src, placeholderPrefix) != n {
		return nil, fmt.Errorf("the script text contains %s, which is reserved", placeholderPrefix)
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, err
	}
	found := make([]placement, n)
	seen := make([]bool, n)
	var stack []syntax.Node
	record := func(text string, pos syntax.Pos, reason string) {
		for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
			i, err := strconv.Atoi(m[1])
			if err != nil || i >= n {
				continue
			}
			if seen[i] {
				reason = "twice"
			}
			seen[i] = true
			found[i] = placement{line: pos.Line(), reason: reason}
		}
	}
	syntax.Walk(file, func(node syntax.Node) bool {
		if node == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch x := node.(type) {
		case *syntax.Lit:
			record(x.Value, x.Pos(), litReason(x, stack))
		case *syntax.SglQuoted:
			record(x.Value, x.Pos(), "inside single quotes")
		case *syntax.Comment:
			record(x.Text, x.Pos(), "inside a comment")
		}
		stack = append(stack, node)
		return true
	})
	for i, ok := range seen {
		if !ok {
			found[i] = placement{reason: "split across shell tokens"}
		}
	}
	return found, nil
}

// litReason tells why a placeholder in lit, whose ancestors are stack, is
// not allowed there, or returns "" when it is.
func litReason(lit *syntax.Lit, stack []syntax.Node) string {
	// The innermost enclosing construct that would not keep a quoted
	// value literal decides the message.
	for i := len(stack) - 1; i >= 0; i-- {
		switch x := stack[i].(type) {
		case *syntax.DblQuoted:
			return "inside double quotes"
		case *syntax.CmdSubst:
			if x.Backquotes {
				return "inside backticks"
			}
			return "inside a command substitution $(...)"
		case *syntax.ProcSubst:
			return "inside a process substitution"
		case *syntax.ParamExp:
			return "inside a parameter expansion ${...}"
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			return "in an arithmetic context"
		case *syntax.TestClause:
			return "inside [[ ]]"
		case *syntax.DeclClause:
			return fmt.Sprintf("in an argument of %s, which bash may evaluate; assign the variable first (x={{... | q}})", x.Variant.Value)
		case *syntax.Redirect:
			if i+1 < len(stack) && stack[i+1] == x.Hdoc {
				return "inside a heredoc"
			}
		}
	}
	if len(stack) < 2 {
		return "outside a word"
	}
	word, ok := stack[len(stack)-1].(*syntax.Word)
	if !ok {
		return "in a name or pattern, not in a word"
	}
	switch p := stack[len(stack)-2].(type) {
	case *syntax.CallExpr:
		if word == p.Args[0] {
			return "as the command name"
		}
		if r := builtinArgReason(p, word); r != "" {
			return r
		}
	case *syntax.Assign:
		// The value of a plain assignment: x={{... | q}}.
		if word != p.Value {
			return "in an array index"
		}
	case *syntax.ArrayElem:
		if word != p.Value || p.Index != nil {
			return "in an indexed array element"
		}
	case *syntax.WordIter:
		// An item of for NAME in ...
	case *syntax.CaseClause:
		// The subject of case ... in.
	case *syntax.Redirect:
		switch p.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.RdrClob, syntax.WordHdoc, syntax.RdrAll, syntax.AppAll:
		case syntax.Hdoc, syntax.DashHdoc:
			return "as a heredoc delimiter"
		default:
			return "as the target of " + p.Op.String()
		}
	case *syntax.CaseItem:
		return "in a case pattern"
	default:
		return "in a word that is not an argument, an assignment value, a redirection target, a for item or a case subject"
	}
	for _, part := range word.Parts {
		switch part := part.(type) {
		case *syntax.Lit:
			if rest := placeholderRE.ReplaceAllString(part.Value, ""); strings.Trim(rest, plainWordChars) != "" {
				return fmt.Sprintf("in a word with unquoted special characters (%q); quote the rest of the word", rest)
			}
		case *syntax.SglQuoted, *syntax.DblQuoted:
		default:
			return "in a word with an unquoted expansion; quote the rest of the word"
		}
	}
	return ""
}

// plainWordChars are the characters that may stand unquoted in a word next
// to a placeholder: none of them expands, splits or globs, or changes
// how q's output (quoted, or one of these characters) is read.
const plainWordChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"

// builtinArgReason refuses values as arguments of bash builtins that
// evaluate them as code, arithmetic or variable names (where an array
// subscript is arithmetic, so a[$(cmd)] would run cmd), even when quoted.
func builtinArgReason(call *syntax.CallExpr, word *syntax.Word) string {
	args := call.Args
	// builtin NAME and command NAME run the builtin NAME.
	for len(args) > 1 && (args[0].Lit() == "builtin" || args[0].Lit() == "command") {
		args = args[1:]
		for len(args) > 1 && strings.HasPrefix(args[0].Lit(), "-") {
			args = args[1:]
		}
	}
	if word == args[0] {
		return "as the command name"
	}
	switch name := args[0].Lit(); name {
	case "eval", "let", "trap", "alias", "unset", "read", "readarray", "mapfile", "getopts",
		"declare", "typeset", "local", "export", "readonly", "nameref":
		return fmt.Sprintf("in an argument of %s, which bash evaluates as code or as a variable name", name)
	case "printf", "test", "[", "wait":
		for i := 1; i < len(args); i++ {
			if args[i] == word && args[i-1].Lit() == "-v" {
				return fmt.Sprintf("after %s -v, which bash evaluates as a variable name", args[0].Lit())
			}
		}
	}
	return ""
}
