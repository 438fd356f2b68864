package remote_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// bigContent returns n pseudo-random bytes, more than remote verifies by
// reading back, so that the host hashes them as they land.
func bigContent(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{7})
	r.Read(b)
	return b
}

// commandsMatching returns the commands of the transcript that contain s.
func commandsMatching(srv *sshtest.Server, s string) []string {
	var got []string
	for _, c := range srv.Transcript() {
		if strings.Contains(c.Command, s) {
			got = append(got, c.Command)
		}
	}
	return got
}

func TestWriteFileVerifiesALargeFileWhileItLands(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	content := bigContent(20<<20 + 12345) // three segments and a part
	for _, stream := range []bool{false, true} {
		srv.ResetTranscript()
		file := "/home/ubuntu/big.bin"
		srv.FS().Remove(file)
		var r io.Reader = bytes.NewReader(content)
		if stream {
			r = io.MultiReader(r) // no size known in advance
		}
		changed, err := h.WriteFile(ctx, file, r, remote.FileOptions{Mode: 0o640})
		if err != nil || !changed {
			t.Fatalf("stream=%v: changed %v, %v", stream, changed, err)
		}
		// The one command is the host's hash of the staged file as it
		// lands; the check and the rename went over SFTP.
		if tr := srv.Transcript(); len(tr) != 1 || len(commandsMatching(srv, "mgmtkit-follow")) != 1 {
			t.Errorf("stream=%v: commands %v, want only the follower", stream, tr)
		}
		got, mode, uid, _ := fileState(t, srv, file)
		if sha256.Sum256([]byte(got)) != sha256.Sum256(content) || mode != 0o640 || uid != 1000 {
			t.Errorf("stream=%v: %d bytes, mode %v, uid %d", stream, len(got), mode, uid)
		}
		assertNoStaged(t, srv, "/home/ubuntu")
	}

	// Converged: the probe command hashes the large file on the host.
	srv.ResetTranscript()
	changed, err := h.WriteFile(ctx, "/home/ubuntu/big.bin", bytes.NewReader(content), remote.FileOptions{Mode: 0o640})
	if err != nil || changed {
		t.Fatalf("second write: changed %v, %v", changed, err)
	}
	if tr := srv.Transcript(); len(tr) != 1 || len(commandsMatching(srv, "mgmtkit-probe")) != 1 {
		t.Errorf("second write: commands %v, want the probe only", tr)
	}
}

func TestWriteFileFallsBackToTheCommitWhenTheFollowerFails(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	content := bigContent(9 << 20)
	srv.FailProgram("dd", 1, 1, "dd: error reading: Input/output error\n")
	changed, err := h.WriteFile(ctx, "/home/ubuntu/big.bin", bytes.NewReader(content), remote.FileOptions{})
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	// The follower's sum did not come; the commit command verified the
	// staged file instead.
	if n := len(commandsMatching(srv, "mgmtkit-commit")); n != 1 {
		t.Errorf("%d commits, want 1: %v", n, srv.Transcript())
	}
	got, _, _, _ := fileState(t, srv, "/home/ubuntu/big.bin")
	if sha256.Sum256([]byte(got)) != sha256.Sum256(content) {
		t.Errorf("the file holds %d other bytes", len(got))
	}
	assertNoStaged(t, srv, "/home/ubuntu")
}

func TestWriteFileSurvivesAConnectionLostDuringALargeUpload(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	content := bigContent(17 << 20)
	srv.DropConnectionDuring(1) // the follower: the upload's channel drops with it
	changed, err := h.WriteFile(ctx, "/home/ubuntu/big.bin", bytes.NewReader(content), remote.FileOptions{})
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	got, _, _, _ := fileState(t, srv, "/home/ubuntu/big.bin")
	if sha256.Sum256([]byte(got)) != sha256.Sum256(content) {
		t.Errorf("the file holds %d other bytes", len(got))
	}
	if srv.Dials() != 2 {
		t.Errorf("%d connections, want 2 (one redial)", srv.Dials())
	}
	assertNoStaged(t, srv, "/home/ubuntu")
}
