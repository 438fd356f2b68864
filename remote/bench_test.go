package remote_test

// Benchmarks of the SSH transport, against the in-process fake (sshtest)
// and a real OpenSSH sshd (internal/sshdtest), with OpenSSH's own clients
// (ssh, sftp, scp) as the yardstick. Results and the commands that produce
// them are in BENCHMARKS.md. The real-sshd parts skip unless run as root
// with sshd installed.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const benchPassword = "bench-password-1"

// benchFake starts an sshtest host with a user "bench" (passwordless sudo)
// and dials it.
func benchFake(b *testing.B) (*sshtest.Server, *remote.SSHHost) {
	srv := sshtest.Start(b, sshtest.Config{Users: []sshtest.User{{Name: "bench", Password: benchPassword, Sudo: sshtest.SudoNoPassword}}})
	h, err := remote.Dial(context.Background(), remote.Config{Addr: srv.Addr(), User: "bench", Password: remote.NewSecret(benchPassword), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return srv, h
}

// benchReal dials srv as u with u's key.
func benchReal(b *testing.B, srv *sshdtest.Server, u sshdtest.User) *remote.SSHHost {
	pin, _ := remote.PinnedHostKey(ssh.FingerprintSHA256(srv.HostKey()))
	h, err := remote.Dial(context.Background(), remote.Config{Addr: srv.Addr(), User: u.Name, PrivateKey: remote.NewSecret(string(u.PrivateKey)), HostKey: pin})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

func benchRunLoop(b *testing.B, h remote.Host, ctx context.Context, c remote.Cmd) {
	if _, err := h.Run(ctx, c); err != nil { // warm: connection, sudo probe
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.Run(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun measures one command (`true`) on a warm connection.
func BenchmarkRun(b *testing.B) {
	b.Run("sshtest", func(b *testing.B) {
		_, h := benchFake(b)
		benchRunLoop(b, h, context.Background(), remote.Command("true"))
	})
	b.Run("sshd", func(b *testing.B) {
		srv := sshdtest.Start(b)
		u := srv.User(sshdtest.SudoNoPassword)
		h := benchReal(b, srv, u)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		// The floor: a bare x/crypto/ssh session per command, no package
		// remote. The difference to "plain" is this package's overhead.
		b.Run("raw-xcrypto", func(b *testing.B) {
			c := rawClient(b, srv, u)
			for b.Loop() {
				sess, err := c.NewSession()
				if err != nil {
					b.Fatal(err)
				}
				if err := sess.Run("true"); err != nil {
					b.Fatal(err)
				}
				sess.Close()
			}
		})
		b.Run("plain", func(b *testing.B) { benchRunLoop(b, h, context.Background(), remote.Command("true")) })
		// A deadline adds the `timeout` wrapper (one more exec).
		b.Run("deadline", func(b *testing.B) { benchRunLoop(b, h, ctx, remote.Command("true")) })
		b.Run("sudo", func(b *testing.B) { benchRunLoop(b, h, ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}) })
		// Brief commands, interleaved with these: BenchmarkRunDeadline.
	})
}

// BenchmarkRunDeadline runs `true` on a warm connection to the real sshd
// without a deadline, with one (the host-side `timeout` wrapper) and with
// one as a Brief command (bounded from the client side), in turn within
// each iteration, and reports each one's median, min and max latency and
// the medians' differences to the command without a deadline.
func BenchmarkRunDeadline(b *testing.B) {
	srv := sshdtest.Start(b)
	h := benchReal(b, srv, srv.User(sshdtest.SudoNoPassword))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	type variant struct {
		name string
		ctx  context.Context
		cmd  remote.Cmd
	}
	vs := []variant{
		{"plain", context.Background(), remote.Command("true")},
		{"deadline", ctx, remote.Command("true")},
		{"deadline-brief", ctx, remote.Cmd{Args: []string{"true"}, Brief: true}},
		{"sudo", context.Background(), remote.Cmd{Args: []string{"true"}, Sudo: true}},
		{"sudo-brief", context.Background(), remote.Cmd{Args: []string{"true"}, Sudo: true, Brief: true}},
	}
	for _, v := range vs { // warm: connection, sudo probe
		if _, err := h.Run(v.ctx, v.cmd); err != nil {
			b.Fatal(err)
		}
	}
	spent := make([][]time.Duration, len(vs))
	for i := 0; b.Loop(); i++ {
		for k := range vs {
			j := (i + k) % len(vs)
			start := time.Now()
			if _, err := h.Run(vs[j].ctx, vs[j].cmd); err != nil {
				b.Fatal(err)
			}
			spent[j] = append(spent[j], time.Since(start))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	medians := make([]time.Duration, len(vs))
	for j, v := range vs {
		ds := slices.Clone(spent[j])
		slices.Sort(ds)
		medians[j] = ds[len(ds)/2]
		b.ReportMetric(ms(medians[j]), v.name+"-ms")
		b.ReportMetric(ms(ds[0]), v.name+"-min-ms")
		b.ReportMetric(ms(ds[len(ds)-1]), v.name+"-max-ms")
	}
	b.ReportMetric(ms(medians[1]-medians[0]), "deadline-over-plain-ms")
	b.ReportMetric(ms(medians[2]-medians[0]), "brief-over-plain-ms")
	b.ReportMetric(ms(medians[4]-medians[3]), "sudo-brief-over-sudo-ms")
}

// openSSH builds OpenSSH client command lines for a sshdtest server,
// optionally through a ControlMaster connection.
type openSSH struct {
	srv     *sshdtest.Server
	u       sshdtest.User
	control string // ControlPath, "" for a fresh connection per command
}

// needClients skips b unless OpenSSH's clients are installed.
func needClients(b *testing.B, names ...string) {
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			b.Skipf("OpenSSH client %s is not installed", n)
		}
	}
}

func (o openSSH) opts() []string {
	opts := []string{"-F", "/dev/null",
		"-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile=" + o.srv.KnownHostsFile(),
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "IdentitiesOnly=yes",
		"-o", "LogLevel=ERROR",
		"-i", o.u.KeyFile,
	}
	if o.control != "" {
		opts = append(opts, "-o", "ControlMaster=no", "-o", "ControlPath="+o.control)
	}
	return opts
}

func (o openSSH) ssh(args ...string) *exec.Cmd {
	a := append(o.opts(), "-p", o.srv.Port(), "-l", o.u.Name, "127.0.0.1")
	return exec.Command("ssh", append(a, args...)...)
}

// master starts a ControlMaster connection and returns o using it.
func (o openSSH) master(b *testing.B) openSSH {
	sock := filepath.Join(b.TempDir(), "mux")
	m := exec.Command("ssh", append(o.opts(), "-o", "ControlMaster=yes", "-o", "ControlPath="+sock,
		"-o", "ControlPersist=yes", "-f", "-N", "-p", o.srv.Port(), "-l", o.u.Name, "127.0.0.1")...)
	if out, err := m.CombinedOutput(); err != nil {
		b.Fatalf("ssh ControlMaster: %v: %s", err, out)
	}
	o.control = sock
	b.Cleanup(func() { o.ssh("-O", "exit").Run() })
	return o
}

func runOrFatal(b *testing.B, c *exec.Cmd) {
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", strings.Join(c.Args, " "), err, out)
	}
}

// BenchmarkOpenSSHCommand runs `ssh host true` per iteration, for
// comparison with BenchmarkRun: a new connection each time, and a
// multiplexed one over a ControlMaster.
func BenchmarkOpenSSHCommand(b *testing.B) {
	srv := sshdtest.Start(b)
	needClients(b, "ssh")
	o := openSSH{srv: srv, u: srv.User(sshdtest.SudoNoPassword)}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			runOrFatal(b, o.ssh("true"))
		}
	})
	b.Run("controlmaster", func(b *testing.B) {
		m := o.master(b)
		runOrFatal(b, m.ssh("true"))
		b.ResetTimer()
		for b.Loop() {
			runOrFatal(b, m.ssh("true"))
		}
	})
}

// randomFile creates a file of size random bytes in dir.
func randomFile(b testing.TB, dir string, size int64) string {
	f, err := os.CreateTemp(dir, "random-*.bin")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rand.IntN(256))
	}
	if _, err := io.Copy(f, io.LimitReader(rand.NewChaCha8(seed), size)); err != nil {
		b.Fatal(err)
	}
	return f.Name()
}

