// Package ansible is the simulated cloud's Ansible server software: the
// packages ansible-core (whose /usr/bin/ansible-playbook is a semantic
// fake) and sshpass ([AddPackages]), and kubespray checkouts of several
// releases ([InstallKubespray]: the settings of each tag's files that
// matter here, in the simulation's own words; no upstream file is
// copied). The simulated cloud installs them on the host
// sim.Cloud.AddAnsibleServer starts.
//
// # ansible-playbook
//
// [PlaybookTool] runs kubespray's cluster.yml, scale.yml, remove-node.yml
// and playbooks/facts.yml (facts.yml before v2.22.0) as ansible-core and
// kubespray do, against the hosts of the cloud, and prints what
// ansible-core's default stdout callback prints, line by line. Each
// behaviour cites its source (kubespray at the modelled tag, ansible-core
// v2.14.17/v2.16.12, ansible.posix); the exact texts were checked against
// Debian 12's ansible-playbook 2.14.18 where it can run here.
//
//   - Configuration (config.go): ANSIBLE_CONFIG, else ./ansible.cfg of the
//     working directory (not a world-writable one), ~/.ansible.cfg,
//     /etc/ansible/ansible.cfg; environment over file. Without
//     kubespray's ansible.cfg there is no fact cache (memory), host keys
//     are checked (host_key_checking defaults to True), skipped hosts and
//     every task banner are shown and profile_tasks is off.
//   - Inventory (inventory.go): the YAML inventory plugin (hosts, vars,
//     children; a .ini file is declined), group_vars/ and host_vars/ next
//     to it, Ansible's precedence (inventory group vars < group_vars/all
//     < group_vars/GROUP < inventory host vars < host_vars < extra vars),
//     host patterns for --limit and remove-node's node (',' ':' '&' '!',
//     wildcards, subscripts). A missing or unparsable inventory is rc 1
//     "ERROR! No inventory was parsed..." with
//     ANSIBLE_INVENTORY_UNPARSED_FAILED, else warnings and a run with
//     implicit localhost only (empty RECAP, rc 0). --limit matching no
//     host is rc 1.
//   - Connections (conn.go): the ssh connection plugin's options in its
//     order (ssh_args, then StrictHostKeyChecking=no when
//     host_key_checking is false, then ansible_ssh_common_args), OpenSSH's
//     first-value-wins; a real SSH client dials ansible_host:22 through
//     the cloud's network; a password needs sshpass on the server
//     ("you must install the sshpass program", a failed task); host keys
//     are judged against UserKnownHostsFile as OpenSSH does (unknown key
//     with StrictHostKeyChecking=yes, a changed key: UNREACHABLE "Host
//     key verification failed."; ask with a password: sshpass's refusal);
//     a refused or dead address and a wrong password are UNREACHABLE.
//     become runs `sudo -H -S -n -u root /bin/sh -c ...` (with a become
//     password, sudo's prompt is answered only when sudo asks).
//   - Plays (plays.go): the version assert of the checkout's
//     ansible_version.yml as it is on disk (localhost before v2.25.0, the
//     first host with run_once since; a failure ends the run: "NO MORE
//     HOSTS LEFT", rc 2); boilerplate (group mapping, k8s_cluster
//     computed since v2.27.0; validate_inventory's kube_control_plane,
//     odd etcd count and network-range asserts); facts (the jsonfile
//     cache of kubespray's ansible.cfg, one file per host in /tmp);
//     cluster.yml (host name assert, IP forwarding, containerd with the
//     systemd cgroup driver, kubeadm/kubelet/kubectl, kubeadm init on the
//     first kube_control_plane host and joins of the others and of the
//     workers through the simulated kubeadm of internal/sim/kube run on
//     the nodes over SSH, node name = inventory name, pod and service
//     networks and supplementary_addresses_in_ssl_keys from the
//     group_vars, admin.conf copied to root's ~/.kube/config, Calico
//     applied); scale.yml (the --limit fact-cache assert since v2.27.0,
//     then the kube_node hosts join); remove-node.yml (node required
//     since v2.28.0, before a missing node targets every node; the
//     confirmation: v2.16.0's vars_prompt, skip_confirmation since
//     v2.17.0 and without a terminal a pause that does not wait and a
//     failed "Delete nodes confirmation failed"; drain and delete
//     delegated to the first control plane, allow_ungraceful_removal,
//     reset_nodes with kubeadm reset). Idempotent: a rerun reports
//     changed=0.
//   - Output (display.go): banners to 80 columns, lazy task banners with
//     display_skipped_hosts = no, ok/changed/fatal lines with Python's
//     json.dumps formatting (indent 4 for assert), the PLAY RECAP
//     ([RecapLine]), profile_tasks' TASKS RECAP; exit codes 0, 1, 2 and 4
//     (unreachable wins).
//   - Faults ([FaultsOf]): a task failing on a host, a host unreachable,
//     a run hanging at a task until cancelled.
//
// # Differences from kubespray
//
// The roles are modelled, not interpreted: the simulation runs the
// effect of the tasks that matter, under their real names, and leaves
// most of kubespray's hundreds of tasks out, so task counts in the RECAP
// are smaller than a real run's. Kubespray downloads binaries to
// /usr/local/bin and runs etcd as a host service (etcd_deployment_type:
// host); the simulation installs the machines' packages (kubeadm, kubelet
// and kubectl of the catalog's newest Kubernetes, or kube_version when
// the catalog has it) and uses kubeadm's stacked etcd, so that the
// world's clusters are exactly kubeadm's. There is no nginx-proxy on the
// nodes: the control-plane endpoint and the workers' discovery address
// are the first control plane's ip:6443. The node list before a drain
// is read with `kubectl get nodes -o name` (kubespray: -o go-template).
//
// # What a driver must know
//
// With kubespray's ansible.cfg (host_key_checking=False in every
// release; ssh_args ending in UserKnownHostsFile=/dev/null in v2.16.0 and
// v2.28.1, while v2.23.3 writes `ansible_ssh_args`, a key Ansible
// ignores), ansible_ssh_common_args cannot turn host-key checking on:
// OpenSSH keeps the first value of each option, and the plugin puts
// ssh_args and StrictHostKeyChecking=no first. A driver that wants its
// known_hosts checked sets ansible_ssh_args (replacing ssh_args) and
// ansible_host_key_checking: true in the inventory.
// kube_pods_subnet and kube_service_addresses must be network addresses
// (validate_inventory: "192.168.3.0/16 is not a valid network range").
// remove-node.yml's boilerplate and facts plays run on every host, so
// every host appears in its RECAP: a host's presence there does not
// prove it was removed.
package ansible
