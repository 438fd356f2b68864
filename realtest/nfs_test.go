package realtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/nfs"
)

// exportfsEnv names the exportfs program to run: test.sh unpacks Debian's
// nfs-kernel-server (apt-get download, dpkg -x; installing it would run
// maintainer scripts that start services) and sets it.
const exportfsEnv = "MGMTKIT_EXPORTFS"

// nfsTestdata is package nfs's testdata: the real programs' outputs these
// tests capture are kept there, so that nfs's unit tests parse real text
// where the programs cannot run.
const nfsTestdata = "../nfs/testdata"

// assertReal compares a real program's output with nfsTestdata/name;
// with -update (internal/golden's flag) it rewrites the file.
func assertReal(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.AssertFile(t, filepath.Join(nfsTestdata, name), got)
}

// exportfsProgram returns the exportfs to run: $MGMTKIT_EXPORTFS, else
// an installed /usr/sbin/exportfs.
func exportfsProgram(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(exportfsEnv); p != "" {
		return need(t, p)
	}
	if _, err := os.Stat("/usr/sbin/exportfs"); err == nil {
		return "/usr/sbin/exportfs"
	}
	t.Fatalf("exportfs is missing: run ./test.sh, which unpacks Debian's nfs-kernel-server and sets %s to its exportfs", exportfsEnv)
	return ""
}

// exportsFile is mgmtkit's exports file as the nfs steps name it.
func exportsFile(t *testing.T) string {
	t.Helper()
	f, err := nfs.ExportsFile("mgmtkit")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// exportfsView is a private NFS server configuration: tmpfs over
// /etc/exports.d, /var/lib/nfs and /srv (where the exported directories
// live), /etc/exports as the test sets it. All of it is in the suite's
// private mount namespace over the overlaid /etc and /var/lib (see
// main_test.go), so the machine's own files never change and an NFS
// server configured on the machine does not leak in.
type exportfsView struct {
	prog string
}

// sampleExports are the pv-k8s-cluster spec's sample exports, on /srv,
// plus one to a single address and one to an IPv6 network.
func sampleExports(t *testing.T) []nfs.Export {
	t.Helper()
	var exports []nfs.Export
	for _, e := range [][2]string{
		{"/srv/volume/nfs/pv1", "10.10.0.0/24"},
		{"/srv/volume/nfs/pv2", "10.10.0.0/24"},
		{"/srv/volume/nfs/pv3", "10.10.0.0/24"},
		{"/srv/volume/nfs/pv3", "10.10.0.5"},
		{"/srv/volume/nfs/pv1", "fd00:10::/64"},
	} {
		n, err := nfs.ParseNetwork(e[1])
		if err != nil {
			t.Fatal(err)
		}
		exports = append(exports, nfs.Export{ExportDir: e[0], ExportTo: n})
	}
	return exports
}

// newExportfsView makes the private configuration, with the sample's
// export directories and an empty /etc/exports, undone when t ends.
func newExportfsView(t *testing.T) *exportfsView {
	t.Helper()
	needPrivateView(t)
	v := &exportfsView{prog: exportfsProgram(t)}
	if _, err := os.Stat("/srv"); err != nil {
		t.Fatalf("/srv, where the exported directories are mounted (Debian's base-files ships it): %v", err)
	}
	orig, origErr := os.ReadFile("/etc/exports")
	t.Cleanup(func() {
		if origErr == nil {
			writeFile(t, "/etc/exports", orig, 0o644)
		} else if err := os.Remove("/etc/exports"); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Error(err)
		}
	})
	for _, dir := range []string{"/etc/exports.d", "/var/lib/nfs", "/srv"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
			t.Fatalf("mount a tmpfs on %s: %v", dir, err)
		}
		t.Cleanup(func() {
			if err := syscall.Unmount(dir, 0); err != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		})
	}
	// What the package ships in /var/lib/nfs (dpkg -c nfs-kernel-server).
	writeFile(t, "/var/lib/nfs/etab", nil, 0o644)
	writeFile(t, "/var/lib/nfs/rmtab", nil, 0o644)
	for _, e := range sampleExports(t) {
		if err := os.MkdirAll(e.ExportDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, "/etc/exports", nil, 0o644)
	return v
}

