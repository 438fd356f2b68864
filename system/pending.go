package system

import (
	"bytes"
	"path"

	"github.com/mgmtkit/mgmtkit/remote"
)

// PendingMarker returns the file under [PendingDir] that records a
// restart (or reload) owed to unit: "docker" and "docker.service" both
// have /run/mgmtkit/restart-pending/docker.service. It is the one marker
// of a unit whoever owes it: [ConfigureUnit] and [ConfigureDaemon] write
// and pay it, and a step that changes a daemon's configuration by itself
// writes it (with [PendingMarkerFile]) no later than the configuration,
// and removes it only once the daemon has been told, so that a run cut
// short in between leaves the debt to the next run of either. unit must
// be a valid unit name.
func PendingMarker(unit string) string { return path.Join(PendingDir, fullUnitName(unit)) }

// PendingMarkerFile is the write of unit's marker ([PendingMarker]),
// root-owned, mode 0644, for [remote.WriteFiles] with Sudo. reloadOnly
// records that a reload (`systemctl reload-or-restart`, or
// try-reload-or-restart) pays the debt, as for a configuration the daemon
// re-reads on reload; otherwise only a restart does. A marker already in
// place that owes a restart must not be replaced by one that owes a
// reload: see [PendingReloadOnly].
func PendingMarkerFile(unit string, reloadOnly bool) remote.FileWrite {
	return remote.FileWrite{
		Path:    PendingMarker(unit),
		Content: pendingContent(unit, reloadOnly),
		Options: remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true},
	}
}

// pendingContent is a marker's content: "reload UNIT" or "restart UNIT".
func pendingContent(unit string, reloadOnly bool) []byte {
	verb := "restart"
	if reloadOnly {
		verb = "reload"
	}
	return []byte(verb + " " + fullUnitName(unit) + "\n")
}

// PendingReloadOnly reports whether a marker's content, as read from the
// node, owes only a reload. Any content but one whose first word is
// "reload" (a marker of an older mgmtkit, an empty file) owes a restart.
func PendingReloadOnly(content []byte) bool {
	w, _, _ := bytes.Cut(bytes.TrimSpace(content), []byte(" "))
	return string(w) == "reload"
}
