package remote_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/remote"
)

// snoopEnv carries the directories TestHelperSnoop watches.
const snoopEnv = "MGMTKIT_HELPER_SNOOP"

// snoopReport is what TestHelperSnoop prints when its stdin ends.
type snoopReport struct {
	Iterations int            // passes over all the directories
	Listed     map[string]int // successful listings per directory
	Names      map[string]int // names seen in those listings, per directory
	Attempts   int            // opens tried of files named *mgmtkit*
	Opened     map[string]int // files opened, with the bytes read from each
}

// TestHelperSnoop is not a test: TestRealSSHDStagingIsPrivate runs the
// test binary again, as another unprivileged user, with only this function
// and a JSON list of directories in $MGMTKIT_HELPER_SNOOP. Until its stdin
// ends it lists the directories in a tight loop and opens every file in
// them whose name contains "mgmtkit", as an attacker waiting for staged
// secrets would; an open that succeeds is kept and read for a second, since
// a descriptor obtained before a chmod reads whatever is written later.
func TestHelperSnoop(t *testing.T) {
	spec := os.Getenv(snoopEnv)
	if spec == "" {
		t.Skip("helper process for TestRealSSHDStagingIsPrivate")
	}
	var dirs []string
	if err := json.Unmarshal([]byte(spec), &dirs); err != nil {
		t.Fatal(err)
	}
	var done sync.WaitGroup
	var mu sync.Mutex
	r := snoopReport{Listed: map[string]int{}, Names: map[string]int{}, Opened: map[string]int{}}
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	tried := map[string]bool{}
	for ; ; r.Iterations++ {
		select {
		case <-stop:
			done.Wait()
			mu.Lock()
			defer mu.Unlock()
			json.NewEncoder(os.Stdout).Encode(r)
			return
		default:
		}
		for _, dir := range dirs {
			d, err := os.Open(dir)
			if err != nil {
				continue
			}
			names, err := d.Readdirnames(-1)
			d.Close()
			if err != nil {
				continue
			}
			r.Listed[dir]++
			r.Names[dir] += len(names)
			for _, name := range names {
				file := filepath.Join(dir, name)
				if !strings.Contains(name, "mgmtkit") || tried[file] {
					continue
				}
				if fi, err := os.Lstat(file); err != nil || fi.IsDir() {
					continue
				}
				r.Attempts++
				fd, err := syscall.Open(file, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				tried[file] = true
				mu.Lock()
				r.Opened[file] = 0
				mu.Unlock()
				done.Add(1)
				go func() {
					defer done.Done()
					defer syscall.Close(fd)
					buf := make([]byte, 1<<16)
					for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
						n, _ := syscall.Pread(fd, buf, 0)
						mu.Lock()
						r.Opened[file] = max(r.Opened[file], n)
						mu.Unlock()
					}
				}()
			}
		}
		if r.Iterations == 0 {
			fmt.Println("ready")
		}
	}
}

// startSnooper runs TestHelperSnoop as u over dirs and returns a function
// that stops it and returns its report.
func startSnooper(t *testing.T, u sshdtest.User, dirs []string) func() snoopReport {
	t.Helper()
	// The test binary sits in a directory only root can enter: copy it
	// where u can run it.
	bin, err := os.MkdirTemp("", "mgmtkit-snoop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "snoop"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(dirs)
	c := exec.Command(filepath.Join(bin, "snoop"), "-test.run=^TestHelperSnoop$", "-test.count=1")
	c.Dir = "/"
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + u.Home, snoopEnv + "=" + string(spec)}
	pw, err := user.Lookup(u.Name)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(pw.Gid)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(gid)}}
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("snooper did not start: %q, %v; stderr: %s", line, err, stderr.String())
	}
	var once sync.Once
	var report snoopReport
	stopFn := func() snoopReport {
		once.Do(func() {
			stdin.Close()
			rest, _ := io.ReadAll(out)
			c.Wait()
			// The test framework prints PASS after the report.
			line, _, _ := strings.Cut(string(rest), "\n")
			if err := json.Unmarshal([]byte(line), &report); err != nil {
				t.Fatalf("snooper report %q: %v; stderr: %s", rest, err, stderr.String())
			}
		})
		return report
	}
	t.Cleanup(func() { stopFn() })
	return stopFn
}

