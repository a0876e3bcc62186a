#!/usr/bin/env python3
"""Two real Lodestar 1.5.1 beacon nodes on a local dev chain, over Noise: captures/lodestar/.

Node A (192.0.2.1) and node B (192.0.2.2) run `lodestar dev` (captures/gen/lodestar/, the
release's own yarn.lock) on one interop genesis of 8 validators, the minimal preset and
2-second slots, phase0 then Altair from epoch 1; A's validator client runs validators 0-3 and B's, B started when A is up and
given A's ENR as its bootnode, validators 4-7.  They talk over netem.py's emulated link (60 ms each way, 20 Mbit/s,
captured on A) for RUN_S seconds after genesis.  Both load keys/node/noise-keylog.cjs with
NODE_OPTIONS, so the unchanged client writes its Noise keys to lodestar.keys.

Blocks by root come only when B hears a gossip block whose parent it lacks.  B subscribes to
gossip when its range sync ends (its head within an epoch of the clock); A then sends it the
blocks it makes, and offers it (IHAVE) those of its last three gossipsub heartbeats (2.1 s): a
block A made after it served B's last range batch and longer ago than that is one B never hears,
and the next one's parent is unknown to B.  Left alone that is a rare race (2 of the generator's
first 6 runs; none of 6 later ones).  So the link stalls for STALL_S once B's metrics show every
blocks-by-range request it sent answered (netem.py's stall: every frame waits, none is lost):
B's subscription, sent when it has imported that last batch, reaches A late, and a block A makes
early in the stall is neither sent nor offered to B.  The stall is shorter than Lodestar's
req/resp timeouts (5 s), so no request fails for it.  Whether A proposes early in the stall is
the proposer shuffle's (half the validators are A's), so a run whose nodes' counters show no
beacon_blocks_by_root request, sent by one (beacon_reqresp_outgoing_requests_total) and received
by the other (beacon_reqresp_incoming_requests_total), is thrown away and the whole run made
again, up to ATTEMPTS times; the truth says how many it took (`attempts`) and when the link
stalled.  The client is unchanged.

The truth is the nodes' own (lodestar.truth.json): every block of the chain each node holds,
from its REST API (/eth/v2/beacon/blocks/{slot}; JSON, which 1.5.1 serves for blocks whatever
the Accept header, made SSZ by the release's own @lodestar/types: lodestar/block-ssz.mjs), by
sha256; and each node's Prometheus metrics (--metrics) lines for its req/resp and gossip
counters, as it printed them, read at metrics_time (wall clock, as the capture's timestamps)
after the validators stopped.

Regenerate (root, Node.js 20, npm): sudo python3 captures/gen/make_lodestar.py
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from netem import EmulatedLink  # noqa: E402
from beacon import http, read_nodes, stop  # noqa: E402

ROOT = HERE.parent.parent
PKG = HERE / "lodestar"
OUT = ROOT / "captures" / "lodestar"
WORK = Path("/tmp/p2pc-lodestar")
PRELOAD = ROOT / "keys" / "node" / "noise-keylog.cjs"
YARN = "yarn@1.22.22"
DELAY_MS, RATE_KBIT = 60, 20000
PORT, REST, METRICS = 9000, 9596, 8008
VALIDATORS = {"a": "0..3", "b": "4..7"}
SECONDS_PER_SLOT = 2
START_S = 40      # genesis this long after A starts (A needs ~15 s to come up)
B_AFTER_S = 16    # B starts this long after genesis: it syncs A's first blocks by range
RUN_S = 100       # the chain runs this long after genesis
METRIC_PREFIXES = ("beacon_reqresp_", "lodestar_gossip_", "gossipsub_")
STALL_S = 4       # the link stalls this long when B's range requests are all answered (see above)
ATTEMPTS = 6      # runs at most, until one has blocks by root (see above)


def install() -> None:
    """The nodes, as pinned by the release's yarn.lock (npm resolves some of its ranges to
    releases that need a newer Node, see docs/interop.md)."""
    if not (PKG / "node_modules").exists():
        subprocess.run(["npx", "--yes", YARN, "install", "--frozen-lockfile", "--non-interactive"],
                       cwd=PKG, check=True)


LODESTAR = [str(PKG / "node_modules" / ".bin" / "lodestar")]
ALTAIR_EPOCH = 1  # phase0 for the first 8 slots, then Altair (sync committees, v2 methods)
CHAIN = ["--preset", "minimal", "--params.SECONDS_PER_SLOT", str(SECONDS_PER_SLOT),
         "--params.ALTAIR_FORK_EPOCH", str(ALTAIR_EPOCH)]


def argv(side: str, genesis: int, enr: str | None) -> list[str]:
    """The beacon node.  Its validators run in a process of their own (validator_argv): `dev
    --startValidators` gives them the node's --metrics.port too, and the second server fails."""
    cmd = [*LODESTAR, "dev", *CHAIN, "--genesisValidators", "8", "--genesisTime", str(genesis),
           "--dataDir", str(WORK / side / "data"), "--port", str(PORT),
           "--enr.ip", EmulatedLink.addr_a if side == "a" else EmulatedLink.addr_b,
           "--rest", "--rest.address", "0.0.0.0", "--rest.port", str(REST),
           "--metrics", "--metrics.address", "0.0.0.0", "--metrics.port", str(METRICS),
           "--network.connectToDiscv5Bootnodes", "true", "--logLevel", "info"]
    return cmd + (["--bootnodes", enr] if enr else [])