// run runs exportfs with args in a network namespace of its own, where no
// kernel nfsd caches exist: exportfs flushes /proc/net/rpc/*/flush
// (support/nfs/cacheio.c cache_flush), which is per network namespace,
// so a machine that serves NFS is not disturbed. It returns the exit
// status, standard output and standard error.
func (v *exportfsView) run(t *testing.T, args ...string) (int, []byte, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, v.prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	return runCommand(t, cmd)
}

// runCommand runs cmd in the C locale with a plain PATH and returns its
// exit status, standard output and standard error, failing t when it
// cannot run.
func runCommand(t *testing.T, cmd *exec.Cmd) (int, []byte, []byte) {
	t.Helper()
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.Bytes(), stderr.Bytes()
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode(), stdout.Bytes(), stderr.Bytes()
	}
	t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	return 0, nil, nil
}

// reload runs exportfs -ra and fails t unless it exits 0 with nothing on
// standard error (no warning either).
func (v *exportfsView) reload(t *testing.T) {
	t.Helper()
	if rc, _, stderr := v.run(t, "-ra"); rc != 0 || len(stderr) != 0 {
		t.Fatalf("exportfs -ra: exit %d, stderr %q; want 0 and nothing", rc, stderr)
	}
}

// shown runs exportfs -s and returns its output and its parse.
func (v *exportfsView) shown(t *testing.T) ([]byte, []nfs.Exported) {
	t.Helper()
	rc, out, stderr := v.run(t, "-s")
	if rc != 0 {
		t.Fatalf("exportfs -s: exit %d: %s", rc, stderr)
	}
	shown, err := nfs.ParseExportfsS(out)
	if err != nil {
		t.Fatalf("ParseExportfsS of the real output: %v\n%s", err, out)
	}
	return out, shown
}

// load writes text as mgmtkit's exports file and runs exportfs -ra,
// returning its exit status and standard error.
func (v *exportfsView) load(t *testing.T, text string) (int, []byte) {
	t.Helper()
	writeFile(t, exportsFile(t), []byte(text), 0o644)
	rc, _, stderr := v.run(t, "-ra")
	return rc, stderr
}

// The exports file RenderExports writes loads into the real exportfs
// (Debian's nfs-utils 2.6.2) without an error or a warning, exportfs -ra
// is idempotent, and exportfs -s shows every export as CheckExported
// wants it; without /etc/exports exportfs -ra exits 1, and removing the
// file unexports.
func TestNfsExportfsLoadsRenderedExports(t *testing.T) {
	v := newExportfsView(t)
	exports := sampleExports(t)
	text, err := nfs.RenderExports(exports)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, exportsFile(t), text, 0o644)

	t.Run("missing_etc_exports_exits_1", func(t *testing.T) {
		if err := os.Remove("/etc/exports"); err != nil {
			t.Fatal(err)
		}
		defer writeFile(t, "/etc/exports", nil, 0o644)
		rc, _, stderr := v.run(t, "-ra")
		if want := "exportfs: can't open /etc/exports for reading\n"; rc != 1 || string(stderr) != want {
			t.Errorf("exportfs -ra without /etc/exports: exit %d, stderr %q; want 1, %q", rc, stderr, want)
		}
		// The files of /etc/exports.d are loaded all the same: the exit
		// status, not the listing, tells the failure.
		if _, shown := v.shown(t); nfs.CheckExported(shown, exports) != nil {
			t.Errorf("exports.d was not loaded: %v", nfs.CheckExported(shown, exports))
		}
	})

	v.reload(t)
	etab, err := os.ReadFile("/var/lib/nfs/etab")
	if err != nil {
		t.Fatal(err)
	}
	out, shown := v.shown(t)
	assertReal(t, "exportfs-s.golden", out)
	if err := nfs.CheckExported(shown, exports); err != nil {
		t.Errorf("CheckExported of the real exportfs -s: %v\n%s", err, out)
	}
	if len(shown) != len(exports) {
		t.Errorf("exportfs -s shows %d exports, want %d:\n%s", len(shown), len(exports), out)
	}

	v.reload(t)
	if again, _ := os.ReadFile("/var/lib/nfs/etab"); !bytes.Equal(again, etab) {
		t.Errorf("a second exportfs -ra changed etab:\n%s", golden.Diff(string(etab), string(again)))
	}
	if again, _ := v.shown(t); !bytes.Equal(again, out) {
		t.Errorf("a second exportfs -ra changed exportfs -s:\n%s", golden.Diff(string(out), string(again)))
	}

	t.Run("check_fails_on_what_is_not_exported", func(t *testing.T) {
		other := append(slices.Clone(exports), nfs.Export{ExportDir: "/srv/volume/nfs/pv4", ExportTo: exports[0].ExportTo})
		if err := nfs.CheckExported(shown, other); err == nil || !strings.Contains(err.Error(), "/srv/volume/nfs/pv4 is not exported to 10.10.0.0/24") {
			t.Errorf("CheckExported with an export exportfs never loaded: %v", err)
		}
	})

	t.Run("removing_the_file_unexports", func(t *testing.T) {
		if err := os.Remove(exportsFile(t)); err != nil {
			t.Fatal(err)
		}
		v.reload(t)
		if out, shown := v.shown(t); len(shown) != 0 {
			t.Errorf("exportfs -s after removing the file and exportfs -ra:\n%s", out)
		}
	})
}