// Issue #8, item 3: secret files are never readable by others, not even
// for a moment. Staging files used to be created 0644 (pkg/sftp sends no
// mode, so sftp-server applies 0666 less its umask) in the login user's
// home (0755 on Debian) and chmodded to 0600 afterwards; another local
// user opening them in between read the secrets written after the chmod.
// Here a second, unprivileged user opens every staging file it can see,
// in a tight loop, while 150 secret files of mode 0600 are written with
// and without sudo; it must open none.
func TestRealSSHDStagingIsPrivate(t *testing.T) {
	srv := sshdtest.Start(t)
	login := srv.User(sshdtest.SudoNoPassword)
	attacker := srv.User(sshdtest.SudoNone)
	h, lc := realHost(t, srv, login, nil)
	// 150 writes, each two or three commands, on a machine that may be
	// busy: a generous guard, not a measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Destination directories the attacker can list: a root-owned one for
	// the Sudo writes and one of the login user's for the others.
	etc := "/etc/mgmtkit-race-" + randomHex(6)
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(etc) })
	own := filepath.Join(login.Home, "secrets")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, login.UID, -1); err != nil {
		t.Fatal(err)
	}
	stage := filepath.Join(login.Home, ".mgmtkit-staging")
	stop := startSnooper(t, attacker, []string{login.Home, stage, etc, own})

	secret := func(i int) []byte {
		// Large enough that each upload takes several SFTP writes.
		return bytes.Repeat([]byte(fmt.Sprintf("secret-%d-%s\n", i, randomHex(8))), 1000)
	}
	// 150 files: one by one and in batches, with sudo and without.
	var written []remote.FileWrite
	for k, set := range []struct {
		dir, name string
		opts      remote.FileOptions
		batch     bool
		n         int
	}{
		{etc, "sudo-%d.conf", remote.FileOptions{Sudo: true, Mode: 0o600, Owner: "root", Group: "root"}, false, 25},
		{etc, "batch-%d.json", remote.FileOptions{Sudo: true, Mode: 0o600}, true, 50},
		{own, "own-%d.key", remote.FileOptions{Mode: 0o600}, false, 25},
		{own, "own-batch-%d.key", remote.FileOptions{Mode: 0o600}, true, 50},
	} {
		var files []remote.FileWrite
		for i := range set.n {
			files = append(files, remote.FileWrite{Path: filepath.Join(set.dir, fmt.Sprintf(set.name, i)), Content: secret(100*k + i), Options: set.opts})
		}
		if set.batch {
			if _, err := remote.WriteFiles(ctx, h, files); lc.note(err) != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			if set.batch {
				break
			}
			if _, err := h.WriteFile(ctx, f.Path, bytes.NewReader(f.Content), f.Options); lc.note(err) != nil {
				t.Fatal(err)
			}
		}
		written = append(written, files...)
	}
	r := stop()

	for _, f := range written {
		got, err := os.ReadFile(f.Path)
		fi, serr := os.Stat(f.Path)
		if err != nil || serr != nil || !bytes.Equal(got, f.Content) || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: not written as asked (%v, %v)", f.Path, err, serr)
		}
	}
	t.Logf("snooper: %d passes, listings %v, %d opens tried, %d succeeded", r.Iterations, r.Listed, r.Attempts, len(r.Opened))
	for file, n := range r.Opened {
		t.Errorf("user %s opened staging file %s and read %d bytes from it", attacker.Name, file, n)
	}
	if len(r.Opened) > 0 {
		t.Errorf("%d of %d secret files could be opened by another user while staged", len(r.Opened), len(written))
	}
	// The snooper is a real witness: it ran all along, saw the directories
	// where files are staged and committed, and tried the files it saw.
	if r.Iterations < 100 || r.Listed[login.Home] == 0 || r.Listed[etc] == 0 || r.Listed[own] == 0 || r.Attempts == 0 {
		t.Errorf("the snooper did not watch: %d passes, listings %v, %d opens tried", r.Iterations, r.Listed, r.Attempts)
	}
	// It may list the staging directory in the moment between its mkdir
	// and its chmod, but only while it is empty.
	if r.Names[stage] != 0 {
		t.Errorf("user %s saw %d names in the staging directory", attacker.Name, r.Names[stage])
	}
	if fi, err := os.Lstat(stage); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("staging directory: %v, %v; want a directory of mode 0700", fi, err)
	}
}

