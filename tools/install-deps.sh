#!/usr/bin/env bash
# Install what p2pc needs on Debian/Ubuntu, only what is missing: Debian packages with apt (as
# root, or through sudo), and the analyzer in a virtual environment of this checkout (.venv),
# never into the system's Python.
#   tools/install-deps.sh           what make demo needs: tshark, the Wireshark development files,
#                                   the compression libraries, cmake, and the analyzer (.venv)
#   tools/install-deps.sh --test    also what the test suite, make bench and the capture generators
#                                   use (Chromium, network tools, tcpreplay, GMP) and the analyzer's
#                                   codec, cluster and test extras
#   tools/install-deps.sh --fuzz    also clang and its sanitizer runtime (make fuzz, make libfuzz)
#   tools/install-deps.sh --keys    also clang, llvm and libbpf's headers (make keys: keys/keys.bpf.c)
#   tools/install-deps.sh --deb     also Debian's packaging tools (make deb: packaging/debian)
# The p2pc command is linked into ~/.local/bin (as pipx does); the line it prints says so.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${1:-}
case "$PROFILE" in ""|--test|--fuzz|--keys|--deb) ;; *) echo "usage: $0 [--test|--fuzz|--keys|--deb]" >&2; exit 2;; esac

APT_PKGS=(tshark wireshark-dev libwireshark-dev liblzo2-dev libsnappy-dev zlib1g-dev
          libbrotli-dev libzstd-dev libgcrypt20-dev libisal-dev cmake make gcc pkg-config
          python3 python3-venv)
EXTRAS=""
if [ "$PROFILE" = --test ]; then
  APT_PKGS+=(iproute2 util-linux iputils-ping ethtool
             chromium    # tests/test_reports.py renders the HTML report headless
             tcpreplay time    # make bench: tcprewrite gives each copy its own addresses; GNU time
             libgmp-dev)   # captures/gen/py: pip builds fastecdsa 2.3.2 (no cp311 wheel) against GMP
  EXTRAS="[all,test]"
fi
if [ "$PROFILE" = --fuzz ]; then APT_PKGS+=(clang); fi
if [ "$PROFILE" = --keys ]; then APT_PKGS+=(clang llvm libbpf-dev linux-libc-dev libcap2-bin); fi   # libcap2-bin: setcap (tests/test_keys.py)
if [ "$PROFILE" = --deb ]; then
  APT_PKGS+=(build-essential dpkg-dev debhelper dh-python python3-all python3-setuptools pybuild-plugin-pyproject)
fi
SUDO=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=(sudo); fi

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "p2pc: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    :
  elif [ ${#SUDO[@]} -gt 0 ]; then
    echo "p2pc: not root, using sudo for apt-get (you may be asked for your password)"
  else
    echo "p2pc: these Debian packages are missing: ${missing[*]}" >&2
    echo "p2pc: run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer no without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | "${SUDO[@]}" debconf-set-selections || true
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# libFuzzer and the sanitizer runtimes come with clang's versioned compiler-rt package.
if [ "$PROFILE" = --fuzz ]; then
  rt="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
  if ! dpkg-query -W -f='${Status}' "$rt" 2>/dev/null | grep -q "install ok installed"; then
    echo "p2pc: installing $rt"
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "$rt"
  fi
fi

# The analyzer, editable (it runs this checkout's code), in .venv: Debian's python3 is "externally
# managed" (PEP 668), and what a user installs for p2pc must not change their system's Python.  A
# .venv made elsewhere (a copied tree: its scripts name another path) is made again.
# P2PC_VENV puts it elsewhere (tests/test_install.py).
VENV=${P2PC_VENV:-$PWD/.venv}
PY=${PYTHON:-python3}
if ! [ -x "$VENV/bin/python" ] || [ "$("$VENV/bin/python" -c 'import sys; print(sys.prefix)' 2>/dev/null)" != "$VENV" ]; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
# One pip at a time in it: CI's builds run make targets side by side (.ci/run).
flock "$VENV/.p2pc-lock" "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "analyzer$EXTRAS"

# The p2pc command on the user's PATH: a link in ~/.local/bin, which Debian's ~/.profile puts on
# PATH when it exists (for root it does not: then say so).
bin=$HOME/.local/bin
mkdir -p "$bin"
ln -sfn "$VENV/bin/p2pc" "$bin/p2pc"
case ":$PATH:" in
  *":$bin:"*) echo "p2pc: the p2pc command is $bin/p2pc (in $VENV)";;
  *) echo "p2pc: the p2pc command is $bin/p2pc (in $VENV); $bin is not on your PATH: add it, or log in again";;
esac
