package nfs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Packages and units of the NFS server and client (Ubuntu's nfs-utils).
const (
	// ServerPackage is the kernel NFS server's package; it ships
	// exportfs, /etc/exports and the nfs-server unit.
	ServerPackage = "nfs-kernel-server"
	// ClientPackage is the NFS client's package: /sbin/mount.nfs, the
	// helper the kubelet's `mount -t nfs` needs (without it: "bad
	// option; for several filesystems (e.g. nfs, cifs) you might need a
	// /sbin/mount.<type> helper program", kubernetes/website#19774).
	ClientPackage = "nfs-common"
	// ServerUnit is the NFS server's systemd unit (nfs-kernel-server is
	// an alias of it on Ubuntu). Its start and reload run `exportfs -r`
	// (nfs-utils systemd/nfs-server.service).
	ServerUnit = "nfs-server"
	// ExportsMainFile is the main export table (exports(5)). exportfs -a
	// fails, exit status 1, when it is missing, even though it then
	// loads /etc/exports.d (nfs-utils 2.6.2, an experiment recorded in
	// the storage facts), so [ExportNFS] makes sure it exists and
	// never writes it otherwise.
	ExportsMainFile = "/etc/exports"
	// DefaultExportsName is the name of the exports file [ExportNFS]
	// owns unless told otherwise: /etc/exports.d/mgmtkit.exports.
	DefaultExportsName = "mgmtkit"
	// AnonID is the anonymous user and group ID all_squash maps every
	// client to (exports(5) anonuid/anongid default; nobody:nogroup on
	// Ubuntu): the owner of the exported directories.
	AnonID = "65534"
)

// ServerOptions tune [InstallNFSServer].
type ServerOptions struct {
	// Packages are passed to [system.InstallPackages]; its Packages is
	// set by the step.
	Packages system.PackagesOptions
	// Unit is passed to [system.ConfigureUnit]; its Unit is set by the
	// step.
	Unit system.UnitOptions
}

// InstallNFSServer installs the kernel NFS server (nfs-kernel-server)
// and makes its unit enabled and active. On a converged VM that is two
// read-only commands (dpkg's status and `systemctl is-active`).
func InstallNFSServer(ctx context.Context, h remote.Host, opts ServerOptions) (lcm.Result, error) {
	po := opts.Packages
	po.Packages = []string{ServerPackage}
	res, err := system.InstallPackages(ctx, h, po)
	if err != nil {
		return res, fmt.Errorf("nfs: %w", err)
	}
	uo := opts.Unit
	uo.Unit = ServerUnit
	r, err := system.ConfigureUnit(ctx, h, uo)
	res = res.And(r)
	if err != nil {
		return res, fmt.Errorf("nfs: %w", err)
	}
	return res, nil
}

// InstallNFSClient installs the NFS client (nfs-common) that the kubelet
// needs to mount an NFS PersistentVolume: on every master and worker.
// On a converged node it is one read-only command.
func InstallNFSClient(ctx context.Context, h remote.Host, opts system.PackagesOptions) (lcm.Result, error) {
	opts.Packages = []string{ClientPackage}
	res, err := system.InstallPackages(ctx, h, opts)
	if err != nil {
		return res, fmt.Errorf("nfs: %w", err)
	}
	return res, nil
}

// ExportsOptions tune [ExportNFS].
type ExportsOptions struct {
	// Name names the exports file the step owns:
	// /etc/exports.d/NAME.exports ([ExportsFile]); [DefaultExportsName]
	// when empty.
	Name string
}

// ExportNFS exports exports from the storage server h, each directory to
// its network with [ExportOptions], from an exports file of its own
// (/etc/exports.d/mgmtkit.exports; exportfs reads only files ending in
// .exports there, exports(5)) that it owns whole:
//
//   - each directory exists, owned by nobody:nogroup (65534:65534, the
//     anonymous IDs all_squash maps every client to) with mode 0755, so
//     that a pod of any user can write (see [ExportOptions]);
//   - /etc/exports exists (an empty table is made when it is missing,
//     without which `exportfs -a` fails); its content is never touched;
//   - the exports file holds [RenderExports]'s lines, and `exportfs -ra`
//     runs when it changed, judged by its exit status (stderr carries
//     its warnings) with its stderr in the error;
//   - `exportfs -s` must then list every export ([CheckExported]: path
//     and client compared, options as a set): exportfs lists an entry it
//     failed to export ("Failed to stat", exit status 1), so its
//     listing, not its silence, is the proof. When the listing lacks
//     one while the file did not change (a run that stopped between the
//     two), `exportfs -ra` runs then.
//
// On a converged VM it runs three read-only commands: the directories'
// owners, the two files, `exportfs -s`. Exports an earlier run wrote and
// exports no longer names are dropped from the file and unexported.
func ExportNFS(ctx context.Context, h remote.Host, exports []Export, opts ExportsOptions) (lcm.Result, error) {
	if len(exports) == 0 {
		return lcm.Unchanged, errors.New("nfs: ExportNFS: no exports")
	}
	file, err := ExportsFile(cmp.Or(opts.Name, DefaultExportsName))
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("nfs: %w", err)
	}
	content, err := RenderExports(exports)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("nfs: %w", err)
	}
	res, err := exportDirs(ctx, h, exports)
	if err != nil {
		return res, err
	}
	current, err := remote.ReadFiles(ctx, h, []string{ExportsMainFile, file}, remote.FileOptions{Sudo: true})
	if err != nil {
		return res, fmt.Errorf("nfs: reading the export tables: %w", err)
	}
	var writes []remote.FileWrite
	if _, ok := current[ExportsMainFile]; !ok {
		writes = append(writes, remote.FileWrite{Path: ExportsMainFile, Content: []byte(emptyExportsTable), Options: remote.FileOptions{Sudo: true, Mode: 0o644}})
	}
	if !bytes.Equal(current[file], content) { // content is never empty: it has a header
		writes = append(writes, remote.FileWrite{Path: file, Content: content, Options: remote.FileOptions{Sudo: true, Mode: 0o644}})
	}
	changed := false
	if len(writes) > 0 {
		wrote, err := remote.WriteFiles(ctx, h, writes)
		if err != nil {
			return res, fmt.Errorf("nfs: writing the export tables: %w", err)
		}
		for i, w := range wrote {
			if w {
				changed = true
				res = res.And(lcm.Changed("wrote " + writes[i].Path))
			}
		}
	}
	if changed {
		if err := reexport(ctx, h); err != nil {
			return res, err
		}
		res = res.And(lcm.Changed("exportfs -ra"))
	}
	err = checkExports(ctx, h, exports)
	if err != nil && !changed {
		// The file matched but the kernel's table does not: a run that
		// stopped after writing the file, or an exportfs -u by hand.
		if err := reexport(ctx, h); err != nil {
			return res, err
		}
		res = res.And(lcm.Changed("exportfs -ra (the export table lacked mgmtkit's exports)"))
		err = checkExports(ctx, h, exports)
	}
	return res, err
}

