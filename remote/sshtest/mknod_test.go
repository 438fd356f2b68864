package sshtest

import (
	"io/fs"
	"syscall"
	"testing"
)

func TestFSMknod(t *testing.T) {
	f := NewFS()
	wantNoErr(t, "block device", f.Mknod("/dev/vdb", fs.ModeDevice|0o660))
	wantNoErr(t, "char device in a new directory", f.Mknod("/dev/x/tty9", fs.ModeDevice|fs.ModeCharDevice|0o620))
	wantErrno(t, "existing", f.Mknod("/dev/vdb", fs.ModeDevice|0o660), syscall.EEXIST)
	wantErrno(t, "not a device", f.Mknod("/dev/plain", 0o644), syscall.EINVAL)

	fi, err := f.Stat("/dev/vdb")
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode(); m&fs.ModeDevice == 0 || m&fs.ModeCharDevice != 0 || m.Perm() != 0o660 {
		t.Errorf("mode %v, want a block device with 0660", m)
	}
	if fi, _ := f.Stat("/dev/x/tty9"); fi == nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("tty9 is not a character device: %v", fi)
	}
	_, err = f.ReadFile("/dev/vdb")
	wantErrno(t, "open without a driver", err, syscall.ENXIO)
	wantErrno(t, "write without a driver", f.WriteFile("/dev/vdb", []byte("x"), 0o660), syscall.ENXIO)
	if _, err := f.ReadFile("/dev/null"); err != nil {
		t.Errorf("/dev/null still opens: %v", err)
	}
	wantNoErr(t, "remove", f.Remove("/dev/vdb"))
}

func TestShellSeesBlockDevice(t *testing.T) {
	h := newHost(t)
	if err := h.FS().Mknod("/dev/vdb", fs.ModeDevice|0o660); err != nil {
		t.Fatal(err)
	}
	want(t, "test -b", h.sh("test -b /dev/vdb && test ! -c /dev/vdb && test ! -f /dev/vdb && test -c /dev/null && ! test -b /dev/null; echo $?; cat /dev/vdb"),
		"0\n", "cat: /dev/vdb: Permission denied\n", 1)
	want(t, "sudo cat", h.sh("sudo cat /dev/vdb"), "", "cat: /dev/vdb: No such device or address\n", 1)
}
