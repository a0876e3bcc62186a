#!/usr/bin/env python3
"""Make captures/eth2/eth2-gossip-mesh: three real go-libp2p-pubsub peers (v0.15.0, gossipsub
v1.2: IDONTWANT on) in a triangle, each message reaching each peer over two paths, so that
duplicates and IDONTWANT happen; the truth holds each peer's own tracer's account.

captures/gen/libp2p/ (mesh.go, -role mesh) runs one peer per process, each in its own network
namespace, peer i on 192.0.2.i:9000 behind a veth pair whose other end is on a bridge in a
fourth namespace: real TCP over Ethernet (MTU 1500) between three addresses, plaintext and
yamux; peer i dials the peers before it.  Each publishes four messages on the mainnet beacon_block topic, by turns 600 bytes
of data (below go-libp2p-pubsub's IDONTWANT threshold of 1024 bytes) and 2000 (above), eth2's
message IDs.  Peers 1 and 2 take 100 ms to validate a message, peer 3 none (VALIDATE_MS).
dumpcap captures on the bridge, which
sees every frame.  Each peer's -truth -trace-pubsub is
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
HUB = "p2pc-mesh-hub"
PEERS, PORT, MESSAGES, SMALL, LARGE = 3, 9000, 4, 600, 2000
# Per peer, how long its topic validator takes (-validate-ms): peers 1 and 2 validate for 100 ms,
# so the IDONTWANTs sent on receipt reach them before they forward; peer 3 has no validator and
# forwards at once, its copies crossing the others' IDONTWANTs.
VALIDATE_MS = {1: 100, 2: 100, 3: 0}
TOPIC = "/eth2/bba4da96/beacon_block/ssz_snappy"


def ns(name: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", name, *args]


def peer_ns(i: int) -> str:
    return f"p2pc-mesh-{i}"


def sh(*args: str) -> None:
    subprocess.run(list(args), check=True)


def setup(addrs: dict[int, str]) -> None:
    """The hub's bridge, and each peer's namespace joined to it by a veth pair."""
    sh("ip", "netns", "add", HUB)
    sh(*ns(HUB, "ip", "link", "add", "br0", "type", "bridge"))
    sh(*ns(HUB, "ip", "link", "set", "br0", "up"))
    for i, a in addrs.items():
        sh("ip", "netns", "add", peer_ns(i))
        sh("ip", "link", "add", "eth0", "netns", peer_ns(i), "type", "veth", "peer", "name", f"port{i}", "netns", HUB)
        sh(*ns(peer_ns(i), "ip", "addr", "add", f"{a}/24", "dev", "eth0"))
        sh(*ns(peer_ns(i), "ip", "link", "set", "eth0", "up"))
        sh(*ns(peer_ns(i), "ip", "link", "set", "lo", "up"))
        sh(*ns(HUB, "ip", "link", "set", f"port{i}", "master", "br0"))
        sh(*ns(HUB, "ip", "link", "set", f"port{i}", "up"))


def teardown(addrs: dict[int, str]) -> None:
    for name in (HUB, *map(peer_ns, addrs)):
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def main() -> None:
    exe = go_build("libp2p", "eth2peers")
    cap = OUT / f"{NAME}.pcapng"
    cap.unlink(missing_ok=True)
    addrs = {i: f"192.0.2.{i}" for i in range(1, PEERS + 1)}
    teardown(addrs)
    procs: list[subprocess.Popen] = []
    dumpcap = None
    try:
        setup(addrs)
        dumpcap = subprocess.Popen(ns(HUB, "dumpcap", "-q", "-i", "br0", "-f", f"tcp port {PORT}", "-w", str(cap)),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not cap.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        # Resolve ARP before the measured traffic starts.
        for i in addrs:
            for a in addrs.values():
                subprocess.run(ns(peer_ns(i), "ping", "-c", "1", "-W", "2", a), capture_output=True)
        truths, started = {}, []
        for i, a in addrs.items():
            idfile = WORK / f"{NAME}.{i}.id"
            idfile.unlink(missing_ok=True)
            truths[i] = WORK / f"{NAME}.{i}.json"
            truths[i].unlink(missing_ok=True)
            procs.append(subprocess.Popen(ns(peer_ns(i), str(exe), "-role", "mesh", "-index", str(i), "-peers", str(PEERS),
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
        teardown(addrs)
    os.chmod(cap, 0o644)
    truth = {
        "capture": cap.name, "session": "mesh", "security": None, "muxer": "yamux",
        "stack": "go-libp2p v0.39.1, go-libp2p-pubsub v0.15.0 (gossipsub v1.2, IDONTWANT threshold 1024 bytes)",
        "topology": "triangle: peer i dials every peer before it",
        "addrs": {str(i): a for i, a in addrs.items()}, "port": PORT, "seeds": {str(i): i for i in addrs},
        "captured_at": "the bridge between the peers' namespaces (every connection)", "mtu": 1500,
        "gossip": {"topic": TOPIC, "messages_per_peer": MESSAGES,
                   "data_bytes_before_snappy": {"small": SMALL, "large": LARGE}, "idontwant_threshold": 1024},
        "validate_ms": {str(i): ms for i, ms in VALIDATE_MS.items()},
        "peers": {str(i): json.loads(truths[i].read_text()) for i in addrs},
    }
    (OUT / f"{NAME}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


if __name__ == "__main__":
    main()
