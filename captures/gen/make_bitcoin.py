#!/usr/bin/env python3
"""Make the Bitcoin captures in captures/bitcoin/ from real TCP connections.

Two peers (btc.py) run in two network namespaces joined by an emulated 1500-MTU link
(netem.py: 60 ms each way as in the BIP draft's tests, 20 Mbit/s); dumpcap captures on the
sender's side.  Each capture gets a truth file written from the generator's own inputs.
Needs root:  sudo python3 captures/gen/make_bitcoin.py [SESSION...]
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import btc  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "bitcoin"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 8333


def make(name: str, session: btc.Session) -> None:
    cap = OUT / f"{name}.pcapng"
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [sys.executable, str(HERE / "btc.py"), "peer-b", name, str(PORT)])
        time.sleep(0.5)
        link.run("a", [sys.executable, str(HERE / "btc.py"), "peer-a", name, link.addr_b, str(PORT)])
        b.wait(60)
    truth = {
        "capture": cap.name,
        "description": session.description,
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        "services_a": session.services_a,
        "services_b": session.services_b,
        # What peer A sent after the version/verack handshake, in order.
        "messages": [t for step in session.steps for t in step.truth],
    }
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    all_sessions = btc.sessions()
    for name in sys.argv[1:] or list(all_sessions):
        make(name, all_sessions[name]())


if __name__ == "__main__":
    main()
