package heattest

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// shortIDAlphabet is the alphabet of Heat's short_id.generate_id: the
// lower-cased RFC 4648 base32 alphabet, so names look like "kx3ua5tnl2fq".
const shortIDAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// newRand returns the deterministic source used for every identifier a
// server hands out. Two streams with the same seed never collide because the
// second PCG word differs.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// uuidLocked returns a random (version 4) UUID from the server's seeded
// source.
func (s *Server) uuidLocked() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := s.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hexLocked returns n random bytes from the seeded source as lower-case hex,
// the shape of Keystone's project, user and endpoint ids (n = 16).
func (s *Server) hexLocked(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(s.rng.Uint32())
	}
	return hex.EncodeToString(b)
}

// shortIDLocked returns a 12-character id as Heat's short_id module makes
// them: they name AutoScalingGroup members and suffix generated names.
func (s *Server) shortIDLocked() string {
	b := make([]byte, 12)
	for i := range b {
		b[i] = shortIDAlphabet[s.rng.IntN(len(shortIDAlphabet))]
	}
	return string(b)
}

// physicalNameLocked returns the name Heat gives a physical resource whose
// template sets no name: "<stack name>-<resource name>-<short id>".
func (s *Server) physicalNameLocked(stack, resource string) string {
	return stack + "-" + resource + "-" + s.shortIDLocked()
}
