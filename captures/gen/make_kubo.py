#!/usr/bin/env python3
"""Two real kubo nodes exchanging a file, their keys read by `p2pc keys --pid`: captures/kubo/.

kubo v0.42.0 (go-libp2p v0.48.0, boxo v0.40.0, quic-go v0.59.0, flynn/noise v1.1.0, as its
go.mod pins them), built from the Go module proxy's release source with nothing changed
(kubo_build.py; Go 1.26).  Node A (192.0.2.1, the fetcher) and node B (192.0.2.2, the provider)
each have a private IPFS_PATH made by `ipfs init --profile=test` (no bootstrap peers, no mDNS,
no AutoConf), with Routing.Type "none" (no DHT: the two nodes find each other only by address),
AutoNAT's service and the relay off (no dial-backs), and one swarm address: port 4001, TCP or
UDP QUIC.  B adds captures/data/bitcoin/block413567.raw (999,887 bytes) with kubo's defaults
(`ipfs add`: 256 KiB chunks, dag-pb leaves, a CIDv0 root).  Both daemons start over
netem.py's emulated link (20 ms each way, 20 Mbit/s, captured on A); `p2pc keys --pid` attaches
to each running daemon, one key log a node; A connects to B by address (`ipfs swarm connect`)
and reads the file with `ipfs cat`.  One capture per transport:
- kubo-tcp-noise: TCP, TLS off in Swarm.Transports.Security, so Noise then yamux;
- kubo-tcp-tls: TCP as kubo's defaults have it: /tls/1.0.0 then yamux;
- kubo-quic: /quic-v1 (TLS 1.3 inside QUIC).
The keys are A's (<name>.keys) and B's (<name>.provider.keys): Noise lines for
libp2p_noise.keylog_file, NSS lines for tls.keylog_file; either decrypts the capture.

The truth (<name>.truth.json) is the nodes' own: the file's size and sha256, and that A's
`ipfs cat` gave those bytes; the DAG's blocks as B lists them (`ipfs refs -r`, `ipfs dag stat`)
with each block's size and sha256 from `ipfs block get`; each node's identity, version and
`ipfs stats bitswap` after the read; what p2pc keys said.  Needs root, eBPF uprobes, Go:

    sudo python3 captures/gen/make_kubo.py [tcp-noise|tcp-tls|quic ...]
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from kubo_build import VERSION, build  # noqa: E402
from netem import EmulatedLink  # noqa: E402
from pidkeys import Tracer  # noqa: E402

ROOT = HERE.parent.parent
OUT = ROOT / "captures" / "kubo"
WORK = Path("/tmp/p2pc-kubo")
FILE = ROOT / "captures" / "data" / "bitcoin" / "block413567.raw"
DELAY_MS, RATE_KBIT, PORT = 20, 20000, 4001
# capture -> (swarm address, what it changes in kubo's transports)
RUNS = {
    "tcp-noise": (f"/ip4/0.0.0.0/tcp/{PORT}", {"Swarm.Transports.Security.TLS": False}),
    "tcp-tls": (f"/ip4/0.0.0.0/tcp/{PORT}", {}),
    "quic": (f"/ip4/0.0.0.0/udp/{PORT}/quic-v1", {}),
}
CONFIG = {"Routing.Type": "none", "AutoNAT.ServiceMode": "disabled", "Swarm.RelayClient.Enabled": False,
          "Swarm.RelayService.Enabled": False, "Swarm.EnableHolePunching": False}


def ipfs(link: EmulatedLink, exe: Path, side: str, *args: str, text: bool = True) -> str | bytes:
    """One ipfs command in the node's namespace, against its running daemon (or its repo)."""
    return link.run(side, [str(exe), *args], capture_output=True, text=text, timeout=60,
                    env=dict(os.environ, IPFS_PATH=str(WORK / side))).stdout


def ipfs_json(link: EmulatedLink, exe: Path, side: str, *args: str):
    return json.loads(ipfs(link, exe, side, *args, "--enc=json"))


def daemon_up(link: EmulatedLink, exe: Path, side: str, proc: subprocess.Popen) -> dict:
    """The node's identity, once its daemon serves its API (it writes $IPFS_PATH/api then: an
    ipfs command before that would run offline and take the repo's lock from the daemon)."""
    for _ in range(300):
        if proc.poll() is not None:
            raise SystemExit(f"node {side}'s daemon ended ({proc.returncode}): see {WORK / f'{side}.log'}")
        if (WORK / side / "api").exists():
            return ipfs_json(link, exe, side, "id")
        time.sleep(0.2)
    raise SystemExit(f"node {side}'s daemon did not come up: see {WORK / f'{side}.log'}")


