package containers

import (
	"context"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Repositories of the packages that are not in the Ubuntu archive, as
// their sources.list entries name them.
const (
	// DockerRepo is Docker's repository (docker-ce, containerd.io).
	DockerRepo = "https://download.docker.com/linux/ubuntu"
	// KubernetesRepo is the Kubernetes 1.28 repository (cri-tools 1.28).
	KubernetesRepo = "https://pkgs.k8s.io/core:/stable:/v1.28/deb"
	// CRIORepo is CRI-O's 1.28 repository on pkgs.k8s.io.
	CRIORepo = "https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.28/deb"
)

// AddPackages adds the container packages to a catalog, their programs
// and daemons bound to net (nil: a network with no other machine and
// with Internet):
//
//   - containerd (Ubuntu archive, 1.7.12; and Debian 12's
//     1.6.20~ds1-1+deb12u3, installed when asked for as
//     containerd=1.6.20~ds1-1+deb12u3) and containerd.io (Docker's
//     repository, 1.7.12 and 1.6.33-1, whose config.toml disables the CRI
//     plugin): containerd.service, containerd --version, ctr, each
//     behaving as its release does (see the package doc); containerd 2.x
//     is [AddContainerd2]'s;
//   - runc;
//   - docker.io (Ubuntu archive, 24.0.7; dockerd in /usr/sbin) and
//     docker-ce with docker-ce-cli (Docker's repository,
//     5:24.0.7-1~ubuntu.22.04~jammy): docker.service, docker, dockerd
//     --version; both create the docker group;
//   - cri-tools (crictl; 1.26.0 and 1.28.0 from the Kubernetes
//     repositories of those minors);
//   - cri-o (1.28.4 from the CRI-O repository of pkgs.k8s.io):
//     crio.service, crio --version, /etc/crictl.yaml naming its socket;
//   - curl (the base package, same version) with a /usr/bin/curl that
//     talks to the simulated registries.
func AddPackages(c *ubuntu.Catalog, net Network) {
	if net == nil {
		net = &StaticNetwork{}
	}
	containerdUnit := ubuntu.Unit{Name: "containerd.service", File: containerdUnitFile, OnStart: containerdStart, OnStop: containerdStop}
	dockerUnit := func(dockerd string) ubuntu.Unit {
		return ubuntu.Unit{
			Name: "docker.service", File: strings.ReplaceAll(dockerUnitFile, "DOCKERD", dockerd),
			OnStart: dockerStart, OnStop: dockerStop, OnReload: dockerReload,
		}
	}
	for _, p := range []ubuntu.Package{
		{Name: "runc", Version: "1.1.12-0ubuntu2~22.04.1", Description: "Open Container Project - runtime",
			Programs: map[string]sshtest.Program{"/usr/sbin/runc": versionProgram("runc version 1.1.12-0ubuntu2~22.04.1\nspec: 1.0.2-dev\ngo: go1.21.1\nlibseccomp: 2.5.3")}},
		{Name: "containerd", Version: "1.7.12-0ubuntu2~22.04.1", Depends: []string{"runc"}, Description: "daemon to control runC",
			Tools: map[string]ubuntu.Tool{"/usr/bin/containerd": containerdVersionTool, "/usr/bin/ctr": ctrTool},
			Units: []ubuntu.Unit{containerdUnit}},
		{Name: "containerd", Version: "1.6.20~ds1-1+deb12u3", Depends: []string{"runc"}, Description: "open and reliable container runtime",
			Tools: map[string]ubuntu.Tool{"/usr/bin/containerd": containerdVersionTool, "/usr/bin/ctr": ctrTool},
			Units: []ubuntu.Unit{containerdUnit}},
		containerdIO("1.7.12-1"),
		containerdIO("1.6.33-1"),
		{Name: "docker.io", Version: "24.0.7-0ubuntu2~22.04.1", Depends: []string{"containerd", "runc", "iptables"},
			Description: "Linux container runtime",
			Tools:       map[string]ubuntu.Tool{"/usr/bin/docker": dockerTool(net), "/usr/sbin/dockerd": dockerdTool},
			Units:       []ubuntu.Unit{dockerUnit("/usr/sbin/dockerd")}, OnInstall: addDockerGroup},
		{Name: "docker-ce-cli", Version: "5:24.0.7-1~ubuntu.22.04~jammy", Repo: DockerRepo, Description: "Docker CLI: the open-source application container engine",
			Tools: map[string]ubuntu.Tool{"/usr/bin/docker": dockerTool(net)}},
		{Name: "docker-ce", Version: "5:24.0.7-1~ubuntu.22.04~jammy", Repo: DockerRepo, Depends: []string{"containerd.io", "docker-ce-cli", "iptables"},
			Description: "Docker: the open-source application container engine",
			Tools:       map[string]ubuntu.Tool{"/usr/bin/dockerd": dockerdTool},
			Units:       []ubuntu.Unit{dockerUnit("/usr/bin/dockerd")}, OnInstall: addDockerGroup},
		{Name: "cri-tools", Version: "1.26.0-1.1", Repo: "https://pkgs.k8s.io/core:/stable:/v1.26/deb", Description: "Command-line utility for interacting with a container runtime",
			Tools: map[string]ubuntu.Tool{"/usr/bin/crictl": crictlTool(net)}},
		{Name: "cri-tools", Version: "1.28.0-1.1", Repo: KubernetesRepo, Description: "Command-line utility for interacting with a container runtime",
			Tools: map[string]ubuntu.Tool{"/usr/bin/crictl": crictlTool(net)}},
		{Name: "cri-o", Version: "1.28.4-1.1", Repo: CRIORepo, Description: "Open Container Initiative-based implementation of Kubernetes Container Runtime Interface",
			Files: map[string]string{
				"/etc/crictl.yaml":                   "runtime-endpoint: unix:///var/run/crio/crio.sock\n",
				"/etc/crio/crio.conf.d/10-crio.conf": "[crio.image]\nsignature_policy = \"/etc/crio/policy.json\"\n\n[crio.runtime]\ndefault_runtime = \"crun\"\n",
			},
			Programs: map[string]sshtest.Program{"/usr/bin/crio": versionProgram("crio version " + crioVersion + "\nVersion:        " + crioVersion + "\nGoVersion:      go1.21.7")},
			Units:    []ubuntu.Unit{{Name: "crio.service", File: crioUnitFile, OnStart: crioStart, OnStop: crioStop, OnReload: crioReload}}},
		{Name: "curl", Version: "7.81.0-1ubuntu1.15", Base: true, Depends: []string{"libcurl4"},
			Description: "command line tool for transferring data with URL syntax",
			Tools:       map[string]ubuntu.Tool{"/usr/bin/curl": curlTool(net)}},
	} {
		c.Add(p)
	}
	addRepositories(c, net)
}

// containerdIO is Docker's containerd.io package of a version: the
// same config.toml in every version (docker/containerd-packaging
// common/containerd.toml: disabled_plugins = ["cri"], no version), and
// its own runc.
func containerdIO(version string) ubuntu.Package {
	return ubuntu.Package{Name: "containerd.io", Version: version, Repo: DockerRepo, Description: "An open and reliable container runtime",
		Files:    map[string]string{"/etc/containerd/config.toml": containerdIOConfig},
		Tools:    map[string]ubuntu.Tool{"/usr/bin/containerd": containerdVersionTool, "/usr/bin/ctr": ctrTool},
		Programs: map[string]sshtest.Program{"/usr/bin/runc": versionProgram("runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\nspec: 1.0.2-dev\ngo: go1.20.13\nlibseccomp: 2.5.4")},
		Units:    []ubuntu.Unit{{Name: "containerd.service", File: containerdUnitFile, OnStart: containerdStart, OnStop: containerdStop}}}
}

// AddContainerd2 adds containerd.io 2.2.0-1 (containerd 2.2.0, Docker's
// repository) to a catalog that [AddPackages] filled. It is not there by
// default because apt-get installs the newest version: with it, every
// docker-ce install would bring containerd 2, unlike the 2024 Ubuntu
// 22.04 machines the catalog models. A test that wants containerd 2 adds
// it and installs containerd.io, pinned or not.
func AddContainerd2(c *ubuntu.Catalog) {
	c.Add(containerdIO("2.2.0-1"))
}

// versionProgram answers --version (and -v, version) with text, and
// fails loudly otherwise: the daemons run as units.
func versionProgram(text string) sshtest.Program {
	return func(_ context.Context, p *sshtest.Process) int {
		if len(p.Args) == 2 && (p.Args[1] == "--version" || p.Args[1] == "-v" || p.Args[1] == "version") {
			fmt.Fprintln(p.Stdout, text)
			return 0
		}
		return p.Fail(1, "%s: only --version is modelled by internal/sim/containers", strings.Join(p.Args[1:], " "))
	}
}

// dockerdTool is dockerd: --version; the daemon itself is docker.service.
func dockerdTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	if len(p.Args) == 2 && (p.Args[1] == "--version" || p.Args[1] == "-v") {
		build := "24.0.7-0ubuntu2~22.04.1"
		if m.Installed("docker-ce") {
			build = "311b9ff"
		}
		fmt.Fprintf(p.Stdout, "Docker version %s, build %s\n", dockerVersion, build)
		return 0
	}
	return p.Fail(1, "%s: only --version is modelled by internal/sim/containers (the daemon runs as docker.service)", strings.Join(p.Args[1:], " "))
}