// uploader uploads the benchmark file to a new path and returns the path.
// i tells iterations apart.
type uploader struct {
	name string
	up   func(b *testing.B, i int) string
}

// writeFileUploader uploads src with WriteFile: from the *os.File
// (hashed first) or, with stream, from a reader that hides io.Seeker.
func writeFileUploader(name string, h remote.Host, src string, stream bool, opts remote.FileOptions, dst func(i int) string) uploader {
	return uploader{name, func(b *testing.B, i int) string {
		f, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var r io.Reader = f
		if stream {
			r = io.MultiReader(f) // not an io.Seeker: no hashing pass
		}
		path := dst(i)
		changed, err := h.WriteFile(context.Background(), path, r, opts)
		if err != nil || !changed {
			b.Fatalf("WriteFile: changed=%v, %v", changed, err)
		}
		return path
	}}
}

// execUploader is a reference point, not a WriteFile candidate: an upload
// through an exec channel instead of SFTP: the content is streamed to `tee STAGED | HASH` on the host, so the
// host hashes while it receives (no second pass over the file), and the
// result is compared with the sum computed locally on the way out. hash is
// "sha256sum", "openssl" or "none" (no remote check: the upper bound).
func execUploader(u sshdtest.User, h remote.Host, src, hash string) uploader {
	script := `set -eu
umask 077
tee -- "$1" | sha256sum`
	switch hash {
	case "openssl":
		script = `set -eu
umask 077
if command -v openssl >/dev/null; then tee -- "$1" | openssl dgst -sha256 -r; else tee -- "$1" | sha256sum; fi`
	case "none":
		script = `set -eu
umask 077
cat > "$1"`
	}
	tag := randomHex(4)
	return uploader{"reference/exec-tee-" + hash, func(b *testing.B, i int) string {
		ctx := context.Background()
		dst := fmt.Sprintf("%s/exec-%s-%d.bin", u.Home, tag, i)
		staged := fmt.Sprintf("%s/.exec-%s-%d.bin.mgmtkit-%s", u.Home, tag, i, randomHex(4))
		in, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		sum := sha256.New()
		out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", script, "upload", staged}, Stdin: io.TeeReader(in, sum)})
		if err != nil {
			b.Fatal(err)
		}
		if want := fmt.Sprintf("%x", sum.Sum(nil)); hash != "none" && !strings.HasPrefix(out.String(), want) {
			b.Fatalf("remote sum %q, want %s", out.String(), want)
		}
		if _, err := h.Run(ctx, remote.Command("mv", "-f", "--", staged, dst)); err != nil {
			b.Fatal(err)
		}
		return dst
	}}
}

