package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's part of NFS volumes, shared by both backends: which
// volumes of a pod the kubelet mounts with the in-tree nfs plugin, where,
// what it reports while a mount fails (the FailedMount event's message
// and the pod's status), all in the words of kubernetes v1.36.3. The
// mount itself is the simulated cloud's ([World.SetNFSMounter],
// [ControlPlaneSpec.MountNFS]).

// NFSVolume is an NFS volume the kubelet mounts for a pod before it
// starts the pod's containers (pkg/volume/nfs/nfs.go).
type NFSVolume struct {
	// Name is the volume's name in the kubelet's messages and in its
	// mount path (volume.Spec.Name(), pkg/volume/plugins.go): the
	// PersistentVolume's name for a claim, the pod volume's name for an
	// inline nfs volume.
	Name string
	// Server and Path are the volume source's (spec.nfs.server and
	// spec.nfs.path).
	Server, Path string
	// ReadOnly is the inline source's readOnly, or the claim volume's
	// persistentVolumeClaim.readOnly (nfs.go getVolumeSource).
	ReadOnly bool
	// MountOptions are a PersistentVolume's: its
	// volume.beta.kubernetes.io/mount-options annotation, else
	// spec.mountOptions (pkg/volume/util/util.go MountOptionFromSpec).
	MountOptions []string
}

// PodNFSVolumes returns the NFS volumes of p in the order of
// spec.volumes: its inline nfs volumes and the NFS PersistentVolumes its
// claims are bound to. claim and volume look a claim (in p's namespace)
// and a PersistentVolume up, nil when absent. ok is false while a claim
// is missing or unbound, or its volume missing: the kubelet's volume
// manager cannot resolve the volume and the pod waits
// (pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go
// createVolumeSpec: "PVC is not bound", "failed to fetch PV"); the
// scheduler does not bind such a pod in the first place (VolumeBinding,
// see unboundClaimsMessage).
func PodNFSVolumes(p *corev1.Pod, claim func(name string) *corev1.PersistentVolumeClaim, volume func(name string) *corev1.PersistentVolume) (vols []NFSVolume, ok bool) {
	ok = true
	for _, v := range p.Spec.Volumes {
		switch {
		case v.NFS != nil:
			vols = append(vols, NFSVolume{Name: v.Name, Server: v.NFS.Server, Path: v.NFS.Path, ReadOnly: v.NFS.ReadOnly})
		case v.PersistentVolumeClaim != nil:
			c := claim(v.PersistentVolumeClaim.ClaimName)
			if c == nil || c.Spec.VolumeName == "" {
				ok = false
				continue
			}
			pv := volume(c.Spec.VolumeName)
			if pv == nil {
				ok = false
				continue
			}
			if pv.Spec.NFS == nil {
				continue
			}
			opts := pv.Spec.MountOptions
			if a, has := pv.Annotations[corev1.MountOptionAnnotation]; has {
				opts = strings.Split(a, ",")
			}
			vols = append(vols, NFSVolume{
				Name: pv.Name, Server: pv.Spec.NFS.Server, Path: pv.Spec.NFS.Path,
				ReadOnly: v.PersistentVolumeClaim.ReadOnly, MountOptions: opts,
			})
		}
	}
	return vols, ok
}

// hasNFSVolumes reports whether p may need NFS mounts: an inline nfs
// volume or a claim (whose volume may be NFS).
func hasNFSVolumes(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.NFS != nil || v.PersistentVolumeClaim != nil })
}

// MountTarget is the directory the kubelet mounts v on for the pod
// podUID: /var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~nfs/<name>
// (pkg/kubelet/kubelet_getters.go getPodVolumeDir under the default
// root directory; the plugin name escaped by utilstrings.EscapeQualifiedName).
func (v NFSVolume) MountTarget(podUID types.UID) string {
	return "/var/lib/kubelet/pods/" + string(podUID) + "/volumes/kubernetes.io~nfs/" + v.Name
}

// Source is mount's source argument, SERVER:PATH, an IPv6 server in
// brackets (nfs.go getServerFromSource).
func (v NFSVolume) Source() string {
	server := v.Server
	if a, err := netip.ParseAddr(server); err == nil && a.Is6() {
		server = "[" + server + "]"
	}
	return server + ":" + v.Path
}

// mountOptions are the options the nfs plugin passes: the volume's
// mount options and "ro" for a read-only volume, deduplicated and
// sorted (pkg/volume/util/util.go JoinMountOptions: sets.List).
func (v NFSVolume) mountOptions() []string {
	var opts []string
	for _, o := range v.MountOptions {
		if o != "" {
			opts = append(opts, o)
		}
	}
	if v.ReadOnly {
		opts = append(opts, "ro")
	}
	slices.Sort(opts)
	return slices.Compact(opts)
}