// What the real exportfs does with the lines RenderExports refuses to
// write: a space before the options exports read-write to the world, a
// client "*;reboot" is accepted as a wildcard, a directory holding a
// space exports another directory or to another client; and the escapes
// of exportfs -s, which ParseExportfsS undoes.
func TestNfsExportfsMisreadsWhatRenderExportsRefuses(t *testing.T) {
	v := newExportfsView(t)
	opts := "(" + strings.Join(nfs.ExportOptions(), ",") + ")"
	pv1 := sampleExports(t)[0]

	t.Run("space_before_options_exports_to_the_world", func(t *testing.T) {
		rc, stderr := v.load(t, "/srv/volume/nfs/pv1 10.10.0.0/24 "+opts+"\n")
		if rc != 0 || !strings.Contains(string(stderr), "No host name given with /srv/volume/nfs/pv1 "+opts) {
			t.Errorf("exit %d, stderr %q; want 0 and the warning", rc, stderr)
		}
		out, shown := v.shown(t)
		assertReal(t, "exportfs-s-space.golden", out)
		world := slices.IndexFunc(shown, func(e nfs.Exported) bool { return e.Client == "*" })
		if world < 0 || !slices.Contains(shown[world].Options, "rw") {
			t.Errorf("want /srv/volume/nfs/pv1 exported rw to *:\n%s", out)
		}
		if err := nfs.CheckExported(shown, []nfs.Export{pv1}); err == nil || !strings.Contains(err.Error(), "ro instead of rw") {
			t.Errorf("CheckExported: %v; want the network's export found read-only", err)
		}
	})

	t.Run("reboot_client_accepted", func(t *testing.T) {
		if rc, stderr := v.load(t, "/srv/volume/nfs/pv1 *;reboot"+opts+"\n"); rc != 0 {
			t.Errorf("exit %d, stderr %q; want 0", rc, stderr)
		}
		out, shown := v.shown(t)
		assertReal(t, "exportfs-s-reboot.golden", out)
		if len(shown) != 1 || shown[0].Client != "*;reboot" {
			t.Errorf("want one export to the client *;reboot:\n%s", out)
		}
		if err := nfs.CheckExported(shown, []nfs.Export{pv1}); err == nil {
			t.Error("CheckExported accepted a *;reboot export for 10.10.0.0/24")
		}
		// export_to "*; reboot" never becomes a Network, and a zero
		// Network is refused.
		if n, err := nfs.ParseNetwork("*; reboot"); err == nil {
			t.Errorf("ParseNetwork(\"*; reboot\") = %v, want an error", n)
		}
		if _, err := nfs.RenderExports([]nfs.Export{{ExportDir: pv1.ExportDir}}); err == nil || !strings.Contains(err.Error(), "nfs_server_setup_params[0].export_to") {
			t.Errorf("RenderExports with no network: %v", err)
		}
	})

	for _, c := range []struct {
		name, dir string
		// world says whether the line exports to "*" as well.
		world bool
	}{
		{"dir_space_star", "/srv/volume/nfs/pv1 *", true},
		{"dir_space_name", "/srv/volume/nfs/pv1 node9", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The line a renderer that did not check would write: exportfs
			// exports /srv/volume/nfs/pv1, not the directory asked for,
			// to "node9" (unresolvable, dropped) or to the world.
			if rc, stderr := v.load(t, c.dir+" 10.10.0.0/24"+opts+"\n"); rc != 0 {
				t.Errorf("exit %d, stderr %q; want 0", rc, stderr)
			}
			out, shown := v.shown(t)
			if !slices.ContainsFunc(shown, func(e nfs.Exported) bool { return e.Dir == pv1.ExportDir && e.Client == "10.10.0.0/24" }) {
				t.Errorf("want %s exported to 10.10.0.0/24:\n%s", pv1.ExportDir, out)
			}
			if got := slices.ContainsFunc(shown, func(e nfs.Exported) bool { return e.Client == "*" }); got != c.world {
				t.Errorf("exported to the world: %v, want %v:\n%s", got, c.world, out)
			}
			if _, err := nfs.RenderExports([]nfs.Export{{ExportDir: c.dir, ExportTo: pv1.ExportTo}}); err == nil || !strings.Contains(err.Error(), "nfs_server_setup_params[0].export_dir") {
				t.Errorf("RenderExports(%q): %v, want a refusal naming export_dir", c.dir, err)
			}
		})
	}

	t.Run("escaped_directories", func(t *testing.T) {
		for _, d := range []string{"/srv/volume/nfs/pv 1", `/srv/volume/nfs/pv\1`} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// exports(5): "the character code as three octal digits".
		if rc, stderr := v.load(t, `/srv/volume/nfs/pv\0401 10.10.0.0/24`+opts+"\n"+`/srv/volume/nfs/pv\1341 10.10.0.0/24`+opts+"\n"); rc != 0 {
			t.Errorf("exit %d, stderr %q; want 0", rc, stderr)
		}
		out, shown := v.shown(t)
		assertReal(t, "exportfs-s-escaped.golden", out)
		var dirs []string
		for _, e := range shown {
			dirs = append(dirs, e.Dir)
		}
		slices.Sort(dirs)
		if want := []string{"/srv/volume/nfs/pv 1", `/srv/volume/nfs/pv\1`}; !slices.Equal(dirs, want) {
			t.Errorf("ParseExportfsS dirs %q, want %q:\n%s", dirs, want, out)
		}
	})
}

