package ubuntu

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// gpgOptions are the options of `gpg --dearmor` the fake accepts. Every
// other gpg command fails loudly.
var gpgOptions = optSpec{short: "o:qv", long: []string{
	"dearmor", "enarmor", "batch", "yes", "no-tty", "quiet", "verbose", "output=",
}}

// gpgTool is GnuPG 2.2's gpg (package gnupg, 2.2.27 on Ubuntu 22.04) for
// the one command apt key installation uses: gpg --dearmor [-o FILE]
// [--batch] [--yes] [FILE], which turns an ASCII-armored OpenPGP block
// into its binary packets (gpg(1), "--dearmor: Pack or unpack an
// arbitrary input into/from an OpenPGP ASCII armor"; RFC 4880 section 6).
// As gpg 2.2.40 does on this machine (checked by hand with the real
// program, see gpg_test.go):
//
//   - input without an armor header and not binary OpenPGP ("<html>",
//     nothing at all) fails with "gpg: no valid OpenPGP data found."
//     (exit 2); binary OpenPGP input passes through unchanged;
//   - a checksum that does not match prints "gpg: CRC error; COMPUTED -
//     FOUND" and exits 2 after writing the data; characters outside the
//     radix-64 alphabet are skipped with "gpg: invalid radix64 character
//     XX skipped" (g10/armor.c, radix64_read);
//   - -o/--output onto an existing file: without --yes gpg asks whether
//     to overwrite, on /dev/tty, which an SSH exec session has not ("gpg:
//     cannot open '/dev/tty': No such device or address"), or in --batch
//     mode fails ("gpg: dearmoring failed: File exists"); --yes overwrites
//     (g10/openfile.c, open_outfile and overwrite_filep);
//   - an output it cannot create: "gpg: can't create 'F': REASON";
//   - a file operand without -o writes FILE.gpg, under the same rules.
//
// gpg does not create ~/.gnupg for --dearmor. The output file is created
// with mode 0666 less the umask, as open(2) does.
func gpgTool(_ context.Context, _ *Machine, p *sshtest.Process) int {
	c, code, ok := gpgOptions.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if !c.Has("--dearmor") {
		return notModelled(p, "gpg without --dearmor")
	}
	if len(c.Operands) > 1 {
		errf(p, "usage: gpg [options] --dearmor [file]")
		return 2
	}
	var in io.Reader = p.Stdin
	if len(c.Operands) == 1 && c.Operands[0] != "-" {
		data, err := p.FS.ReadFile(c.Operands[0])
		if err != nil {
			errf(p, "gpg: can't open '%s': %s", c.Operands[0], errnoText(err))
			errf(p, "gpg: dearmoring failed: %s", errnoText(err))
			return 2
		}
		in = bytes.NewReader(data)
	}
	out := p.Stdout
	name, ok := c.Value("-o", "--output")
	if !ok && len(c.Operands) == 1 && c.Operands[0] != "-" {
		// A file operand without -o: the output is FILE.gpg
		// (g10/openfile.c, make_outfile_name).
		name, ok = c.Operands[0]+".gpg", true
	}
	if ok && name != "-" {
		if _, err := p.FS.Stat(name); err == nil && !c.Has("--yes") {
			if !c.Has("--batch") {
				errf(p, "gpg: cannot open '/dev/tty': No such device or address")
				return 2
			}
			errf(p, "gpg: no valid OpenPGP data found.")
			errf(p, "gpg: dearmoring failed: File exists")
			return 2
		}
		f, err := p.FS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			errf(p, "gpg: can't create '%s': %s", name, errnoText(err))
			errf(p, "gpg: no valid OpenPGP data found.")
			errf(p, "gpg: dearmoring failed: %s", errnoText(err))
			return 2
		}
		defer f.Close()
		out = f
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return p.Fail(2, "gpg: read error: %v", err)
	}
	bin, d := dearmor(data)
	for _, w := range d.warnings {
		errf(p, "gpg: %s", w)
	}
	if d.noData {
		errf(p, "gpg: no valid OpenPGP data found.")
		return 2
	}
	if _, err := out.Write(bin); err != nil {
		return p.Fail(2, "gpg: write error: %v", err)
	}
	if d.crcErr != "" {
		errf(p, "gpg: %s", d.crcErr)
		return 2
	}
	return 0
}

