#!/usr/bin/env bash
# Install what p2pc needs on Debian/Ubuntu: tshark and the Wireshark development files, the
# compression libraries, cmake, and the Python packages the analyzer and tests use.
# Installs only what is missing; needs root (or sudo) for apt.
#   tools/install-deps.sh           what make demo, make test and make bench need
#   tools/install-deps.sh --fuzz    also clang and its sanitizer runtime (make fuzz, make libfuzz)
#   tools/install-deps.sh --keys    also clang, llvm and libbpf's headers (make keys: keys/keys.bpf.c)
set -euo pipefail
FUZZ=0 KEYS=0
[ "${1:-}" = "--fuzz" ] && FUZZ=1
[ "${1:-}" = "--keys" ] && KEYS=1

APT_PKGS=(tshark wireshark-dev libwireshark-dev liblzo2-dev libsnappy-dev zlib1g-dev
          libbrotli-dev libzstd-dev libgcrypt20-dev libisal-dev cmake make gcc pkg-config python3 python3-pip
          iproute2 util-linux iputils-ping ethtool
          chromium    # tests/test_reports.py renders the HTML report headless
          tcpreplay time    # make bench: tcprewrite gives each copy its own addresses; GNU time
          libgmp-dev python3-venv)   # captures/gen/py: pip builds fastecdsa 2.3.2 (no cp311 wheel) against GMP
if [ "$FUZZ" = 1 ]; then APT_PKGS+=(clang); fi
if [ "$KEYS" = 1 ]; then APT_PKGS+=(clang llvm libbpf-dev linux-libc-dev libcap2-bin); fi   # libcap2-bin: setcap (tests/test_keys.py)
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
if [ "$FUZZ" = 1 ]; then
  rt="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
  if ! dpkg-query -W -f='${Status}' "$rt" 2>/dev/null | grep -q "install ok installed"; then
    echo "p2pc: installing $rt"
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "$rt"
  fi
fi

# Python: the analyzer (editable, with its codec and plotting extras, and what the tests use).
# Debian's own python3 is "externally managed" (PEP 668): there pip needs --break-system-packages.
PY=${PYTHON:-python3}
if ! "$PY" -m pip install -q -e "analyzer[all,test]" 2>/dev/null; then
  echo "p2pc: pip install failed (an externally managed Python, PEP 668): installing with --break-system-packages"
  "$PY" -m pip install -q --break-system-packages -e "analyzer[all,test]"
fi
