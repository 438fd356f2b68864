package sshdtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// sudoersDir is where the users' sudo policies go.
const sudoersDir = "/etc/sudoers.d"

// gecosPrefix marks throwaway users in /etc/passwd, followed by the pid of
// the test process that created them.
const gecosPrefix = "mgmtkit sshdtest throwaway user, pid "

// removeStaleUsers deletes throwaway users left behind by test processes
// that died before their cleanup ran (a panic, a -timeout kill). Users of
// live processes, such as another package's tests running in parallel,
// are left alone.
func removeStaleUsers(tb TB) {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 7 || !strings.HasPrefix(f[4], gecosPrefix) || !strings.HasPrefix(f[0], "mkt") {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(f[4], gecosPrefix))
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		uid, _ := strconv.Atoi(f[2])
		tb.Logf("sshdtest: removing user %s left behind by process %d", f[0], pid)
		(&Server{}).removeUser(tb, User{Name: f[0], UID: uid})
	}
}

// addUser creates a throwaway user with policy p and registers its removal
// with tb.
func (s *Server) addUser(tb TB, p SudoPolicy) (User, error) {
	tag := map[SudoPolicy]string{SudoNone: "nos", SudoPassword: "pwd", SudoNoPassword: "npw"}[p]
	u := User{
		// "mkt" for mgmtkit test; at most 16 characters, a valid name
		// everywhere (lower case, starts with a letter).
		Name: "mkt" + tag + randomHex(5),
		// Shell metacharacters and a space on purpose.
		Password: "pw-" + randomHex(10) + ` '$x" ;`,
		Sudo:     p,
	}
	args := []string{"-m", "-s", "/bin/bash", "-c", gecosPrefix + strconv.Itoa(os.Getpid()), u.Name}
	if s.shell != "" {
		args[2] = s.shell
	}
	if err := runTool("", "useradd", args...); err != nil {
		return User{}, err
	}
	tb.Cleanup(func() { s.removeUser(tb, u) })
	pw, err := user.Lookup(u.Name)
	if err != nil {
		return User{}, err
	}
	u.UID, _ = strconv.Atoi(pw.Uid)
	u.Home = pw.HomeDir
	if err := runTool(u.Name+":"+u.Password+"\n", "chpasswd"); err != nil {
		return User{}, err
	}

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return User{}, err
	}
	block, err := ssh.MarshalPrivateKey(priv, u.Name+"@sshdtest")
	if err != nil {
		return User{}, err
	}
	u.PrivateKey = pem.EncodeToMemory(block)
	u.KeyFile = filepath.Join(s.dir, "id_"+u.Name)
	if err := os.WriteFile(u.KeyFile, u.PrivateKey, 0o600); err != nil {
		return User{}, err
	}
	if u.PublicKey, err = ssh.NewPublicKey(pub); err != nil {
		return User{}, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "keys", u.Name), ssh.MarshalAuthorizedKey(u.PublicKey), 0o644); err != nil {
		return User{}, err
	}
	if s.trDir != "" {
		f := filepath.Join(s.trDir, u.Name)
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			return User{}, err
		}
		if err := os.Chown(f, u.UID, -1); err != nil {
			return User{}, err
		}
	}

	var rule string
	switch p {
	case SudoPassword:
		rule = u.Name + " ALL=(ALL:ALL) ALL\n"
	case SudoNoPassword:
		rule = u.Name + " ALL=(ALL:ALL) NOPASSWD: ALL\n"
	}
	if rule != "" {
		if err := writeSudoers(sudoersFile(u.Name), rule); err != nil {
			return User{}, err
		}
	}
	return u, nil
}

func sudoersFile(name string) string { return filepath.Join(sudoersDir, "mgmtkit-test-"+name) }

// writeSudoers installs a sudoers drop-in atomically (sudo must never see a
// half-written file), mode 0440, after checking it with visudo when
// available.
func writeSudoers(file, rule string) error {
	if err := os.MkdirAll(sudoersDir, 0o750); err != nil {
		return err
	}
	// A name with a dot is ignored by sudo's #includedir, so the staging
	// file is inert until renamed.
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(rule), 0o440); err != nil {
		return err
	}
	if visudo, err := lookSbin("visudo"); err == nil {
		if out, err := exec.Command(visudo, "-c", "-q", "-f", tmp).CombinedOutput(); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("visudo rejected %q: %v: %s", rule, err, out)
		}
	}
	if err := os.Chmod(tmp, 0o440); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// removeUser kills the user's processes and deletes the user, its home,
// its group and its sudoers file.
func (s *Server) removeUser(tb TB, u User) {
	os.Remove(sudoersFile(u.Name))
	if s.cmd != nil {
		s.stop()
	}
	uid := u.UID
	if uid == 0 {
		if pw, err := user.Lookup(u.Name); err == nil {
			uid, _ = strconv.Atoi(pw.Uid)
		}
	}
	if uid != 0 {
		killTree(0, map[int]bool{uid: true})
	}
	if err := runTool("", "userdel", "-r", "-f", u.Name); err != nil && !strings.Contains(err.Error(), "does not exist") {
		// userdel -r complains about a missing mail spool; the user is
		// gone all the same. Anything else is worth a line in the log.
		if _, lerr := user.Lookup(u.Name); lerr == nil {
			tb.Errorf("sshdtest: removing user %s: %v", u.Name, err)
		}
	}
}

// proc is one live (not zombie) entry of /proc.
type proc struct {
	pid, ppid, uid int
}

func processes() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p := proc{pid: pid, ppid: ppid, uid: -1}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name()), &st) == nil {
			p.uid = int(st.Uid)
		}
		out = append(out, p)
	}
	return out
}

// killTree SIGKILLs root (when root > 0), every descendant of it and every
// process owned by one of uids, until none is left or a deadline passes.
// The tree is taken before anything is killed, since orphans are adopted
// by init and would no longer show as descendants.
func killTree(root int, uids map[int]bool) {
	self := os.Getpid()
	tree := map[int]bool{}
	if root > 0 {
		tree[root] = true
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps := processes()
		alive := map[int]bool{}
		for grew := true; grew; {
			grew = false
			for _, p := range ps {
				alive[p.pid] = true
				if !tree[p.pid] && (tree[p.ppid] || uids[p.uid]) {
					tree[p.pid] = true
					grew = true
				}
			}
		}
		n := 0
		for pid := range tree {
			if pid == self || pid == 1 || !alive[pid] {
				continue
			}
			syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
