#!/usr/bin/env python3
"""Make captures/lumen/lumen.pcapng, the Lua API example's capture, from a real TCP connection.

Two peers (lumen.py) in network namespaces over the emulated link of netem.py (60 ms each way,
20 Mbit/s), port 40400; the truth file lists every message with what the generator encoded.
Needs root:  sudo python3 captures/gen/make_lumen.py
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lumen  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "lumen"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 40400


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    cap = OUT / "lumen.pcapng"
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [sys.executable, str(HERE / "lumen.py"), "b", "0", str(PORT)])
        link.run("a", [sys.executable, str(HERE / "lumen.py"), "a", link.addr_b, str(PORT)], timeout=120)
        if b.wait(60) != 0:
            raise RuntimeError(f"lumen: peer B exited {b.returncode}")
    msgs = []
    for i, (m, wire, sent) in enumerate(lumen.wire_messages()):
        ok = m.expect == "ok"
        msgs.append({"index": i, "side": m.side, "msg_type": lumen.TYPE_NAMES[m.mtype],
                     "codec": lumen.CODEC_NAMES[m.codec], "expect": m.expect, "wire_len": len(wire),
                     "header_len": lumen.HEADER.size, "payload_len": len(sent),
                     # A payload that fails to decompress counts as sent (no savings), as in C.
                     "raw_len": len(m.raw) if ok else len(sent),
                     "batch_count": m.batch if ok else 1,
                     "raw_sha256": hashlib.sha256(m.raw).hexdigest() if ok else None})
    truth = {"capture": cap.name, "description": "Lumen, the Lua API example (lua/examples/lumen.lua)",
             "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                      "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
             "max_raw": lumen.MAX_RAW, "messages": msgs}
    (OUT / "lumen.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


if __name__ == "__main__":
    main()
