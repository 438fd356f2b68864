package kube

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KindPersistentVolume is core/v1 PersistentVolume.
var KindPersistentVolume = corev1.SchemeGroupVersion.WithKind("PersistentVolume")

// KindPersistentVolumeClaim is core/v1 PersistentVolumeClaim.
var KindPersistentVolumeClaim = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")

// volumesLocked is the persistent volume controller
// (pkg/controller/volume/persistentvolume/pv_controller.go) for
// statically provisioned volumes:
//
//   - syncClaim: an unbound claim binds to the smallest Available volume
//     of its storage class (a claim without storageClassName takes the
//     class "" here: no default StorageClass is modelled) that offers all
//     its access modes, its volume mode and at least the storage it
//     requests (pkg/controller/volume/persistentvolume/index.go
//     findBestMatchForClaim); both become Bound (claimRef on the volume,
//     volumeName on the claim);
//     A volume being deleted is never chosen (component-helpers
//     storage/volume/pv_helpers.go FindMatchingVolume). The binding is
//     annotated as the controller annotates it (pv_controller.go
//     bindVolumeToClaim, bindClaimToVolume:
//     pv.kubernetes.io/bound-by-controller on both,
//     pv.kubernetes.io/bind-completed on the claim);
//   - syncVolume: a volume without claimRef is Available; one whose claim
//     exists is Bound; one whose claim is gone is Released with the
//     Retain reclaim policy, and Failed with Delete or Recycle (no plugin
//     deletes or recycles an NFS or hostPath volume here).
func (m *MemoryAPI) volumesLocked() {
	var pvs []*corev1.PersistentVolume
	for _, o := range m.listLocked(KindPersistentVolume, "") {
		pvs = append(pvs, o.(*corev1.PersistentVolume).DeepCopy())
	}
	for _, o := range m.listLocked(KindPersistentVolumeClaim, "") {
		c := o.(*corev1.PersistentVolumeClaim)
		if c.Spec.VolumeName != "" {
			m.claimStatusLocked(c)
			continue
		}
		if pv := bestMatch(c, pvs); pv != nil {
			pv.Spec.ClaimRef = &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name,
				UID: c.UID, ResourceVersion: c.ResourceVersion,
			}
			pv.Status.Phase = corev1.VolumeBound
			metav1.SetMetaDataAnnotation(&pv.ObjectMeta, annBoundByController, "yes")
			m.put(pv)
			c = c.DeepCopy()
			c.Spec.VolumeName = pv.Name
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, annBoundByController, "yes")
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, annBindCompleted, "yes")
			m.put(c)
			m.claimStatusLocked(c)
			continue
		}
		if c.Status.Phase != corev1.ClaimPending {
			c = c.DeepCopy()
			c.Status.Phase = corev1.ClaimPending
			m.put(c)
		}
	}
	for _, o := range m.listLocked(KindPersistentVolume, "") {
		pv := o.(*corev1.PersistentVolume).DeepCopy()
		want := corev1.VolumeAvailable
		if ref := pv.Spec.ClaimRef; ref != nil {
			co, ok := m.objs[KindPersistentVolumeClaim][key(ref.Namespace, ref.Name)]
			switch {
			case ok && (ref.UID == "" || ref.UID == co.GetUID()):
				want = corev1.VolumeBound
			case pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain || pv.Spec.PersistentVolumeReclaimPolicy == "":
				want = corev1.VolumeReleased
			default:
				want = corev1.VolumeFailed
			}
		}
		if pv.Status.Phase != want {
			pv.Status.Phase = want
			m.put(pv)
		}
	}
}

// claimStatusLocked makes a claim with a volume Bound with the volume's
// capacity and access modes, or Lost when the volume is gone.
func (m *MemoryAPI) claimStatusLocked(c *corev1.PersistentVolumeClaim) {
	c = c.DeepCopy()
	o, ok := m.objs[KindPersistentVolume][key("", c.Spec.VolumeName)]
	if !ok {
		if c.Status.Phase != corev1.ClaimLost {
			c.Status.Phase = corev1.ClaimLost
			m.put(c)
		}
		return
	}
	pv := o.(*corev1.PersistentVolume)
	c.Status.Phase = corev1.ClaimBound
	c.Status.AccessModes = pv.Spec.AccessModes
	c.Status.Capacity = pv.Spec.Capacity
	m.put(c)
}

