package lcm

import (
	"path"
	"strings"
)

// This file holds the checks that several domain packages' parameters
// share: a login name, and a path on a VM. They live here, in the
// vocabulary every domain package imports, because domain packages do not
// import each other.

// Username checks that value, the value of field, is a user name as
// useradd accepts it by default: at most 32 characters from A–Z, a–z,
// 0–9, '.', '_' and '-', not starting with '-'. A login name reaches SSH
// and the files steps render (inventories, sudoers), so nothing else is
// let through. An empty value is not checked: report it with
// [Validator.Required]. It records a problem at field and returns false
// when the name is not valid.
func (v *Validator) Username(field, value string) bool {
	if value == "" || IsUsername(value) {
		return true
	}
	v.At(field).Errorf("must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got %q", value)
	return false
}

// IsUsername reports whether s is a user name useradd accepts by default
// (shadow's is_valid_user_name; adduser.conf's NAME_REGEX is stricter):
// 1 to 32 of A-Z a-z 0-9 . _ -, not starting with '-'.
func IsUsername(s string) bool {
	if s == "" || len(s) > 32 || s[0] == '-' {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !portableRune(r) })
}

// IsDNSName reports whether s is an RFC 1123 host name (section 2.1, which
// lets a label start with a digit), without a trailing dot: at most 253
// characters of dot-separated labels of letters, digits and inner
// hyphens, 1 to 63 characters each (RFC 1035 section 2.3.4), the last one
// not all digits (RFC 3696 section 2: no top-level domain is), so that a
// mistyped address such as 10.0.0.256 is not taken for a name.
func IsDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	if strings.Trim(last, "0123456789") == "" {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// portableRune reports whether r is in POSIX's portable filename
// character set (A–Z a–z 0–9 . _ -).
func portableRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// HostPath checks that value, the value of field, is an absolute path on a
// VM made of POSIX portable file names (A–Z a–z 0–9 . _ -) separated by
// '/', with no "." or ".." element, and returns it cleaned: repeated and
// trailing slashes removed ("/volume//nfs/" is "/volume/nfs"). Such a path
// means the same to every program a step hands it to — the shell, mount,
// /etc/fstab, /etc/exports, an Ansible inventory — without quoting rules of
// its own. An empty value is not checked (it returns "", true): report it
// with [Validator.Required]. Otherwise it records a problem at field and
// returns false.
func (v *Validator) HostPath(field, value string) (clean string, ok bool) {
	if value == "" {
		return "", true
	}
	if msg := checkHostPath(value); msg != "" {
		v.At(field).Errorf("%s, got %q", msg, value)
		return "", false
	}
	return path.Clean(value), true
}

func checkHostPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "must be an absolute path"
	}
	for elem := range strings.SplitSeq(p[1:], "/") {
		switch {
		case elem == "." || elem == "..":
			return `must not have a "." or ".." element`
		case strings.ContainsFunc(elem, func(r rune) bool { return !portableRune(r) }):
			return "must be made of the characters A-Z a-z 0-9 . _ - and /"
		}
	}
	return ""
}

// HostDataDir is [Validator.HostPath] for a directory that a step owns:
// one it mounts a volume on, exports, or removes when the VNF goes away.
// Such a directory must also not be one the operating system or its users
// need, so HostDataDir refuses:
//   - "/", /home, /opt, /root, /snap, /tmp, /var and /var/tmp themselves
//     (a volume mounted there hides what they hold);
//   - a home directory, /home/NAME (mounting on it hides the user's
//     ~/.ssh and with it the SSH login);
//   - anything in /bin, /boot, /dev, /etc, /lib, /lib32, /lib64, /libx32,
//     /proc, /run, /sbin, /sys, /usr, /var/cache, /var/lib, /var/lock,
//     /var/log, /var/run and /var/spool, which the kernel, the package
//     manager and the services own.
//
// Directories below the first two groups, like /home/ubuntu/nfs, /opt/pv
// or /var/nfs, are fine, and so are /srv and /mnt and everything in them.
func (v *Validator) HostDataDir(field, value string) (clean string, ok bool) {
	clean, ok = v.HostPath(field, value)
	if !ok || clean == "" {
		return clean, ok
	}
	switch why, tree := systemDir(clean); why {
	case ownedBySystem:
		v.At(field).Errorf("must not be %s, which the system needs; use a directory below it or in /srv or /mnt", clean)
	case homeDir:
		v.At(field).Errorf("must not be %s, a home directory: it holds the user's ~/.ssh; use a directory below it", clean)
	case inSystemTree:
		v.At(field).Errorf("must not be in %s, which the operating system owns, got %q", tree, clean)
	default:
		return clean, true
	}
	return "", false
}

// Why systemDir refuses a path.
const (
	notSystem = iota
	ownedBySystem
	homeDir
	inSystemTree
)

// systemDir says why the clean absolute path p is not a data directory
// (and, for inSystemTree, the tree it lies in), or returns notSystem.
func systemDir(p string) (why int, tree string) {
	switch p {
	case "/", "/home", "/opt", "/root", "/snap", "/tmp", "/var", "/var/tmp":
		return ownedBySystem, ""
	}
	if rest, ok := strings.CutPrefix(p, "/home/"); ok && !strings.Contains(rest, "/") {
		return homeDir, ""
	}
	for _, tree := range []string{
		"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
		"/proc", "/run", "/sbin", "/sys", "/usr",
		"/var/cache", "/var/lib", "/var/lock", "/var/log", "/var/run", "/var/spool",
	} {
		if PathWithin(p, tree) {
			return inSystemTree, tree
		}
	}
	return notSystem, ""
}

// PathWithin reports whether the clean absolute path p is dir or lies
// below it. Both must be clean ([Validator.HostPath] returns them so).
func PathWithin(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
