#!/usr/bin/env python3
"""Make the libp2p compression-transport captures in captures/libp2p-compression/.

Peers from adlrocha's go-libp2p fork (captures/gen/compression/, pinned as
go-libp2p-compression-examples pins them): plaintext security, then /compression/gzip,
/compression/cbrotli or none, then the muxer.  The dialer runs the echo example and then sends
real block data over a custom stream protocol; the listener answers with its sha256.  Over
netem.py's emulated link (60 ms each way, 20 Mbit/s).  A copy of the gzip capture with one data
segment removed is the gap case.  Needs root and Go.
"""
from __future__ import annotations

import bz2
import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK, go_build, listener_addr  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "libp2p-compression"
DATA = HERE.parent / "data" / "bitcoin"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 9100
CODECS = ["gzip", "cbrotli", "none"]


def build() -> Path:
    return go_build("compression", "comppeers")


def payload_files() -> list[Path]:
    """Block 277647 (unpacked from its blk*.dat framing) and testnet3 block 924634."""
    d = bz2.decompress((DATA / "block277647_framed.dat.bz2").read_bytes())
    blk = WORK / "block277647.raw"
    blk.write_bytes(d[8:8 + int.from_bytes(d[4:8], "little")])
    return [blk, DATA / "testnet3_block924634.raw"]


def make(codec: str, exe: Path, files: list[Path]) -> dict:
    cap = OUT / f"comp-{codec}.pcapng"
    idfile = WORK / f"comp-{codec}.id"
    idfile.unlink(missing_ok=True)
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "-role", "listen", "-comp", codec, "-idfile", str(idfile), "-seed", "2",
                             "-listen", f"/ip4/0.0.0.0/tcp/{PORT}"])
        addr = listener_addr(idfile, link.addr_b)
        res = link.run("a", [str(exe), "-role", "dial", "-comp", codec, "-peer", addr, "-seed", "1",
                             *map(str, files)], capture_output=True, text=True, timeout=120)
        print(res.stdout.strip())
        b.wait(60)
    data = b"".join(f.read_bytes() for f in files)
    truth = {"capture": cap.name, "compression": None if codec == "none" else f"/compression/{codec}",
             "security": "/plaintext/2.0.0",
             "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                      "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
             "echo": {"protocol": "/echo/1.0.0", "sent": "Hello, world!\n"},
             "file": {"protocol": "/p2pc/file/1.0.0", "files": ["block277647 (blocks from block277647_framed.dat.bz2)",
                                                                 "testnet3_block924634.raw"],
                      "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}}
    (OUT / f"comp-{codec}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")
    return truth


def gap_variant() -> None:
    """comp-gzip-gap: comp-gzip without one full-size data segment from the dialer."""
    src = OUT / "comp-gzip.pcapng"
    rows = subprocess.run(["tshark", "-n", "-r", str(src), "-Y", f"ip.src=={EmulatedLink.addr_a} && tcp.len==1448",
                           "-T", "fields", "-e", "frame.number"], capture_output=True, text=True).stdout.split()
    victim = rows[len(rows) // 2]
    subprocess.run(["editcap", str(src), str(OUT / "comp-gzip-gap.pcapng"), victim], check=True)
    (OUT / "comp-gzip-gap.truth.json").write_text(json.dumps({"capture": "comp-gzip-gap.pcapng", "source": src.name,
                                                              "removed_frame": int(victim)}, indent=1) + "\n")
    print(f"comp-gzip-gap.pcapng: comp-gzip.pcapng without frame {victim}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    exe = build()
    files = payload_files()
    for codec in sys.argv[1:] or CODECS:
        make(codec, exe, files)
    gap_variant()


if __name__ == "__main__":
    main()