// addDockerGroup is the postinst's `addgroup --system docker`: members
// may use the daemon's socket.
func addDockerGroup(m *ubuntu.Machine) error {
	fsys := m.Server().FS()
	if _, ok := fsys.LookupGroup("docker"); ok {
		return nil
	}
	data, err := fsys.ReadFile("/etc/group")
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Split(line, ":"); len(f) >= 3 {
			used[f[2]] = true
		}
	}
	gid := 120
	for used[fmt.Sprint(gid)] {
		gid++
	}
	text := string(data)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fsys.WriteFile("/etc/group", []byte(fmt.Sprintf("%sdocker:x:%d:\n", text, gid)), 0o644)
}

const containerdUnitFile = `[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/bin/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
LimitNOFILE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`

const dockerUnitFile = `[Unit]
Description=Docker Application Container Engine
Documentation=https://docs.docker.com
After=network-online.target firewalld.service containerd.service time-set.target
Wants=network-online.target containerd.service

[Service]
Type=notify
ExecStart=DOCKERD -H fd:// --containerd=/run/containerd/containerd.sock
ExecReload=/bin/kill -s HUP $MAINPID
TimeoutStartSec=0
RestartSec=2
Restart=always
StartLimitBurst=3
StartLimitInterval=60s
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
Delegate=yes
KillMode=process
OOMScoreAdjust=-500

[Install]
WantedBy=multi-user.target
`

