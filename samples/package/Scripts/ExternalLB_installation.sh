#!/bin/bash
# External load balancer installation, in the calling convention of Tacker's
# kubespray driver: -m <comma-separated master IPs> -w <comma-separated worker IPs>.
# It installs HAProxy in front of the masters' API servers (port 8383 ->
# 6443) and writes a NodePort backend listing every node.
set -euo pipefail

masters=""
workers=""
while getopts "m:w:" opt; do
    case "$opt" in
    m) masters="$OPTARG" ;;
    w) workers="$OPTARG" ;;
    *) echo "usage: $0 -m MASTER_IPS -w WORKER_IPS" >&2; exit 2 ;;
    esac
done
if [ -z "$masters" ]; then
    echo "usage: $0 -m MASTER_IPS -w WORKER_IPS" >&2
    exit 2
fi

export DEBIAN_FRONTEND=noninteractive
sudo apt-get update -q
sudo apt-get install -y -q haproxy

cfg=$(mktemp)
{
    echo "global"
    echo "    log /dev/log local0"
    echo "    maxconn 4096"
    echo "defaults"
    echo "    mode tcp"
    echo "    timeout connect 5s"
    echo "    timeout client 1m"
    echo "    timeout server 1m"
    echo "frontend kubernetes-apiserver"
    echo "    bind *:8383"
    echo "    default_backend kubernetes-apiserver"
    echo "backend kubernetes-apiserver"
    echo "    balance roundrobin"
    i=1
    for ip in ${masters//,/ }; do
        echo "    server master$i $ip:6443 check"
        i=$((i + 1))
    done
    echo "backend kubernetes-nodeport"
    i=1
    for ip in ${masters//,/ } ${workers//,/ }; do
        echo "    server node$i $ip check"
        i=$((i + 1))
    done
} > "$cfg"
sudo install -m 0644 "$cfg" /etc/haproxy/haproxy.cfg
rm -f "$cfg"
sudo systemctl enable haproxy
sudo systemctl restart haproxy
