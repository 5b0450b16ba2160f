#!/usr/bin/env bash
# Makes the image debian:bookworm-slim in the Docker engine at DOCKER_HOST
# without a container registry: debootstrap a minimal Debian 12 from the
# Debian mirror apt uses on this machine and `docker import` it. Does
# nothing when the engine already has the image.
#
#   tests/docker/base-image.sh WORK_DIR
#
# The image uses this machine's apt sources and trusts the same extra
# certificate authorities (/usr/local/share/ca-certificates), so builds on
# it reach the same package mirrors the same way; its apt keeps no lists and
# no caches, like the official slim image.
set -euo pipefail

image=debian:bookworm-slim
work=${1:?usage: base-image.sh WORK_DIR}

if docker image inspect "$image" >/dev/null 2>&1; then
	exit 0
fi

# The mirror: the first URIs of a deb822 source with the suite bookworm, else
# the first one-line "deb URL bookworm" source, else Debian's CDN.
mirror=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '
		/^[[:space:]]*$/ { if (uri != "" && suite) { print uri; exit } uri = ""; suite = 0; next }
		/^URIs:/ { uri = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
		END { if (uri != "" && suite) print uri }' /etc/apt/sources.list.d/debian.sources | head -n1)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}

rootfs="$work/rootfs"
# Never delete through a mount that a failed debootstrap left behind.
unmount_under() {
	local m
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
		while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
}
trap 'unmount_under "$rootfs"' EXIT
unmount_under "$rootfs"
rm -rf "$rootfs"
mkdir -p "$work"
echo "base image: debootstrap bookworm from $mirror"
if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
	tail -n 30 "$work/debootstrap.log" >&2
	exit 1
fi

# This machine's apt sources in place of debootstrap's.
rm -f "$rootfs/etc/apt/sources.list" "$rootfs"/etc/apt/sources.list.d/*
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
	cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/debian.sources"
elif [ -f /etc/apt/sources.list ]; then
	cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list"
else
	echo "deb $mirror bookworm main" >"$rootfs/etc/apt/sources.list"
fi
# The extra certificate authorities this machine trusts; they enter the
# trust store of an image when its ca-certificates package is installed.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
	mkdir -p "$rootfs/usr/local/share/ca-certificates"
	cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
fi

# What the official slim image does: no apt caches, compressed lists, no
# translations, no documentation.
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::GzipIndexes "true";' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
force-unsafe-io
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/lintian/*
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
	"$rootfs"/var/log/* "$rootfs"/tmp/* "$rootfs"/root/.bash_history
mkdir -p "$rootfs/var/lib/apt/lists/partial" "$rootfs/var/cache/apt/archives/partial"
: >"$rootfs/etc/hostname"
: >"$rootfs/etc/resolv.conf"

echo "base image: docker import $image"
tar --numeric-owner -C "$rootfs" -c . |
	docker import --change 'CMD ["bash"]' - "$image" >/dev/null
rm -rf "$rootfs"
docker image inspect "$image" --format 'base image: {{.RepoTags}} {{.Size}} bytes'
