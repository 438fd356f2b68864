// Package containers simulates container runtimes and registries on the
// machines of internal/sim/ubuntu: Docker, containerd with crictl, CRI-O,
// and Docker distribution registries, both as containers on a machine and
// outside every machine. A pull succeeds only when the pulling runtime
// resolves the registry's name (an IP literal, or the machine's
// /etc/hosts: there is no DNS), reaches it on the simulated [Network],
// trusts it (HTTP allowed, or its CA installed where that runtime looks)
// and authenticates to it, as the real runtime would; otherwise it fails
// with the real tool's message and exit status.
//
// [AddPackages] adds the packages (docker.io, docker-ce, containerd,
// containerd.io, runc, cri-tools, cri-o, and curl) to a catalog
// ([AddContainerd2] adds containerd.io 2.2.0);
// internal/sim's Cloud does it for every host and is the Network. Tests
// seed and inspect the world with [NewRegistry], [Registry.Push],
// [RegistryAt], [Docker], [Containerd], [CRIO], [TakePort] and
// [KubeletPull].
//
// # What is modelled
//
//   - Docker (docker.service): /etc/docker/daemon.json read at start (an
//     invalid file or an unknown directive stops dockerd from starting, as
//     does an insecure-registries entry moby's registry/config.go refuses:
//     empty, beginning or ending with '-', another scheme than http(s)://,
//     a host that is neither a domain nor an IP, a bad port);
//     insecure-registries and registry-mirrors re-read on reload (SIGHUP;
//     a bad file leaves the old settings); proxy variables from the
//     unit's drop-ins as systemd loaded them (a drop-in changed without
//     daemon-reload is not seen) or daemon.json's "proxies". The docker
//     CLI: version, info, images, image inspect/ls/rm, inspect, load (a
//     `docker save` tar, legacy or OCI layout, image ID = config digest,
//     layers checked against the diff IDs), pull, push, tag, rmi, login
//     (--password-stdin or --password; with the daemon down the CLI logs
//     in by itself, as docker/cli's loginClientSide: /etc/docker/certs.d
//     CAs, but none of daemon.json's insecure-registries), logout, run/create (-d, -p, -v,
//     --restart, --name, -e, --rm, --pull), start, stop, restart, rm [-f]
//     [-v], ps (-a, -q, --filter name/id/status/ancestor, --format), logs;
//     --format templates as Docker runs them. The socket is root's and the
//     docker group's. Containers keep their state across daemon restarts
//     and reboots: on start, dockerd restarts those whose policy is
//     "always" (or "unless-stopped" unless stopped by hand). A published
//     port held by another running container or by a host process
//     ([TakePort]) fails the start as dockerd does, leaving the container
//     created.
//   - Docker's registry rules: HTTPS first; for a registry named in
//     insecure-registries (host[:port] or a CIDR holding its address), or
//     one whose address is loopback, HTTPS without verification then
//     plain HTTP. CAs from /etc/docker/certs.d/HOST[:PORT]/*.crt, read on
//     every pull. Credentials from the client's config.json
//     ($DOCKER_CONFIG or ~/.docker; root's under sudo).
//   - Registry containers: a running container of an image whose
//     repository's last component is "registry" (registry:2,
//     docker.io/library/registry, a loaded registry:latest), publishing
//     container port 5000, is a registry: plain HTTP, no auth, at every
//     address of its machine on the host port (only on the machine itself
//     for a binding to 127.0.0.1). It stores images in the distribution
//     registry's filesystem layout (docker/registry/v2/...) in the host
//     directory bound to /var/lib/registry, else in the image's anonymous
//     volume, so pushed images survive the container when bound.
//   - containerd (containerd.service, no reload) as the installed
//     release behaves: Ubuntu's 1.7.12, Debian 12's 1.6.20,
//     containerd.io 1.6.33 and 1.7.12 (the default), and containerd.io
//     2.2.0 when [AddContainerd2] put it in the catalog. config.toml is
//     loaded at start and checked as that release checks it (TOML errors;
//     in version 2, plugin names that are not URIs, "cri" among them,
//     stop 1.6/1.7 and 2.x; 1.7.17+ refuses version 3, older 1.x read it
//     as version 2 and ignore its io.containerd.cri.v1.images table; 2.x
//     migrates versions 1 and 2). disabled_plugins turns the CRI off by
//     ID in a version 1 file on 1.x, by URI otherwise (2.x also by its
//     image and runtime plugins). The CRI registry's config_path (2.x:
//     "/etc/containerd/certs.d:/etc/docker/certs.d" unless the file sets
//     one) and the legacy registry.mirrors and registry.configs (tls in
//     1.x only, auth). config_path with mirrors, or in 1.x with
//     configs.tls, makes the CRI plugin fail to load while containerd
//     runs on (kubespray#9743): the CRI clients then get "unknown
//     service". Pulls through the CRI search config_path split into a
//     list (1.x; 2.x pulling locally, as with use_local_image_pull or
//     legacy registry settings) or whole as one directory (2.x's
//     transfer-service pulls, containerd#12808; see
//     [ContainerdConfig.ConfigPathRoots]); in each root HOST_PORT_, then
//     HOST[:PORT], then _default, the first that exists winning. Its
//     hosts.toml is read at pull time: host entries in file order with
//     capabilities (none or [] meaning all), ca (relative to the
//     directory) and skip_verify, then server (the registry itself when
//     unset); a directory whose hosts.toml is missing, empty or broken
//     (bad TOML, an unknown capability, a bad ca) gives its *.crt as
//     CAs. Without config_path: legacy mirrors, then the registry, over
//     HTTPS (HTTP for localhost).
//   - crictl (1.26/1.28): pull [--creds|--auth], images [-q], inspecti,
//     rmi, version; the endpoint from --runtime-endpoint/--image-endpoint,
//     /etc/crictl.yaml, or the deprecated defaults with crictl's warning.
//     ctr: version, images ls [-q] (the k8s.io namespace holds the CRI's
//     images).
//   - CRI-O 1.28 (crio.service): registries.conf and registries.conf.d
//     (location/prefix, insecure, blocked) loaded at start and reload; a
//     drop-in in the version 1 format ([registries.insecure]) fails the
//     load; CAs from the first of /etc/containers/certs.d/HOST and
//     /etc/docker/certs.d/HOST that exists (containers/image
//     dockerCertDir), never both; credentials
//     only from the CRI request. crictl talks to it when its endpoint is
//     crio.sock (cri-o ships an /etc/crictl.yaml naming it).
//   - [KubeletPull]: the kubelet's pull through its CRI endpoint with the
//     credentials of /var/lib/kubelet/config.json.
//   - curl: GET and HEAD of the registry API (/v2/, _catalog, tags/list,
//     manifests) with -f, -s, -S, -o, -w, -k, --cacert, -u and Basic
//     Authorization headers, and curl's errors (6, 7, 22, 35, 60, 77);
//     GET of the Internet hosts' files; proxies (-x/--proxy, --noproxy,
//     -U/--proxy-user, the environment) with errors 5, 7 and 56.
//   - Docker Hub: registry (latest, 2, 2.8, 2.8.3) and hello-world:latest,
//     reachable when the network has Internet (for Docker also through a
//     configured proxy).
//   - The Internet and HTTP proxies: the Internet hosts (Docker Hub,
//     pkgs.k8s.io with its Release.key ([KubernetesReleaseKey]),
//     raw.githubusercontent.com with Calico's release manifest
//     ([CalicoManifestURL], a reduced [CalicoManifest]), the
//     Ubuntu archive, download.docker.com, ...) resolve without
//     /etc/hosts. A [ProxiedNetwork] may reach them only through a
//     [Proxy] (squid-like: CONNECT and absolute-URL GET, basic auth with
//     407, 503 for any private address, requests recorded without
//     passwords). curl honours --proxy, http_proxy, https_proxy,
//     all_proxy and no_proxy as curl 7.81 does; apt-get its
//     Acquire::http(s)::Proxy settings (through [ubuntu.AptTransport]);
//     dockerd, containerd and CRI-O their units' HTTP_PROXY,
//     HTTPS_PROXY and NO_PROXY, matched as Go's
//     golang.org/x/net/http/httpproxy does (domains, IPs, ports, CIDRs),
//     with Go's proxyconnect and CONNECT errors.
//
// # What is not modelled
//
//   - Processes: containers run nothing; a container of a registry image
//     serves the registry API and other containers just are "running".
//     Non-detached runs of long-running images, exec, attach, networks
//     other than the default bridge, volumes commands, builds, swarm.
//   - TLS certificates of registries (a server's certificate is valid for
//     every name it is reached by; only its CA counts), client
//     certificates, token auth (registries use basic auth), registry
//     mirrors for pulls, image signatures, platforms other than the
//     machine's, layer contents, disk space.
//   - Registry containers with TLS or auth (REGISTRY_HTTP_TLS_*,
//     htpasswd): they always speak HTTP without auth.
//   - Proxies outside the model: a proxy URL naming an address where the
//     network has no [Proxy] (on a network that reaches the Internet
//     directly, or one that is not a [ProxiedNetwork]) reaches the
//     Internet hosts only, as before proxies were modelled.
//   - docker.socket activation (a stopped docker.service stays stopped),
//     CRI-O's global_auth_file and
//     short-name aliases, credential helpers.
//   - The simulated cloud gives its VMs loopback addresses (127.0.1.x)
//     that stand for real ones: an address of a machine of the Network is
//     never treated as loopback (Docker's 127.0.0.0/8 insecure default
//     applies to localhost and to loopback addresses no machine has).
//
// All state is per machine ([ubuntu.Machine.Extension]) or per
// [Registry], guarded by its own mutex; there is no package-level mutable
// state.
package containers
