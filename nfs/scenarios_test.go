package nfs_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
)

// The storage scenarios the real control plane judges too
// (cloudtest/realkube), on the in-memory model.
func TestStorageScenarios(t *testing.T) {
	kubescenarios.RunStorage(t, sim.Options{})
}
