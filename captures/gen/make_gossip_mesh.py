#!/usr/bin/env python3
"""Make captures/eth2/eth2-gossip-mesh: three real go-libp2p-pubsub peers (v0.15.0, gossipsub
v1.2: IDONTWANT on) in a triangle, each message reaching each peer over two paths, so that
duplicates and IDONTWANT happen; the truth holds each peer's own tracer's account.

captures/gen/libp2p/ (mesh.go, -role mesh) runs one peer per process, all in one network
namespace, peer i on 192.0.2.i:9000 (addresses on the namespace's loopback: the peers' TCP
connections are real, between three addresses), plaintext and yamux; peer i dials the peers
before it.  Each publishes four messages on the mainnet beacon_block topic, by turns 600 bytes
of data (below go-libp2p-pubsub's IDONTWANT threshold of 1024 bytes) and 2000 (above), eth2's
message IDs.  Peers 1 and 2 take 100 ms to validate a message, peer 3 none (VALIDATE_MS).
dumpcap captures the namespace's loopback.  Each peer's -truth -trace-pubsub is
what its go-libp2p-pubsub tracer saw: SendRPC's entries per kind and topic (`pubsub_sent`), and
each DuplicateMessage with the peer it came from (`pubsub_duplicates`).  Needs root and Go.
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
from golib import WORK, go_build, listener_addr  # noqa: E402

OUT = HERE.parent / "eth2"
NAME = "eth2-gossip-mesh"
NS = "p2pc-gossip-mesh"
PEERS, PORT, MESSAGES, SMALL, LARGE = 3, 9000, 4, 600, 2000
# Per peer, how long its topic validator takes (-validate-ms): peers 1 and 2 validate for 100 ms,
# so the IDONTWANTs sent on receipt reach them before they forward; peer 3 has no validator and
# forwards at once, its copies crossing the others' IDONTWANTs.
VALIDATE_MS = {1: 100, 2: 100, 3: 0}
TOPIC = "/eth2/bba4da96/beacon_block/ssz_snappy"


def ns(*args: str) -> list[str]:
    return ["ip", "netns", "exec", NS, *args]


def main() -> None:
    exe = go_build("libp2p", "eth2peers")
    cap = OUT / f"{NAME}.pcapng"
    cap.unlink(missing_ok=True)
    addrs = {i: f"192.0.2.{i}" for i in range(1, PEERS + 1)}
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    subprocess.run(["ip", "netns", "add", NS], check=True)
    procs: list[subprocess.Popen] = []
    dumpcap = None
    try:
        subprocess.run(ns("ip", "link", "set", "lo", "up"), check=True)
        for a in addrs.values():
            subprocess.run(ns("ip", "addr", "add", f"{a}/32", "dev", "lo"), check=True)
        dumpcap = subprocess.Popen(ns("dumpcap", "-q", "-i", "lo", "-f", f"tcp port {PORT}", "-w", str(cap)),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not cap.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        truths, started = {}, []
        for i, a in addrs.items():
            idfile = WORK / f"{NAME}.{i}.id"
            idfile.unlink(missing_ok=True)
            truths[i] = WORK / f"{NAME}.{i}.json"
            truths[i].unlink(missing_ok=True)
            procs.append(subprocess.Popen(ns(str(exe), "-role", "mesh", "-index", str(i), "-peers", str(PEERS),
                                             "-listen", f"/ip4/{a}/tcp/{PORT}", "-peer", ",".join(started),
                                             "-idfile", str(idfile), "-seed", str(i), "-gossip", str(MESSAGES),
                                             "-small", str(SMALL), "-large", str(LARGE),
                                             "-validate-ms", str(VALIDATE_MS[i]),
                                             "-truth", str(truths[i]), "-trace-pubsub")))
            started.append(listener_addr(idfile, a))
        for p in procs:
            if p.wait(120) != 0:
                raise SystemExit(f"a mesh peer failed: {p.args}")
        time.sleep(1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if dumpcap:
            dumpcap.terminate()
            dumpcap.wait(10)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    os.chmod(cap, 0o644)
    truth = {
        "capture": cap.name, "session": "mesh", "security": None, "muxer": "yamux",
        "stack": "go-libp2p v0.39.1, go-libp2p-pubsub v0.15.0 (gossipsub v1.2, IDONTWANT threshold 1024 bytes)",
        "topology": "triangle: peer i dials every peer before it",
        "addrs": {str(i): a for i, a in addrs.items()}, "port": PORT, "seeds": {str(i): i for i in addrs},
        "captured_at": "the namespace's loopback (every connection)",
        "gossip": {"topic": TOPIC, "messages_per_peer": MESSAGES,
                   "data_bytes_before_snappy": {"small": SMALL, "large": LARGE}, "idontwant_threshold": 1024},
        "validate_ms": {str(i): ms for i, ms in VALIDATE_MS.items()},
        "peers": {str(i): json.loads(truths[i].read_text()) for i in addrs},
    }
    (OUT / f"{NAME}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


if __name__ == "__main__":
    main()