func bestMatch(c *corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume) *corev1.PersistentVolume {
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	mode := corev1.PersistentVolumeFilesystem
	if c.Spec.VolumeMode != nil {
		mode = *c.Spec.VolumeMode
	}
	want := c.Spec.Resources.Requests[corev1.ResourceStorage]
	var fits []*corev1.PersistentVolume
	for _, pv := range pvs {
		pvMode := corev1.PersistentVolumeFilesystem
		if pv.Spec.VolumeMode != nil {
			pvMode = *pv.Spec.VolumeMode
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		if pv.Spec.ClaimRef != nil || pv.DeletionTimestamp != nil || pv.Spec.StorageClassName != class || pvMode != mode || size.Cmp(want) < 0 {
			continue
		}
		ok := true
		for _, am := range c.Spec.AccessModes {
			has := false
			for _, x := range pv.Spec.AccessModes {
				has = has || x == am
			}
			ok = ok && has
		}
		if ok {
			fits = append(fits, pv)
		}
	}
	if len(fits) == 0 {
		return nil
	}
	sort.SliceStable(fits, func(i, j int) bool {
		a, b := fits[i].Spec.Capacity[corev1.ResourceStorage], fits[j].Spec.Capacity[corev1.ResourceStorage]
		return a.Cmp(b) < 0
	})
	return fits[0]
}

// The binding annotations of the persistent volume controller
// (component-helpers storage/volume/helpers.go AnnBindCompleted,
// AnnBoundByController).
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
)

// The protection finalizers (pkg/volume/util/finalizer.go).
const (
	// FinalizerPVProtection keeps a PersistentVolume while it is Bound.
	FinalizerPVProtection = "kubernetes.io/pv-protection"
	// FinalizerPVCProtection keeps a PersistentVolumeClaim while a pod
	// scheduled to a node uses it.
	FinalizerPVCProtection = "kubernetes.io/pvc-protection"
)

// admitStorageProtection is the StorageObjectInUseProtection admission
// plugin, on by default
// (plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go,
// pkg/kubeapiserver/options/plugins.go DefaultOffAdmissionPlugins): a new
// PersistentVolume gets kubernetes.io/pv-protection, a new claim
// kubernetes.io/pvc-protection, unless they have it. It acts on creation
// only (admission.NewHandler(admission.Create)).
func admitStorageProtection(obj Object) {
	var f string
	switch obj.(type) {
	case *corev1.PersistentVolume:
		f = FinalizerPVProtection
	case *corev1.PersistentVolumeClaim:
		f = FinalizerPVCProtection
	default:
		return
	}
	if !slices.Contains(obj.GetFinalizers(), f) {
		obj.SetFinalizers(append(obj.GetFinalizers(), f))
	}
}

// storageProtectionLocked is kube-controller-manager's pv-protection and
// pvc-protection controllers (pkg/controller/volume/pvprotection/
// pv_protection_controller.go, pkg/controller/volume/pvcprotection/
// pvc_protection_controller.go processPV, processPVC):
//
//   - a volume being deleted loses its finalizer once it is no longer
//     used, that is no longer Bound (isBeingUsed: status.phase), and so
//     goes: a Bound volume stays, Terminating, until its claim is gone;
//   - a claim being deleted loses its finalizer once no pod scheduled to
//     a node names it in a persistentVolumeClaim volume, whatever the
//     pod's phase (podUsesPVCForDeletion: "kubelet sees pods after they
//     have been scheduled");
//   - a volume or claim not being deleted that lacks its finalizer gets
//     it back (NeedToAddFinalizer: volumes created before the admission
//     plugin was enabled).
func (m *MemoryAPI) storageProtectionLocked() {
	for _, o := range m.listLocked(KindPersistentVolume, "") {
		pv := o.(*corev1.PersistentVolume)
		used := pv.Status.Phase == corev1.VolumeBound
		m.protectLocked(pv, FinalizerPVProtection, used)
	}
	for _, o := range m.listLocked(KindPersistentVolumeClaim, "") {
		c := o.(*corev1.PersistentVolumeClaim)
		used := false
		if c.DeletionTimestamp != nil {
			for _, p := range m.pods(c.Namespace) {
				used = used || (p.Spec.NodeName != "" && slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
					return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == c.Name
				}))
			}
		}
		m.protectLocked(c, FinalizerPVCProtection, used)
	}
}

// protectLocked removes finalizer f from a stored object being deleted
// and not used, or adds it to one not being deleted.
func (m *MemoryAPI) protectLocked(o Object, f string, used bool) {
	has := slices.Contains(o.GetFinalizers(), f)
	switch {
	case o.GetDeletionTimestamp() != nil && has && !used:
		c := o.DeepCopyObject().(Object)
		c.SetFinalizers(slices.DeleteFunc(c.GetFinalizers(), func(x string) bool { return x == f }))
		m.put(c)
	case o.GetDeletionTimestamp() == nil && !has:
		c := o.DeepCopyObject().(Object)
		c.SetFinalizers(append(c.GetFinalizers(), f))
		m.put(c)
	}
}
