package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// TrustStateFile records, on each node, what [ConfigureRegistryTrust] has
// added there, so that a later call can take away what its connections no
// longer ask for and nothing else: the files it wrote whole (hosts.toml,
// ca.crt, CRI-O drop-ins), the daemon.json insecure-registries entries and
// kubelet config.json auths entries it added (an entry that was there
// before is someone else's and stays), and the registries it logged Docker
// in to. It is JSON with a version field, root-only (0600), read with the
// run's other files and written with them; it holds server names and
// paths, never a credential.
const TrustStateFile = "/var/lib/mgmtkit/registry-trust/state.json"

// trustStateVersion is the version of TrustStateFile this code writes and
// reads.
const trustStateVersion = 1

// trustRecord is the content of TrustStateFile. Entries are the exact
// paths and server spellings on the node: the runtimes look them up byte
// for byte (see [Connection.Server]).
type trustRecord struct {
	Version int `json:"version"`
	// Files are the files mgmtkit wrote whole.
	Files []string `json:"files,omitempty"`
	// InsecureRegistries are the daemon.json insecure-registries entries
	// mgmtkit added.
	InsecureRegistries []string `json:"insecure_registries,omitempty"`
	// KubeletAuths are the keys of the kubelet config.json's auths that
	// mgmtkit added.
	KubeletAuths []string `json:"kubelet_auths,omitempty"`
	// DockerLogins are the servers mgmtkit logged Docker in to (root's
	// config.json had no entry for them before).
	DockerLogins []string `json:"docker_logins,omitempty"`
}

func (r trustRecord) empty() bool {
	return len(r.Files)+len(r.InsecureRegistries)+len(r.KubeletAuths)+len(r.DockerLogins) == 0
}

// union returns everything either record holds.
func (r trustRecord) union(o trustRecord) trustRecord {
	return trustRecord{
		Version:            trustStateVersion,
		Files:              unite(r.Files, o.Files),
		InsecureRegistries: unite(r.InsecureRegistries, o.InsecureRegistries),
		KubeletAuths:       unite(r.KubeletAuths, o.KubeletAuths),
		DockerLogins:       unite(r.DockerLogins, o.DockerLogins),
	}
}

func (r trustRecord) equal(o trustRecord) bool {
	return slices.Equal(r.Files, o.Files) && slices.Equal(r.InsecureRegistries, o.InsecureRegistries) &&
		slices.Equal(r.KubeletAuths, o.KubeletAuths) && slices.Equal(r.DockerLogins, o.DockerLogins)
}

// encode renders the record, its lists sorted so that equal records are
// equal bytes.
func (r trustRecord) encode() []byte {
	r.Version = trustStateVersion
	b, _ := json.MarshalIndent(r, "", "  ") // only strings: cannot fail
	return append(b, '\n')
}

