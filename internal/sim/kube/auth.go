package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Evict implements [API].
func (m *MemoryAPI) Evict(ctx context.Context, namespace, name string) error {
	return m.Delete(ctx, KindPod, namespace, name)
}

// Authenticate implements [API].
func (m *MemoryAPI) Authenticate(_ context.Context, bearerToken string) (string, []string, error) {
	return "", nil, apierrors.NewUnauthorized("Unauthorized")
}

// Authorize implements [API].
func (m *MemoryAPI) Authorize(_ context.Context, user string, groups []string, verb, group, resource, namespace string) (bool, error) {
	return false, nil
}
