package sshtest

import (
	"io/fs"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeCase is one command and what it must give.
type fakeCase struct {
	name, cmd      string
	stdout, stderr string
	code           int
}

func runCases(t *testing.T, h *testHost, user string, cases []fakeCase) {
	t.Helper()
	for _, tc := range cases {
		got := h.run(user, tc.cmd)
		want(t, tc.name, got, tc.stdout, tc.stderr, tc.code)
	}
}

// TestUnknownOptionsFailLoudly runs every program in /usr/bin with an option
// no fake models: each must fail with status 2 and say that sshtest does
// not model it, so that a test notices an SDK using an unmodelled option.
func TestUnknownOptionsFailLoudly(t *testing.T) {
	h := newHost(t)
	entries, err := h.FS().As(Root, "/").ReadDir("/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	builtins := map[string]bool{"true": true, "false": true, "echo": true, "printf": true, "test": true, "[": true}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if builtins[name] {
			continue
		}
		n++
		for _, opt := range []string{"--no-such-option", "-Z"} {
			if name == "kill" && opt == "-Z" {
				continue // a signal name for kill
			}
			got := h.run("root", "/usr/bin/"+name+" "+opt+" x y </dev/null")
			if got.code != 2 || !strings.Contains(got.stderr, "not modelled by sshtest") || got.stdout != "" {
				t.Errorf("%s %s: %v", name, opt, got)
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d fake programs in /usr/bin", n)
	}
}

func TestCoreutilsFiles(t *testing.T) {
	h := newHost(t)
	fsys := h.FS()
	must(fsys.WriteFile("/home/alice/a.txt", []byte("hello\n"), 0o644))
	must(fsys.Chown("/home/alice/a.txt", 1000, 1000))
	must(fsys.WriteFile("/srv/secret", []byte("s\n"), 0o600))
	runCases(t, h, "alice", []fakeCase{
		// cat
		{"cat", "cat a.txt a.txt", "hello\nhello\n", "", 0},
		{"cat stdin", "echo in | cat a.txt - a.txt", "hello\nin\nhello\n", "", 0},
		{"cat missing", "cat nope a.txt", "hello\n", "cat: nope: No such file or directory\n", 1},
		{"cat unreadable", "cat /srv/secret", "", "cat: /srv/secret: Permission denied\n", 1},
		{"cat a directory", "cat /tmp", "", "cat: /tmp: Is a directory\n", 1},
		// sha256sum
		{"sha256sum", "sha256sum a.txt", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  a.txt\n", "", 0},
		{"sha256sum stdin", "sha256sum < a.txt", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  -\n", "", 0},
		{"sha256sum -b", "sha256sum -b a.txt", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 *a.txt\n", "", 0},
		{"sha256sum missing", "sha256sum nope", "", "sha256sum: nope: No such file or directory\n", 1},
		{"sha256sum -c", "sha256sum a.txt > sums; sha256sum -c sums", "a.txt: OK\n", "", 0},
		{"sha256sum -c --quiet", "sha256sum a.txt | sha256sum -c --quiet -", "", "", 0},
		{"sha256sum -c mismatch", "printf '%064d  a.txt\\n' 0 | sha256sum -c", "a.txt: FAILED\n", "sha256sum: WARNING: 1 computed checksum did NOT match\n", 1},
		{"sha256sum -c --status", "printf '%064d  a.txt\\n' 0 | sha256sum -c --status", "", "", 1},
		{"sha256sum -c garbage", "echo bad | sha256sum -c", "", "sha256sum: 'standard input': no properly formatted checksum lines found\n", 1},
		// mkdir
		{"mkdir", "mkdir d1 && stat -c '%a %U' d1", "755 alice\n", "", 0},
		{"mkdir -p -m", "mkdir -p -m 700 d2/x/y && stat -c %a d2 d2/x/y", "755\n700\n", "", 0},
		{"mkdir -p keeps an existing mode", "mkdir -p -m 700 d1 && stat -c %a d1", "755\n", "", 0},
		{"mkdir -m symbolic", "mkdir -m u=rwx,g=rx d3 && stat -c %a d3", "757\n", "", 0}, // from a=rwx, as GNU mkdir
		{"mkdir existing", "mkdir d1", "", "mkdir: cannot create directory ‘d1’: File exists\n", 1},
		{"mkdir -p over a file", "mkdir -p a.txt", "", "mkdir: cannot create directory ‘a.txt’: File exists\n", 1},
		{"mkdir -p through a file", "mkdir -p a.txt/sub/dir", "", "mkdir: cannot create directory ‘a.txt’: Not a directory\n", 1},
		{"mkdir -p names the failing parent", "mkdir -p /etc/new/dir", "", "mkdir: cannot create directory ‘/etc/new’: Permission denied\n", 1},
		{"mkdir missing parent", "mkdir x/y", "", "mkdir: cannot create directory ‘x/y’: No such file or directory\n", 1},
		{"mkdir no operand", "mkdir", "", "mkdir: missing operand\nTry 'mkdir --help' for more information.\n", 1},
		{"mkdir bad mode", "mkdir -m 999 d9", "", "mkdir: invalid mode ‘999’\nTry 'mkdir --help' for more information.\n", 1},
		// mv
		{"mv", "echo m > m1 && mv m1 m2 && cat m2 && test ! -e m1", "m\n", "", 0},
		{"mv into a directory", "mv m2 d1 && ls d1", "m2\n", "", 0},
		{"mv several into a directory", "touch m3 m4 && mv -f m3 m4 d1 && ls d1", "m2\nm3\nm4\n", "", 0},
		{"mv -T", "mkdir -p e1 && mv -T e1 e2 && test -d e2", "", "", 0},
		{"mv -n", "echo new > n1; echo old > n2; mv -n n1 n2; cat n2", "old\n", "", 0},
		{"mv missing", "mv nope x", "", "mv: cannot stat 'nope': No such file or directory\n", 1},
		{"mv into /etc", "mv a.txt /etc/", "", "mv: cannot move 'a.txt' to '/etc/a.txt': Permission denied\n", 1},
		{"mv one operand", "mv a.txt", "", "mv: missing destination file operand after 'a.txt'\nTry 'mv --help' for more information.\n", 1},
		{"mv several to a file", "mv a.txt n1 n2", "", "mv: target 'n2' is not a directory\n", 1},
		// rm
		{"rm", "touch r1 && rm r1 && test ! -e r1", "", "", 0},
		{"rm -f missing", "rm -f nope", "", "", 0},
		{"rm missing", "rm nope", "", "rm: cannot remove 'nope': No such file or directory\n", 1},
		{"rm a directory", "rm d1", "", "rm: cannot remove 'd1': Is a directory\n", 1},
		{"rm -d a non-empty directory", "rm -d d1", "", "rm: cannot remove 'd1': Directory not empty\n", 1},
		{"rm -r", "rm -r d1 && test ! -e d1", "", "", 0},
		{"rm -rf with a link", "mkdir -p t/u && ln -s /etc t/link && rm -rf t && test -e /etc/hostname && test ! -e t", "", "", 0},
		{"rm another's file", "rm /etc/hostname", "", "rm: cannot remove '/etc/hostname': Permission denied\n", 1},
		{"rm -f does not hide permissions", "rm -f /etc/hostname", "", "rm: cannot remove '/etc/hostname': Permission denied\n", 1},
		{"rm no operand", "rm", "", "rm: missing operand\nTry 'rm --help' for more information.\n", 1},
		{"rm -f no operand", "rm -f", "", "", 0},
		{"rm .", "rm -rf .", "", "rm: refusing to remove '.' or '..' directory: skipping '.'\n", 1},
		// chmod
		{"chmod octal", "touch c1 && chmod 600 c1 && stat -c %a c1", "600\n", "", 0},
		{"chmod symbolic", "chmod u+x,g+r,o=r c1 && stat -c %a c1", "744\n", "", 0},
		{"chmod -x", "chmod -x c1 && stat -c %a c1", "644\n", "", 0},
		{"chmod a=rX", "mkdir -p c2 && chmod a=rX c1 c2 && stat -c %a c1 c2", "444\n555\n", "", 0},
		{"chmod g=u and +t", "chmod 640 c1 && chmod g=u,+t c1 && stat -c %a c1", "1660\n", "", 0},
		{"chmod -R", "mkdir -p c3/x && touch c3/x/f && chmod -R go-rwx c3 && stat -c %a c3 c3/x c3/x/f", "700\n700\n600\n", "", 0},
		{"chmod another's file", "chmod 777 /etc/hostname", "", "chmod: changing permissions of '/etc/hostname': Operation not permitted\n", 1},
		{"chmod -f", "chmod -f 777 /etc/hostname", "", "", 1},
		{"chmod missing", "chmod 600 nope", "", "chmod: cannot access 'nope': No such file or directory\n", 1},
		{"chmod bad mode", "chmod zz c1", "", "chmod: invalid mode: ‘zz’\nTry 'chmod --help' for more information.\n", 1},
		{"chmod no file", "chmod 644", "", "chmod: missing operand after ‘644’\nTry 'chmod --help' for more information.\n", 1},
		// chown
		{"chown to oneself", "touch o1 && chown alice:alice o1 && stat -c '%U:%G' o1", "alice:alice\n", "", 0},
		{"chown to another", "chown bob o1", "", "chown: changing ownership of 'o1': Operation not permitted\n", 1},
		{"chown unknown user", "chown mallory o1", "", "chown: invalid user: ‘mallory’\n", 1},
		{"chown unknown group", "chown alice:nogroup o1", "", "chown: invalid group: ‘alice:nogroup’\n", 1},
		{"chown missing", "chown alice nope", "", "chown: cannot access 'nope': No such file or directory\n", 1},
		{"chown no operand", "chown", "", "chown: missing operand\nTry 'chown --help' for more information.\n", 1},
		// stat
		{"stat", "stat -c '%n|%a|%A|%u|%g|%U|%G|%s|%F|%h' a.txt /tmp /bin /dev/null", "a.txt|644|-rw-r--r--|1000|1000|alice|alice|6|regular file|1\n/tmp|1777|drwxrwxrwt|0|0|root|root|4096|directory|1\n/bin|777|lrwxrwxrwx|0|0|root|root|7|symbolic link|1\n/dev/null|666|crw-rw-rw-|0|0|root|root|0|character special file|1\n", "", 0},
		{"stat -L", "stat -L -c '%F %N' /bin", "directory '/bin'\n", "", 0},
		{"stat %N of a link", "stat -c %N /bin", "'/bin' -> 'usr/bin'\n", "", 0},
		{"stat --printf", "stat --printf '%s\\t%U\\n' a.txt", "6\talice\n", "", 0},
		{"stat empty", "touch e && stat -c %F e", "regular empty file\n", "", 0},
		{"stat missing", "stat -c %a nope", "", "stat: cannot statx 'nope': No such file or directory\n", 1},
		{"stat unmodelled directive", "stat -c %i a.txt", "", "stat: format directive %i is not modelled by sshtest\n", 2},
		{"stat without -c", "stat a.txt", "", "stat: only 'stat -c FORMAT' and 'stat --printf FORMAT' are modelled by sshtest\n", 1},
		// install
		{"install", "install -m 0640 a.txt i1 && stat -c '%a %U' i1 && cat i1", "640 alice\nhello\n", "", 0},
		{"install default mode", "install a.txt i2 && stat -c %a i2", "755\n", "", 0},
		{"install into a directory", "install -m 644 a.txt d2/ && cat d2/a.txt", "hello\n", "", 0},
		{"install -d", "install -d -m 0750 i3/a/b && stat -c %a i3/a i3/a/b", "755\n750\n", "", 0},
		{"install -D", "install -D -m 600 a.txt i4/x/y/f && stat -c %a i4/x/y/f", "600\n", "", 0},
		{"install replaces a link", "ln -s a.txt i5 && install -m 600 /etc/hostname i5 && test ! -L i5 && cat a.txt i5", "hello\nnode-1\n", "", 0},
		{"install from stdin", "echo piped | install -m 644 /dev/stdin i6 && cat i6", "piped\n", "", 0},
		{"install -o as a user", "install -o root a.txt i7", "", "install: cannot change ownership of 'i7': Operation not permitted\n", 1},
		{"install -m symbolic", "install -m +x a.txt i8 && stat -c %a i8", "111\n", "", 0},
		{"install missing", "install nope x", "", "install: cannot stat 'nope': No such file or directory\n", 1},
		{"install into /etc", "install a.txt /etc/x", "", "install: cannot create regular file '/etc/x': Permission denied\n", 1},
		{"install one operand", "install a.txt", "", "install: missing destination file operand after 'a.txt'\nTry 'install --help' for more information.\n", 1},
		{"install bad owner", "install -o mallory a.txt x", "", "install: invalid user ‘mallory’\n", 1},
		// mktemp
		{"mktemp", "f=$(mktemp) && case $f in /tmp/tmp.??????????) stat -c '%a %U' \"$f\";; *) echo \"$f\";; esac", "600 alice\n", "", 0},
		{"mktemp -d", "d=$(mktemp -d) && stat -c '%a %F' \"$d\"", "700 directory\n", "", 0},
		{"mktemp -p", "f=$(mktemp -p d2 .x.XXXXXX) && case $f in d2/.x.??????) echo ok;; esac", "ok\n", "", 0},
		{"mktemp template in the working directory", "f=$(mktemp job.XXXX) && test -f \"$f\" && case $f in job.????) echo ok;; esac", "ok\n", "", 0},
		{"mktemp -t", "f=$(mktemp -t job.XXXX) && case $f in /tmp/job.????) echo ok;; esac", "ok\n", "", 0},
		{"mktemp TMPDIR", "f=$(TMPDIR=$HOME mktemp) && case $f in /home/alice/tmp.*) echo ok;; esac", "ok\n", "", 0},
		{"mktemp -p with a relative directory in the template", "mkdir -p tt/sub && f=$(mktemp -p tt sub/x.XXX) && case $f in tt/sub/x.???) echo ok;; esac", "ok\n", "", 0},
		{"mktemp -p with an absolute template", "mktemp -p /tmp /tmp/x.XXX", "", "mktemp: invalid template, ‘/tmp/x.XXX’; with --tmpdir, it may not be absolute\n", 1},
		{"mktemp -u", "f=$(mktemp -u) && test ! -e \"$f\" && echo ok", "ok\n", "", 0},
		{"mktemp too few X", "mktemp /tmp/aXX", "", "mktemp: too few X's in template ‘/tmp/aXX’\n", 1},
		{"mktemp unwritable", "mktemp -p /etc", "", "mktemp: failed to create file via template ‘/etc/tmp.XXXXXXXXXX’: Permission denied\n", 1},
		{"mktemp -q", "mktemp -q -p /etc", "", "", 1},
		// touch
		{"touch creates", "touch t1 && stat -c '%s %a' t1", "0 644\n", "", 0},
		{"touch updates", "touch -c t1 nope && test ! -e nope && echo ok", "ok\n", "", 0},
		{"touch another's file", "touch /etc/hostname", "", "touch: cannot touch '/etc/hostname': Permission denied\n", 1},
		{"touch in a missing directory", "touch /nope/x", "", "touch: cannot touch '/nope/x': No such file or directory\n", 1},
		{"touch no operand", "touch", "", "touch: missing file operand\nTry 'touch --help' for more information.\n", 1},
	})
	// touch sets the time to now; the fake's clock is the real one.
	must(fsys.As(Root, "/").Chtimes("/home/alice/t1", time.Unix(1e9, 0)))
	before := time.Now().Add(-time.Second)
	wantOK(t, "touch", h.sh("touch t1"), "")
	if fi, _ := fsys.Stat("/home/alice/t1"); fi.ModTime().Before(before) {
		t.Errorf("touch left the time at %v", fi.ModTime())
	}
}

func TestCoreutilsCopyAndLink(t *testing.T) {
	h := newHost(t)
	must(h.FS().WriteFile("/srv/tree/a", []byte("A"), 0o640))
	must(h.FS().WriteFile("/srv/tree/sub/b", []byte("B"), 0o600))
	must(h.FS().Symlink("a", "/srv/tree/link"))
	must(h.FS().Chown("/srv/tree/sub/b", 1001, 1001))
	runCases(t, h, "root", []fakeCase{
		// cp
		{"cp", "cp /srv/tree/a /tmp/a && stat -c '%a %U' /tmp/a && cat /tmp/a", "640 root\nA", "", 0},
		{"cp keeps an existing file's mode", "echo old > /tmp/keep && chmod 600 /tmp/keep && cp /srv/tree/a /tmp/keep && stat -c %a /tmp/keep && cat /tmp/keep", "600\nA", "", 0},
		{"cp into a directory", "mkdir -p /tmp/d && cp /srv/tree/a /srv/tree/link /tmp/d && ls /tmp/d && test ! -L /tmp/d/link", "a\nlink\n", "", 0},
		{"cp -p", "cp -p /srv/tree/sub/b /tmp/b && stat -c '%a %U' /tmp/b", "600 bob\n", "", 0},
		{"cp a directory without -r", "cp /srv/tree /tmp/t", "", "cp: -r not specified; omitting directory '/srv/tree'\n", 1},
		{"cp -r", "cp -r /srv/tree /tmp/t && ls -a /tmp/t && readlink /tmp/t/link && cat /tmp/t/sub/b && stat -c %U /tmp/t/sub/b", ".\n..\na\nlink\nsub\na\nBroot\n", "", 0},
		{"cp -r into an existing directory", "cp -r /srv/tree /tmp/t && test -d /tmp/t/tree/sub && echo ok", "ok\n", "", 0},
		{"cp -a", "cp -a /srv/tree /tmp/ta && stat -c '%a %U' /tmp/ta/sub/b", "600 bob\n", "", 0},
		{"cp the same file", "cp /srv/tree/a /srv/tree/a", "", "cp: '/srv/tree/a' and '/srv/tree/a' are the same file\n", 1},
		{"cp into itself", "cp -r /srv/tree /srv/tree/sub", "", "cp: cannot copy a directory, '/srv/tree', into itself, '/srv/tree/sub/tree'\n", 1},
		{"cp missing", "cp /nope /tmp", "", "cp: cannot stat '/nope': No such file or directory\n", 1},
		{"cp no operand", "cp", "", "cp: missing file operand\nTry 'cp --help' for more information.\n", 1},
		{"cp several to a file", "cp /srv/tree/a /srv/tree/a /tmp/a", "", "cp: target '/tmp/a' is not a directory\n", 1},
		// ln
		{"ln -s", "ln -s /srv/tree/a /tmp/l1 && readlink /tmp/l1 && cat /tmp/l1", "/srv/tree/a\nA", "", 0},
		{"ln -s existing", "ln -s /x /tmp/l1", "", "ln: failed to create symbolic link '/tmp/l1': File exists\n", 1},
		{"ln -sf", "ln -sf /srv/tree/sub /tmp/l1 && readlink /tmp/l1", "/srv/tree/sub\n", "", 0},
		{"ln -s into a directory", "mkdir /tmp/ld && ln -s /srv/tree/a /tmp/ld && readlink /tmp/ld/a", "/srv/tree/a\n", "", 0},
		{"ln -sfn replaces a link to a directory", "ln -sfn /srv/tree /tmp/l1 && ln -sfn /srv /tmp/l1 && readlink /tmp/l1", "/srv\n", "", 0},
		{"ln -sf follows a link to a directory without -n", "ln -sf /srv/tree/a /tmp/l1 && readlink /tmp/l1 /srv/a", "/srv\n/srv/tree/a\n", "", 0},
		{"ln -sfT", "mkdir -p /tmp/lt && ln -sfT /x /tmp/lt", "", "ln: '/tmp/lt': cannot overwrite directory\n", 1},
		{"ln -s with one operand", "cd /tmp/ld && ln -s /srv/tree/sub && readlink sub", "/srv/tree/sub\n", "", 0},
		{"ln hard", "ln /srv/tree/a /tmp/h && echo more >> /tmp/h && cat /srv/tree/a", "Amore\n", "", 0},
		{"ln hard existing", "ln /srv/tree/a /tmp/h", "", "ln: failed to create hard link '/tmp/h': File exists\n", 1},
		{"ln hard missing", "ln /nope /tmp/h2", "", "ln: failed to access '/nope': No such file or directory\n", 1},
		{"ln hard to a directory", "ln /srv/tree /tmp/h3", "", "ln: failed to create hard link '/tmp/h3' => '/srv/tree': Operation not permitted\n", 1},
		{"ln no operand", "ln", "", "ln: missing file operand\nTry 'ln --help' for more information.\n", 1},
	})
	got := h.sh("ln -s /x /etc/l")
	want(t, "ln -s into /etc as alice", got, "", "ln: failed to create symbolic link '/etc/l': Permission denied\n", 1)
	got = h.sh("cp /srv/tree/sub/b /tmp/")
	want(t, "cp unreadable", got, "", "cp: cannot open '/srv/tree/sub/b' for reading: Permission denied\n", 1)
	got = h.sh("cp /etc/hostname /etc/x")
	want(t, "cp into /etc", got, "", "cp: cannot create regular file '/etc/x': Permission denied\n", 1)
}

func TestCoreutilsText(t *testing.T) {
	h := newHost(t)
	must(h.FS().WriteFile("/home/alice/g", []byte("alpha\nBeta\ngamma\n"), 0o644))
	must(h.FS().WriteFile("/home/alice/n", []byte("1\n2\n3\n"), 0o644))
	must(h.FS().WriteFile("/home/alice/c", []byte("a:b:c\nnodelim\nx:y\n"), 0o644))
	must(h.FS().WriteFile("/home/alice/nonl", []byte("one\ntwo"), 0o644))
	runCases(t, h, "alice", []fakeCase{
		// grep
		{"grep", "grep mm g", "gamma\n", "", 0},
		{"grep -i", "grep -i beta g", "Beta\n", "", 0},
		{"grep -v", "grep -v a g", "", "", 1},
		{"grep -v selects", "grep -v B g", "alpha\ngamma\n", "", 0},
		{"grep -c", "grep -c a g", "3\n", "", 0},
		{"grep -c no match", "grep -c zzz g", "0\n", "", 1},
		{"grep -x", "grep -x alph g; grep -x alpha g", "alpha\n", "", 0},
		{"grep -F", "grep -F 'a.' g", "", "", 1},
		{"grep -F literal", "echo 'a.b*' | grep -F '.b*'", "a.b*\n", "", 0},
		{"grep -E", "grep -E '^(alpha|gamma)$' g", "alpha\ngamma\n", "", 0},
		{"grep -E +", "grep -Ec 'm+a' g", "1\n", "", 0},
		{"grep basic: \\( \\| \\{ \\}", "grep -c 'x\\|\\(Be\\)t\\{1\\}a' g", "1\n", "", 0},
		{"grep basic: literal ( | + ?", "printf 'a(b)\\na+b\\na|b\\n' | grep 'a(b)\\|a+b'", "a(b)\na+b\n", "", 0},
		{"grep basic: leading *", "printf '*x\\nx\\n' | grep '*x'", "*x\n", "", 0},
		{"grep anchors", "grep '^B' g; grep 'a$' g", "Beta\nalpha\nBeta\ngamma\n", "", 0},
		{"grep classes", "grep '[[:upper:]]' g; echo 'a\\b' | grep '[\\]'", "Beta\na\\b\n", "", 0},
		{"grep word boundaries", "echo 'foo bar' | grep -c '\\<bar\\>'", "1\n", "", 0},
		{"grep -e twice", "grep -e Beta -e gamma g", "Beta\ngamma\n", "", 0},
		{"grep -n", "grep -n m g", "3:gamma\n", "", 0},
		{"grep several files", "grep -c a g n", "g:3\nn:0\n", "", 0},
		{"grep -h and -H", "grep -h alpha g g; grep -H alpha g", "alpha\nalpha\ng:alpha\n", "", 0},
		{"grep -l", "grep -l a g n", "g\n", "", 0},
		{"grep stdin", "printf 'x\\ny\\n' | grep y", "y\n", "", 0},
		{"grep -q", "grep -q alpha g && echo found", "found\n", "", 0},
		{"grep a last line without newline", "grep two nonl", "two\n", "", 0},
		{"grep missing file", "grep a g nope", "g:alpha\ng:Beta\ng:gamma\n", "grep: nope: No such file or directory\n", 2},
		{"grep -s missing file", "grep -s a nope", "", "", 2},
		{"grep -q match despite an error", "grep -q alpha nope g", "", "grep: nope: No such file or directory\n", 0},
		{"grep a directory", "grep x /tmp", "", "grep: /tmp: Is a directory\n", 2},
		{"grep no pattern", "grep", "", "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n", 2},
		{"grep bad pattern", "grep '[' g", "", "grep: Unmatched [, [^, [:, [., or [=\n", 2},
		{"grep back-reference", "grep '\\(a\\)\\1' g", "", "grep: back-reference \\1 is not supported by sshtest's grep\n", 2},
		// tee
		{"tee", "echo x | tee t1 t2 && cat t1 t2", "x\nx\nx\n", "", 0},
		{"tee -a", "echo y | tee -a t1 >/dev/null && cat t1", "x\ny\n", "", 0},
		{"tee /dev/stderr", "echo e | tee /dev/stderr", "e\n", "e\n", 0},
		{"tee unwritable", "echo z | tee /etc/x t3; cat t3", "z\nz\n", "tee: /etc/x: Permission denied\n", 0},
		// head, tail
		{"head", "head -n 2 n", "1\n2\n", "", 0},
		{"head -N", "head -1 n", "1\n", "", 0},
		{"head -n -N", "head -n -2 n", "1\n", "", 0},
		{"head -c", "head -c 3 n", "1\n2", "", 0},
		{"head default", "seq_() { i=1; while [ $i -le 12 ]; do echo $i; i=$((i+1)); done; }; seq_ | head | wc -l", "10\n", "", 0},
		{"head several", "head -n 1 n g", "==> n <==\n1\n\n==> g <==\nalpha\n", "", 0},
		{"head -q", "head -q -n 1 n g", "1\nalpha\n", "", 0},
		{"head bad count", "head -n x n", "", "head: invalid number of lines: ‘x’\n", 1},
		{"head missing", "head nope", "", "head: cannot open 'nope' for reading: No such file or directory\n", 1},
		{"tail", "tail -n 2 n", "2\n3\n", "", 0},
		{"tail +N", "tail -n +2 n", "2\n3\n", "", 0},
		{"tail -N", "tail -1 n", "3\n", "", 0},
		{"tail -c", "tail -c 3 n", "\n3\n", "", 0},
		{"tail without a last newline", "tail -n 1 nonl", "two", "", 0},
		{"tail stdin", "printf 'a\\nb\\n' | tail -n 1", "b\n", "", 0},
		{"tail missing", "tail nope", "", "tail: cannot open 'nope' for reading: No such file or directory\n", 1},
		// wc
		{"wc", "wc g", " 3  3 17 g\n", "", 0},
		{"wc -l", "wc -l g", "3 g\n", "", 0},
		{"wc -lc", "wc -lc g", " 3 17 g\n", "", 0},
		{"wc several", "wc g n", " 3  3 17 g\n 3  3  6 n\n 6  6 23 total\n", "", 0},
		{"wc stdin", "echo hi | wc", "      1       1       3\n", "", 0},
		{"wc -l stdin", "echo hi | wc -l", "1\n", "", 0},
		{"wc -w", "wc -w < g", "3\n", "", 0},
		{"wc missing", "wc nope", "", "wc: nope: No such file or directory\n", 1},
		// sort
		{"sort", "printf 'b\\nB\\na\\n' | sort", "B\na\nb\n", "", 0},
		{"sort -n", "printf '10\\n9\\n-1\\n1.5\\nabc\\n' | sort -n", "-1\nabc\n1.5\n9\n10\n", "", 0},
		{"sort -u", "printf 'b\\na\\nb\\nc\\n' | sort -u", "a\nb\nc\n", "", 0},
		{"sort -un", "printf '1\\n01\\n1.0\\n2\\n' | sort -un", "1\n2\n", "", 0},
		{"sort -rn", "printf 'b\\na\\n2\\n10\\n' | sort -rn", "10\n2\nb\na\n", "", 0},
		{"sort files", "sort n g", "1\n2\n3\nBeta\nalpha\ngamma\n", "", 0},
		{"sort missing", "sort nope", "", "sort: cannot read: nope: No such file or directory\n", 2},
		// uniq
		{"uniq", "printf 'a\\na\\nb\\na\\n' | uniq", "a\nb\na\n", "", 0},
		{"uniq -c", "printf 'a\\na\\nb\\n' | uniq -c", "      2 a\n      1 b\n", "", 0},
		{"uniq -d", "printf 'a\\na\\nb\\nc\\nc\\n' | uniq -d", "a\nc\n", "", 0},
		{"uniq -u", "printf 'a\\na\\nb\\n' | uniq -u", "b\n", "", 0},
		{"uniq -i", "printf 'a\\nA\\n' | uniq -i", "a\n", "", 0},
		{"uniq files", "printf 'x\\nx\\n' > u; uniq u u2; cat u2", "x\n", "", 0},
		{"uniq missing", "uniq nope", "", "uniq: nope: No such file or directory\n", 1},
		// tr
		{"tr", "echo hello | tr a-y b-z", "ifmmp\n", "", 0},
		{"tr classes", "echo 'Hello World' | tr '[:lower:]' '[:upper:]'", "HELLO WORLD\n", "", 0},
		{"tr pads set2", "echo abc | tr a-c A", "AAA\n", "", 0},
		{"tr escapes", "echo 'a:b' | tr ':' '\\n'", "a\nb\n", "", 0},
		{"tr -d", "echo 'a1b2' | tr -d 0-9", "ab\n", "", 0},
		{"tr -s", "echo 'hello   world' | tr -s ' l'", "helo world\n", "", 0},
		{"tr -d -s", "echo 'aabbcc' | tr -ds a b", "bcc\n", "", 0},
		{"tr octal", "printf 'a\\tb' | tr '\\011' ' '", "a b", "", 0},
		{"tr bytes", "printf '\\377x' | tr '\\377' y", "yx", "", 0},
		{"tr octal range", "printf 'a\\001b' | tr -d '\\000-\\037'", "ab", "", 0},
		{"tr escaped dash", "echo a-z | tr 'a\\-z' xyz", "xyz\n", "", 0},
		{"tr missing operand", "tr", "", "tr: missing operand\nTry 'tr --help' for more information.\n", 1},
		{"tr one set", "tr a", "", "tr: missing operand after ‘a’\nTwo strings must be given when translating.\nTry 'tr --help' for more information.\n", 1},
		{"tr -d two sets", "tr -d a b", "", "tr: extra operand ‘b’\nOnly one string may be given when deleting without squeezing repeats.\nTry 'tr --help' for more information.\n", 1},
		{"tr reversed range", "tr z-a x", "", "tr: range-endpoints of 'z-a' are in reverse collating sequence order\n", 1},
		// cut
		{"cut -f", "cut -d: -f2 c", "b\nnodelim\ny\n", "", 0},
		{"cut list", "cut -d: -f1,3 c", "a:c\nnodelim\nx\n", "", 0},
		{"cut -s open range", "cut -d: -f2- -s c", "b:c\ny\n", "", 0},
		{"cut -c", "cut -c2-3 c", ":b\nod\n:y\n", "", 0},
		{"cut -b -2", "cut -b -2 c", "a:\nno\nx:\n", "", 0},
		{"cut --output-delimiter", "cut -d: --output-delimiter=, -f1,2 c", "a,b\nnodelim\nx,y\n", "", 0},
		{"cut tab", "printf 'a\\tb\\n' | cut -f2", "b\n", "", 0},
		{"cut no list", "cut c", "", "cut: you must specify a list of bytes, characters, or fields\nTry 'cut --help' for more information.\n", 1},
		{"cut long delimiter", "cut -d:: -f1 c", "", "cut: the delimiter must be a single character\nTry 'cut --help' for more information.\n", 1},
		{"cut field 0", "cut -f0 c", "", "cut: fields are numbered from 1\nTry 'cut --help' for more information.\n", 1},
		{"cut -d with -b", "cut -b1 -d: c", "", "cut: an input delimiter may be specified only when operating on fields\nTry 'cut --help' for more information.\n", 1},
		{"cut missing", "cut -f1 nope", "", "cut: nope: No such file or directory\n", 1},
	})
}

func TestCoreutilsNamesAndHost(t *testing.T) {
	h := newHost(t)
	runCases(t, h, "alice", []fakeCase{
		// basename, dirname
		{"basename", "basename /a/b.txt .txt; basename /; basename a/b/; basename .txt .txt", "b\n/\nb\n.txt\n", "", 0},
		{"basename -a -s", "basename -a /x/y z/; basename -s .c x.c y.c", "y\nz\nx\ny\n", "", 0},
		{"basename extra", "basename a b c", "", "basename: extra operand ‘c’\nTry 'basename --help' for more information.\n", 1},
		{"basename none", "basename", "", "basename: missing operand\nTry 'basename --help' for more information.\n", 1},
		{"dirname", "dirname /a/b a / //x a/b/ /a", "/a\n.\n/\n/\na\n/\n", "", 0},
		{"dirname none", "dirname", "", "dirname: missing operand\nTry 'dirname --help' for more information.\n", 1},
		// readlink, realpath
		{"readlink", "readlink /bin; readlink /etc/hostname; echo $?", "usr/bin\n1\n", "", 0},
		{"readlink -f", "readlink -f /bin/ls /bin/../etc/./hostname /tmp/new", "/usr/bin/ls\n/etc/hostname\n/tmp/new\n", "", 0},
		{"readlink -f missing parent", "readlink -f /nope/x", "", "", 1},
		{"readlink -e", "readlink -e /bin /tmp/new", "/usr/bin\n", "", 1},
		{"readlink -n", "readlink -n /bin", "usr/bin", "", 0},
		{"readlink none", "readlink", "", "readlink: missing operand\nTry 'readlink --help' for more information.\n", 1},
		{"realpath", "cd /bin && realpath ls ../tmp/x; realpath -e /nope", "/usr/bin/ls\n/tmp/x\n", "realpath: /nope: No such file or directory\n", 1},
		// which
		{"which", "which ls sudo", "/usr/bin/ls\n/usr/bin/sudo\n", "", 0},
		{"which missing", "which ls nope", "/usr/bin/ls\n", "", 1},
		{"which -a", "which -a cat", "/usr/bin/cat\n/bin/cat\n", "", 0},
		{"which a path", "which /bin/cat /etc/hostname", "/bin/cat\n", "", 1},
		// whoami, id
		{"whoami", "whoami; sudo whoami", "alice\nroot\n", "", 0},
		{"whoami extra", "whoami x", "", "whoami: extra operand ‘x’\nTry 'whoami --help' for more information.\n", 1},
		{"id", "id; id -u; id -g; id -un; id -gn; id -G", "uid=1000(alice) gid=1000(alice) groups=1000(alice)\n1000\n1000\nalice\nalice\n1000\n", "", 0},
		{"id USER", "id root; id -u bob", "uid=0(root) gid=0(root) groups=0(root)\n1001\n", "", 0},
		{"id unknown", "id mallory", "", "id: ‘mallory’: no such user\n", 1},
		{"id -n alone", "id -n", "", "id: cannot print only names or real IDs in default format\n", 1},
		// hostname, uname
		{"hostname", "hostname; hostname -s; hostname -f", "node-1\nnode-1\nnode-1\n", "", 0},
		{"hostname -I", "hostname -I; hostname -i", "127.0.0.1 \n127.0.0.1\n", "", 0},
		{"hostname set", "hostname other", "", "hostname: setting the host name is not modelled by sshtest\n", 2},
		{"uname", "uname; uname -s -r; uname -m; uname -n", "Linux\nLinux 5.15.0-fake\nx86_64\nnode-1\n", "", 0},
		{"uname -a", "uname -a", "Linux node-1 5.15.0-fake #1 SMP sshtest x86_64 x86_64 x86_64 GNU/Linux\n", "", 0},
		{"uname order", "uname -m -s", "Linux x86_64\n", "", 0},
		// pwd, printenv, env
		{"pwd", "cd /bin && /usr/bin/pwd && /usr/bin/pwd -L", "/usr/bin\n/bin\n", "", 0},
		{"printenv", "printenv USER HOME; printenv NOPE", "alice\n/home/alice\n", "", 1},
		{"env", "env -i A=1 B=2 env", "A=1\nB=2\n", "", 0},
		{"env -u", "env -u HOME -u USER env | grep -c -E '^(HOME|USER)='", "0\n", "", 1},
		{"env runs a program", "env X=1 sh -c 'echo $X'", "1\n", "", 0},
		{"env missing program", "env nope", "", "env: ‘nope’: No such file or directory\n", 127},
		{"env -C", "env -C /tmp pwd; env --chdir=/etc pwd", "/tmp\n/etc\n", "", 0},
		{"env -C missing dir", "env -C /nonexist true", "", "env: cannot change directory to ‘/nonexist’: No such file or directory\n", 125},
		{"env -C without command", "env -C /tmp", "", "env: must specify command with --chdir (-C)\nTry 'env --help' for more information.\n", 125},
		// kill, date, sleep, timeout
		{"kill", "/bin/kill -9 4242; echo $?; env kill -s TERM 1 2", "1\n", "/bin/kill: (4242): No such process\nkill: (1): No such process\nkill: (2): No such process\n", 1},
		{"kill bad", "/bin/kill -s BOGUS 1", "", "kill: BOGUS: invalid signal specification\n", 2},
		{"date other format", "date +%Y", "", "date: only 'date +%s' is modelled by sshtest\n", 2},
		{"sleep", "sleep 0; sleep 0.001 0s; echo ok", "ok\n", "", 0},
		{"sleep bad", "sleep x", "", "sleep: invalid time interval ‘x’\nTry 'sleep --help' for more information.\n", 1},
		{"sleep none", "sleep", "", "sleep: missing operand\nTry 'sleep --help' for more information.\n", 1},
		{"timeout without expiry", "timeout 5 sh -c 'exit 3'", "", "", 3},
		{"timeout 0", "timeout -k 5 0 echo hi", "hi\n", "", 0},
		{"timeout expires", "timeout 0.01 sleep 60", "", "", 124},
		{"timeout --preserve-status", "timeout --preserve-status 0.01 sleep 60", "", "", 143},
		{"timeout missing program", "timeout 5 nope", "", "timeout: failed to run command ‘nope’: No such file or directory\n", 127},
		{"timeout bad", "timeout x true", "", "timeout: invalid time interval ‘x’\n", 125},
		{"timeout none", "timeout", "", "timeout: missing operand\nTry 'timeout --help' for more information.\n", 125},
		// true, false, echo, printf, test as programs
		{"builtins as programs", "/bin/true && ! /bin/false && /bin/echo -n a && /usr/bin/printf '%s-' b c && /usr/bin/test -d /tmp && /usr/bin/[ -f /etc/hostname ]", "ab-c-", "", 0},
		{"builtins through env", "env echo via env; env printf '%d\\n' 42", "via env\n42\n", "", 0},
		{"[ without ]", "/usr/bin/[ -f x", "", "[: missing ‘]’\n", 2},
		{"printf without a format", "/usr/bin/printf", "", "usage: printf format [arguments]\n", 2},
		{"which without a name", "which", "", "", 1},
		{"uname extra", "uname x", "", "uname: extra operand ‘x’\nTry 'uname --help' for more information.\n", 1},
		{"pwd extra", "/usr/bin/pwd x", "", "pwd: extra operand ‘x’\nTry 'pwd --help' for more information.\n", 1},
		{"date without a format", "date", "", "date: only 'date +%s' is modelled by sshtest\n", 2},
	})
	before := time.Now().Unix()
	got := h.sh("date +%s")
	secs, err := strconv.ParseInt(strings.TrimSpace(got.stdout), 10, 64)
	if err != nil || got.code != 0 || secs < before || secs > time.Now().Unix() {
		t.Errorf("date +%%s = %v", got)
	}
}

func TestCoreutilsLs(t *testing.T) {
	// The files are made while the filesystem's clock says 2020.
	old := time.Date(2020, 1, 2, 12, 0, 0, 0, time.Local)
	var clock atomic.Pointer[time.Time]
	clock.Store(&old)
	fsys := NewFS()
	fsys.now = func() time.Time { return *clock.Load() }
	for _, f := range []struct {
		name string
		data string
		mode fs.FileMode
	}{{"/srv/l/b", "12345", 0o644}, {"/srv/l/a", "", fs.ModeSetuid | 0o755}, {"/srv/l/.hidden", "h", 0o600}} {
		must(fsys.WriteFile(f.name, []byte(f.data), f.mode))
	}
	must(fsys.MkdirAll("/srv/l/dir/sub", 0o750))
	must(fsys.Symlink("b", "/srv/l/link"))
	now := time.Now()
	clock.Store(&now)
	h := newHostFS(t, fsys)
	must(h.FS().Chown("/srv/l/dir", 1000, 1001))
	runCases(t, h, "alice", []fakeCase{
		{"ls", "ls /srv/l", "a\nb\ndir\nlink\n", "", 0},
		{"ls -1 in the working directory", "cd /srv/l && ls -1", "a\nb\ndir\nlink\n", "", 0},
		{"ls -a", "ls -a /srv/l", ".\n..\n.hidden\na\nb\ndir\nlink\n", "", 0},
		{"ls -A", "ls -A /srv/l", ".hidden\na\nb\ndir\nlink\n", "", 0},
		{"ls files", "ls /srv/l/b /srv/l/a", "/srv/l/a\n/srv/l/b\n", "", 0},
		{"ls -d", "ls -d /srv/l /srv/l/dir", "/srv/l\n/srv/l/dir\n", "", 0},
		{"ls files and directories", "ls /srv/l/dir /srv/l/b", "/srv/l/b\n\n/srv/l/dir:\nsub\n", "", 0},
		{"ls a link to a directory", "ls /bin | grep -c '^ls$'", "1\n", "", 0},
		{"ls -l", "ls -l /srv/l", "total 8\n" +
			"-rwsr-xr-x 1 root  root    0 Jan  2  2020 a\n" +
			"-rw-r--r-- 1 root  root    5 Jan  2  2020 b\n" +
			"drwxr-x--- 3 alice bob  4096 Jan  2  2020 dir\n" +
			"lrwxrwxrwx 1 root  root    1 Jan  2  2020 link -> b\n", "", 0},
		{"ls -la", "ls -la /srv/l | head -n 4", "total 20\n" +
			"drwxr-xr-x 3 root  root 4096 Jan  2  2020 .\n" +
			"drwxr-xr-x 3 root  root 4096 Jan  2  2020 ..\n" +
			"-rw------- 1 root  root    1 Jan  2  2020 .hidden\n", "", 0},
		{"ls -ld", "ls -ld /srv/l/dir /srv/l/link", "drwxr-x--- 3 alice bob  4096 Jan  2  2020 /srv/l/dir\nlrwxrwxrwx 1 root  root    1 Jan  2  2020 /srv/l/link -> b\n", "", 0},
		{"ls -l /dev/null", "ls -l /dev/null | cut -c1-10", "crw-rw-rw-\n", "", 0},
		{"ls missing", "ls /nope /srv/l/b", "/srv/l/b\n", "ls: cannot access '/nope': No such file or directory\n", 2},
		{"ls unreadable", "ls /root", "", "ls: cannot open directory '/root': Permission denied\n", 2},
	})
	// Recent files show the time of day.
	got := h.sh("touch new && ls -l new")
	if fields := strings.Fields(got.stdout); got.code != 0 || len(fields) != 9 || !strings.Contains(fields[7], ":") {
		t.Errorf("ls -l of a new file: %v", got)
	}
}

func TestApplyModeSpec(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		old   fs.FileMode
		isDir bool
		umask fs.FileMode
		want  fs.FileMode
	}{
		{"644", 0o777, false, 0, 0o644},
		{"4755", 0, false, 0, fs.ModeSetuid | 0o755},
		{"755", fs.ModeSetgid | 0o700, true, 0, fs.ModeSetgid | 0o755},
		{"00755", fs.ModeSetgid | 0o700, true, 0, 0o755},
		{"u+x", 0o644, false, 0, 0o744},
		{"+x", 0o644, false, 0o022, 0o755},
		{"+w", 0o444, false, 0o022, 0o644},
		{"a+w", 0o444, false, 0o022, 0o666},
		{"go-rwx", 0o755, false, 0, 0o700},
		{"u=rw,go=r", 0o777, false, 0, 0o644},
		{"a=rX", 0o640, false, 0, 0o444},
		{"a=rX", 0o740, false, 0, 0o555},
		{"a=rX", 0o600, true, 0, 0o555},
		{"g=u", 0o750, false, 0, 0o770},
		{"o=g-w", 0o770, false, 0, 0o775},
		{"u+s,g+s", 0o755, false, 0, fs.ModeSetuid | fs.ModeSetgid | 0o755},
		{"+t", 0o777, true, 0, fs.ModeSticky | 0o777},
		{"u=rwx", fs.ModeSetuid | 0o755, false, 0, 0o755},
	} {
		got, err := applyModeSpec(tc.spec, tc.old, tc.isDir, tc.umask)
		if err != nil || got != tc.want {
			t.Errorf("applyModeSpec(%q, %v, dir=%v, umask %o) = %v, %v; want %v", tc.spec, tc.old, tc.isDir, tc.umask, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "8", "u", "u+q", "x+r", "17777", "u+x,"} {
		if _, err := applyModeSpec(bad, 0, false, 0); err == nil {
			t.Errorf("applyModeSpec(%q) accepted", bad)
		}
	}
}

func TestOptionParsing(t *testing.T) {
	h := newHost(t)
	runCases(t, h, "alice", []fakeCase{
		{"abbreviated long option", "mkdir --par a/b && rm --rec a && echo ok", "ok\n", "", 0},
		{"long option with a value", "mkdir --mode=700 m && mkdir --mode 750 n && stat -c %a m n", "700\n750\n", "", 0},
		{"ambiguous abbreviation", "ls --a", "", "ls: option '--a' is ambiguous (sshtest models no abbreviation of it)\n", 2},
		{"missing value", "cut -d", "", "cut: option requires an argument -- 'd'\n", 2},
		{"missing long value", "mkdir --mode", "", "mkdir: option '--mode' requires an argument\n", 2},
		{"value for a flag", "rm --force=yes x", "", "rm: option '--force' doesn't allow an argument\n", 2},
		{"clustered flags and a value", "mkdir -pm700 c/d && stat -c %a c/d", "700\n", "", 0},
		{"options after operands", "touch f && ls f -l | cut -c1", "-\n", "", 0},
		{"-- ends options", "touch ./-x && rm -- -x && echo ok", "ok\n", "", 0},
		{"repeated options", "grep -e a -e b <<< b", "b\n", "", 0},
	})
}
