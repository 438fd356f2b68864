// Package registry implements the cir-k8s-cluster spec: a private Docker
// registry as a VNF of its own, and the trust every Kubernetes node needs
// to pull from private registries.
//
// # The registry VNF
//
// [VNFDriver] is its management driver. instantiate_end reads
// private_registry_installation_param ([InstallParams]), finds the VM in
// Heat by ssh_cp_name, and runs the steps: [InstallDocker] (Ubuntu's
// docker.io; a root-only proxy drop-in; the daemon answering),
// [LoadImage] (the `docker save` tar of image_path streamed from the VNF
// package, skipped when the image ID is already there) or [PullImage],
// [RunRegistry] (container private_registry, -p PORT:5000, a data
// directory, --restart=always; left alone when it already runs that way,
// replaced when not; [ErrPortInUse] when the port is taken), and
// [WaitHealthy] (GET /v2/ answers 200). heal_end does the same on the new
// VM with the parameters stored in the VnfInstance. Every step is
// idempotent: a second run reports unchanged and restarts nothing.
//
// # Trust on cluster nodes
//
// [ClusterParams] is this package's part of k8s_cluster_installation_param:
// private_registry_connection_info, a list of [Connection]s. A cluster
// driver embeds it in its own parameter struct and calls [TrustNodes] (or
// [ConfigureRegistryTrust] per host) on the nodes an operation created.
// ConfigureRegistryTrust configures every runtime installed on the node
// (Docker, containerd, CRI-O) for every connection at once; see its
// documentation for the files it owns and merges.
//
// # Parameters
//
// Decoding rejects, with the field's full path and before any command
// runs: a connection_type other than "0"/0 (HTTP) or "1"/1 (HTTPS); a
// server that is not host[:port]; a username without a password or the
// reverse (Tacker's silent default "tacker"/"tacker" is gone); a
// certificate_path outside the package, missing, not a PEM certificate,
// or on an HTTP connection; a hosts_string that is not exactly
// "<IP> <FQDN>"; two connections to one server; an image_path missing from
// the package or not a valid `docker save` archive ([ReadImageArchive]:
// its manifest, config digest and RepoTags, which reach docker's argv,
// are judged then, and the step reuses what was read); a port_no outside
// 1–65535; proxy URLs that are not http(s)
// or hold characters that could escape a systemd Environment= line.
//
// # Secrets
//
// Registry and SSH passwords are [remote.Secret]s. A registry password
// reaches a node only on the standard input of `docker login
// --password-stdin` and inside the root-only files
// /root/.docker/config.json and /var/lib/kubelet/config.json; proxy URLs
// only inside a root-only systemd drop-in.
package registry
