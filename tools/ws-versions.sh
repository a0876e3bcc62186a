#!/usr/bin/env bash
# Build p2pc and run the whole test suite (`make test`) against other Wireshark versions, each in
# a Debian minbase chroot made and cached by tools/chroot.sh, and print one line per version.
#
#   tools/ws-versions.sh [--gui] [SUITE...]   default: trixie (Wireshark 4.4) sid (Wireshark 4.6)
#
# --gui runs `tools/gui-check.py` (make gui-check: the real GUI under Xvfb) instead of the tests,
# in chroots of their own (gui-SUITE: the GUI packages stay out of the ws-SUITE ones CI caches).
# Its screenshots go to build/gui-versions/ as NAME-MAJOR.MINOR.png, the Statistics ones
# (stats-savings*-X.Y.png) also to docs/screenshots/.
#
# The chroot gets a copy of this work tree (what a clone would hold) and installs what it needs
# with the project's own tools/install-deps.sh.  Needs root and Debian's package archive.
# Each suite's JUnit report goes to $P2PC_LOG_DIR/SUITE.xml (.ci/run reads them).
# Exit status: 0 when every suite passed.
set -euo pipefail
cd "$(dirname "$0")/.."
gui=0
if [ "${1:-}" = --gui ]; then gui=1; shift; fi
[ "$#" -gt 0 ] || set -- trixie sid
LOGS=${P2PC_LOG_DIR:-build/ws-versions}
mkdir -p "$LOGS"
status=0
for suite in "$@"; do
  start=$SECONDS
  rc=0
  if [ "$gui" = 1 ]; then
    log=$LOGS/gui-$suite.log
    # The GUI check's screenshots are named by the Wireshark version: NAME-X.Y.png.
    run='make build && .venv/bin/python tools/gui-check.py --out /src/build/gui-shots --suffix "-${ver%.*}"'
    chroot=gui-$suite
    deps=""
  else
    log=$LOGS/$suite.log
    # P2PC_TESTS (tests/conftest.py) as given: .ci/run's versioned skips the `once` tests.
    run="P2PC_TESTS=${P2PC_TESTS:-all} PYTEST_ADDOPTS=--junitxml=/src/build/junit.xml make test"
    chroot=ws-$suite
    deps=--test
    rm -f "$LOGS/$suite.xml"
  fi
  P2PC_CHROOT_SRC=$PWD tools/chroot.sh "$suite" "$chroot" bash -c '
      set -e
      cd /src
      tools/install-deps.sh '"$deps"'
      ver=$(tshark --version | sed -n "1s/^TShark (Wireshark) \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p")
      echo "p2pc-version: $ver"
      echo "p2pc-cc: gcc $(gcc -dumpfullversion)"
      '"$run" >"$log" 2>&1 || rc=$?
  ver=$(sed -n 's/^p2pc-version: //p' "$log" | tail -1)
  cc=$(sed -n 's/^p2pc-cc: //p' "$log" | tail -1)
  if [ "$gui" = 1 ]; then
    shots=${P2PC_CHROOT_CACHE:-/var/cache/p2pc/chroot}/$chroot/src/build/gui-shots
    mkdir -p build/gui-versions
    if [ "$rc" -eq 0 ]; then
      cp "$shots"/*.png build/gui-versions/ && cp "$shots"/stats-savings*.png docs/screenshots/ || rc=1
    fi
    result=$(grep -E '^gui-check: (savings window at|FAILED)' "$log" | tail -1 | sed 's/^gui-check: //' || true)
  else
    cp "${P2PC_CHROOT_CACHE:-/var/cache/p2pc/chroot}/$chroot/src/build/junit.xml" "$LOGS/$suite.xml" 2>/dev/null || true
    result=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//')
  fi
  line="Wireshark ${ver:-?} (Debian $suite, ${cc:-?}): ${result:-no test result} [$((SECONDS - start)) s, rc $rc]"
  echo "$line"
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "--- last lines of $log:"
    tail -n 40 "$log"
  fi
done
exit "$status"
