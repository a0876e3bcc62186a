#!/usr/bin/env python3
"""Make the FISCO BCOS 3.x captures in captures/fisco/ (fisco3-*.pcapng) from real TCP connections.

Two gateways (fisco3.py) in network namespaces over the emulated link of netem.py (60 ms each
way, 20 Mbit/s), port 30300 (3.x's default P2P port, as 2.x's): at V2 with enable_compress on
and off, and a session negotiated at each other version (V0, V1, V3) with compression on.  Needs root:  sudo python3 captures/gen/make_fisco3.py [SESSION ...]
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fisco3  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "fisco"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 30300


def make(name: str, spec: dict) -> None:
    cap = OUT / f"{name}.pcapng"
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [sys.executable, str(HERE / "fisco3.py"), name, "b", "0", str(PORT)])
        link.run("a", [sys.executable, str(HERE / "fisco3.py"), name, "a", link.addr_b, str(PORT)], timeout=120)
        if b.wait(60) != 0:
            raise RuntimeError(f"{name}: peer B exited {b.returncode}")
    out = []
    nodes = fisco3.nodes()
    negotiated = min(spec["max"])
    for i, (m, wire, hlen, sent) in enumerate(fisco3.wire_messages(name)):
        compressed = len(sent) != len(m.payload) or sent != m.payload
        peer = "b" if m.side == "a" else "a"
        ids = ({"src_p2p_id": nodes[m.side].p2p_id_for(negotiated).hex(),
                "dst_p2p_id": nodes[peer].p2p_id_for(negotiated).hex()} if m.version >= 1 else {})
        out.append({"index": i, "side": m.side, "version": m.version, "packet_type": m.ptype, "seq": m.seq,
                    "module": m.module, "msg_type": m.msg_type, "compressed": compressed,
                    "codec": "zstd" if compressed else "none", "response": bool(m.ext & fisco3.RESPONSE),
                    "wire_len": len(wire), "header_len": hlen, "payload_len": len(sent),
                    "raw_len": len(m.payload), "raw_sha256": hashlib.sha256(m.payload).hexdigest(),
                    "batch_count": m.batch, "max_version": m.max_version, "dst_count": m.dst if m.module else None,
                    **ids})
    truth = {"capture": cap.name, "description": spec["desc"],
             "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                      "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
             "compress": spec["compress"], "threshold": fisco3.THRESHOLD,
             "max_version": dict(zip("ab", spec["max"])), "negotiated_version": negotiated, "messages": out}
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    all_s = fisco3.sessions()
    for name in sys.argv[1:] or list(all_s):
        make(name, all_s[name])


if __name__ == "__main__":
    main()
