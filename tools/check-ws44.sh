#!/usr/bin/env bash
# Build the plugin against Wireshark 4.4 (Debian trixie, in a debootstrap chroot) and run it on
# a capture, to keep the version shim honest.  Needs root and Debian's package archive.
#   tools/check-ws44.sh [CAPTURE]
set -euo pipefail
ROOT=${WS44_ROOT:-/opt/p2pc-trixie}
CAP=${1:-captures/bitcoin/btc-compressed.pcapng}
[ "$(id -u)" -eq 0 ] || { echo "check-ws44: needs root (debootstrap, chroot)"; exit 1; }
if [ ! -x "$ROOT/usr/bin/tshark" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
  debootstrap --variant=minbase trixie "$ROOT"
  cp /etc/resolv.conf "$ROOT/etc/"
  chroot "$ROOT" bash -c "export DEBIAN_FRONTEND=noninteractive;
    echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections;
    apt-get update -q && apt-get install -y -q --no-install-recommends tshark wireshark-dev \
      libwireshark-dev liblzo2-dev libsnappy-dev zlib1g-dev libbrotli-dev libzstd-dev \
      libgcrypt20-dev cmake make gcc pkg-config python3"
fi
rm -rf "$ROOT/src" && mkdir -p "$ROOT/src"
tar -c --exclude='./build*' --exclude=./.git . | tar -x -C "$ROOT/src"
chroot "$ROOT" bash -c "cd /src && cmake -S . -B build >/dev/null && cmake --build build -j2"
chroot "$ROOT" bash -c '
  set -e
  mm=$(tshark --version | sed -n "s/^TShark (Wireshark) \([0-9]*\.[0-9]*\).*/\1/p")
  H=$(mktemp -d); mkdir -p $H/.local/lib/wireshark/plugins/$mm/epan
  cp /src/build/plugins/$mm/epan/p2pc.so $H/.local/lib/wireshark/plugins/$mm/epan/
  chmod -R a+rX $H /src/captures
  setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$H tshark -G plugins | grep p2pc
  setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$H \
    tshark -n -q -r /src/'"$CAP"' -z p2pc,tree'
