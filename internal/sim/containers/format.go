package containers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"
	"unicode"
)

// templateFuncs are the functions of Docker's --format templates.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", err
		}
		return strings.TrimSpace(b.String()), nil
	},
	"join":  strings.Join,
	"split": strings.Split,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"title": func(s string) string {
		if s == "" {
			return s
		}
		r := []rune(s)
		r[0] = unicode.ToUpper(r[0])
		return string(r)
	},
	"println": fmt.Sprintln,
}

// renderTemplate executes a Docker --format template on v as docker
// inspect does: on the typed value first, then, if a field is missing
// there, on its JSON form decoded into maps (so {{.Id}} works as well as
// {{.ID}}).
func renderTemplate(format string, v any) (string, error) {
	tmpl, err := template.New("").Funcs(templateFuncs).Parse(format)
	if err != nil {
		return "", fmt.Errorf("template parsing error: %v", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, v); err == nil {
		return b.String(), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var m any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", err
	}
	b.Reset()
	if err := tmpl.Execute(&b, m); err != nil {
		return "", fmt.Errorf("template: %v", err)
	}
	return b.String(), nil
}

// indentJSON renders v as docker inspect does: a four-space indented
// JSON document.
func indentJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	enc.Encode(v)
	return b.Bytes()
}

// table writes rows as Docker's table formatter does.
func table(w *bytes.Buffer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 10, 1, 3, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// humanDuration is go-units' HumanDuration ("5 seconds", "About a minute").
func humanDuration(d time.Duration) string {
	if seconds := int(d.Seconds()); seconds < 1 {
		return "Less than a second"
	} else if seconds == 1 {
		return "1 second"
	} else if seconds < 60 {
		return fmt.Sprintf("%d seconds", seconds)
	} else if minutes := int(d.Minutes()); minutes == 1 {
		return "About a minute"
	} else if minutes < 60 {
		return fmt.Sprintf("%d minutes", minutes)
	} else if hours := int(math.Round(d.Hours())); hours == 1 {
		return "About an hour"
	} else if hours < 48 {
		return fmt.Sprintf("%d hours", hours)
	} else if hours < 24*7*2 {
		return fmt.Sprintf("%d days", hours/24)
	} else if hours < 24*30*2 {
		return fmt.Sprintf("%d weeks", hours/24/7)
	} else if hours < 24*365*2 {
		return fmt.Sprintf("%d months", hours/24/30)
	}
	return fmt.Sprintf("%d years", int(d.Hours())/24/365)
}

// humanSize is go-units' HumanSizeWithPrecision(size, 3): "10.8kB".
func humanSize(size int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	f := float64(size)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.3g%s", f, units[i])
}

// ellipsis shortens s to max runes with a trailing "…", as Docker's
// table columns do.
func ellipsis(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}

// klogTime and logrusTime are the timestamps of crictl's log lines.
func klogTime(t time.Time) string { return t.UTC().Format("0102 15:04:05.000000") }

func logrusTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