// The staging directory is shared by every connection of the login user
// and kept, so what is found at its path is checked before use: a link or
// a directory of someone else is refused (nothing is written through it),
// and the login user's own directory is made private again.
func TestRealSSHDStagingDirIsChecked(t *testing.T) {
	srv := sshdtest.Start(t)
	login := srv.User(sshdtest.SudoNoPassword)
	other := srv.User(sshdtest.SudoNone)
	stage := filepath.Join(login.Home, ".mgmtkit-staging")
	trap := filepath.Join(other.Home, "trap")
	if err := os.Mkdir(trap, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(trap, 0o777) // past the umask
	if err := os.Chown(trap, other.UID, -1); err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T) error {
		h, lc := realHost(t, srv, login, nil)
		file := "/etc/mgmtkit-checked-" + randomHex(6)
		t.Cleanup(func() { os.Remove(file) })
		_, err := h.WriteFile(testCtx(t), file, strings.NewReader("secret\n"), remote.FileOptions{Sudo: true, Mode: 0o600})
		lc.note(err)
		if _, serr := os.Stat(file); (serr == nil) != (err == nil) {
			t.Errorf("WriteFile returned %v, but the file exists: %v", err, serr == nil)
		}
		return err
	}
	for _, tc := range []struct {
		name  string
		setup func() error
	}{
		{"SymlinkToAnotherUsersDir", func() error { return os.Symlink(trap, stage) }},
		{"AnotherUsersDir", func() error {
			if err := os.Mkdir(stage, 0o777); err != nil {
				return err
			}
			os.Chmod(stage, 0o777)
			return os.Chown(stage, other.UID, -1)
		}},
		{"RegularFile", func() error { return os.WriteFile(stage, nil, 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(stage)
			if err := tc.setup(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(stage) })
			err := write(t)
			if err == nil || !strings.Contains(err.Error(), "staging directory") {
				t.Errorf("WriteFile with a %s at %s: %v, want a staging directory error", tc.name, stage, err)
			}
			if left, _ := filepath.Glob(filepath.Join(trap, "*")); len(left) > 0 {
				t.Errorf("files written through the staging path: %v", left)
			}
		})
	}
	t.Run("OwnDirWithWrongMode", func(t *testing.T) {
		os.RemoveAll(stage)
		if err := os.Mkdir(stage, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(stage, login.UID, -1); err != nil {
			t.Fatal(err)
		}
		if err := write(t); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(stage); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("staging directory: %v, %v; want mode 0700", fi, err)
		}
	})
	t.Run("RemovedWhileConnected", func(t *testing.T) {
		h, lc := realHost(t, srv, login, nil)
		file := filepath.Join(login.Home, "again")
		for i := range 2 {
			if _, err := h.WriteFile(testCtx(t), file, strings.NewReader(fmt.Sprint(i)), remote.FileOptions{}); lc.note(err) != nil {
				t.Fatalf("write %d: %v", i, err)
			}
			os.RemoveAll(stage)
		}
	})
}