// unite returns the sorted union of lists, without repeats.
func unite(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// minus returns the elements of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// parseTrustRecord reads TrustStateFile's content; a missing file is an
// empty record. A file mgmtkit cannot read is an error rather than a
// guess: removing too much or too little would both be wrong.
func parseTrustRecord(b []byte, exists bool) (trustRecord, error) {
	var r trustRecord
	if !exists {
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return trustRecord{}, fmt.Errorf("%s is not mgmtkit's state (%v): restore it or remove it by hand (mgmtkit then forgets what it added)", TrustStateFile, err)
	}
	if r.Version != trustStateVersion {
		return trustRecord{}, fmt.Errorf("%s has version %d; this mgmtkit reads version %d", TrustStateFile, r.Version, trustStateVersion)
	}
	return r.union(trustRecord{}), nil
}

// ledger is one run's bookkeeping: what earlier runs added (old), what
// the node will hold once this run is done (next), and what this run
// takes away.
type ledger struct {
	old, next trustRecord
	// owned are the files this run wants whole, whether it changes them
	// or not.
	owned []string
	// staleFiles are recorded files this run no longer wants.
	staleFiles []string
	// logouts are recorded Docker logins this run no longer wants.
	logouts []string
}

// own asks for a root-owned file that mgmtkit writes whole and records it
// as mgmtkit's.
func (s *trustState) own(file string, content []byte, mode fs.FileMode) {
	s.want(file, content, mode)
	s.book.owned = append(s.book.owned, file)
}

// readRecord parses TrustStateFile from the files plan read.
func (s *trustState) readRecord() error {
	b, ok := s.files[TrustStateFile]
	r, err := parseTrustRecord(b, ok)
	s.book.old, s.book.next = r, trustRecord{Version: trustStateVersion}
	return err
}

// nothingToUndo reports, for a call without connections, whether no
// earlier run left anything on h: no state entry and no managed block in
// /etc/hosts or cloud-init's template of it. It costs one command.
func nothingToUndo(ctx context.Context, h remote.Host) (bool, error) {
	files, err := remote.ReadFiles(ctx, h, []string{TrustStateFile, HostsFile, HostsTemplate}, remote.FileOptions{Sudo: true})
	if err != nil {
		return false, err
	}
	b, ok := files[TrustStateFile]
	r, err := parseTrustRecord(b, ok)
	if err != nil || !r.empty() {
		return false, err
	}
	for _, file := range []string{HostsFile, HostsTemplate} {
		content := files[file]
		without, err := remote.ReplaceBlock(content, HostsBlock, nil)
		if err != nil {
			return false, fmt.Errorf("%s: %w", file, err)
		}
		if len(content) > 0 && !bytes.Equal(without, content) {
			return false, nil
		}
	}
	return true, nil
}

// kept returns the recorded entries of old that are still wanted, plus
// added: what mgmtkit owns of a shared file once this run is done.
func kept(old, wanted, added []string) []string {
	var out []string
	for _, x := range old {
		if slices.Contains(wanted, x) {
			out = append(out, x)
		}
	}
	return unite(out, added)
}

// settle decides what this run takes away and what the state holds
// afterwards. Shared-file entries were settled by the steps (next holds
// them); whole files and Docker logins are settled here. Without Docker
// in this run, its daemon.json entries and logins stay as recorded:
// nothing can take them away now.
func (s *trustState) settle(rts []system.Runtime, conns []Connection) error {
	b := &s.book
	b.next.Files = unite(b.owned)
	b.staleFiles = minus(b.old.Files, b.owned)
	if !slices.Contains(rts, system.Docker) {
		b.next.InsecureRegistries = b.old.InsecureRegistries
		b.next.DockerLogins = b.old.DockerLogins
		return nil
	}
	var creds, ours []string
	if slices.ContainsFunc(conns, func(c Connection) bool { return c.Username != "" }) {
		_, auths, err := parseAuthConfig(s.files[DockerAuthFile], DockerAuthFile)
		if err != nil {
			return err
		}
		for _, c := range conns {
			if c.Username == "" {
				continue
			}
			creds = append(creds, c.Server)
			// A login someone else made stays theirs, even when
			// dockerLogin replaces its credentials.
			if _, had := auths[c.Server]; !had || slices.Contains(b.old.DockerLogins, c.Server) {
				ours = append(ours, c.Server)
			}
		}
	}
	b.next.DockerLogins = unite(ours)
	b.logouts = minus(b.old.DockerLogins, creds)
	return nil
}

// recordAdditions puts the state first among the writes when this run
// adds anything: the state then never claims less than the node holds,
// whichever write fails. Nothing is forgotten yet: that waits until it is
// gone ([trustState.forget]).
func (s *trustState) recordAdditions() {
	mid := s.book.old.union(s.book.next)
	if mid.equal(s.book.old) {
		return
	}
	state := remote.FileWrite{Path: TrustStateFile, Content: mid.encode(),
		Options: remote.FileOptions{Mode: 0o600, Owner: "root", Group: "root", Sudo: true}}
	s.writes = append([]remote.FileWrite{state}, s.writes...)
}

// removeStale removes the files mgmtkit wrote for registries no longer
// passed, and their per-registry directories when that empties them.
func (s *trustState) removeStale(ctx context.Context) error {
	files := s.book.staleFiles
	if len(files) == 0 {
		return nil
	}
	var dirs []string
	for _, f := range files {
		if d := path.Dir(f); d != CRIORegistriesDir && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	removed, err := remote.RemoveFiles(ctx, s.h, files, dirs, remote.FileOptions{Sudo: true})
	for i, f := range files {
		if removed[i] {
			s.did("removed %s", f)
		}
	}
	return err
}

// dockerLogout logs Docker out of the registries mgmtkit logged it in to
// and no connection names any more. `docker logout` only edits the
// client's config.json and succeeds when there is nothing to remove
// (runLogout in docker/cli cli/command/registry/logout.go).
func (s *trustState) dockerLogout(ctx context.Context) error {
	for _, srv := range s.book.logouts {
		if _, err := s.h.Run(ctx, sudo("docker", "logout", srv)); err != nil {
			return fmt.Errorf("docker logout %s: %w", srv, err)
		}
		s.did("docker logged out of %s", srv)
	}
	return nil
}

// forget writes the final state once everything it no longer lists is
// gone from the node.
func (s *trustState) forget(ctx context.Context) error {
	final := s.book.next
	if final.equal(s.book.old.union(s.book.next)) {
		return nil
	}
	_, err := remote.WriteFiles(ctx, s.h, []remote.FileWrite{{Path: TrustStateFile, Content: final.encode(),
		Options: remote.FileOptions{Mode: 0o600, Owner: "root", Group: "root", Sudo: true}}})
	return err
}

// staleCRIODropIn reports whether this run removes a CRI-O drop-in, which
// CRI-O must reload for.
func (s *trustState) staleCRIODropIn() bool {
	return slices.ContainsFunc(s.book.staleFiles, func(f string) bool { return path.Dir(f) == CRIORegistriesDir })
}

// planInsecure merges the HTTP registries into daemon.json and takes out
// the entries mgmtkit added for registries no longer passed; an entry
// that was there before mgmtkit added it is not recorded, so it stays.
// daemon.json is judged only when it has to change.
func (s *trustState) planInsecure(insecure []string) error {
	b := &s.book
	stale := minus(b.old.InsecureRegistries, insecure)
	if len(insecure) == 0 && len(stale) == 0 {
		return nil
	}
	merged, added, err := mergeInsecure(s.files[DockerDaemonJSON], insecure, stale...)
	if err != nil {
		return err
	}
	s.daemonJSON = merged
	b.next.InsecureRegistries = kept(b.old.InsecureRegistries, insecure, added)
	return nil
}

// refuseDuplicates rejects connections that name one registry twice
// ([CanonicalServer]) before anything runs.
func refuseDuplicates(conns []Connection) error {
	var errs []error
	for _, d := range duplicateServers(conns) {
		errs = append(errs, fmt.Errorf("private_registry_connection_info[%d].server: %q repeats private_registry_connection_info[%d].server %q", d.i, conns[d.i].Server, d.first, conns[d.first].Server))
	}
	return errors.Join(errs...)
}

// removeEntries deletes keys from a JSON list, reporting whether any was
// there.
func removeEntries(list []any, keys []string) ([]any, bool) {
	out := list[:0:0]
	for _, v := range list {
		if s, ok := v.(string); ok && slices.Contains(keys, s) {
			continue
		}
		out = append(out, v)
	}
	return out, len(out) != len(list)
}