const crioUnitFile = `[Unit]
Description=Container Runtime Interface for OCI (CRI-O)
Documentation=https://github.com/cri-o/cri-o
Wants=network-online.target
Before=kubelet.service
After=network-online.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/crio
ExecStart=/usr/bin/crio $CRIO_CONFIG_OPTIONS $CRIO_RUNTIME_OPTIONS $CRIO_STORAGE_OPTIONS $CRIO_NETWORK_OPTIONS $CRIO_METRICS_OPTIONS
ExecReload=/bin/kill -s HUP $MAINPID
TasksMax=infinity
LimitNOFILE=1048576
LimitNPROC=1048576
LimitCORE=infinity
OOMScoreAdjust=-999
TimeoutStartSec=0
Restart=on-abnormal

[Install]
WantedBy=multi-user.target
`

// containerdIOConfig is the config.toml Docker's containerd.io ships: the
// CRI plugin disabled, which a Kubernetes node must undo.
const containerdIOConfig = `#   Copyright 2018-2022 Docker Inc.

#   Licensed under the Apache License, Version 2.0 (the "License");
#   you may not use this file except in compliance with the License.
#   You may obtain a copy of the License at

#       http://www.apache.org/licenses/LICENSE-2.0

#   Unless required by applicable law or agreed to in writing, software
#   distributed under the License is distributed on an "AS IS" BASIS,
#   WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#   See the License for the specific language governing permissions and
#   limitations under the License.

disabled_plugins = ["cri"]

#root = "/var/lib/containerd"
#state = "/run/containerd"
#subreaper = true
#oom_score = 0

#[grpc]
#  address = "/run/containerd/containerd.sock"
#  uid = 0
#  gid = 0

#[debug]
#  address = "/run/containerd/debug.sock"
#  uid = 0
#  gid = 0
#  level = "info"
`
