#!/usr/bin/env python3
"""Make the BIP324 captures in captures/bitcoin/ (btc-bip324-*) from real TCP connections.

Two peers of captures/gen/bip324/ (Rust: the rust-bitcoin `bip324` crate 0.11.0 for the v2
transport, rust-bitcoin 0.32.102 for the messages; built with cargo from its Cargo.lock) run in
two network namespaces joined by the emulated link the other Bitcoin captures use (netem.py: 60
ms each way, 20 Mbit/s, MTU 1500); dumpcap captures on the dialer's side.  The listener is a
BIP324 responder on port 8333 that falls back to v1 when the first 16 bytes it reads are the
network magic and "version\\0\\0\\0\\0\\0" (BIP324); the dialer speaks v2, or v1.  Each peer
prints what it wrote (every handshake unit and message, with its bytes on the wire): the
truth file is both peers' own words.  Needs root and cargo:
    sudo python3 captures/gen/make_bip324.py [SESSION...]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "bitcoin"
BLOCK = HERE.parent / "data" / "bitcoin" / "testnet3_block924634.raw"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 8333
SESSIONS = {"btc-bip324-v2": "v2", "btc-bip324-v1fallback": "v1"}
IMPLEMENTATION = ("captures/gen/bip324 (bip324peers): bip324 0.11.0 (rust-bitcoin, io::Protocol), "
                  "bitcoin 0.32.102 (rust-bitcoin p2p messages)")


def build() -> Path:
    target = WORK / "cargo-bip324"
    subprocess.run(["nice", "cargo", "build", "--release", "--locked", "-q"], cwd=HERE / "bip324", check=True,
                   env=dict(os.environ, CARGO_TARGET_DIR=str(target)))
    return target / "release" / "bip324peers"


def make(name: str, transport: str, exe: Path) -> None:
    cap = OUT / f"{name}.pcapng"
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "listen", str(PORT), str(BLOCK)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        a = link.run("a", [str(exe), "dial", f"{link.addr_b}:{PORT}", transport, str(BLOCK)],
                     capture_output=True, text=True, timeout=60)
        b_out, _ = b.communicate(timeout=30)
    if a.returncode or b.returncode:
        raise SystemExit(f"{name}: dialer {a.returncode} {a.stderr}, listener {b.returncode}")
    truth = {
        "capture": cap.name,
        "implementation": IMPLEMENTATION,
        "block": BLOCK.name,
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        # What each peer wrote, in order, as it says (bip324peers' JSON line).
        "dialer": json.loads(a.stdout),
        "listener": json.loads(b_out),
    }
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def main() -> None:
    exe = build()
    for name in sys.argv[1:] or list(SESSIONS):
        make(name, SESSIONS[name], exe)


if __name__ == "__main__":
    main()
