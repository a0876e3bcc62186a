#!/usr/bin/env python3
"""Make the Ethereum consensus-layer captures in captures/eth2/ from real go-libp2p hosts.

captures/gen/libp2p/ is a Go program on go-libp2p v0.39 (plaintext security, yamux or mplex
through github.com/libp2p/go-mplex v0.7.0) and go-libp2p-pubsub v0.15.0: the dialer asks the
listener for status, ping, metadata and beacon_blocks_by_range (three real mainnet blocks and an
error chunk), publishes blocks on the mainnet beacon_block gossip topic, and says goodbye.  The
hosts run in two network namespaces over netem.py's emulated link.  Needs root and Go.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK, go_build, listener_addr  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "eth2"
BLOCKS = HERE.parent / "data" / "ethereum"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 9000
SESSIONS = {"eth2-yamux": ("yamux", 2), "eth2-mplex": ("mplex", 1)}


def build() -> Path:
    return go_build("libp2p", "eth2peers")


def make(name: str, muxer: str, gossip: int, exe: Path) -> None:
    cap = OUT / f"{name}.pcapng"
    idfile = WORK / f"{name}.id"
    idfile.unlink(missing_ok=True)
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "-role", "listen", "-muxer", muxer, "-blocks", str(BLOCKS),
                             "-idfile", str(idfile), "-seed", "2", "-listen", f"/ip4/0.0.0.0/tcp/{PORT}",
                             "-gossip", str(gossip)])
        addr = listener_addr(idfile, link.addr_b)
        link.run("a", [str(exe), "-role", "dial", "-muxer", muxer, "-blocks", str(BLOCKS), "-peer", addr,
                       "-seed", "1", "-gossip", str(gossip)], timeout=180)
        b.wait(60)
    blocks = sorted(BLOCKS.glob("*.ssz"))
    truth = {
        "capture": cap.name, "muxer": muxer, "security": "/plaintext/2.0.0",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        "requests": ["status/1", "ping/1", "metadata/2", "beacon_blocks_by_range/2", "goodbye/1"],
        "blocks_by_range": [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                             "fork": "bellatrix" if "bellatrix" in p.name else "capella"} for p in blocks],
        "error_chunk": {"result": 3, "message": "blocks beyond the three real ones are not served"},
        "gossip": {"topic": "/eth2/bba4da96/beacon_block/ssz_snappy",
                   "blocks": [p.name for p in blocks[:gossip]]},
    }
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def broken_variants() -> None:
    """eth2-badcrc: the first 120 frames of eth2-yamux with one bit of the ping response's
    masked CRC-32C flipped.  eth2-truncated: eth2-yamux cut in the middle of the first block's
    response chunk."""
    src = OUT / "eth2-yamux.pcapng"
    head = WORK / "head.pcapng"
    subprocess.run(["editcap", "-r", str(src), str(head), "1-120"], check=True)
    data = bytearray(head.read_bytes())
    # stream identifier, an uncompressed chunk of 8 + 4 bytes, its CRC, then uint64 7 (the pong)
    marker = b"sNaPpY\x01\x0c\x00\x00"
    pos = 0
    while True:
        pos = data.index(marker, pos) + len(marker)
        if data[pos + 4:pos + 12] == (7).to_bytes(8, "little"):
            data[pos] ^= 0x01
            break
    (OUT / "eth2-badcrc.pcapng").write_bytes(bytes(data))
    subprocess.run(["editcap", "-r", str(src), str(OUT / "eth2-truncated.pcapng"), "1-300"], check=True)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    exe = build()
    for name in sys.argv[1:] or list(SESSIONS):
        make(name, *SESSIONS[name], exe)
    broken_variants()


if __name__ == "__main__":
    main()