def run(exe: Path, name: str) -> None:
    swarm, transports = RUNS[name]
    cap = OUT / f"kubo-{name}.pcapng"
    keys = {"a": OUT / f"kubo-{name}.keys", "b": OUT / f"kubo-{name}.provider.keys"}
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    data = FILE.read_bytes()
    env = {side: dict(os.environ, IPFS_PATH=str(WORK / side)) for side in ("a", "b")}
    for side in ("a", "b"):
        subprocess.run([str(exe), "init", "--profile=test"], env=env[side], check=True, capture_output=True)
        for key, val in {**CONFIG, "Addresses.Swarm": [swarm], **transports}.items():
            subprocess.run([str(exe), "config", "--json", key, json.dumps(val)], env=env[side], check=True)
    # Offline, before the daemon: the blocks are in B's repo when A asks.
    root = subprocess.run([str(exe), "add", "-Q", str(FILE)], env=env["b"], check=True, capture_output=True,
                          text=True).stdout.strip()
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        logs = {side: open(WORK / f"{side}.log", "w") for side in ("a", "b")}
        nodes, tracers, ident = {}, {}, {}
        for side in ("b", "a"):
            nodes[side] = link.popen(side, [str(exe), "daemon"], env=env[side], stdout=logs[side],
                                     stderr=subprocess.STDOUT)
            ident[side] = daemon_up(link, exe, side, nodes[side])
            # The running, unmodified daemon: ip netns exec has exec'd ipfs by now (it answers).
            tracers[side] = Tracer(nodes[side].pid, keys[side])
        where = swarm.replace("/ip4/0.0.0.0/", f"/ip4/{link.addr_b}/")
        ipfs(link, exe, "a", "swarm", "connect", f"{where}/p2p/{ident['b']['ID']}")
        got = ipfs(link, exe, "a", "cat", root, text=False)
        if got != data:
            raise SystemExit(f"A's ipfs cat gave {len(got)} bytes, not the file's {len(data)}")
        peers = {side: ipfs_json(link, exe, side, "swarm", "peers", "--direction", "--identify")
                 for side in ("a", "b")}
        stats = {side: ipfs_json(link, exe, side, "stats", "bitswap") for side in ("a", "b")}
        versions = {side: ipfs_json(link, exe, side, "version", "--all") for side in ("a", "b")}
        refs = ipfs(link, exe, "b", "refs", "-r", root).split()
        dag = ipfs_json(link, exe, "b", "dag", "stat", "--progress=false", root)
        blocks = []
        for cid in [root, *refs]:
            raw = ipfs(link, exe, "b", "block", "get", cid, text=False)
            blocks.append({"cid": cid, "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()})
        for side in ("a", "b"):
            ipfs(link, exe, side, "shutdown")
            nodes[side].wait(30)
            logs[side].close()
        # Every probed process ended: p2pc keys writes the rest and exits.
        said = {side: tracers[side].finish() for side in ("a", "b")}
    truth = {
        "capture": cap.name, "client": "kubo", "version": VERSION, "transport": name,
        "keys": {"fetcher": keys["a"].name, "provider": keys["b"].name},
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500, "addr_a": EmulatedLink.addr_a,
                 "addr_b": EmulatedLink.addr_b, "port": PORT, "dialer": EmulatedLink.addr_a, "captured_at": "a"},
        "file": {"path": str(FILE.relative_to(ROOT)), "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                 "read_by_a": "ipfs cat: the same bytes"},
        "root": root, "dag_stat": dag, "blocks": blocks,
        "nodes": {side: {"role": role, "id": ident[side]["ID"], "agent": ident[side]["AgentVersion"],
                         "version": versions[side], "peers": peers[side], "stats_bitswap": stats[side],
                         "p2pc_keys": said[side]}
                  for side, role in (("a", "fetcher"), ("b", "provider"))},
    }
    (OUT / f"kubo-{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; {len(blocks)} blocks; A received "
          f"{stats['a']['BlocksReceived']}, B sent {stats['b']['BlocksSent']}; key lines "
          f"{said['a'][-1]} / {said['b'][-1]}")


def main() -> None:
    exe = build()
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(["make", "-s", "keys"], cwd=ROOT, check=True)
    for name in sys.argv[1:] or list(RUNS):
        run(exe, name)


if __name__ == "__main__":
    main()