// blkidDevice is the name the format guard's tests give their sparse
// file, run from its directory, so blkid prints DEVNAME=vdb and the
// captured outputs do not depend on the temporary directory.
const blkidDevice = "vdb"

// Fixed UUIDs, so that blkid's output is the same on every run.
const (
	ext4UUID = "2f1c1f6e-6d1f-4f8e-9a51-0c1d7b3c5e01"
	gptUUID  = "6b2c9a1e-3d4f-4a5b-8c6d-7e8f9a0b1c02"
	xfsUUID  = "9c8b7a6d-5e4f-4321-8fed-cba987654303"
	swapUUID = "0a1b2c3d-4e5f-4607-8819-2a3b4c5d6e04"
)

// volume is a sparse file standing for the storage server's Cinder
// volume.
type volume struct {
	dir string
}

// newVolume creates a sparse file of size bytes (as truncate -s does).
func newVolume(t *testing.T, size int64) *volume {
	t.Helper()
	v := &volume{dir: t.TempDir()}
	f, err := os.OpenFile(filepath.Join(v.dir, blkidDevice), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return v
}

// run runs prog on the volume's directory with stdin from /dev/null and
// stdout a pipe (no TTY, as over SSH without a pty); input, when set, is
// its standard input instead. It returns the exit status, stdout and
// stderr, failing t when prog cannot run.
func (v *volume) run(t *testing.T, input string, prog string, args ...string) (int, []byte, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, need(t, prog), args...)
	cmd.Dir = v.dir
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
	return runCommand(t, cmd)
}

// must is run that fails t unless prog exits 0.
func (v *volume) must(t *testing.T, input string, prog string, args ...string) []byte {
	t.Helper()
	rc, stdout, stderr := v.run(t, input, prog, args...)
	if rc != 0 {
		t.Fatalf("%s %s: exit %d: %s", prog, strings.Join(args, " "), rc, stderr)
	}
	return stdout
}

