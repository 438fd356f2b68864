package remote_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
)

func TestSecretNeverPrints(t *testing.T) {
	const value = "hunter2-Secret-Value"
	s := remote.NewSecret(value)
	type exported struct{ Password remote.Secret }
	type unexported struct{ password remote.Secret }
	values := []any{
		s, &s, []remote.Secret{s}, map[string]remote.Secret{"k": s},
		exported{s}, &exported{s}, unexported{s}, &unexported{s},
	}
	var texts []string
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
			texts = append(texts, fmt.Sprintf(verb, v))
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
		l := slog.New(h)
		l.Info("login", "password", s, "cfg", exported{s}, "ptr", &exported{s})
		l.Info("login", slog.Any("password", s), slog.Group("g", "pw", s))
	}
	texts = append(texts, logs.String())
	texts = append(texts, fmt.Errorf("dial: %v", s).Error(), errors.New(s.String()).Error())
	for _, text := range texts {
		if strings.Contains(text, value) {
			t.Errorf("secret printed: %s", text)
		}
	}
	if !strings.Contains(fmt.Sprint(s), remote.Redacted) {
		t.Errorf("Sprint(secret) = %q, want %q", fmt.Sprint(s), remote.Redacted)
	}
	if s.Reveal() != value {
		t.Error("Reveal lost the value")
	}
}

func TestSecretJSON(t *testing.T) {
	var p struct {
		Password remote.Secret `json:"password"`
		Empty    remote.Secret `json:"empty"`
	}
	if err := json.Unmarshal([]byte(`{"password":"pa55-Word-x","empty":null}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Password.Reveal() != "pa55-Word-x" || !p.Empty.IsZero() {
		t.Fatalf("decoded %q, %v", p.Password.Reveal(), p.Empty.IsZero())
	}
	out, _ := json.Marshal(p)
	if strings.Contains(string(out), "pa55-Word-x") {
		t.Fatalf("re-encoded the value: %s", out)
	}
	err := json.Unmarshal([]byte(`{"password":12345678}`), &p)
	if err == nil || strings.Contains(err.Error(), "12345678") {
		t.Fatalf("a number was accepted or echoed: %v", err)
	}
	if remote.NewSecret("").String() != "" || !remote.NewSecret("").IsZero() {
		t.Error("an empty secret should print as empty")
	}
}
