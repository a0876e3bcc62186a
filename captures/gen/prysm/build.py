"""Prysm's beacon node, validator client and prysmctl, built from the Go module proxy's release
source, with go-libp2p's Noise and QUIC keys logged or, with keylog=False, with go-libp2p as
published (make_prysm.py imports this).

`go install …@v7.1.2` refuses the module (its go.mod has replace directives), so the release's
module is downloaded as its source zip, copied into captures/gen/_work/prysm/src and built there
with its own go.mod and go.sum, changed in two ways only:
- the zip leaves out third_party/go-bip39 (a module of its own, which go.mod's replace points
  at): the build takes the go-bip39 v1.1.0 that go.mod requires, as published; the validator
  uses it only for mnemonic wallets, not for the interop keys run here;
- go-libp2p (v0.39.1, as Prysm pins it) and quic-go (Prysm's pinned pseudo-version) are copies
  patched with captures/gen/libp2p/keylog/: Noise writes its keys to $LIBP2P_NOISE_KEYLOG, QUIC's
  TLS its secrets to $SSLKEYLOGFILE, and quic-go does not panic when built with Go 1.26.
  keylog=False leaves go-libp2p as published and patches quic-go with the Go 1.26 fix alone
  (not key handling: quic-go built with Go 1.26 panics after a QUIC handshake without it); that build goes
  to its own src-unpatched and bin-unpatched, so both builds are kept.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN = HERE.parent
WORK = GEN / "_work" / "prysm"
PRYSM = "github.com/OffchainLabs/prysm/v7"
VERSION = "v7.1.2"
KEYLOG = GEN / "libp2p" / "keylog"
KEYLOG_PATCHES = {
    "github.com/libp2p/go-libp2p": [("p2p/security/noise/handshake.go", "noise-handshake.go.patch"),
                                    ("p2p/transport/quic/transport.go", "quic-transport.go.patch")],
}
GO126_PATCHES = {
    "github.com/quic-go/quic-go": [("internal/handshake/crypto_setup.go", "quic-go-session-ticket.go.patch")],
}
COMMANDS = ("beacon-chain", "validator", "prysmctl")
ENV = dict(os.environ, GOFLAGS="-mod=mod")


def _download(module: str, cwd: Path = Path("/")) -> dict:
    """In cwd: a dependency is checked against the go.sum there."""
    out = subprocess.run(["go", "mod", "download", "-json", module], capture_output=True, text=True,
                         check=True, env=ENV, cwd=cwd)
    return json.loads(out.stdout)


def _required(gomod: str, module: str) -> str:
    for line in gomod.splitlines():
        parts = line.split("//")[0].split()
        if parts[:1] == ["require"]:
            parts = parts[1:]
        if len(parts) == 2 and parts[0] == module:
            return parts[1]
    raise KeyError(module)


def build(keylog: bool = True) -> dict[str, Path]:
    """The three programs, in _work/prysm/bin, or bin-unpatched without keylog (kept between
    runs: the build takes long)."""
    suffix = "" if keylog else "-unpatched"
    out = WORK / f"bin{suffix}"
    bins = {c: out / c for c in COMMANDS}
    if all(p.exists() for p in bins.values()):
        return bins
    src = WORK / f"src{suffix}"
    shutil.rmtree(src, ignore_errors=True)
    release = _download(f"{PRYSM}@{VERSION}")
    shutil.copytree(release["Dir"], src)
    subprocess.run(["chmod", "-R", "u+w", str(src)], check=True)
    gomod = (src / "go.mod").read_text()
    gomod = "\n".join(ln for ln in gomod.splitlines()
                      if not ln.startswith("replace github.com/tyler-smith/go-bip39")) + "\n"
    for module, files in ({**KEYLOG_PATCHES, **GO126_PATCHES} if keylog else GO126_PATCHES).items():
        version = _required(gomod, module)
        copy = WORK / "patched" / f"{module}@{version}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(_download(f"{module}@{version}", src)["Dir"], copy)
        subprocess.run(["chmod", "-R", "u+w", str(copy)], check=True)
        for file, diff in files:
            subprocess.run(["patch", "-s", str(copy / file), str(KEYLOG / diff)], check=True)
        gomod += f"replace {module} => {copy}\n"
    (src / "go.mod").write_text(gomod)
    out.mkdir(parents=True, exist_ok=True)
    # The version the nodes give (identify's agent version, --version), as Prysm's release
    # builds stamp it: the tag and the commit the module proxy says the release is.
    stamp = f"{PRYSM}/runtime/version"
    ldflags = f"-X {stamp}.gitTag={VERSION} -X {stamp}.gitCommit={release['Origin']['Hash']}"
    # One go command for the three: what they share is compiled once.  -p 1: the machine is small.
    subprocess.run(["nice", "-n", "19", "go", "build", "-p", "1", "-trimpath", "-ldflags", ldflags,
                    "-o", f"{out}/", *(f"./cmd/{c}" for c in COMMANDS)], cwd=src, check=True, env=ENV)
    return bins


if __name__ == "__main__":
    import sys
    print(build(keylog="--unpatched" not in sys.argv[1:]))