// probe runs blkid -p -o export on the volume and parses it.
func (v *volume) probe(t *testing.T) (nfs.Probe, []byte, error) {
	t.Helper()
	rc, out, _ := v.run(t, "", "/usr/sbin/blkid", "-p", "-o", "export", blkidDevice)
	p, err := nfs.ParseProbe(blkidDevice, rc, out)
	return p, out, err
}

// guard is the format guard as SetupVolume runs it: probe, decide, and
// format with mkfs.ext4 only on FormatExt4.
func (v *volume) guard(t *testing.T) (nfs.Action, error) {
	t.Helper()
	p, _, err := v.probe(t)
	if err != nil {
		return 0, err
	}
	a, err := p.Decide()
	if err == nil && a == nfs.FormatExt4 {
		v.must(t, "", "/usr/sbin/mkfs.ext4", "-q", "-U", ext4UUID, blkidDevice)
	}
	return a, err
}

// writeData writes a file into the ext4 on the volume with debugfs,
// which needs no mount.
func (v *volume) writeData(t *testing.T, content string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "data.txt")
	writeFile(t, src, []byte(content), 0o644)
	v.must(t, "", "/usr/sbin/debugfs", "-w", "-R", "write "+src+" data.txt", blkidDevice)
}

// readData returns /data.txt of the ext4 on the volume, "" when there is
// none (debugfs exits 0 either way and says "File not found" on stderr).
func (v *volume) readData(t *testing.T) string {
	t.Helper()
	return string(v.must(t, "", "/usr/sbin/debugfs", "-R", "cat /data.txt", blkidDevice))
}