// FailedMountMessage is the message of the kubelet's FailedMount event
// when mounting v for the pod podUID fails with mountErr, whose message
// is mount's output:
//
//	MountVolume.SetUp failed for volume "NAME" : mount failed: exit status 32
//	Mounting command: mount
//	Mounting arguments: -t nfs [-o OPTS] SERVER:PATH TARGET
//	Output: OUTPUT
//
// (pkg/volume/util/operationexecutor/operation_generator.go: GenerateError
// "MountVolume.SetUp failed", operation_executor.go generateVolumeMsg
// "%v for volume %q %v" with errSuffix ": %v"; the nfs plugin mounts
// with MountSensitiveWithoutSystemd, whose k8s.io/mount-utils
// mount_linux.go doMount fails with "mount failed: %v\nMounting command:
// %s\nMounting arguments: %s\nOutput: %s", the error being mount's exit
// status — 32, mount(8)'s "mount failure" — and the output mount's
// combined output, which ends with a newline).
func (v NFSVolume) FailedMountMessage(podUID types.UID, mountErr error) string {
	out := mountErr.Error()
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	// mount_linux.go MakeMountArgsSensitiveWithMountFlags: "-t nfs",
	// " -o " and the options joined by commas, " SOURCE", " TARGET".
	args := "-t nfs"
	if opts := v.mountOptions(); len(opts) > 0 {
		args += " -o " + strings.Join(opts, ",")
	}
	args += " " + v.Source() + " " + v.MountTarget(podUID)
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : mount failed: exit status 32\nMounting command: mount\nMounting arguments: %s\nOutput: %s", v.Name, args, out)
}

// Kubelet event reasons and container waiting reasons
// (pkg/kubelet/events/event.go, pkg/kubelet/kubelet_pods.go).
const (
	// ReasonFailedMount is the reason of the kubelet's event for a
	// volume that failed to mount (events.FailedMountVolume).
	ReasonFailedMount = "FailedMount"
	// ReasonContainerCreating is the waiting reason of a container whose
	// pod the kubelet has not started yet.
	ReasonContainerCreating = "ContainerCreating"
	// reasonPodInitializing replaces it in pods with init containers.
	reasonPodInitializing = "PodInitializing"
)

// MountWaitStatus is the status a kubelet reports for p, bound to its
// node at hostIP, while p's volumes are not mounted yet: the pod sandbox
// is created only after them (pkg/kubelet/kubelet.go SyncPod:
// WaitForAttachAndMount, then the runtime's SyncPod), so the pod is
// Pending without a pod IP, every container waiting with reason
// ContainerCreating (PodInitializing when the pod has init containers,
// kubelet_pods.go convertToAPIContainerStatuses' defaultWaitingState),
// and the conditions are those of pkg/kubelet/status/generate.go in the
// kubelet's order: PodReadyToStartContainers False (no sandbox),
// Initialized (True without init containers, else False
// "ContainersNotInitialized"), Ready and ContainersReady False
// ("ContainersNotReady", "containers with unready status: [NAMES]"),
// PodScheduled True. Transition times and the start time already
// reported are kept; now stamps the others. Volume mount statuses are
// not reported (nor are they for running pods here).
func MountWaitStatus(p *corev1.Pod, hostIP string, now metav1.Time) corev1.PodStatus {
	old := p.Status
	st := corev1.PodStatus{Phase: corev1.PodPending, HostIP: hostIP, QOSClass: old.QOSClass, StartTime: old.StartTime}
	if hostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	waiting := ReasonContainerCreating
	if len(p.Spec.InitContainers) > 0 {
		waiting = reasonPodInitializing
	}
	statuses := func(cs []corev1.Container) []corev1.ContainerStatus {
		var out []corev1.ContainerStatus
		for _, c := range cs {
			out = append(out, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}})
		}
		// The status manager sorts them by name
		// (pkg/kubelet/status/status_manager.go normalizeStatus).
		slices.SortFunc(out, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	st.InitContainerStatuses = statuses(p.Spec.InitContainers)
	st.ContainerStatuses = statuses(p.Spec.Containers)

	var unready, incomplete []string
	for _, c := range p.Spec.InitContainers {
		incomplete = append(incomplete, c.Name)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			unready = append(unready, c.Name) // a sidecar counts for readiness
		}
	}
	for _, c := range p.Spec.Containers {
		unready = append(unready, c.Name)
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus, reason, msg string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == s {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		return c
	}
	initialized := cond(corev1.PodInitialized, corev1.ConditionTrue, "", "")
	if len(incomplete) > 0 {
		initialized = cond(corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	unreadyMsg := fmt.Sprintf("containers with unready status: %s", unready)
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", ""),
		initialized,
		cond(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", unreadyMsg),
		cond(corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", unreadyMsg),
		cond(corev1.PodScheduled, corev1.ConditionTrue, "", ""),
	}
	return st
}
