package remote_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
)

func TestReplaceBlock(t *testing.T) {
	const (
		begin = "# BEGIN mgmtkit reg\n"
		end   = "# END mgmtkit reg\n"
	)
	for _, tc := range []struct {
		name    string
		content string
		lines   []string
		want    string
		wantErr string
	}{
		{name: "empty file", content: "", lines: []string{"a"}, want: begin + "a\n" + end},
		{name: "append keeps content", content: "x\ny\n", lines: []string{"a", "b"}, want: "x\ny\n" + begin + "a\nb\n" + end},
		{name: "missing final newline", content: "x", lines: []string{"a"}, want: "x\n" + begin + "a\n" + end},
		{name: "replace in place", content: "x\n" + begin + "old\n" + end + "y\n", lines: []string{"new"}, want: "x\n" + begin + "new\n" + end + "y\n"},
		{name: "unchanged", content: "x\n" + begin + "a\n" + end, lines: []string{"a"}, want: "x\n" + begin + "a\n" + end},
		{name: "remove", content: "x\n" + begin + "a\n" + end + "y\n", lines: nil, want: "x\ny\n"},
		{name: "remove absent", content: "x\n", lines: nil, want: "x\n"},
		{name: "other blocks untouched", content: "# BEGIN mgmtkit other\nz\n# END mgmtkit other\n", lines: []string{"a"}, want: "# BEGIN mgmtkit other\nz\n# END mgmtkit other\n" + begin + "a\n" + end},
		{name: "CRLF file", content: "x\r\n" + strings.TrimSuffix(begin, "\n") + "\r\nold\r\n" + strings.TrimSuffix(end, "\n") + "\r\n", lines: []string{"a"}, want: "x\r\n" + begin + "a\n" + end},
		{name: "BEGIN without END", content: begin + "a\n", lines: []string{"a"}, wantErr: "BEGIN marker without its END"},
		{name: "END without BEGIN", content: end, lines: []string{"a"}, wantErr: "END marker without its BEGIN"},
		{name: "twice", content: begin + end + begin + end, lines: []string{"a"}, wantErr: "appears twice"},
		{name: "newline in line", content: "", lines: []string{"a\nb"}, wantErr: "contains a newline"},
		{name: "marker in line", content: "", lines: []string{"# END mgmtkit reg"}, wantErr: "looks like a block marker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := remote.ReplaceBlock([]byte(tc.content), "reg", tc.lines)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
			// Applying the same block again changes nothing.
			again, err := remote.ReplaceBlock(got, "reg", tc.lines)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %q -> %q (%v)", got, again, err)
			}
		})
	}
	for _, name := range []string{"", "a\nb", " x"} {
		if _, err := remote.ReplaceBlock(nil, name, []string{"a"}); err == nil {
			t.Errorf("block name %q accepted", name)
		}
	}
}
