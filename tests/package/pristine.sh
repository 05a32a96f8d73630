#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# ./quickstart check as a newcomer runs it: on a pristine Debian 12 (a `debootstrap
# --variant=minbase` root with git and nothing else, from this machine's Debian sources),
# in a fresh clone of this checkout's HEAD. ./quickstart installs everything it needs
# there itself (Debian's own nodejs 18 included), so a package it forgets to install, or a
# tool this machine has and a fresh box lacks, fails here. The root is a chroot with the
# host's /proc, /sys and /dev, so the boot test inside it can boot its container.
# As root; takes as long as a check plus the installs (about 30 minutes on 2 cores).
#   tests/package/pristine.sh [DIR]   (default /var/tmp/spindle-pristine; removed first)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/var/tmp/spindle-pristine}
[ "$(id -u)" -eq 0 ] || { echo "pristine: needs root"; exit 1; }
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)
[ -n "$mirror" ] || { echo "pristine: no Debian mirror in /etc/apt"; exit 1; }

mounts=()
cleanup() {
	local m
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
for m in proc sys dev; do umount -R -l "$DIR/$m" 2>/dev/null || true; done
umount -R -l "$DIR" 2>/dev/null || true
# never rm -rf through a mount of the host's /dev or /sys
if awk -v d="$DIR" '$5 == d || index($5, d "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
	echo "pristine: something is still mounted under $DIR; unmount it first"
	exit 1
fi
rm -rf "$DIR"
echo "pristine: debootstrap --variant=minbase --include=git,ca-certificates bookworm from $mirror"
debootstrap --variant=minbase --include=git,ca-certificates bookworm "$DIR" "$mirror" >/dev/null
# the machine's Debian sources (security updates too), as a fresh box has them
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
	rm -f "$DIR/etc/apt/sources.list"
	cp /etc/apt/sources.list.d/debian.sources "$DIR/etc/apt/sources.list.d/"
fi
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
# the machine's own local CAs (a box behind a TLS-inspecting proxy has them too), so that
# npm reaches its registry from the root as from here
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
	cp /usr/local/share/ca-certificates/*.crt "$DIR/usr/local/share/ca-certificates/"
	chroot "$DIR" update-ca-certificates >/dev/null
fi
# the root a mount of its own, as / is on a real box: systemd-nspawn (the boot test) needs
# to remount /, and a benchmark's environment finds its filesystem in /proc/self/mountinfo
mount --bind "$DIR" "$DIR" && mounts+=("$DIR")
mount -t proc proc "$DIR/proc" && mounts+=("$DIR/proc")
mount --rbind /sys "$DIR/sys" && mount --make-rslave "$DIR/sys" && mounts+=("$DIR/sys")
mount --rbind /dev "$DIR/dev" && mount --make-rslave "$DIR/dev" && mounts+=("$DIR/dev")
mkdir -p "$DIR/run" "$DIR/tmp" && chmod 1777 "$DIR/tmp"
git clone -q "file://$(pwd)" "$DIR/root/spindle"
git -C "$DIR/root/spindle" checkout -q "$(git rev-parse HEAD)"
echo "pristine: ./quickstart check of $(git rev-parse --short HEAD) in $DIR/root/spindle"
start=$SECONDS
rc=0
chroot "$DIR" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 TERM=dumb CI=true ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt} \
	bash -c 'cd /root/spindle && ./quickstart check' || rc=$?
echo "pristine: ./quickstart check exited $rc after $((SECONDS - start)) s (node: $(chroot "$DIR" node --version 2>/dev/null || echo none))"
exit "$rc"