def validator_argv(side: str) -> list[str]:
    return [*LODESTAR, "validator", "--network", "dev", *CHAIN, "--interopIndexes", VALIDATORS[side],
            "--server", f"http://127.0.0.1:{REST}", "--dataDir", str(WORK / side / "validator")]


def fetch_blocks(link: EmulatedLink, side: str) -> list[Path]:
    """Every block the node holds, genesis on, as its REST API answers /eth/v2/beacon/blocks/{slot}
    (JSON: Lodestar 1.5.1 serves blocks in no other encoding), one file per slot."""
    head = json.loads(http(link, side, "/eth/v1/beacon/headers/head", REST))["data"]["header"]["message"]
    out = []
    for slot in range(0, int(head["slot"]) + 1):
        block = http(link, side, f"/eth/v2/beacon/blocks/{slot}", REST)
        if block is not None:   # else an empty slot: 404
            out.append(WORK / side / f"block-{slot}.json")
            out[-1].write_bytes(block)
    return out


def blocks(files: list[Path]) -> list[dict]:
    """The blocks' SSZ, serialised from the node's JSON by the release's own @lodestar/types."""
    subprocess.run(["node", str(PKG / "block-ssz.mjs"), *map(str, files)], check=True, cwd=PKG,
                   env=dict(os.environ, LODESTAR_PRESET="minimal"))   # the nodes' --preset
    out = []
    for f in files:
        ssz = f.with_suffix(".ssz").read_bytes()
        out.append({"slot": int(f.stem.removeprefix("block-")), "version": json.loads(f.read_bytes())["version"],
                    "ssz_len": len(ssz), "ssz_sha256": hashlib.sha256(ssz).hexdigest()})
    return out


def by_root(nodes: dict) -> bool:
    """Whether one node says it sent a beacon_blocks_by_root request and the other that it
    received one."""
    def count(side: str, way: str) -> int:
        label = f'beacon_reqresp_{way}_requests_total{{method="beacon_blocks_by_root"}} '
        return sum(int(ln.removeprefix(label)) for ln in nodes[side]["metrics"] if ln.startswith(label))
    return any(count(side, "outgoing") and count(other, "incoming") for side, other in (("a", "b"), ("b", "a")))


def stall_when_b_synced(link: EmulatedLink, until: float) -> float | None:
    """Stalls the link (STALL_S) as soon as every beacon_blocks_by_range request B's metrics count
    (beacon_reqresp_outgoing_requests_total) has its whole response (the request's roundtrip
    histogram counts it when the response is read); returns when (wall clock), or None if that
    never happened before `until`."""
    while time.time() < until:
        text = (http(link, "b", "/metrics", METRICS) or b"").decode()
        sent, done = (re.search(rf'^{name}{{method="beacon_blocks_by_range"}} (\d+)', text, re.M)
                      for name in ("beacon_reqresp_outgoing_requests_total",
                                   "beacon_reqresp_outgoing_request_roundtrip_time_seconds_count"))
        if sent and done and int(sent.group(1)) == int(done.group(1)) > 0:
            link.stall(STALL_S)
            return time.time()
        time.sleep(0.1)
    return None


