#!/usr/bin/env python3
"""Make the Bitswap captures in captures/bitswap/.

Two real go-libp2p hosts running boxo's Bitswap (captures/gen/bitswap/, pinned by its go.mod
and go.sum), plaintext security and yamux, over netem.py's emulated link (20 ms each way,
20 Mbit/s).  The provider (B) imports two texts from captures/data/text as UnixFS DAGs (16 KiB
chunks, a CIDv0 dag-pb root each) and serves them; the fetcher (A) walks both DAGs over
Bitswap.  One capture per protocol version: both hosts support only that one.  Bitswap 1.0.0
carries a block as its bare data, named by its CIDv0, so its run uses dag-pb leaves (CIDv0);
the others use raw leaves (CIDv1, as `ipfs add --raw-leaves`).

The truth (bitswap-<version>.truth.json) is what the peers wrote: the provider's blocks (CID,
size) and every Bitswap message each peer received, as boxo decoded it.  Needs root and Go.

    sudo python3 captures/gen/make_bitswap.py            # all
    sudo python3 captures/gen/make_bitswap.py 1.2.0      # one version
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK, go_build  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "bitswap"
DATA = HERE.parent / "data"
DELAY_MS, RATE_KBIT, PORT = 20, 20000, 4001
FILES = ["text/golang_Isaac.Newton-Opticks.txt", "text/klauspost_Mark.Twain-Tom.Sawyer.txt"]
# capture name -> (protocol ID, raw leaves)
VERSIONS = {
    "1.2.0": ("/ipfs/bitswap/1.2.0", True),
    "1.1.0": ("/ipfs/bitswap/1.1.0", True),
    "1.0.0": ("/ipfs/bitswap/1.0.0", False),
}


def make(version: str, exe: Path) -> None:
    proto, raw_leaves = VERSIONS[version]
    cap = OUT / f"bitswap-{version}.pcapng"
    idfile, truth_a, truth_b = (WORK / f"bitswap-{version}.{n}.json" for n in ("id", "a", "b"))
    for f in (idfile, truth_a, truth_b):
        f.unlink(missing_ok=True)
    common = ["-proto", proto, "-idfile", str(idfile), f"-raw-leaves={str(raw_leaves).lower()}"]
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "-role", "provide", *common, "-truth", str(truth_b), "-seed", "2",
                             "-listen", f"/ip4/0.0.0.0/tcp/{PORT}", *(str(DATA / f) for f in FILES)])
        for _ in range(100):
            if idfile.exists() and idfile.read_text().endswith("\n"):
                break
            time.sleep(0.1)
        ident = json.loads(idfile.read_text())
        for wildcard in ("/ip4/0.0.0.0/", "/ip4/127.0.0.1/"):
            ident["addr"] = ident["addr"].replace(wildcard, f"/ip4/{link.addr_b}/")
        idfile.write_text(json.dumps(ident) + "\n")
        link.run("a", [str(exe), "-role", "fetch", *common, "-truth", str(truth_a), "-seed", "1"],
                 check=True, timeout=120)
        b.wait(30)
    a, bt = json.loads(truth_a.read_text()), json.loads(truth_b.read_text())
    truth = {
        "capture": cap.name,
        "protocol": proto,
        "security": "/plaintext/2.0.0",
        "muxer": "/yamux/1.0.0",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        "peers": {"a": {"role": "fetcher", "id": a["peer"]}, "b": {"role": "provider", "id": bt["peer"]}},
        "files": [{**r, "file": f"captures/data/{FILES[i]}"} for i, r in enumerate(ident["roots"])],
        # Each message a peer received, as boxo decoded it (lists in no particular order within
        # a message: boxo keeps them in maps), with its protobuf size.
        "received_by_a": a["received"],
        "received_by_b": bt["received"],
    }
    (OUT / f"bitswap-{version}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; A received {len(a['received'])} messages, "
          f"B {len(bt['received'])}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    exe = go_build("bitswap", "bitswappeers")
    for version in sys.argv[1:] or VERSIONS:
        make(version, exe)


if __name__ == "__main__":
    main()
