package realkube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var kindPV = corev1.SchemeGroupVersion.WithKind("PersistentVolume")

func nfsVolume(name, server, path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				NFS: &corev1.NFSVolumeSource{Server: server, Path: path},
			},
		},
	}
}

// TestPersistentVolumeNFS: the API server's validation refuses an NFS
// volume without server or path, naming the field; a valid one becomes
// Available (the persistentvolume-binder controller).
func TestPersistentVolumeNFS(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "pv-cp")
	api := cp.API()

	for _, tc := range []struct {
		name, server, path, field string
	}{
		{"no-server", "", "/exports/a", "spec.nfs.server"},
		{"no-path", "10.0.0.5", "", "spec.nfs.path"},
	} {
		_, err := api.Create(ctx, nfsVolume(tc.name, tc.server, tc.path))
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", tc.name, err)
			continue
		}
		var status apierrors.APIStatus
		found := false
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, c := range status.Status().Details.Causes {
				if c.Field == tc.field && c.Type == metav1.CauseTypeFieldValueRequired {
					found = true
				}
			}
		}
		if !found || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %q does not name %s as required", tc.name, err, tc.field)
		}
		if _, err := api.Get(ctx, kindPV, "", tc.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s: refused volume stored: %v", tc.name, err)
		}
	}

	if _, err := api.Create(ctx, nfsVolume("good", "10.0.0.5", "/exports/good")); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PersistentVolumePhase
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kindPV, "", "good")
		if err != nil {
			return false, err
		}
		phase = o.(*corev1.PersistentVolume).Status.Phase
		return phase == corev1.VolumeAvailable, nil
	}, func() string { return "volume phase " + string(phase) + ", want Available" })
}
