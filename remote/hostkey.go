package remote

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyPolicy decides whether the key a server presents is the right one.
// Build one with [KnownHosts], [PinnedHostKey], [TrustOnFirstUse],
// [HostKeyCallback] or, only when you mean it, [InsecureIgnoreHostKey]. A [Config] without a policy is
// rejected: there is no silent default.
type HostKeyPolicy interface {
	// check returns nil to accept key, or the reason to reject it.
	check(hostport string, remote net.Addr, key ssh.PublicKey) error
}

// KnownHosts verifies host keys against OpenSSH known_hosts files (hashed
// entries and @revoked markers included).
func KnownHosts(files ...string) (HostKeyPolicy, error) {
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("remote: reading known_hosts: %w", err)
	}
	return knownHostsPolicy{cb}, nil
}

type knownHostsPolicy struct{ cb ssh.HostKeyCallback }

func (p knownHostsPolicy) check(hostport string, remote net.Addr, key ssh.PublicKey) error {
	err := p.cb(hostport, remote, key)
	var ke *knownhosts.KeyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke) && len(ke.Want) == 0:
		return errors.New("the host is not in known_hosts")
	case errors.As(err, &ke):
		return fmt.Errorf("known_hosts holds a different key for it (line %d of %s)", ke.Want[0].Line, ke.Want[0].Filename)
	default:
		return err
	}
}

// PinnedHostKey accepts only the given keys. Each is either a SHA256
// fingerprint as printed by `ssh-keygen -lf` ("SHA256:...") or a public key
// in authorized_keys format ("ssh-ed25519 AAAA...").
func PinnedHostKey(keys ...string) (HostKeyPolicy, error) {
	if len(keys) == 0 {
		return nil, errors.New("remote: PinnedHostKey needs at least one key")
	}
	p := pinnedPolicy{}
	for _, k := range keys {
		fp, err := fingerprintOf(k)
		if err != nil {
			return nil, err
		}
		p = append(p, fp)
	}
	return p, nil
}

type pinnedPolicy []string

func (p pinnedPolicy) check(_ string, _ net.Addr, key ssh.PublicKey) error {
	got := ssh.FingerprintSHA256(key)
	for _, want := range p {
		if got == want {
			return nil
		}
	}
	return fmt.Errorf("expected %s", strings.Join(p, " or "))
}

// fingerprintOf accepts a SHA256 fingerprint or an authorized_keys line.
func fingerprintOf(k string) (string, error) {
	k = strings.TrimSpace(k)
	if strings.HasPrefix(k, "SHA256:") {
		return k, nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k))
	if err != nil {
		return "", fmt.Errorf("remote: %q is neither a SHA256 fingerprint nor an authorized_keys public key", shorten(k, 40))
	}
	return ssh.FingerprintSHA256(key), nil
}

// TrustOnFirstUse accepts whatever key the host presents the first time and
// only that key afterwards.
//
// known is the key learned earlier (authorized_keys format or a SHA256
// fingerprint), or "" if there is none yet. When a key is learned, learned
// is called once with it in authorized_keys format: store it (in the VNF
// instance's metadata, say) and pass it as known next time. Redials of the
// same Host verify against the learned key.
func TrustOnFirstUse(known string, learned func(key string)) (HostKeyPolicy, error) {
	p := &tofuPolicy{learned: learned}
	if known != "" {
		fp, err := fingerprintOf(known)
		if err != nil {
			return nil, err
		}
		p.pinned = fp
	}
	return p, nil
}

type tofuPolicy struct {
	mu      sync.Mutex
	pinned  string
	learned func(string)
}

func (p *tofuPolicy) check(_ string, _ net.Addr, key ssh.PublicKey) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := ssh.FingerprintSHA256(key)
	if p.pinned == "" {
		p.pinned = got
		if p.learned != nil {
			p.learned(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))))
		}
		return nil
	}
	if got != p.pinned {
		return fmt.Errorf("expected %s, the key trusted on first use", p.pinned)
	}
	return nil
}

// HostKeyCallback verifies host keys with cb, an x/crypto/ssh host key
// callback: a certificate checker's ([ssh.CertChecker.CheckHostKey]), a
// known_hosts kept somewhere other than a file, a test's routing table.
// cb gets the "host:port" the host was dialed at and the key it
// presented; its error, the reason for the rejection, becomes the
// [HostKeyError]'s Reason. A nil cb rejects every key.
func HostKeyCallback(cb ssh.HostKeyCallback) HostKeyPolicy { return callbackPolicy{cb} }

type callbackPolicy struct{ cb ssh.HostKeyCallback }

func (p callbackPolicy) check(hostport string, remote net.Addr, key ssh.PublicKey) error {
	if p.cb == nil {
		return errors.New("no host key callback")
	}
	return p.cb(hostport, remote, key)
}

// InsecureIgnoreHostKey accepts any host key. Anyone on the path to the host
// can then read every password and file this package sends. Use it only in
// a lab, and say so in the caller's configuration.
func InsecureIgnoreHostKey() HostKeyPolicy { return insecurePolicy{} }

type insecurePolicy struct{}

func (insecurePolicy) check(string, net.Addr, ssh.PublicKey) error { return nil }
