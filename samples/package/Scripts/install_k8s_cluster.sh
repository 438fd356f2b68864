#!/bin/bash
# Tacker's sample drivers run this script on every node to install
# Kubernetes. mgmtkit's kubeadm package installs nodes with its own typed,
# idempotent steps and never runs it; it is in this package because the
# specs' sample requests name it as k8s_cluster_installation_param.script_path,
# a required parameter that must resolve inside the VNF package.
set -euo pipefail
echo "install_k8s_cluster.sh: use mgmtkit's kubeadm steps instead of this script" >&2
exit 1
