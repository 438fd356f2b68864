package kube

import (
	"errors"
	"sync"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// Cluster is one Kubernetes cluster of the world: its API and what lives
// outside the API (the etcd membership, the CA's private key is on the
// first master's disk, as kubeadm leaves it).
type Cluster struct {
	// API is the cluster's API server.
	API API
	// CACert is the PEM of the cluster CA (/etc/kubernetes/pki/ca.crt).
	CACert []byte

	mu sync.Mutex
	// apiservers are the machines running a kube-apiserver of this
	// cluster, by their advertise address.
	apiservers map[string]*ubuntu.Machine
}

// World is every Kubernetes cluster of a simulated cloud, and the network
// that reaches their API servers. It is safe for concurrent use.
type World struct {
	net containers.Network

	mu       sync.Mutex
	clusters []*Cluster
}

// NewWorld returns a world without clusters whose machines are reached
// through net.
func NewWorld(net containers.Network) *World { return &World{net: net} }

// Clusters returns the world's clusters, oldest first.
func (w *World) Clusters() []*Cluster {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*Cluster(nil), w.clusters...)
}

// ErrNoAPIServer is what a client gets when nothing serves the Kubernetes
// API at the address it dials.
var ErrNoAPIServer = errors.New("connection refused")