def run(keys: Path, cap: Path) -> tuple[int, float | None, dict, dict]:
    """One run: (genesis time, when the link stalled, each node's truth but its blocks, each
    node's block files)."""
    keys.unlink(missing_ok=True)
    for side in ("a", "b"):
        subprocess.run(["rm", "-rf", str(WORK / side)], check=True)
        (WORK / side).mkdir(parents=True)
    env = dict(os.environ, LIBP2P_NOISE_KEYLOG=str(keys), NODE_OPTIONS=f"--require {PRELOAD}")
    genesis = int(time.time()) + START_S
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        logs = {s: open(WORK / f"{s}.log", "w") for s in ("a", "b", "va", "vb")}
        nodes = {"a": link.popen("a", argv("a", genesis, None), cwd=WORK / "a", env=env,
                                 stdout=logs["a"], stderr=subprocess.STDOUT, start_new_session=True),
                 "va": link.popen("a", validator_argv("a"), cwd=WORK / "a", stdout=logs["va"],
                                  stderr=subprocess.STDOUT, start_new_session=True)}
        enr = None
        while enr is None and time.time() < genesis:
            ident = http(link, "a", "/eth/v1/node/identity", REST)
            enr = json.loads(ident)["data"]["enr"] if ident else None
            time.sleep(1)
        if enr is None:
            raise SystemExit(f"node A gave no ENR before genesis: see {WORK / 'a.log'}")
        time.sleep(max(0.0, genesis + B_AFTER_S - time.time()))
        nodes["b"] = link.popen("b", argv("b", genesis, enr), cwd=WORK / "b", env=env,
                                stdout=logs["b"], stderr=subprocess.STDOUT, start_new_session=True)
        nodes["vb"] = link.popen("b", validator_argv("b"), cwd=WORK / "b", stdout=logs["vb"],
                                 stderr=subprocess.STDOUT, start_new_session=True)
        stalled = stall_when_b_synced(link, genesis + RUN_S)
        time.sleep(max(0.0, genesis + RUN_S - time.time()))
        truth_nodes = read_nodes(link, nodes, SECONDS_PER_SLOT, REST, METRICS, METRIC_PREFIXES, VALIDATORS)
        block_files = {side: fetch_blocks(link, side) for side in ("a", "b")}
        for side in ("b", "a"):
            stop(nodes[side])
        for f in logs.values():
            f.close()
    return genesis, stalled, truth_nodes, block_files


def main() -> None:
    install()
    OUT.mkdir(parents=True, exist_ok=True)
    keys = OUT / "lodestar.keys"
    cap = OUT / "lodestar.pcapng"
    for attempt in range(1, ATTEMPTS + 1):
        genesis, stalled, truth_nodes, block_files = run(keys, cap)
        if by_root(truth_nodes):
            break
        print(f"run {attempt}: no blocks by root, again", flush=True)
    else:
        raise SystemExit(f"no blocks by root in {ATTEMPTS} runs")
    for side in ("a", "b"):
        truth_nodes[side]["blocks"] = blocks(block_files[side])
    os.chmod(keys, 0o644)
    truth = {
        "capture": cap.name, "keys": keys.name, "client": "lodestar",
        "version": json.loads((PKG / "node_modules" / "@chainsafe" / "lodestar" / "package.json").read_text())["version"],
        "noise": json.loads((PKG / "node_modules" / "@chainsafe" / "libp2p-noise" / "package.json").read_text())["version"],
        "chain": {"preset": "minimal", "seconds_per_slot": SECONDS_PER_SLOT, "genesis_validators": 8,
                  "altair_fork_epoch": ALTAIR_EPOCH,
                  "genesis_time": genesis, "run_s": RUN_S, "b_after_s": B_AFTER_S},
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port": PORT, "captured_at": "a",
                 "stall_s": STALL_S, "stall_time": stalled},
        "attempts": attempt,   # runs made until one had blocks by root (the docstring says why)
        "nodes": truth_nodes,
    }
    (OUT / "lodestar.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes, run {attempt}; blocks A {len(truth_nodes['a']['blocks'])}, "
          f"B {len(truth_nodes['b']['blocks'])}")


if __name__ == "__main__":
    main()
