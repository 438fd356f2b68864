package remote_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// FuzzQuotedArgvArrivesIntact sends arbitrary argv through the whole path
// (quoting, SSH exec, the fake host's shell) and checks that the program
// receives exactly the bytes that were sent.
//
// Two places where a shell parser could lose bytes are covered by the
// seeds: mvdan.cc/sh turns CR LF into LF and rejects invalid UTF-8, which
// bash keeps; sshtest restores both (see sshtest's parseScript), so the
// comparison is exact. NUL cannot be part of any argv and is rejected by
// remote before anything runs.
func FuzzQuotedArgvArrivesIntact(f *testing.F) {
	for _, seed := range [][2]string{
		{"plain", ""},
		{"a b", "it's"},
		{"$(id)", "`id`; rm -rf / #"},
		{"line\r\nbreak", "\r"},
		{"\xff\xfe invalid", "\xc3"},
		{"'\"'\"'", `\\\n`},
		{"*?[a]", "{a,b} ~root"},
		{"tab\tand\nnewline", "!event $HOME ${x:-y}"},
		{"ü日本", "\x01\x1b[31m"},
	} {
		f.Add(seed[0], seed[1])
	}
	var (
		mu  sync.Mutex
		got []string
	)
	srv, _ := fakeHost(f)
	srv.Handle("/usr/bin/argv", func(_ context.Context, p *sshtest.Process) int {
		mu.Lock()
		got = append([]string(nil), p.Args[1:]...)
		mu.Unlock()
		return 0
	})
	host := dialAs(f, srv, "ubuntu", ubuntuPassword, nil)
	f.Fuzz(func(t *testing.T, a, b string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := host.Run(ctx, remote.Command("argv", a, b))
		if strings.ContainsRune(a, 0) || strings.ContainsRune(b, 0) {
			if err == nil {
				t.Fatal("an argument with NUL was accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("sent %q, %q; program received %q", a, b, got)
		}
	})
}
