#!/usr/bin/env bash
# Run a command in a Debian minbase chroot, made on first use with debootstrap and cached.
#
#   tools/chroot.sh SUITE NAME [COMMAND...]
#
# SUITE is a Debian suite (bookworm, trixie, sid); NAME names the cached chroot under
# $P2PC_CHROOT_CACHE (default /var/cache/p2pc/chroot).  A missing chroot is made with
# `debootstrap --variant=minbase` plus git, make and ca-certificates, and nothing else: what the
# project needs beyond that, its own tools/install-deps.sh installs inside.  The chroot gets /proc,
# /sys, /dev and /dev/pts for the command's life and the host's resolv.conf.
#
#   P2PC_CHROOT_FRESH=1   start from the cached minbase tarball instead of the cached tree
#                         (the "bare machine": nothing installed by an earlier run survives)
#   P2PC_CHROOT_SRC=DIR   copy the git work tree DIR (tracked and untracked, not ignored files:
#                         what a clone of it would hold) into /src first, replacing any old /src
#   P2PC_CHROOT_CLONE=DIR clone the git repository DIR (its HEAD) into /src instead
# Needs root and Debian's package archive.
set -euo pipefail

SUITE=${1:?usage: tools/chroot.sh SUITE NAME [COMMAND...]}
NAME=${2:?usage: tools/chroot.sh SUITE NAME [COMMAND...]}
shift 2
CACHE=${P2PC_CHROOT_CACHE:-/var/cache/p2pc/chroot}
MIRROR=${P2PC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOT=$CACHE/$NAME
BASE=$CACHE/$SUITE-minbase.tar

[ "$(id -u)" -eq 0 ] || { echo "chroot.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
mkdir -p "$CACHE"

unmount_all() {
  for m in dev/pts dev sys proc; do
    mountpoint -q "$ROOT/$m" 2>/dev/null && umount -l "$ROOT/$m"
  done
  return 0
}

make_base() {
  command -v debootstrap >/dev/null || {
    apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; }
  local tmp=$CACHE/$SUITE-minbase.tmp
  rm -rf "$tmp"
  echo "chroot.sh: debootstrap $SUITE (minbase, git, make, ca-certificates)" >&2
  debootstrap --variant=minbase --include=git,make,ca-certificates "$SUITE" "$tmp" "$MIRROR" \
    >"$CACHE/$SUITE-debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/$SUITE-debootstrap.log" >&2; exit 1; }
  # sid's Release file in the package registry is past its Valid-Until date.
  echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99p2pc-valid-until"
  tar -C "$tmp" -cf "$BASE.tmp" . && mv "$BASE.tmp" "$BASE"
  rm -rf "$tmp"
}

# CI makes several chroots of one suite at once (.ci/run): one of them makes the tarball.
exec {base_lock}>"$CACHE/$SUITE-minbase.lock"
flock "$base_lock"
[ -f "$BASE" ] || make_base
flock -u "$base_lock"
if [ "${P2PC_CHROOT_FRESH:-0}" = 1 ] || [ ! -x "$ROOT/bin/bash" ]; then
  unmount_all
  rm -rf "$ROOT" && mkdir -p "$ROOT"
  tar -C "$ROOT" -xf "$BASE"
fi

cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# The host's trust store, for pip: the registries may be reached through a proxy whose CA only
# the host trusts.
HOST_CA=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
[ -f "$HOST_CA" ] && cp "$HOST_CA" "$ROOT/etc/p2pc-host-ca.crt"
if [ -n "${P2PC_CHROOT_CLONE:-}" ]; then
  rm -rf "$ROOT/src"
  git clone -q --no-hardlinks "$P2PC_CHROOT_CLONE" "$ROOT/src"
elif [ -n "${P2PC_CHROOT_SRC:-}" ]; then
  rm -rf "$ROOT/src" && mkdir -p "$ROOT/src"
  git -C "$P2PC_CHROOT_SRC" ls-files -z -co --exclude-standard \
    | tar -C "$P2PC_CHROOT_SRC" --null -T - -cf - | tar -C "$ROOT/src" -xf -
fi
trap unmount_all EXIT
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
# A clean environment, as on a new machine: only what apt and pip need to reach the registries.
pass=()
for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_DEFAULT_TIMEOUT http_proxy https_proxy no_proxy; do
  [ -n "${!v:-}" ] && pass+=("$v=${!v}")
done
[ -f "$ROOT/etc/p2pc-host-ca.crt" ] && pass+=(PIP_CERT=/etc/p2pc-host-ca.crt)
chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" DEBIAN_FRONTEND=noninteractive "${pass[@]}" \
  "${@:-/bin/bash}"