// The format guard against the real mkfs.ext4, blkid -p (util-linux
// 2.38.1), sfdisk, mkfs.xfs and mkswap on sparse files: nothing found is
// formatted once, an ext4 holding data is mounted and never formatted,
// and a GPT label, an XFS, a swap area and an ambivalent probe are
// refused and left as they were.
func TestNfsFormatGuard(t *testing.T) {
	t.Run("blank_formatted_once", func(t *testing.T) {
		v := newVolume(t, 64<<20)
		rc, out, _ := v.run(t, "", "/usr/sbin/blkid", "-p", "-o", "export", blkidDevice)
		if rc != 2 || len(out) != 0 {
			t.Fatalf("blkid -p on a blank volume: exit %d, %q; want 2 and nothing", rc, out)
		}
		if a, err := v.guard(t); err != nil || a != nfs.FormatExt4 {
			t.Fatalf("guard on a blank volume: %v, %v; want format ext4", a, err)
		}
		p, out, err := v.probe(t)
		if err != nil || p.Type != "ext4" || p.UUID != ext4UUID {
			t.Fatalf("after formatting: %+v, %v\n%s", p, err, out)
		}
		assertReal(t, "blkid-ext4.golden", out)
		if a, err := v.guard(t); err != nil || a != nfs.MountExt4 {
			t.Fatalf("guard again: %v, %v; want mount ext4", a, err)
		}
	})

	t.Run("ext4_with_data_kept", func(t *testing.T) {
		v := newVolume(t, 64<<20)
		v.must(t, "", "/usr/sbin/mkfs.ext4", "-q", "-U", ext4UUID, blkidDevice)
		v.writeData(t, "the tenant's data\n")
		for range 2 {
			if a, err := v.guard(t); err != nil || a != nfs.MountExt4 {
				t.Fatalf("guard on an ext4 with data: %v, %v; want mount ext4", a, err)
			}
		}
		if got := v.readData(t); got != "the tenant's data\n" {
			t.Errorf("after the guard the volume holds %q, want the data", got)
		}
		if p, _, _ := v.probe(t); p.UUID != ext4UUID {
			t.Errorf("UUID %s, want %s: the volume was formatted", p.UUID, ext4UUID)
		}
	})

	for _, c := range []struct {
		name, golden string
		size         int64
		make         func(v *volume)
		want         string
	}{
		{"gpt_refused", "blkid-gpt.golden", 64 << 20, func(v *volume) {
			v.must(t, "label: gpt\nlabel-id: "+gptUUID+"\n", "/usr/sbin/sfdisk", "-q", blkidDevice)
		}, "vdb holds a gpt partition table"},
		// mkfs.xfs 6.1 refuses a filesystem under 300 MB.
		{"xfs_refused", "blkid-xfs.golden", 512 << 20, func(v *volume) {
			v.must(t, "", "/usr/sbin/mkfs.xfs", "-q", "-m", "uuid="+xfsUUID, blkidDevice)
		}, "vdb holds an xfs filesystem"},
		{"swap_refused", "blkid-swap.golden", 64 << 20, func(v *volume) {
			v.must(t, "", "/usr/sbin/mkswap", "-U", swapUUID, blkidDevice)
		}, "vdb holds a swap signature"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVolume(t, c.size)
			c.make(v)
			_, before, err := v.probe(t)
			if err != nil {
				t.Fatal(err)
			}
			assertReal(t, c.golden, before)
			if a, err := v.guard(t); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("guard: %v, %v; want an error saying %q", a, err, c.want)
			}
			if _, after, _ := v.probe(t); !bytes.Equal(after, before) {
				t.Errorf("the refused volume changed:\n%s", golden.Diff(string(before), string(after)))
			}
		})
	}

	t.Run("ambivalent_refused", func(t *testing.T) {
		// An ext4 whose first sector is an XFS superblock: both
		// signatures are valid, so blkid -p cannot tell (exit 8).
		x := newVolume(t, 512<<20)
		x.must(t, "", "/usr/sbin/mkfs.xfs", "-q", "-m", "uuid="+xfsUUID, blkidDevice)
		sector := make([]byte, 512)
		f, err := os.Open(filepath.Join(x.dir, blkidDevice))
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.ReadAt(sector, 0)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		v := newVolume(t, 64<<20)
		v.must(t, "", "/usr/sbin/mkfs.ext4", "-q", "-U", ext4UUID, blkidDevice)
		f, err = os.OpenFile(filepath.Join(v.dir, blkidDevice), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteAt(sector, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		rc, out, stderr := v.run(t, "", "/usr/sbin/blkid", "-p", "-o", "export", blkidDevice)
		if rc != 8 || !strings.Contains(string(stderr), "ambivalent result") {
			t.Fatalf("blkid -p: exit %d, %q, %q; want 8 and an ambivalent result", rc, out, stderr)
		}
		if _, err := v.guard(t); err == nil || !strings.Contains(err.Error(), "exited 8") {
			t.Fatalf("guard on an ambivalent volume: %v; want a refusal", err)
		}
	})
}

// Why the guard exists: mkfs.ext4 without a TTY formats over an ext4
// holding data and over a GPT label, silently (exit 0, a new UUID, the
// data gone), as e2fsprogs misc/mke2fs.c asks only "if (isatty(0) &&
// isatty(1) ...)".
func TestNfsMkfsExt4WithoutTTYFormatsOverData(t *testing.T) {
	t.Run("over_ext4", func(t *testing.T) {
		v := newVolume(t, 64<<20)
		v.must(t, "", "/usr/sbin/mkfs.ext4", "-q", "-U", ext4UUID, blkidDevice)
		v.writeData(t, "the tenant's data\n")
		if got := v.readData(t); got != "the tenant's data\n" {
			t.Fatalf("debugfs wrote %q", got)
		}
		rc, _, stderr := v.run(t, "", "/usr/sbin/mkfs.ext4", "-q", blkidDevice)
		if rc != 0 {
			t.Fatalf("mkfs.ext4 over an ext4: exit %d: %s", rc, stderr)
		}
		p, out, err := v.probe(t)
		if err != nil || p.Type != "ext4" || p.UUID == ext4UUID {
			t.Errorf("after mkfs.ext4 again: %+v, %v; want a new ext4 UUID\n%s", p, err, out)
		}
		if got := v.readData(t); got != "" {
			t.Errorf("the data survived: %q", got)
		}
	})
	t.Run("over_gpt", func(t *testing.T) {
		v := newVolume(t, 64<<20)
		v.must(t, "label: gpt\n", "/usr/sbin/sfdisk", "-q", blkidDevice)
		if rc, _, stderr := v.run(t, "", "/usr/sbin/mkfs.ext4", "-q", blkidDevice); rc != 0 {
			t.Fatalf("mkfs.ext4 over a GPT label: exit %d: %s", rc, stderr)
		}
		if p, out, err := v.probe(t); err != nil || p.Type != "ext4" || p.PTType != "" {
			t.Errorf("after mkfs.ext4: %+v, %v; want an ext4 and no partition table\n%s", p, err, out)
		}
	})
}
