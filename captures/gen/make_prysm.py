#!/usr/bin/env python3
"""Two real Prysm v7.1.2 beacon nodes on a local chain, over TCP (Noise) and over QUIC:
captures/prysm/.

Node A (192.0.2.1) and node B (192.0.2.2) run Prysm's beacon-chain, built from the release's
module source with go-libp2p's keys logged (prysm/build.py), on one interop genesis of 8
validators made by the release's own `prysmctl testnet generate-genesis`: the mainnet preset
(the only one a `go build` of Prysm has: its SSZ code is generated for it), 3-second slots,
phase0 then Altair from epoch 2, and Bellatrix and later forks never, so no execution client is
needed (--interop-eth1data-votes mocks the deposit chain's votes; the node logs that it cannot
reach its execution endpoint and goes on).  A's validator client runs validators 0-3 and B's
4-7.  B starts B_AFTER_S after genesis with A as its one --peer (discv5 runs, with no bootstrap
node), so it first syncs A's blocks by range.  They talk over netem.py's emulated link (60 ms
each way, 20 Mbit/s, captured on A) for RUN_S seconds after genesis, once per transport:
- prysm-tcp: QUIC disabled on both (--disable-quic), B dials A's /tcp/9000: Noise and yamux;
- prysm-quic: B dials A's /udp/9000/quic-v1: TLS 1.3 inside QUIC.
Either way each node listens on, and dials from, port 9000 (TCP and UDP alike).  Noise writes its
keys to prysm-tcp.keys ($LIBP2P_NOISE_KEYLOG), QUIC's TLS its secrets to prysm-quic.keys
($SSLKEYLOGFILE).

--unpatched runs the same chain with go-libp2p as Prysm pins it, unchanged (build(keylog=False):
only quic-go's Go 1.26 fix, which is not key handling), and reads each node's keys with
`p2pc keys --pid` (pidkeys.py) while it runs: A's from before genesis, B's from before it dials
(as soon as `ip netns exec` has exec'd its beacon-chain; it dials A once it has started, seconds
later).  prysm-unpatched-<transport>.listener.keys are A's, .dialer.keys B's; either alone
decrypts the capture.

The truth is the nodes' own (prysm-<transport>.truth.json): every block each node holds, as its
REST API serves it in SSZ (/eth/v2/beacon/blocks/{slot}, Accept: application/octet-stream), by
sha256; and each node's Prometheus metrics (--monitoring-port) lines for its p2p counters, as
it printed them, read at metrics_time (wall clock, as the capture's timestamps) after the
validators stopped: p2p_message_received_total per req/resp protocol counts the requests it was
sent, p2p_pubsub_rpc_sent_pub_total per gossip topic the messages it sent.

Regenerate (root, Go 1.26, gcc; about 4 minutes a capture, after the first build; --unpatched:
eBPF uprobes too, and `make keys`):
sudo python3 captures/gen/make_prysm.py [--unpatched] [tcp|quic]
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "prysm"))
from netem import EmulatedLink  # noqa: E402
from beacon import http, read_nodes, stop  # noqa: E402
from build import VERSION, build  # noqa: E402
from pidkeys import Tracer, running  # noqa: E402

ROOT = HERE.parent.parent
OUT = ROOT / "captures" / "prysm"
WORK = Path("/tmp/p2pc-prysm")
DELAY_MS, RATE_KBIT = 60, 20000
PORT, DISCV5_PORT, REST, RPC, METRICS, VMETRICS = 9000, 12000, 3500, 4000, 8080, 8081
VALIDATORS = {"a": (0, 4), "b": (4, 4)}   # (first index, count)
GENESIS_VALIDATORS = 8
SECONDS_PER_SLOT = 3
ALTAIR_EPOCH = 2  # phase0 for the first 64 slots (32 an epoch: the mainnet preset), then Altair
START_S = 45      # genesis this long after the genesis file is made (A needs ~15 s to come up)
# B starts this long after genesis, in epoch 1: it syncs A's blocks by range (Prysm's initial sync
# does not run in epoch 0, beacon-chain/sync/initial-sync/service.go, "Chain started within the
# last epoch - not syncing").
B_AFTER_S = 34 * SECONDS_PER_SLOT
RUN_S = 76 * SECONDS_PER_SLOT   # the chain runs this long after genesis: 12 slots of Altair
FAR = 1_000_000  # "never": epoch * 32 slots must not overflow (Prysm computes fork slots)
METRIC_PREFIXES = ("p2p_message_received_total", "p2p_pubsub_rpc_sent_pub_total", "p2p_pubsub_rpc_sent_total",
                   "p2p_pubsub_deliver_total", "p2p_pubsub_duplicate_total", "p2p_pubsub_reject_total")

# The mainnet config but for what a two-node chain needs; fork versions of its own, so its fork
# digests are no real network's.
CONFIG = f"""PRESET_BASE: 'mainnet'
CONFIG_NAME: 'p2pc-prysm'
MIN_GENESIS_ACTIVE_VALIDATOR_COUNT: {GENESIS_VALIDATORS}
GENESIS_DELAY: 0
SECONDS_PER_SLOT: {SECONDS_PER_SLOT}
SLOT_DURATION_MS: {SECONDS_PER_SLOT * 1000}
GENESIS_FORK_VERSION: 0x00703270
ALTAIR_FORK_VERSION: 0x01703270
ALTAIR_FORK_EPOCH: {ALTAIR_EPOCH}
BELLATRIX_FORK_VERSION: 0x02703270
BELLATRIX_FORK_EPOCH: {FAR}
CAPELLA_FORK_VERSION: 0x03703270
CAPELLA_FORK_EPOCH: {FAR}
DENEB_FORK_VERSION: 0x04703270
DENEB_FORK_EPOCH: {FAR}
ELECTRA_FORK_VERSION: 0x05703270
ELECTRA_FORK_EPOCH: {FAR}
FULU_FORK_VERSION: 0x06703270
FULU_FORK_EPOCH: {FAR}
"""


def addr(side: str) -> str:
    return EmulatedLink.addr_a if side == "a" else EmulatedLink.addr_b


def argv(bins: dict, side: str, transport: str, peer: str | None) -> list[str]:
    cmd = [str(bins["beacon-chain"]), "--accept-terms-of-use", "--datadir", str(WORK / side / "data"),
           "--chain-config-file", str(WORK / "config.yaml"), "--genesis-state", str(WORK / "genesis.ssz"),
           "--execution-endpoint", "http://127.0.0.1:8551",   # nothing listens there: no execution client
           "--interop-eth1data-votes",
           # Every attestation subnet, so that attestations cross the link (a node subscribes
           # only to its own validators' subnets otherwise, and the two nodes' seldom meet).  It
           # needs discovery on: without it the node has no ENR and never takes up the subnets
           # the flag asks for (beacon-chain/p2p/discovery.go, RefreshPersistentSubnets returns
           # early with no discv5 listener), and its REST identity fails.  With no bootstrap node
           # (a chain config file's network has none) discv5 listens and sends nothing.
           "--subscribe-all-subnets", "--p2p-udp-port", str(DISCV5_PORT),
           # A, alone at first, must not wait for a peer to sync from; B syncs from A.
           "--min-sync-peers", "0" if side == "a" else "1",
           "--p2p-local-ip", addr(side), "--p2p-host-ip", addr(side),
           "--p2p-tcp-port", str(PORT), "--p2p-quic-port", str(PORT),
           "--http-host", "0.0.0.0", "--http-port", str(REST), "--rpc-host", "127.0.0.1", "--rpc-port", str(RPC),
           "--monitoring-host", "0.0.0.0", "--monitoring-port", str(METRICS), "--verbosity", "info"]
    if transport == "tcp":
        cmd.append("--disable-quic")
    return cmd + (["--peer", peer] if peer else [])


def validator_argv(bins: dict, side: str) -> list[str]:
    first, count = VALIDATORS[side]
    return [str(bins["validator"]), "--accept-terms-of-use", "--datadir", str(WORK / side / "validator"),
            "--chain-config-file", str(WORK / "config.yaml"),
            "--interop-start-index", str(first), "--interop-num-validators", str(count),
            "--beacon-rpc-provider", f"127.0.0.1:{RPC}", "--monitoring-port", str(VMETRICS),
            "--verbosity", "info"]


def fetch_blocks(link: EmulatedLink, side: str, transport: str) -> list[dict]:
    """Every block the node holds, genesis on, as its REST API serves /eth/v2/beacon/blocks/{slot}
    in SSZ (the version from its Eth-Consensus-Version header)."""
    head = json.loads(http(link, side, "/eth/v1/beacon/headers/head", REST))["data"]["header"]["message"]
    out = []
    for slot in range(0, int(head["slot"]) + 1):
        f = WORK / side / f"{transport}-block-{slot}.ssz"
        # The body to f, the response headers to stdout.
        headers = http(link, side, f"/eth/v2/beacon/blocks/{slot}", REST,
                       "-H", "Accept: application/octet-stream", "-o", str(f), "-D", "-")
        if headers is None:   # an empty slot: 404
            continue
        version = next(ln.split(b":", 1)[1].strip().decode() for ln in headers.splitlines()
                       if ln.lower().startswith(b"eth-consensus-version:"))
        ssz = f.read_bytes()
        out.append({"slot": slot, "version": version, "ssz_len": len(ssz),
                    "ssz_sha256": hashlib.sha256(ssz).hexdigest()})
    return out


def peers(link: EmulatedLink, side: str) -> list[dict]:
    return [{k: p.get(k) for k in ("peer_id", "last_seen_p2p_address", "state", "direction")}
            for p in json.loads(http(link, side, "/eth/v1/node/peers", REST))["data"]]


def genesis_state(bins: dict) -> int:
    (WORK / "config.yaml").write_text(CONFIG)
    genesis = int(time.time()) + START_S
    subprocess.run([str(bins["prysmctl"]), "testnet", "generate-genesis", "--fork", "phase0",
                    "--chain-config-file", str(WORK / "config.yaml"), "--num-validators", str(GENESIS_VALIDATORS),
                    "--genesis-time", str(genesis), "--output-ssz", str(WORK / "genesis.ssz")],
                   check=True, capture_output=True)
    return genesis


def run(bins: dict, transport: str, unpatched: bool) -> None:
    for side in ("a", "b"):
        subprocess.run(["rm", "-rf", str(WORK / side)], check=True)
        (WORK / side).mkdir(parents=True)
    if unpatched:
        name = f"prysm-unpatched-{transport}"
        keys = {"a": OUT / f"{name}.listener.keys", "b": OUT / f"{name}.dialer.keys"}
        env = dict(os.environ)
    else:
        name = f"prysm-{transport}"
        keys = OUT / f"{name}.keys"
        keys.unlink(missing_ok=True)
        env = dict(os.environ, LIBP2P_NOISE_KEYLOG=str(keys), SSLKEYLOGFILE=str(keys))
    tracers = {}
    cap = OUT / f"{name}.pcapng"
    genesis = genesis_state(bins)
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        logs = {s: open(WORK / f"{transport}-{s}.log", "w") for s in ("a", "b", "va", "vb")}
        nodes = {"a": link.popen("a", argv(bins, "a", transport, None), cwd=WORK / "a", env=env,
                                 stdout=logs["a"], stderr=subprocess.STDOUT, start_new_session=True),
                 "va": link.popen("a", validator_argv(bins, "a"), cwd=WORK / "a", stdout=logs["va"],
                                  stderr=subprocess.STDOUT, start_new_session=True)}
        ident = None
        while ident is None and time.time() < genesis:
            raw = http(link, "a", "/eth/v1/node/identity", REST)
            ident = json.loads(raw)["data"] if raw else None
            time.sleep(1)
        if ident is None:
            raise SystemExit(f"node A gave no identity before genesis: see {WORK / f'{transport}-a.log'}")
        if unpatched:
            tracers["a"] = Tracer(nodes["a"].pid, keys["a"])
        where = f"/udp/{PORT}/quic-v1" if transport == "quic" else f"/tcp/{PORT}"
        peer = f"/ip4/{EmulatedLink.addr_a}{where}/p2p/{ident['peer_id']}"
        time.sleep(max(0.0, genesis + B_AFTER_S - time.time()))
        nodes["b"] = link.popen("b", argv(bins, "b", transport, peer), cwd=WORK / "b", env=env,
                                stdout=logs["b"], stderr=subprocess.STDOUT, start_new_session=True)
        if unpatched:
            running(nodes["b"].pid, bins["beacon-chain"])
            tracers["b"] = Tracer(nodes["b"].pid, keys["b"])
        nodes["vb"] = link.popen("b", validator_argv(bins, "b"), cwd=WORK / "b", stdout=logs["vb"],
                                 stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(max(0.0, genesis + RUN_S - time.time()))
        truth_nodes = read_nodes(link, nodes, SECONDS_PER_SLOT, REST, METRICS, METRIC_PREFIXES,
                                 {side: "%d..%d" % (first, first + n - 1) for side, (first, n) in VALIDATORS.items()},
                                 extra=lambda side: {"peers": peers(link, side)})
        for side in ("a", "b"):
            truth_nodes[side]["blocks"] = fetch_blocks(link, side, transport)
        for side in ("b", "a"):
            stop(nodes[side])
        for f in logs.values():
            f.close()
        for side, tracer in tracers.items():   # its node ended: p2pc keys writes the rest and exits
            truth_nodes[side]["p2pc_keys"] = tracer.finish()
    if not unpatched and keys.exists():
        os.chmod(keys, 0o644)
    truth = {
        "capture": cap.name, "client": "prysm", "version": VERSION, "transport": transport,
        "keys": {"listener": keys["a"].name, "dialer": keys["b"].name} if unpatched else keys.name,
        "chain": {"preset": "mainnet", "seconds_per_slot": SECONDS_PER_SLOT,
                  "genesis_validators": GENESIS_VALIDATORS, "altair_fork_epoch": ALTAIR_EPOCH,
                  "genesis_time": genesis, "run_s": RUN_S, "b_after_s": B_AFTER_S},
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port": PORT,
                 "dialer": EmulatedLink.addr_b, "listener": EmulatedLink.addr_a, "captured_at": "a"},
        "nodes": truth_nodes,
    }
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; blocks A {len(truth_nodes['a']['blocks'])}, "
          f"B {len(truth_nodes['b']['blocks'])}")


def main() -> None:
    args = sys.argv[1:]
    unpatched = "--unpatched" in args
    transports = [a for a in args if a != "--unpatched"] or ["tcp", "quic"]
    bins = build(keylog=not unpatched)
    OUT.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    if unpatched:
        subprocess.run(["make", "-s", "keys"], cwd=ROOT, check=True)
    for transport in transports:
        run(bins, transport, unpatched)


if __name__ == "__main__":
    main()