// openSSHUploader uploads src with OpenSSH's sftp (batch mode, put), scp
// (SFTP protocol, the default since OpenSSH 9.0) or scp -O (the legacy scp
// protocol).
func openSSHUploader(b *testing.B, o openSSH, tool, src string) uploader {
	batch := filepath.Join(b.TempDir(), "batch")
	tag := randomHex(4)
	name := "openssh/" + tool
	if o.control != "" {
		name += "-controlmaster"
	}
	return uploader{name, func(b *testing.B, i int) string {
		dst := fmt.Sprintf("%s/%s-%s-%d.bin", o.u.Home, tool, tag, i)
		var c *exec.Cmd
		switch tool {
		case "sftp":
			if err := os.WriteFile(batch, []byte(fmt.Sprintf("put %s %s\n", src, dst)), 0o600); err != nil {
				b.Fatal(err)
			}
			c = exec.Command("sftp", append(o.opts(), "-q", "-b", batch, "-P", o.srv.Port(), o.u.Name+"@127.0.0.1")...)
		case "scp", "scp-O":
			args := append(o.opts(), "-q", "-P", o.srv.Port())
			if tool == "scp-O" {
				args = append(args, "-O")
			}
			c = exec.Command("scp", append(args, src, o.u.Name+"@127.0.0.1:"+dst)...)
		}
		runOrFatal(b, c)
		return dst
	}}
}

