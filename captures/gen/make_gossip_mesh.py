#!/usr/bin/env python3
"""Make captures/eth2/eth2-gossip-mesh: three real go-libp2p-pubsub peers (v0.15.0, gossipsub
v1.2: IDONTWANT on) in a triangle, each message reaching each peer over two paths, so that
duplicates and IDONTWANT happen; the truth holds each peer's own tracer's account.

captures/gen/libp2p/ (mesh.go, -role mesh) runs one peer per process, each in its own network
namespace, peer i on 192.0.2.i:9000 behind a veth pair whose other end is on a bridge in a
fourth namespace: real TCP over Ethernet (MTU 1500) between three addresses, plaintext and
yamux; peer i dials the peers before it.  Each publishes four messages on the mainnet beacon_block topic, by turns 600 bytes
of data (below go-libp2p-pubsub's IDONTWANT threshold of 1024 bytes) and 2000 (above), eth2's
message IDs.  Peers 1 and 2 take 100 ms to validate a message, peer 3 none (validate_ms).
dumpcap captures on the bridge, which
sees every frame.  Each peer's -truth -trace-pubsub is
what its go-libp2p-pubsub tracer saw: SendRPC's entries per kind and topic, with the message IDs
they carry (`pubsub_sent`), and each DuplicateMessage with the peer it came from
(`pubsub_duplicates`).  Needs root and Go.

--lazy makes captures/eth2/eth2-gossip-lazy instead, where the mesh is smaller than the peers, so
that gossip is lazy: five peers (each dialling the peers before it, so all connected) with
gossipsub's D = 2, Dlo = 1, Dhi = 3, Dlazy = 2 and a 100 ms heartbeat.  Each peer is in the mesh
of two or three of its four, and the others hear of each message by IHAVE at the heartbeats;
every peer takes 300 ms to validate, so a mesh's second hop is 300 ms behind the first, and a
peer that hears an IHAVE before its mesh brings the message asks for it (IWANT) and gets it from
the IHAVE's sender.  The peers GRAFT each other at the first heartbeats, each peer with more than
Dhi in its mesh PRUNEs the ones above D, and at the end each leaves the topic (-leave): an
unsubscribe to every peer and a PRUNE to each of its mesh.  Each publishes two messages, of 300
and 1,200 bytes of data (IDONTWANT above 1,024).
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
HUB = "p2pc-mesh-hub"
PORT = 9000
TOPIC = "/eth2/bba4da96/beacon_block/ssz_snappy"
VARIANTS = {
    # The triangle.  Per peer, how long its topic validator takes (-validate-ms): peers 1 and 2
    # validate for 100 ms, so the IDONTWANTs sent on receipt reach them before they forward;
    # peer 3 has no validator and forwards at once, its copies crossing the others' IDONTWANTs.
    "mesh": {"name": "eth2-gossip-mesh", "peers": 3, "messages": 4, "small": 600, "large": 2000,
             "validate_ms": {1: 100, 2: 100, 3: 0}, "params": {},
             "topology": "triangle: peer i dials every peer before it"},
    # Lazy gossip: six peers, D = 2 (module docstring).
    "lazy": {"name": "eth2-gossip-lazy", "peers": 5, "messages": 2, "small": 300, "large": 1200,
             "validate_ms": {i: 300 for i in range(1, 6)},
             "params": {"D": 2, "Dlo": 1, "Dhi": 3, "Dlazy": 2, "heartbeat_ms": 100, "leave": True},
             "topology": "all connected: peer i dials every peer before it"},
}


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


def gossipsub_flags(params: dict) -> list[str]:
    """mesh.go's flags for a variant's gossipsub parameters (none: go-libp2p-pubsub's defaults)."""
    if not params:
        return []
    degrees = ",".join(str(params[k]) for k in ("D", "Dlo", "Dhi", "Dlazy"))
    return ["-mesh-degree", degrees, "-heartbeat-ms", str(params["heartbeat_ms"]),
            *(["-leave"] if params["leave"] else [])]


def main() -> None:
    v = VARIANTS["lazy" if "--lazy" in sys.argv[1:] else "mesh"]
    name = v["name"]
    exe = go_build("libp2p", "eth2peers")
    cap = OUT / f"{name}.pcapng"
    cap.unlink(missing_ok=True)
    addrs = {i: f"192.0.2.{i}" for i in range(1, v["peers"] + 1)}
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
            idfile = WORK / f"{name}.{i}.id"
            idfile.unlink(missing_ok=True)
            truths[i] = WORK / f"{name}.{i}.json"
            truths[i].unlink(missing_ok=True)
            procs.append(subprocess.Popen(ns(peer_ns(i), str(exe), "-role", "mesh", "-index", str(i),
                                             "-peers", str(v["peers"]),
                                             "-listen", f"/ip4/{a}/tcp/{PORT}", "-peer", ",".join(started),
                                             "-idfile", str(idfile), "-seed", str(i), "-gossip", str(v["messages"]),
                                             "-small", str(v["small"]), "-large", str(v["large"]),
                                             "-validate-ms", str(v["validate_ms"][i]), *gossipsub_flags(v["params"]),
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
        "topology": v["topology"],
        "addrs": {str(i): a for i, a in addrs.items()}, "port": PORT, "seeds": {str(i): i for i in addrs},
        "captured_at": "the bridge between the peers' namespaces (every connection)", "mtu": 1500,
        "gossip": {"topic": TOPIC, "messages_per_peer": v["messages"],
                   "data_bytes_before_snappy": {"small": v["small"], "large": v["large"]}, "idontwant_threshold": 1024},
        "validate_ms": {str(i): ms for i, ms in v["validate_ms"].items()},
        **({"gossipsub_params": v["params"]} if v["params"] else {}),
        "peers": {str(i): json.loads(truths[i].read_text()) for i in addrs},
    }
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


if __name__ == "__main__":
    main()
