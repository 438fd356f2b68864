package nfsd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// exportfsScenarios are sequences of steps on a server's files, each
// compared with what the real exportfs printed and left in etab for the
// same steps: testdata/exportfs/NAME.out was captured by running
// testdata/exportfs/NAME.sh.golden (which TestExportfsScenarioScripts keeps in
// step with this table) with Debian's exportfs (nfs-kernel-server
// 1:2.6.2-4+deb12u1, `apt-get download` and `dpkg -x`) as root in
// `unshare --mount`, with overlays on /etc and /var/lib and a tmpfs on
// /srv; see testdata/exportfs/capture.sh.
//
// A step is "W PATH\nCONTENT" (write a file), "R PATH" (remove), "D
// PATH" (make a directory), "C PATH" (print a file) or "X ARGS" (run
// exportfs ARGS, printing its output and exit status).
var exportfsScenarios = []struct {
	name  string
	steps []string
}{
	{"facts", []string{
		// Each case of the facts file (§4, "exportfs behaviour").
		"W /etc/exports.d/pv.exports\n/srv/a 10.10.0.0/24(rw,sync,no_subtree_check,insecure,all_squash)\n",
		"X -ra", "C /var/lib/nfs/etab", "X -ra", "C /var/lib/nfs/etab", "X", "X -v", "X -s",
		"W /etc/exports.d/pv.exports\n/srv/a 10.10.0.0/24\n", "X -ra", "X -s",
		"W /etc/exports.d/pv.exports\n/srv/a 10.10.0.0/24 (rw,sync,no_subtree_check)\n", "X -ra", "X -s", "X -v",
		"W /etc/exports.d/pv.exports\n/srv/a 10.10.0.0/24(rw,bogus,no_subtree_check)\n/srv/b 10.10.0.0/24(rw,no_subtree_check)\n", "X -ra", "X -s",
		"W /etc/exports.d/pv.exports\n/srv/a 10.10.0.0/33(rw,no_subtree_check)\n/srv/b 10.10.0.0/24(rw,no_subtree_check)\n", "X -ra", "X -s",
		"W /etc/exports.d/pv.exports\n/srv/a *;reboot(rw,no_subtree_check) 10.10.0.5/24(rw,no_subtree_check)\n", "X -ra", "X -s",
		"W /etc/exports.d/pv.exports\n/srv/missing 10.10.0.0/24(rw,no_subtree_check)\n", "X -ra", "X -s", "X -v",
		"R /etc/exports.d/pv.exports", "X -ra", "X -s", "C /var/lib/nfs/etab",
		"W /etc/exports.d/pv.exports\n/srv/a 10.10.0.0/24(rw,no_subtree_check)\n", "R /etc/exports", "X -ra", "X -s", "X -rav",
	}},
	{"exportsd", []string{
		"W /etc/exports.d/b.exports\n/srv/b 10.0.0.1(rw,no_subtree_check)\n",
		"W /etc/exports.d/a10.exports\n/srv/c 10.0.0.1(rw,no_subtree_check)\n",
		"W /etc/exports.d/a9.exports\n/srv/a 10.0.0.1(rw,no_subtree_check)\n",
		"W /etc/exports.d/.hidden.exports\n/srv/a 10.0.0.2(rw,no_subtree_check)\n",
		"W /etc/exports.d/.exports\n/srv/a 10.0.0.3(rw,no_subtree_check)\n",
		"W /etc/exports.d/b.export\n/srv/a 10.0.0.4(rw,no_subtree_check)\n",
		"W /etc/exports.d/c.exports.bak\n/srv/a 10.0.0.5(rw,no_subtree_check)\n",
		"W /etc/exports.d/sub.exports/x\n",
		"X -rav", "X",
	}},
	{"syntax", []string{
		"W /etc/exports.d/a.exports\n# c1\n# c2\n\n/srv/a 10.0.0.1(rw,bogus)\n", "X -ra",
		"W /etc/exports.d/a.exports\n/srv/a\t10.0.0.1(rw,no_subtree_check)\\\n\t10.0.0.2(ro,no_subtree_check)   # comment\n # only comment\n/srv/b 10.0.0.3 (rw)\n", "X -ra", "X -s",
		"W /etc/exports.d/a.exports\n/srv/a 10.0.0.1(rw,no_subtree_check\n", "X -ra",
		"W /etc/exports.d/a.exports\n/srv/a -rw,no_subtree_check 10.0.0.1 10.0.0.2(ro)\n/srv/a -async\n", "X -ra", "X -s",
		"W /etc/exports.d/a.exports\n/srv/a\n", "X -ra", "X -s",
		"W /etc/exports.d/a.exports\n\"/srv/a b\" 10.0.0.1(rw,no_subtree_check)\n/srv/a\\011c 10.0.0.2(rw,no_subtree_check)\n/srv/link 10.0.0.3(rw,no_subtree_check)\n/srv/file 10.0.0.4(rw,no_subtree_check)\n",
		"D /srv/a b", "X -ra", "C /var/lib/nfs/etab", "X -s", "X -v", "X",
	}},
	{"clients", []string{
		"W /etc/exports.d/a.exports\n/srv/a 10.0.0.1(rw,no_subtree_check,sec=krb5:sys,rw) 10.0.0.0/255.255.0.0(rw) 10.0.0.0/(ro) 10.1.0.0/x(ro) 10.2.0.0/-1(ro) 300.1.1.1/8(ro) [::1](rw) ::1/64(rw) @ng(rw) gss/krb5(rw)\n",
		"X -ra", "C /var/lib/nfs/etab", "X -v",
		"W /etc/exports.d/a.exports\n/srv/a node7(rw,no_subtree_check) node*(ro,no_subtree_check) 10.0.0.8(rw,no_subtree_check) nosuch(rw,no_subtree_check)\n",
		"X -ra", "C /var/lib/nfs/etab", "X -v", "X -u node7.example:/srv/a", "X -s", "X -o rw,no_subtree_check node8:/srv/a", "X -s",
		"X -o ro,no_subtree_check 10.0.0.9:/srv/a", "X -s", "X -uv 10.0.0.9:/srv/a", "X",
		"W /etc/exports.d/a.exports\n/srv/a 10.0.0.1(rw,no_subtree_check) 10.0.0.1(ro,no_subtree_check)\n/srv/a *(rw,no_subtree_check) *(rw,no_subtree_check)\n", "X -ra", "X -s",
	}},
	{"options", []string{
		"W /etc/exports.d/a.exports\n/srv/a 10.0.0.1(rw,no_subtree_check,anonuid=1000,anongid=x)\n", "X -ra",
		"W /etc/exports.d/a.exports\n/srv/a 10.0.0.1(fsid=0,rw,no_subtree_check) 10.0.0.2(fsid=root,mp,no_subtree_check) 10.0.0.3(fsid=12345678-1234-1234-1234-123456789012,mountpoint=/srv,no_subtree_check,nordirplus,security_label,no_acl,pnfs,insecure_locks,crossmnt) 10.0.0.4(refer=/a@host,no_subtree_check,async,no_wdelay,nohide,sec=sys:krb5,ro,sec=krb5,rw) 10.0.0.5(rw,all_squash,anonuid=1000,insecure,no_root_squash,subtree_check)\n",
		"X -ra", "C /var/lib/nfs/etab", "X -v", "X -s",
	}},
	{"commandline", []string{
		"W /etc/exports.d/a.exports\n/srv/a 10.0.0.1(rw,no_subtree_check) 10.0.0.2(rw,no_subtree_check)\n/srv/c 10.0.0.1(rw,no_subtree_check)\n",
		"X -ra", "X -u 10.0.0.1:/srv/a", "X -s", "X -uv 10.0.0.9:/srv/a", "X -u 10.0.0.2:/srv/a/", "X -u nocolon", "X -u host:relative", "X -s",
		"X 10.0.0.5:/srv/b", "X -s", "X -v -o rw,insecure,no_subtree_check 10.0.0.5:/srv/b", "X -s", "X -i -o ro 10.0.0.6:/srv/b", "X -s",
		"X 10.0.0.7:/srv/missing", "X -o bogus 10.0.0.7:/srv/b", "X -r 10.0.0.5:/srv/b", "X -ru", "X -au", "X -s", "C /var/lib/nfs/etab",
		"X -ra", "X -s", "X -av", "X -x", "X -h", "X -f", "X -s -v", "X a b", "X -ia", "X -a", "X -o", "X -d bogus -s",
		"R /etc/exports.d/a.exports", "X -rv", "X -s",
	}},
}