// realUploaders returns every upload method against the real sshd.
func realUploaders(b *testing.B, srv *sshdtest.Server, src string) []uploader {
	u := srv.User(sshdtest.SudoNoPassword)
	h := benchReal(b, srv, u)
	tag := randomHex(4)
	home := func(i int) string { return fmt.Sprintf("%s/up-%s-%d.bin", u.Home, tag, i) }
	rootDir := "/root/mgmtkit-bench-" + tag
	b.Cleanup(func() { os.RemoveAll(rootDir) })
	root := func(i int) string { return fmt.Sprintf("%s/up-%d.bin", rootDir, i) }
	ups := []uploader{
		writeFileUploader("writefile/file", h, src, false, remote.FileOptions{}, home),
		writeFileUploader("writefile/stream", h, src, true, remote.FileOptions{}, home),
		writeFileUploader("writefile-sudo/file", h, src, false, remote.FileOptions{Sudo: true}, root),
		writeFileUploader("writefile-sudo/stream", h, src, true, remote.FileOptions{Sudo: true}, root),
		execUploader(u, h, src, "sha256sum"),
		execUploader(u, h, src, "openssl"),
		execUploader(u, h, src, "none"),
	}
	needClients(b, "ssh", "sftp", "scp")
	fresh := openSSH{srv: srv, u: u}
	warm := fresh.master(b)
	for _, tool := range []string{"sftp", "scp", "scp-O"} {
		ups = append(ups, openSSHUploader(b, fresh, tool, src), openSSHUploader(b, warm, tool, src))
	}
	return ups
}

// uploadOnce runs one upload, timed, then checks and removes the result
// untimed.
func uploadOnce(b *testing.B, up uploader, i int, size int64) {
	path := up.up(b, i)
	b.StopTimer()
	checkRemove(b, up.name, path, size)
	b.StartTimer()
}

// checkRemove checks that path arrived whole and removes it.
func checkRemove(b *testing.B, name, path string, size int64) {
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		b.Fatalf("%s: %s did not arrive whole: %v", name, path, err)
	}
	os.Remove(path)
}

// BenchmarkUpload64MiB uploads 64 MiB of random bytes to a new path per
// iteration: by WriteFile to the fake and to the real sshd (into the home
// directory, and with Sudo into /root), by the exec-channel references,
// and by OpenSSH's sftp and scp, with a fresh connection each and over a
// ControlMaster connection.
func BenchmarkUpload64MiB(b *testing.B) {
	const size = 64 << 20
	src := randomFile(b, b.TempDir(), size)

	b.Run("sshtest", func(b *testing.B) {
		srv, h := benchFake(b)
		for _, stream := range []bool{false, true} {
			up := writeFileUploader("", h, src, stream, remote.FileOptions{}, func(i int) string { return fmt.Sprintf("/home/bench/up-%d.bin", i) })
			b.Run(map[bool]string{false: "file", true: "stream"}[stream], func(b *testing.B) {
				b.SetBytes(size)
				for i := 0; b.Loop(); i++ {
					path := up.up(b, i)
					b.StopTimer()
					srv.FS().Remove(path)
					b.StartTimer()
				}
			})
		}
	})

	for _, up := range realUploaders(b, sshdtest.Start(b), src) {
		b.Run(up.name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; b.Loop(); i++ {
				uploadOnce(b, up, i, size)
			}
		})
	}
}

