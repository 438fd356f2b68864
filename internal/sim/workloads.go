package sim

// ClaimPodManifest is what a user of a cluster with NFS PersistentVolumes
// applies to use one: a PersistentVolumeClaim called name (1Gi,
// ReadWriteOnce, storageClassName "" so that it binds a statically
// provisioned volume rather than wait for a provisioner) and a pod of the
// same name that mounts it at /data, held to the node called node by
// its kubernetes.io/hostname label when node is not "".
func ClaimPodManifest(name, node string) string {
	selector := ""
	if node != "" {
		selector = "\n  nodeSelector:\n    kubernetes.io/hostname: " + node
	}
	return `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ` + name + `
  namespace: default
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  namespace: default
spec:` + selector + `
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: ` + name + `
`
}
