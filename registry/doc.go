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
// [TrustParams] is this package's part of k8s_cluster_installation_param:
// private_registry_connection_info, a list of [Connection]s. A cluster
// driver embeds it in its own parameter struct and calls [TrustNodes] (or
// [ConfigureRegistryTrust] per host) on the nodes an operation created.
// ConfigureRegistryTrust configures every runtime installed on the node
// (Docker, containerd, CRI-O) for every connection at once, except a
// containerd whose CRI plugin is disabled, which it skips with the reason
// in the result; see its documentation for the files it owns and merges.
// It is declarative: a root-only state file ([TrustStateFile]) remembers
// what mgmtkit added, so a registry dropped from the parameters loses the
// trust mgmtkit gave it and nothing that someone else configured. A heal
// or scale that calls [TrustNodes] with the same parameters leaves
// existing nodes unchanged.
//
// # Parameters
//
// Decoding rejects, with the field's full path and before any command
// runs: a null connection; a connection_type other than "0"/0 (HTTP) or
// "1"/1 (HTTPS); a server that is not host[:port] (a port with a sign or
// leading zeros, an IPv6 address with a zone or without brackets, brackets
// around anything else, a name with a trailing dot); an IPv6 server over
// HTTP without a port (dockerd refuses "[addr]" in insecure-registries and
// then does not start); a username without a
// password or the reverse (Tacker's silent default "tacker"/"tacker" is
// gone); a username with white space, ':', ';', control characters or a
// leading '-' (it becomes a `docker login --username` value); a
// certificate_path outside the package, missing, not a PEM certificate,
// or on an HTTP connection; a hosts_string that is not exactly
// "<IP> <FQDN>" (no zone, no trailing dot); two connections to one server
// ([CanonicalServer]: names compared case-insensitively, IP addresses in
// canonical form, so "[0:0::1]:5000" repeats "[::1]:5000"; "host" and
// "host:443" differ); more than [MaxConnections]
// connections; a server over 259 bytes, a username over 256, a
// hosts_string over 300 and any other string over [lcm.DefaultMaxString];
// an image_path missing from the package or not a valid `docker save`
// archive ([ReadImageArchive]: its manifest, config digest and RepoTags,
// which reach docker's argv, are judged then, and the step reuses what was
// read); a port_no outside 1–65535 or written "+5000" or "05000"; proxy
// URLs that are not http(s) or hold characters that could escape a systemd
// Environment= line. Messages quote at most 100 characters of a value.
//
// # Secrets
//
// Registry and SSH passwords are [remote.Secret]s. A registry password
// reaches a node only on the standard input of `docker login
// --password-stdin` and inside the root-only files
// /root/.docker/config.json and /var/lib/kubelet/config.json; proxy URLs
// only inside a root-only systemd drop-in.
package registry