// BenchmarkUploadVersus uploads 64 MiB by WriteFile, by OpenSSH's sftp
// and scp over a ControlMaster connection, and by paramiko (the reference
// implementation's SFTP client, one warm connection) in turn within each
// iteration, and reports each method's median throughput, its fastest and
// slowest round, and WriteFile's ratios to the others. On a small machine
// whose two cores run the client and sshd alike, interleaving keeps the
// comparison fair where separate benchmarks drift with the load of the
// moment. Every method uploads once before timing starts: the first
// upload on a new connection pays for warming it (about 0.75 s here,
// whatever the client).
func BenchmarkUploadVersus(b *testing.B) {
	const size = 64 << 20
	src := randomFile(b, b.TempDir(), size)
	srv := sshdtest.Start(b)
	var ups []uploader
	for _, up := range realUploaders(b, srv, src) {
		switch up.name {
		case "writefile/file", "writefile/stream", "writefile-sudo/file",
			"reference/exec-tee-none",
			"openssh/sftp-controlmaster", "openssh/scp-controlmaster":
			ups = append(ups, up)
		}
	}
	if up, ok := paramikoUploader(b, srv, srv.User(sshdtest.SudoNoPassword), src); ok {
		ups = append(ups, up)
	}
	ups = append(ups, rawSFTPUploader(b, srv, srv.User(sshdtest.SudoNoPassword), src))
	interleave(b, ups, size)
}

