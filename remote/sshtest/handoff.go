package sshtest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/remote"
)

// HostKeyPolicy returns a policy that accepts the server's host key and no
// other, as [remote.PinnedHostKey] with its fingerprint: what a test hands
// to [remote.Config.HostKey] instead of marshalling the key itself.
func (s *Server) HostKeyPolicy() remote.HostKeyPolicy {
	p, err := remote.PinnedHostKey(ssh.FingerprintSHA256(s.HostKey()))
	if err != nil {
		// A SHA256 fingerprint is always a valid pin.
		panic("sshtest: pinning the host key: " + err.Error())
	}
	return p
}

// RemoteConfig returns the settings with which package remote reaches the
// server as user: [Server.Addr], the user's name and [User.Password], and
// the host key pinned ([Server.HostKeyPolicy]). Everything else keeps
// remote's defaults; set Name, a Logger or shorter timeouts on the copy
// as the test needs, and Signers (or PrivateKey) for a user who logs in
// with a key only.
//
// RemoteConfig panics if the server has no such user: the test is wrong,
// not the code under test.
func (s *Server) RemoteConfig(user string) remote.Config {
	cfg, err := s.remoteConfig(user)
	if err != nil {
		panic(err.Error())
	}
	return cfg
}

func (s *Server) remoteConfig(user string) (remote.Config, error) {
	u, ok := s.user(user)
	if !ok {
		return remote.Config{}, fmt.Errorf("sshtest: the server at %s has no user %q (it has %s)", s.addr, user, strings.Join(s.userNames(), ", "))
	}
	return remote.Config{
		Addr:     s.addr,
		User:     u.Name,
		Password: remote.NewSecret(u.Password),
		HostKey:  s.HostKeyPolicy(),
	}, nil
}

// userNames returns the names of the server's users, sorted.
func (s *Server) userNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.users))
	for n := range s.users {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Dial connects to the server as user with [Server.RemoteConfig], as
// [remote.Dial] does, and returns the connected host. Close it when done.
// A user the server does not have is an error.
func (s *Server) Dial(ctx context.Context, user string) (*remote.SSHHost, error) {
	cfg, err := s.remoteConfig(user)
	if err != nil {
		return nil, err
	}
	return remote.Dial(ctx, cfg)
}