// newServerFS is the server's filesystem before a scenario: what
// capture.sh sets up in its namespace.
func newServerFS() *sshtest.FS {
	f := sshtest.NewFS()
	for _, d := range []string{"/srv/a", "/srv/b", "/srv/c", "/etc/exports.d", "/var/lib/nfs"} {
		f.MkdirAll(d, 0o755)
	}
	f.Symlink("/srv/a", "/srv/link")
	f.WriteFile("/srv/file", nil, 0o644)
	f.WriteFile("/var/lib/nfs/etab", nil, 0o644)
	f.WriteFile("/etc/exports", []byte(etcExports), 0o644)
	f.WriteFile("/etc/hosts", []byte("127.0.0.1 localhost\n10.0.0.7 node7.example node7\n10.0.0.8 node8\n"), 0o644)
	return f
}

func splitStep(st string) (op, rest string) {
	if len(st) > 2 {
		return st[:1], st[2:]
	}
	return st[:1], ""
}

// TestExportfsMatchesTheRealOne runs each scenario with the simulated
// exportfs and compares every output, message, exit status and etab with
// the real exportfs's.
func TestExportfsMatchesTheRealOne(t *testing.T) {
	for _, sc := range exportfsScenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := newServerFS()
			var out bytes.Buffer
			for _, st := range sc.steps {
				op, rest := splitStep(st)
				switch op {
				case "W":
					path, content, _ := strings.Cut(rest, "\n")
					if err := f.WriteFile(path, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				case "R":
					f.Remove(rest)
				case "D":
					f.MkdirAll(rest, 0o755)
				case "C":
					fmt.Fprintf(&out, "--- cat %s\n", rest)
					data, _ := f.ReadFile(rest)
					out.Write(data)
				case "X":
					fmt.Fprintf(&out, "--- exportfs %s\n", rest)
					rc := runExportfs(f.As(sshtest.Root, "/"), strings.Fields(rest), &out, &out)
					fmt.Fprintf(&out, "rc=%d\n", rc)
				}
			}
			want, err := os.ReadFile(filepath.Join("testdata", "exportfs", sc.name+".out"))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != string(want) {
				t.Errorf("the simulated exportfs differs from the real one (-real +simulated):\n%s", golden.Diff(string(want), got))
			}
		})
	}
}