// errnoText is an error's strerror text ("No such file or directory").
func errnoText(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		t := errno.Error()
		return strings.ToUpper(t[:1]) + t[1:]
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	case errors.Is(err, fs.ErrExist):
		return "File exists"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// dearmorResult is what dearmor found besides the data.
type dearmorResult struct {
	noData   bool     // neither armor nor binary OpenPGP
	warnings []string // skipped characters
	crcErr   string   // "CRC error; COMPUTED - FOUND"
}

// dearmor decodes the first ASCII-armored block of data (RFC 4880 section
// 6.2: a "-----BEGIN PGP ...-----" line, header lines up to an empty line,
// radix-64 lines, an optional "=" CRC-24 line, the END line), or returns
// binary OpenPGP data as it is (a first octet with bit 7 set, RFC 4880
// section 4.2), as gpg's armor filter does.
func dearmor(data []byte) ([]byte, dearmorResult) {
	if len(data) > 0 && data[0]&0x80 != 0 {
		return data, dearmorResult{}
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "-----BEGIN PGP ") && strings.HasSuffix(strings.TrimSpace(l), "-----") {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, dearmorResult{noData: true}
	}
	i := start + 1
	for i < len(lines) && strings.TrimSpace(lines[i]) != "" { // armor headers (Version:, Comment:)
		if !strings.Contains(lines[i], ": ") {
			break // no header block: gpg accepts radix-64 right away
		}
		i++
	}
	var r dearmorResult
	var b64 strings.Builder
	crc := ""
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "-----END PGP ") {
			break
		}
		if strings.HasPrefix(l, "=") {
			crc = l[1:]
			continue
		}
		for j := 0; j < len(l); j++ {
			ch := l[j]
			switch {
			case isRadix64(ch):
				b64.WriteByte(ch)
			case ch == '=': // padding
			default:
				r.warnings = append(r.warnings, fmt.Sprintf("invalid radix64 character %02X skipped", ch))
			}
		}
	}
	s := b64.String()
	if len(s)%4 == 1 { // a lone trailing sextet holds no whole octet
		s = s[:len(s)-1]
	}
	out, _ := base64.RawStdEncoding.DecodeString(s)
	if len(out) == 0 {
		return nil, dearmorResult{noData: true, warnings: r.warnings}
	}
	if crc != "" {
		want, err := base64.StdEncoding.DecodeString(crc)
		got := crc24(out)
		if err != nil || len(want) != 3 || uint32(want[0])<<16|uint32(want[1])<<8|uint32(want[2]) != got {
			var found uint32
			if len(want) == 3 {
				found = uint32(want[0])<<16 | uint32(want[1])<<8 | uint32(want[2])
			}
			r.crcErr = fmt.Sprintf("CRC error; %06X - %06X", got, found)
		}
	}
	return out, r
}

func isRadix64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}

// crc24 is the armor checksum of RFC 4880 section 6.1.
func crc24(data []byte) uint32 {
	crc := uint32(0xB704CE)
	for _, b := range data {
		crc ^= uint32(b) << 16
		for range 8 {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1864CFB
			}
		}
	}
	return crc & 0xFFFFFF
}

// Dearmor returns the binary OpenPGP packets of an ASCII-armored block as
// `gpg --dearmor` writes them, or an error for input gpg refuses.
func Dearmor(armored []byte) ([]byte, error) {
	out, r := dearmor(armored)
	switch {
	case r.noData:
		return nil, errors.New("gpg: no valid OpenPGP data found")
	case r.crcErr != "":
		return nil, errors.New("gpg: " + r.crcErr)
	}
	return out, nil
}

// KeyID returns the long key ID (16 upper-case hex digits) of the first
// version 4 public key packet of a binary OpenPGP key: the low 64 bits of
// its fingerprint, the SHA-1 of 0x99, the two-octet packet length and the
// packet body (RFC 4880 sections 12.2 and 4.2). It is what apt names in
// NO_PUBKEY. It returns "" for anything else.
func KeyID(key []byte) string {
	if len(key) < 2 || key[0]&0x80 == 0 {
		return ""
	}
	var tag int
	var body []byte
	if key[0]&0x40 != 0 { // new format
		tag = int(key[0] & 0x3f)
		switch l := int(key[1]); {
		case l < 192 && len(key) >= 2+l:
			body = key[2 : 2+l]
		case l >= 192 && l < 224 && len(key) >= 3:
			n := (l-192)<<8 + int(key[2]) + 192
			if len(key) >= 3+n {
				body = key[3 : 3+n]
			}
		}
	} else {
		tag = int(key[0]>>2) & 0xf
		switch key[0] & 3 {
		case 0:
			if n := int(key[1]); len(key) >= 2+n {
				body = key[2 : 2+n]
			}
		case 1:
			if len(key) >= 3 {
				if n := int(key[1])<<8 | int(key[2]); len(key) >= 3+n {
					body = key[3 : 3+n]
				}
			}
		}
	}
	if tag != 6 || len(body) == 0 || body[0] != 4 {
		return ""
	}
	h := sha1.New()
	h.Write([]byte{0x99, byte(len(body) >> 8), byte(len(body))})
	h.Write(body)
	sum := h.Sum(nil)
	return strings.ToUpper(hex.EncodeToString(sum[len(sum)-8:]))
}
