#!/usr/bin/env python3
"""The go-libp2p peers tests/test_keys.py runs `p2pc keys` on: eth2peers (captures/gen/libp2p)
built from the registries with no patch, for two pinned go-libp2p releases and two Go releases,
each built normally and stripped as release builds are (-ldflags='-s -w': no symbol table, no
DWARF; release builds often add -trimpath too, which changes only the file names in .gopclntab,
and would cost a second compile of everything here).

  v0.39.1          go.mod, the machine's Go (1.26); Noise and TLS (its quic-go v0.49.0 panics as
                   a QUIC server under Go 1.26: captures/gen/make_eth2.py); also stripped and
                   linked externally (-linkmode=external, gcc), as cgo programs are
  v0.51.0-go1.27   go.v0.51.mod (-tags nomplex: libp2p/nomplex.go), Go 1.27.3 from the module
                   proxy (GOTOOLCHAIN); Noise, TLS and QUIC

`python3 captures/gen/keypeers.py` builds them all into captures/gen/_work (CI does it while it
installs, so that the tests find them built).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golib import go_build  # noqa: E402

STRIP = ("-ldflags=-s -w",)
# Linked by the C toolchain, as a cgo program is (kubo, Prysm): C code comes before runtime.text,
# which a stripped program names only in the runtime's module data (keys/target.go, textStart).
CGO_STRIP = ("-ldflags=-s -w -linkmode=external",)
V051 = dict(modfile="go.v0.51.mod", toolchain="go1.27.3")
# name: (go_build's arguments, the securities its cells run)
BUILDS = {
    "v0.39.1": (dict(), ("noise", "tls")),
    "v0.39.1-stripped": (dict(flags=STRIP), ("noise", "tls")),
    "v0.39.1-cgo-stripped": (dict(flags=CGO_STRIP), ("noise", "tls")),
    "v0.51.0-go1.27": (dict(flags=("-tags=nomplex",), **V051), ("noise", "tls", "quic")),
    "v0.51.0-go1.27-stripped": (dict(flags=("-tags=nomplex", *STRIP), **V051), ("noise", "tls", "quic")),
}


def build(name: str) -> Path:
    return go_build("libp2p", f"eth2peers-{name}", **BUILDS[name][0])


if __name__ == "__main__":
    for name in BUILDS:
        print(build(name))