// emptyExportsTable is the /etc/exports ExportNFS makes when there is
// none: comments only.
const emptyExportsTable = "# /etc/exports: the access control list for filesystems which may be exported\n#\t\tto NFS clients.  See exports(5).\n#\n# mgmtkit's exports are in /etc/exports.d.\n"

// exportDirs makes each export's directory exist, owned by
// nobody:nogroup with mode 0755: one `stat` to see, one `install -d` for
// those that differ.
func exportDirs(ctx context.Context, h remote.Host, exports []Export) (lcm.Result, error) {
	var dirs []string
	for _, e := range exports {
		if !slices.Contains(dirs, e.ExportDir) {
			dirs = append(dirs, e.ExportDir)
		}
	}
	// stat exits 1 when a file is missing and still reports the others
	// (GNU coreutils).
	out, err := h.Run(ctx, remote.Cmd{Args: append([]string{"stat", "-c", "%u:%g:%a:%F:%n", "--"}, dirs...), Sudo: true, OKExit: []int{1}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("nfs: reading the export directories: %w", err)
	}
	ok := map[string]bool{}
	for line := range strings.Lines(string(out.Stdout)) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), ":", 5)
		if len(f) == 5 && f[0] == AnonID && f[1] == AnonID && f[2] == "755" && f[3] == "directory" {
			ok[f[4]] = true
		}
	}
	var fix []string
	for _, d := range dirs {
		if !ok[d] {
			fix = append(fix, d)
		}
	}
	if len(fix) == 0 {
		return lcm.Unchanged, nil
	}
	// install -d creates the missing directories (and their parents)
	// and sets the owner and mode of each named one, existing or not.
	if _, err := h.Run(ctx, remote.Cmd{Args: append([]string{"install", "-d", "-o", AnonID, "-g", AnonID, "-m", "0755", "--"}, fix...), Sudo: true, Idempotent: true, Brief: true}); err != nil {
		return lcm.Unchanged, fmt.Errorf("nfs: creating the export directories: %w", err)
	}
	return lcm.Changed("export directories " + strings.Join(fix, ", ") + " owned by nobody:nogroup"), nil
}

// reexport runs `exportfs -ra`, judged by its exit status.
func reexport(ctx context.Context, h remote.Host) error {
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"exportfs", "-ra"}, Sudo: true, Idempotent: true}); err != nil {
		return fmt.Errorf("nfs: exportfs -ra: %w", err)
	}
	return nil
}

// checkExports reads `exportfs -s` and checks that it lists exports.
func checkExports(ctx context.Context, h remote.Host, exports []Export) error {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"exportfs", "-s"}, Sudo: true, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("nfs: exportfs -s: %w", err)
	}
	shown, err := ParseExportfsS(out.Stdout)
	if err != nil {
		return fmt.Errorf("nfs: exportfs -s: %w", err)
	}
	if err := CheckExported(shown, exports); err != nil {
		return fmt.Errorf("nfs: %w", err)
	}
	return nil
}
