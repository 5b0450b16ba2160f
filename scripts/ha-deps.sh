#!/usr/bin/env bash
# Installs what the Patroni failover suite (tests/patroni) runs: Patroni and
# etcd from Debian's packages (patroni, etcd-server). The packages' own
# services are not started; the suite runs its own etcd and Patroni nodes
# on loopback ports. A second run installs nothing.
#
#   scripts/ha-deps.sh
set -euo pipefail

packages=(patroni etcd-server)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
sudo=
[ "$(id -u)" != 0 ] && sudo=sudo
echo "ha-deps: installing ${missing[*]}"
$sudo apt-get update -qq
# policy-rc.d keeps the packages' services from starting on install where
# the machine has no init; where it has one they are stopped right after.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
	$sudo systemctl disable --now etcd patroni >/dev/null 2>&1 || true
fi
