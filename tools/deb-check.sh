#!/usr/bin/env bash
# The Debian package on a bare machine: a fresh Debian 12 minbase chroot (nothing of Wireshark, no
# Python), `apt-get install ./p2pc_*.deb` (apt brings the matching libwireshark, tshark and the
# analyzer's Python packages), then, as root, what a user does first: tshark -O btcc,p2pc on the
# demo capture (the plugin and its decompression, from the global folder root's tshark loads),
# tshark -C p2pc (the global profile) and p2pc analyze (the analyzer, from Debian's Python).
#
#   tools/deb-check.sh [DEB]     default: the build/deb/p2pc_*.deb `make deb` built
# Needs root and Debian's package archive.  One line; the log is $P2PC_LOG_DIR/deb-bookworm.log.
set -euo pipefail
cd "$(dirname "$0")/.."
LOGS=${P2PC_LOG_DIR:-build/ws-versions}
LOG=$LOGS/deb-bookworm.log
DEMO=captures/bitcoin/btc-compressed.pcapng
mkdir -p "$LOGS"
deb=${1:-$(ls build/deb/p2pc_*.deb 2>/dev/null | head -1)}
[ -f "$deb" ] || { echo "deb-check: no package: run make deb" >&2; exit 1; }
start=$SECONDS
ROOT=${P2PC_CHROOT_CACHE:-/var/cache/p2pc/chroot}/deb
rc=0
# The chroot is made fresh first (an empty command), then given the package and the capture.
P2PC_CHROOT_FRESH=1 tools/chroot.sh bookworm deb true
mkdir -p "$ROOT/tmp/p2pc"
cp "$deb" "$DEMO" "$ROOT/tmp/p2pc/"
tools/chroot.sh bookworm deb bash -c '
    set -e
    cd /tmp/p2pc
    if command -v tshark || command -v python3; then echo "not a bare machine"; exit 1; fi
    apt-get update -q
    apt-get install -y -q --no-install-recommends ./p2pc_*.deb
    dpkg-query -W -f="p2pc-depends: \${Depends}\n" p2pc
    echo "p2pc-version: $(tshark --version | sed -n "1s/^TShark (Wireshark) \([0-9.]*\).*/\1/p")"
    tshark -r btc-compressed.pcapng -O btcc,p2pc > decoded.txt
    grep -c "Codec: lzo1x\]" decoded.txt | sed "s/^/p2pc-decompressed: /"
    tshark -C p2pc -r btc-compressed.pcapng -c 1 > /dev/null && echo "p2pc-profile: ok"
    p2pc analyze btc-compressed.pcapng' >"$LOG" 2>&1 || rc=$?
ver=$(sed -n 's/^p2pc-version: //p' "$LOG" | tail -1)
n=$(sed -n 's/^p2pc-decompressed: //p' "$LOG" | tail -1)
# The package names the libwireshark of its Wireshark major.minor, with both bounds.
mm=${ver%.*}
next=${mm%.*}.$(( ${mm#*.} + 1 ))
deps=$(sed -n 's/^p2pc-depends: //p' "$LOG")
if [ "$rc" -eq 0 ] && { [ "${n:-0}" -eq 0 ] || ! grep -q '^p2pc-profile: ok' "$LOG" || ! grep -Eq '^ALL +ALL +[0-9]' "$LOG" \
     || [[ "$deps" != *"libwireshark"*" (>= $mm"* ]] || [[ "$deps" != *"libwireshark"*" (<< $next~)"* ]]; }; then
  echo "deb-check: a check failed (depends: $deps)" >>"$LOG"
  rc=1
fi
echo "Debian package on bare Debian 12 (Wireshark ${ver:-?}): $(basename "$deb") $( [ "$rc" -eq 0 ] \
  && echo "installed with apt-get, root's tshark decompressed ${n} LZO1X messages, -C p2pc and p2pc analyze worked" \
  || echo FAILED) [$((SECONDS - start)) s, rc $rc]"
if [ "$rc" -ne 0 ]; then
  echo "--- last lines of $LOG:"
  tail -n 30 "$LOG"
fi
exit "$rc"
