package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// planPV builds the pv-k8s-cluster spec's cluster with the cluster
// driver (the spec's sample body: three exports on the storage server's
// Cinder volume, the sample package's three PersistentVolumes), then:
// a user's pod claims a volume and writes to it; the storage server's
// heal is refused while the volume is Bound; the user releases it; the
// heal deletes the PersistentVolumes, Heat replaces the VM (new
// addresses, the volume kept), and heal_end mounts the volume as it is
// and registers the PersistentVolumes at the new address, the data
// still there; a scale-out's new worker gets the NFS client, and a pod
// on it mounts.
func planPV(t *tour, s scenario) ([]step, error) {
	req, source, err := t.clusterRequest(samples.InstantiatePVCluster)
	if err != nil {
		return nil, err
	}
	if t.in.clusterRequest == nil {
		t.sayf("  %s: export_to %s, the spec's node network, is the simulated cloud's, %s\n", source, sim.SampleNodeNetwork, sim.NodeNetwork)
	}
	d, err := t.planCluster("pv-cluster", req, source, sim.ClusterShape{Masters: 1, Workers: 2, MinWorkers: 1}, s.name, needStorage, needWorkerAspect)
	if err != nil {
		return nil, err
	}
	workers, err := groupWithRole(d.vms.Groups, lcm.RoleWorker)
	if err != nil {
		return nil, inputError(source, err)
	}
	var (
		storage   *sim.Host // the storage server's VM before the heal
		claimed   string    // the PersistentVolume the user's claim bound
		formats   int       // the volume's formats before the heal
		inst      *lcm.VnfInstance
		heal      lcm.HealVnfRequest
		before    *lcm.VnfInstance // the instance before the scale-out
		added     []*sim.Host
		storageVM = func() *sim.Host { return d.vnf.HostsWithRole(lcm.RoleStorage)[0] }
	)
	const data = "written by the user's pod before the heal\n"
	instantiate := func() any {
		return &lcm.InstantiateOp{Instance: d.vnf.Instance(), Request: d.request, Package: t.in.pkg}
	}
	steps := []step{
		t.create(d),
		t.instantiate(d),
		t.clusterHook(d, lcm.InstantiateEnd, "build the cluster with the NFS client on every node; format, mount and export the storage server's volume; register the PersistentVolumes", false, instantiate),
		t.nodeTable(d, clusterSize(d)),
		t.pvTable(d, func() string { return storageVM().NICAddress }, corev1.VolumeAvailable),
		t.clusterHook(d, lcm.InstantiateEnd, "the same again: nothing to change (no mkfs, no exportfs -ra)", true, instantiate),
		{d.label, hookOperator, "a user's pod claims a volume (storageClassName \"\") and writes to it as uid 1000", func(ctx context.Context) ([]string, []string, error) {
			storage = storageVM()
			node, pv, err := t.runClaim(ctx, d, "data", "")
			if err != nil {
				return nil, nil, err
			}
			claimed = pv
			dir := sim.SamplePVs()[pv]
			t.printf("  pod default/data runs on %s; claim default/data is Bound to %s (%s:%s)\n", node, pv, storage.NICAddress, dir)
			worker := nodeHost(d, node)
			if worker == nil {
				return nil, nil, fmt.Errorf("no VM runs node %s", node)
			}
			// The pod's write, as its kubelet's NFS mount carries it: a
			// non-root user, squashed to nobody by the export.
			export, err := t.cloud.OpenNFS(ctx, worker.Machine, storage.NICAddress, dir, "/var/lib/kubelet/pods/data/volumes/kubernetes.io~nfs/"+pv)
			if err != nil {
				return nil, nil, err
			}
			if err := export.WriteFile("data.txt", []byte(data), 1000, 1000); err != nil {
				return nil, nil, fmt.Errorf("the pod's write: %w", err)
			}
			fi, err := storage.FS().Stat(dir + "/data.txt")
			if err != nil {
				return nil, nil, err
			}
			uid, gid := sshtest.Owner(fi)
			t.printf("  %s:%s/data.txt written by uid 1000, owned by %d:%d on the server (all_squash)\n", storage.NICAddress, dir, uid, gid)
			return []string{worker.Resource, storage.Resource}, []string{storage.Resource}, nil
		}},
		{d.label, hookVIM, "heal the storage server's VNFC: resolve it", func(ctx context.Context) ([]string, []string, error) {
			inst = d.vnf.Instance()
			heal = lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, storage.ServerID)}}
			plan, err := t.resolveHeal(ctx, d, inst, heal)
			return names(plan.Nodes), nil, err
		}},
		{d.label, lcm.HealStart, "refused while a PersistentVolume is Bound", func(ctx context.Context) ([]string, []string, error) {
			res, err := t.invoke(ctx, t.clusterDriver, lcm.HealStart, &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg})
			hosts, changed := hookHosts(res)
			var inUse *nfs.InUseError
			if !errors.As(err, &inUse) {
				return hosts, changed, fmt.Errorf("heal_start with %s Bound: %v, want it refused", claimed, err)
			}
			t.printf("  refused: %v\n", err)
			return hosts, changed, nil
		}},
		{d.label, hookOperator, "the user deletes the pod and the claim: the volume is Released (Retain), its data kept", func(ctx context.Context) ([]string, []string, error) {
			return nil, nil, t.withKubectl(ctx, d, func(k kubeapi.Kubectl) error {
				for _, kind := range []string{"pod", "persistentvolumeclaim"} {
					if _, err := k.Delete(ctx, kind, "default", "data"); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		t.clusterHook(d, lcm.HealStart, "delete the PersistentVolumes before the storage server goes", false, func() any {
			return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
		}),
		{d.label, hookVIM, "heal the storage server: Heat replaces its server (new addresses), the Cinder volume kept", func(context.Context) ([]string, []string, error) {
			formats = storage.Disks["/dev/vdb"].Formats()
			h, err := d.vnf.Heal(storage.ServerID, sim.HealOptions{NewAddresses: true})
			if err != nil {
				return nil, nil, fmt.Errorf("healing through Heat: %w", err)
			}
			inst = d.vnf.Instance()
			t.printf("  %s: %s → %s\n", h.Resource, storage.NICAddress, h.NICAddress)
			return []string{h.Resource}, []string{h.Resource}, nil
		}},
		t.clusterHook(d, lcm.HealEnd, "mount the volume as it is (no mkfs), export it, register the PersistentVolumes at the new address", false, func() any {
			return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
		}),
		t.pvTable(d, func() string { return storageVM().NICAddress }, corev1.VolumeAvailable),
		{d.label, hookCheck, "the data written before the heal is on the new storage server", func(context.Context) ([]string, []string, error) {
			h := storageVM()
			file := sim.SamplePVs()[claimed] + "/data.txt"
			got, err := h.FS().ReadFile(file)
			if err != nil || string(got) != data {
				return nil, nil, fmt.Errorf("%s on %s: %q, %v", file, h.Resource, got, err)
			}
			if n := h.Disks["/dev/vdb"].Formats(); n != formats {
				return nil, nil, fmt.Errorf("the volume was formatted again: %d formats, were %d", n, formats)
			}
			t.printf("  %s: %q; the volume formatted %d time(s), none by the heal\n", file, strings.TrimSpace(string(got)), formats)
			return []string{h.Resource}, nil, nil
		}},
		{d.label, hookVIM, "SCALE_OUT " + workers.AspectID + " by 1: Heat adds a member", func(context.Context) ([]string, []string, error) {
			before = d.vnf.Instance()
			var err error
			if added, err = d.vnf.ScaleOut(workers.AspectID, 1); err != nil {
				return nil, nil, fmt.Errorf("scaling out through Heat: %w", err)
			}
			return []string{added[0].Resource}, []string{added[0].Resource}, nil
		}},
		t.clusterHook(d, lcm.ScaleEnd, "join the new worker, the NFS client included", false, func() any {
			return &lcm.ScaleOp{Instance: before, Request: &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: workers.AspectID, NumberOfSteps: 1}, Package: t.in.pkg}
		}),
		{d.label, hookCheck, "a pod on the new worker mounts a PersistentVolume", func(ctx context.Context) ([]string, []string, error) {
			if !added[0].Machine.Installed(nfs.ClientPackage) {
				return nil, nil, fmt.Errorf("%s has no %s", added[0].Resource, nfs.ClientPackage)
			}
			node := kubeadm.NodeName(lcm.RoleWorker, added[0].NICAddress)
			on, pv, err := t.runClaim(ctx, d, "more", node)
			if err != nil {
				return nil, nil, err
			}
			t.printf("  pod default/more runs on %s with %s mounted\n", on, pv)
			return []string{added[0].Resource}, nil, nil
		}},
		t.pvTable(d, func() string { return storageVM().NICAddress }, corev1.VolumeAvailable, corev1.VolumeBound),
	}
	return steps, nil
}

// nodeHost returns the VM of the cluster's node called name, nil if none.
func nodeHost(d *deployed, name string) *sim.Host {
	for _, h := range d.vnf.Hosts() {
		if (h.Role == lcm.RoleMaster || h.Role == lcm.RoleWorker) && kubeadm.NodeName(h.Role, h.NICAddress) == name {
			return h
		}
	}
	return nil
}

// withKubectl runs fn with kubectl on each master in turn until it
// succeeds on one; the error joins every master's.
func (t *tour) withKubectl(ctx context.Context, d *deployed, fn func(k kubeapi.Kubectl) error) error {
	cfg, err := t.cloud.SSHConfig()
	if err != nil {
		return err
	}
	login := d.vms.Logins[lcm.RoleMaster]
	var errs []error
	for _, m := range d.vnf.HostsWithRole(lcm.RoleMaster) {
		n := m.Node()
		h, err := remote.Dial(ctx, cfg.For(n.SSHAddress, n.Resource, login.Username, login.Password))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = fn(kubeapi.Kubectl{Host: h})
		h.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", n.Resource, err))
	}
	return fmt.Errorf("no master answers: %w", errors.Join(errs...))
}

// pvTable is the check of the PersistentVolumes: kubectl get pv as a
// table; every one of the VNF's is on the storage server's address and
// in one of phases.
func (t *tour) pvTable(d *deployed, server func() string, phases ...corev1.PersistentVolumePhase) step {
	var want []string
	for _, p := range phases {
		want = append(want, string(p))
	}
	return step{d.label, hookCheck, "kubectl get pv: the VNF's PersistentVolumes " + strings.Join(want, " or ") + " on the storage server's address", func(ctx context.Context) ([]string, []string, error) {
		var list corev1.PersistentVolumeList
		if err := t.withKubectl(ctx, d, func(k kubeapi.Kubectl) error {
			return k.List(ctx, &list, "persistentvolume", "", kubeapi.ListOptions{})
		}); err != nil {
			return nil, nil, err
		}
		slices.SortFunc(list.Items, func(a, b corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
		t.printf("  %-9s %-9s %-10s %-14s %s\n", "NAME", "CAPACITY", "STATUS", "CLAIM", "SERVER:PATH")
		var errs []error
		var seen []string
		addr := server()
		for _, pv := range list.Items {
			claim, src := "", ""
			if r := pv.Spec.ClaimRef; r != nil {
				claim = r.Namespace + "/" + r.Name
			}
			if n := pv.Spec.NFS; n != nil {
				src = n.Server + ":" + n.Path
			}
			capacity := pv.Spec.Capacity[corev1.ResourceStorage]
			t.printf("  %-9s %-9s %-10s %-14s %s\n", pv.Name, capacity.String(), pv.Status.Phase, claim, src)
			if pv.Annotations[nfs.OwnerAnnotation] != d.vnf.ID() {
				continue
			}
			seen = append(seen, pv.Name)
			if !slices.Contains(phases, pv.Status.Phase) || pv.Spec.NFS == nil || pv.Spec.NFS.Server != addr {
				errs = append(errs, fmt.Errorf("%s is %s on %s, want %s on %s", pv.Name, pv.Status.Phase, src, strings.Join(want, " or "), addr))
			}
		}
		if len(seen) != len(sim.SamplePVs()) {
			errs = append(errs, fmt.Errorf("the VNF has %d PersistentVolumes, want %d", len(seen), len(sim.SamplePVs())))
		}
		return seen, nil, errors.Join(errs...)
	}}
}

// runClaim applies [sim.ClaimPodManifest] called name and returns the
// node its pod runs on and the PersistentVolume its claim bound, once the
// pod runs: the kubelet mounted the volume over NFS.
func (t *tour) runClaim(ctx context.Context, d *deployed, name, node string) (on, pv string, err error) {
	err = t.withKubectl(ctx, d, func(k kubeapi.Kubectl) error {
		if _, err := k.Apply(ctx, []byte(sim.ClaimPodManifest(name, node))); err != nil {
			return err
		}
		var pod corev1.Pod
		var pvc corev1.PersistentVolumeClaim
		if _, err := k.Get(ctx, &pod, "pod", "default", name); err != nil {
			return err
		}
		if _, err := k.Get(ctx, &pvc, "persistentvolumeclaim", "default", name); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound || pod.Status.Phase != corev1.PodRunning {
			var why []string
			for _, s := range pod.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil {
					why = append(why, w.Reason+": "+w.Message)
				}
			}
			return fmt.Errorf("claim %s is %q, pod %s is %q on %q: %s", name, pvc.Status.Phase, name, pod.Status.Phase, pod.Spec.NodeName, strings.Join(why, "; "))
		}
		on, pv = pod.Spec.NodeName, pvc.Spec.VolumeName
		return nil
	})
	return on, pv, err
}
