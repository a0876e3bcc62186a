#!/usr/bin/env bash
# The two commands on a bare machine: a fresh Debian 12 minbase chroot (git, make and
# ca-certificates; nothing of Wireshark, no Python), a clean clone of this repository, its FIRST
# `make demo`, which must print the savings table, then `make test`, which runs every test (the
# chroot skips the `host` ones: it cannot make network namespaces).  Its JUnit report goes to
# $P2PC_LOG_DIR/bare.xml (.ci/run checks with it that the host ran what this chroot skipped).
#
#   tools/bare-check.sh        needs root and Debian's package archive
set -euo pipefail
cd "$(dirname "$0")/.."
LOGS=${P2PC_LOG_DIR:-build/ws-versions}
LOG=$LOGS/bare-bookworm.log
mkdir -p "$LOGS"
rm -f "$LOGS/bare.xml"
start=$SECONDS
rc=0
P2PC_CHROOT_FRESH=1 P2PC_CHROOT_CLONE=$PWD tools/chroot.sh bookworm bare bash -c '
    set -e
    cd /src
    if command -v tshark || command -v python3; then echo "not a bare machine"; exit 1; fi
    make demo
    echo "p2pc-version: $(tshark --version | sed -n "1s/^TShark (Wireshark) \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p")"
    PYTEST_ADDOPTS=--junitxml=/src/build/junit.xml make test' >"$LOG" 2>&1 || rc=$?
cp "${P2PC_CHROOT_CACHE:-/var/cache/p2pc/chroot}/bare/src/build/junit.xml" "$LOGS/bare.xml" 2>/dev/null || true
ver=$(sed -n 's/^p2pc-version: //p' "$LOG" | tail -1)
# The demo's verdict is its own: the savings table it printed, whatever make test did after.
if grep -Eq '^ALL +ALL +[0-9]' "$LOG"; then demo="printed the savings table"; else demo=FAILED; rc=1; fi
result=$(grep -E '^[0-9]+ (passed|failed)' "$LOG" | tail -1)
echo "Bare Debian 12 (Wireshark ${ver:-?}): first make demo $demo, make test: ${result:-no test result} [$((SECONDS - start)) s, rc $rc]"
if [ "$rc" -ne 0 ]; then
  echo "--- last lines of $LOG:"
  tail -n 40 "$LOG"
fi
exit "$rc"
