#!/usr/bin/env bash
# Build p2pc and run the whole test suite (`make test`) against other Wireshark versions, each in
# a Debian minbase chroot made and cached by tools/chroot.sh, and print one line per version.
#
#   tools/ws-versions.sh [SUITE...]     default: trixie (Wireshark 4.4) sid (Wireshark 4.6)
#
# The chroot gets a copy of this work tree (what a clone would hold) and installs what it needs
# with the project's own tools/install-deps.sh.  Needs root and Debian's package archive.
# Exit status: 0 when every suite passed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -gt 0 ] || set -- trixie sid
LOGS=${P2PC_LOG_DIR:-build/ws-versions}
mkdir -p "$LOGS"
status=0
for suite in "$@"; do
  log=$LOGS/$suite.log
  start=$SECONDS
  rc=0
  P2PC_CHROOT_SRC=$PWD tools/chroot.sh "$suite" "ws-$suite" bash -c '
      set -e
      cd /src
      tools/install-deps.sh
      echo "p2pc-version: $(tshark --version | sed -n "1s/^TShark (Wireshark) \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p")"
      echo "p2pc-cc: gcc $(gcc -dumpfullversion)"
      make test' >"$log" 2>&1 || rc=$?
  ver=$(sed -n 's/^p2pc-version: //p' "$log" | tail -1)
  cc=$(sed -n 's/^p2pc-cc: //p' "$log" | tail -1)
  result=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//')
  line="Wireshark ${ver:-?} (Debian $suite, ${cc:-?}): ${result:-no test result} [$((SECONDS - start)) s, rc $rc]"
  echo "$line"
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "--- last lines of $log:"
    tail -n 40 "$log"
  fi
done
exit "$status"
