package remote

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
	"testing/iotest"
)

func TestHashingReader(t *testing.T) {
	data := bytes.Repeat([]byte("mgmtkit hashes while it uploads\n"), 100_000)
	want := sha256.Sum256(data)
	for name, r := range map[string]io.Reader{
		"whole":     bytes.NewReader(data),
		"one byte":  iotest.OneByteReader(bytes.NewReader(data[:5000])),
		"half":      iotest.HalfReader(bytes.NewReader(data)),
		"data+EOF":  iotest.DataErrReader(bytes.NewReader(data)),
		"empty":     bytes.NewReader(nil),
		"truncated": io.LimitReader(bytes.NewReader(data), 12345),
	} {
		t.Run(name, func(t *testing.T) {
			hr := newHashingReader(r)
			got, err := io.ReadAll(hr)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(got)
			first, second := hr.Sum(), hr.Sum()
			if first != hex.EncodeToString(sum[:]) || second != first {
				t.Fatalf("Sum = %s then %s, want %x both times", first, second, sum)
			}
			if name == "whole" && hr.Sum() != hex.EncodeToString(want[:]) {
				t.Fatal("wrong sum of the whole input")
			}
		})
	}
}