// TestExportfsScenarioScripts keeps the shell scripts capture.sh runs in
// step with the table: testdata/exportfs/NAME.sh.golden are golden files.
func TestExportfsScenarioScripts(t *testing.T) {
	for _, sc := range exportfsScenarios {
		var b strings.Builder
		b.WriteString("# Generated from exportfsScenarios in exportfs_test.go (go test -run ScenarioScripts -update).\n")
		b.WriteString("mkdir -p /srv/a /srv/b /srv/c /etc/exports.d && ln -s /srv/a /srv/link && touch /srv/file\n")
		b.WriteString("printf '127.0.0.1 localhost\\n10.0.0.7 node7.example node7\\n10.0.0.8 node8\\n' > /etc/hosts\n")
		for _, st := range sc.steps {
			op, rest := splitStep(st)
			q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
			switch op {
			case "W":
				path, content, _ := strings.Cut(rest, "\n")
				fmt.Fprintf(&b, "mkdir -p \"$(dirname %s)\" && printf '%%s' %s > %s\n", q(path), q(content), q(path))
			case "R":
				fmt.Fprintf(&b, "rm -f %s\n", q(rest))
			case "D":
				fmt.Fprintf(&b, "mkdir -p %s\n", q(rest))
			case "C":
				fmt.Fprintf(&b, "echo %s; cat %s\n", q("--- cat "+rest), q(rest))
			case "X":
				fmt.Fprintf(&b, "echo %s; exportfs %s 2>&1; echo rc=$?\n", q("--- exportfs "+rest), rest)
			}
		}
		golden.Assert(t, "exportfs/"+sc.name+".sh", []byte(b.String()))
	}
}