// rawClient dials srv as u with x/crypto/ssh alone, no package remote,
// and closes the connection when b ends.
func rawClient(b *testing.B, srv *sshdtest.Server, u sshdtest.User) *ssh.Client {
	signer, err := ssh.ParsePrivateKey(u.PrivateKey)
	if err != nil {
		b.Fatal(err)
	}
	c, err := ssh.Dial("tcp", srv.Addr(), &ssh.ClientConfig{User: u.Name, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(srv.HostKey())})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// rawSFTPUploader is a reference point, not a WriteFile candidate: pkg/sftp
// as WriteFile drives it for OpenSSH (aes128-gcm, 128 KiB writes, 16 in
// flight) writing the file straight to its path, with nothing else: no
// hash on either side, no probe, no staging, no rename. What WriteFile
// costs beyond it is the price of its guarantees.
func rawSFTPUploader(b *testing.B, srv *sshdtest.Server, u sshdtest.User, src string) uploader {
	client, err := sftp.NewClient(rawClient(b, srv, u), sftp.UseConcurrentWrites(true), sftp.MaxConcurrentRequestsPerFile(16), sftp.MaxPacketUnchecked(128<<10))
	if err != nil {
		b.Fatal(err)
	}
	tag := randomHex(4)
	return uploader{"reference/sftp-nocheck", func(b *testing.B, i int) string {
		in, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		dst := fmt.Sprintf("%s/raw-%s-%d.bin", u.Home, tag, i)
		f, err := client.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.ReadFromWithConcurrency(in, 16); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		return dst
	}}
}

// interleave runs every uploader once untimed, then once per iteration,
// starting with a different one each time so that none always follows the
// same neighbour, and reports each one's median, minimum and maximum
// throughput and the ratios of WriteFile's median to the others'.
func interleave(b *testing.B, ups []uploader, size int64) {
	for j, up := range ups {
		checkRemove(b, up.name, up.up(b, -1-j), size) // warm the connection
	}
	b.ResetTimer()
	spent := make([][]time.Duration, len(ups))
	for i := 0; b.Loop(); i++ {
		for k := range ups {
			j := (i + k) % len(ups)
			start := time.Now()
			path := ups[j].up(b, i)
			spent[j] = append(spent[j], time.Since(start))
			checkRemove(b, ups[j].name, path, size)
		}
	}
	mbs := func(d time.Duration) float64 { return float64(size) / d.Seconds() / 1e6 }
	median := map[string]float64{}
	for j, up := range ups {
		ds := slices.Clone(spent[j])
		slices.Sort(ds)
		name := strings.ReplaceAll(up.name, "/", ":")
		median[up.name] = mbs(ds[len(ds)/2])
		b.ReportMetric(median[up.name], name+"-MB/s")
		b.ReportMetric(mbs(ds[len(ds)-1]), name+"-min-MB/s")
		b.ReportMetric(mbs(ds[0]), name+"-max-MB/s")
	}
	for _, mine := range []string{"writefile/file", "writefile/stream", "writefile-sudo/file"} {
		for _, other := range []string{"openssh/sftp-controlmaster", "openssh/scp-controlmaster", "paramiko/sftp", "reference/sftp-nocheck"} {
			if median[mine] > 0 && median[other] > 0 {
				b.ReportMetric(median[mine]/median[other], strings.ReplaceAll(mine+"/"+other, "/", ":")+"-x")
			}
		}
	}
}

// paramikoScript uploads files with paramiko's SFTPClient.put over one
// connection: one "SRC<TAB>DST" line in, one "ok" line out per file. That
// is how the reference implementation moves files (Tacker's MgmtDrivers
// open a paramiko SFTP client on the VNF's VM).
const paramikoScript = `import sys, paramiko
host, port, user, key = sys.argv[1:5]
c = paramiko.SSHClient()
c.set_missing_host_key_policy(paramiko.RejectPolicy())
c.load_host_keys(sys.argv[5])
c.connect(host, int(port), username=user, key_filename=key, look_for_keys=False, allow_agent=False)
s = c.open_sftp()
for line in sys.stdin:
    src, dst = line.rstrip("\n").split("\t")
    s.put(src, dst)
    print("ok", flush=True)
`

// paramikoUploader starts paramikoScript with Debian's python3-paramiko
// and returns an uploader that sends it one file per call, or false when
// paramiko is not installed.
func paramikoUploader(b *testing.B, srv *sshdtest.Server, u sshdtest.User, src string) (uploader, bool) {
	python := "/usr/bin/python3" // Debian's, where python3-paramiko installs
	if exec.Command(python, "-c", "import paramiko").Run() != nil {
		b.Log("python3-paramiko is not installed: no paramiko figures")
		return uploader{}, false
	}
	host, port, _ := strings.Cut(srv.Addr(), ":")
	known := filepath.Join(b.TempDir(), "known_hosts")
	line := fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(srv.HostKey()))
	if err := os.WriteFile(known, []byte(line), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(python, "-c", paramikoScript, host, port, u.Name, u.KeyFile, known)
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	out := bufio.NewReader(outPipe)
	tag := randomHex(4)
	return uploader{"paramiko/sftp", func(b *testing.B, i int) string {
		dst := fmt.Sprintf("%s/paramiko-%s-%d.bin", u.Home, tag, i)
		if _, err := fmt.Fprintf(in, "%s\t%s\n", src, dst); err != nil {
			b.Fatal(err)
		}
		if line, err := out.ReadString('\n'); err != nil || line != "ok\n" {
			b.Fatalf("paramiko: %q, %v", line, err)
		}
		return dst
	}}, true
}

// helperEnv carries an upload job to TestHelperUpload in a child process.
const helperEnv = "MGMTKIT_HELPER_UPLOAD"

type helperJob struct {
	Addr, User, KeyFile, HostKey, Src, Dst string
	Stream, Sudo                           bool
}

// TestHelperUpload is not a test: BenchmarkUploadPeakRSS runs the test
// binary again with only this function and a job in $MGMTKIT_HELPER_UPLOAD,
// so that the child's peak RSS is the upload's alone.
func TestHelperUpload(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process for BenchmarkUploadPeakRSS")
	}
	var job helperJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(job.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := remote.PinnedHostKey(job.HostKey)
	if err != nil {
		t.Fatal(err)
	}
	h, err := remote.Dial(context.Background(), remote.Config{Addr: job.Addr, User: job.User, PrivateKey: remote.NewSecret(string(key)), HostKey: pin})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if job.Src == "" { // baseline: connect only
		reportHWM()
		return
	}
	f, err := os.Open(job.Src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if job.Stream {
		r = io.MultiReader(f)
	}
	if _, err := h.WriteFile(context.Background(), job.Dst, r, remote.FileOptions{Sudo: job.Sudo}); err != nil {
		t.Fatal(err)
	}
	reportHWM()
}

// hwmMarker prefixes the helper's report of its own peak RSS.
const hwmMarker = "mgmtkit-helper-vmhwm-kib="

// reportHWM prints this process's peak RSS (VmHWM, KiB) for the parent.
func reportHWM() {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("\n%s%s\n", hwmMarker, strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
}

// BenchmarkUploadPeakRSS reports the peak resident memory of a process
// that dials the real sshd and uploads a 64 MiB or a 512 MiB file with
// WriteFile (the test binary re-executed as TestHelperUpload), and of one
// that only dials, as the baseline. The fake server keeps files in memory,
// so memory is measured only against the real sshd.
//
// Two figures: maxrss-MiB is the child's rusage ru_maxrss as wait4
// returns it, and peak-RSS-MiB the child's own VmHWM. On Linux ru_maxrss
// is not the child's alone: os/exec starts children with vfork, and
// execve folds the high-water RSS of the memory it leaves (the parent's)
// into the child's maxrss. It is therefore at least this benchmark
// process's own peak, which grows with the benchmarks run before it;
// VmHWM belongs to the child's own address space and is the figure to
// judge by.
func BenchmarkUploadPeakRSS(b *testing.B) {
	srv := sshdtest.Start(b)
	u := srv.User(sshdtest.SudoNoPassword)
	dir := b.TempDir()
	files := map[int64]string{}
	tag := randomHex(4)
	rootDir := "/root/mgmtkit-bench-" + tag
	b.Cleanup(func() { os.RemoveAll(rootDir) })
	for _, v := range []struct {
		name         string
		size         int64
		stream, sudo bool
	}{
		{"baseline-dial-only", 0, false, false},
		{"64MiB", 64 << 20, false, false},
		{"512MiB", 512 << 20, false, false},
		{"512MiB-stream", 512 << 20, true, false},
		{"512MiB-sudo", 512 << 20, false, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			job := helperJob{Addr: srv.Addr(), User: u.Name, KeyFile: u.KeyFile, HostKey: ssh.FingerprintSHA256(srv.HostKey()), Stream: v.stream, Sudo: v.sudo}
			if v.size > 0 {
				if files[v.size] == "" {
					files[v.size] = randomFile(b, dir, v.size)
				}
				job.Src = files[v.size]
				b.SetBytes(v.size)
			}
			var maxRSS, hwm int64
			for i := 0; b.Loop(); i++ {
				job.Dst = fmt.Sprintf("%s/rss-%s-%d.bin", u.Home, tag, i)
				if v.sudo {
					job.Dst = fmt.Sprintf("%s/rss-%d.bin", rootDir, i)
				}
				spec, _ := json.Marshal(job)
				c := exec.Command(os.Args[0], "-test.run=^TestHelperUpload$", "-test.count=1")
				c.Env = append(os.Environ(), helperEnv+"="+string(spec))
				out, err := c.CombinedOutput()
				if err != nil {
					b.Fatalf("helper: %v: %s", err, out)
				}
				maxRSS = max(maxRSS, c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) // KiB
				_, v, ok := strings.Cut(string(out), hwmMarker)
				if !ok {
					b.Fatalf("helper did not report its VmHWM: %s", out)
				}
				kib, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				if err != nil {
					b.Fatalf("helper VmHWM: %v", err)
				}
				hwm = max(hwm, kib)
				b.StopTimer()
				os.Remove(job.Dst)
				b.StartTimer()
			}
			b.ReportMetric(float64(hwm)/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(maxRSS)/1024, "maxrss-MiB")
		})
	}
}

// BenchmarkSFTPTuning prices the steps of WriteFile separately, to find
// what limits its throughput. "transfer" uploads 64 MiB with pkg/sftp
// directly (as WriteFile does: a TeeReader into SHA-256,
// ReadFromWithConcurrency) to the real sshd, varying the SSH cipher, the
// SFTP packet size and the requests in flight, interleaved and reported
// as metrics; "local-prehash" is the local hashing pass over a seekable
// source; "verify" runs the remote checksum commands on a 64 MiB file.
func BenchmarkSFTPTuning(b *testing.B) {
	const size = 64 << 20
	src := randomFile(b, b.TempDir(), size)
	srv := sshdtest.Start(b)
	u := srv.User(sshdtest.SudoNoPassword)
	signer, err := ssh.ParsePrivateKey(u.PrivateKey)
	if err != nil {
		b.Fatal(err)
	}
	dial := func(b *testing.B, cipher string) *ssh.Client {
		cfg := &ssh.ClientConfig{User: u.Name, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(srv.HostKey())}
		cfg.Ciphers = []string{cipher}
		c, err := ssh.Dial("tcp", srv.Addr(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	const gcm, chacha = "aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"
	var ups []uploader
	for _, v := range []struct {
		cipher      string
		packet, inF int
	}{
		{gcm, 32 << 10, 64}, // WriteFile with servers other than OpenSSH
		{gcm, 32 << 10, 16},
		{gcm, 32<<10 - 64, 64}, // one SSH packet per SFTP write
		{gcm, 64 << 10, 64},
		{gcm, 64 << 10, 16},
		{gcm, 128 << 10, 64},
		{gcm, 128 << 10, 16}, // WriteFile with OpenSSH: 2 MiB in flight either way
		{gcm, 255 << 10, 16},
		{chacha, 32 << 10, 64},
		{chacha, 128 << 10, 16},
	} {
		client, err := sftp.NewClient(dial(b, v.cipher), sftp.UseConcurrentWrites(true),
			sftp.MaxConcurrentRequestsPerFile(v.inF), sftp.MaxPacketUnchecked(v.packet))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { client.Close() })
		name := fmt.Sprintf("%s/packet=%d/inflight=%d", strings.SplitN(v.cipher, "-", 2)[0], v.packet, v.inF)
		ups = append(ups, uploader{name, func(b *testing.B, i int) string {
			in, err := os.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			defer in.Close()
			dst := fmt.Sprintf("%s/tune-%d.bin", u.Home, i)
			f, err := client.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.ReadFromWithConcurrency(io.TeeReader(in, sha256.New()), v.inF); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			return dst
		}})
	}
	b.Run("transfer", func(b *testing.B) { interleave(b, ups, size) })

	// WriteFile's local pass over a seekable source before the upload.
	b.Run("local-prehash", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(sha256.New(), f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})

	// The remote verification step, on a 64 MiB file already there.
	h := benchReal(b, srv, u)
	remoteFile := u.Home + "/verify.bin"
	if err := exec.Command("cp", src, remoteFile).Run(); err != nil {
		b.Fatal(err)
	}
	if err := os.Chown(remoteFile, u.UID, -1); err != nil {
		b.Fatal(err)
	}
	for name, script := range map[string]string{
		"verify/sha256sum":      `sha256sum < "$1"`,
		"verify/openssl-sha256": `openssl dgst -sha256 -r < "$1"`,
		"verify/cat-copy":       `cat -- "$1" > "$1.copy" && rm -f -- "$1.copy"`,
	} {
		b.Run(name, func(b *testing.B) {
			if _, err := exec.LookPath(strings.Fields(script)[0]); err != nil {
				b.Skip(err)
			}
			b.SetBytes(size)
			for b.Loop() {
				if _, err := h.Run(context.Background(), remote.Command("sh", "-c", script, "sh", remoteFile)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
