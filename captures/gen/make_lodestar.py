#!/usr/bin/env python3
"""Two real Lodestar 1.5.1 beacon nodes on a local dev chain, over Noise: captures/lodestar/.

Node A (192.0.2.1) and node B (192.0.2.2) run `lodestar dev` (captures/gen/lodestar/, the
release's own yarn.lock) on one interop genesis of 8 validators, the minimal preset and
2-second slots, phase0 then Altair from epoch 1; A's validator client runs validators 0-3 and B's, B started when A is up and
given A's ENR as its bootnode, validators 4-7.  They talk over netem.py's emulated link (60 ms each way, 20 Mbit/s,
captured on A) for RUN_S seconds after genesis.  Both load keylog/node/noise-keylog.cjs with
NODE_OPTIONS, so the unchanged client writes its Noise keys to lodestar.keys.

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
PRELOAD = ROOT / "keylog" / "node" / "noise-keylog.cjs"
YARN = "yarn@1.22.22"
DELAY_MS, RATE_KBIT = 60, 20000
PORT, REST, METRICS = 9000, 9596, 8008
VALIDATORS = {"a": "0..3", "b": "4..7"}
SECONDS_PER_SLOT = 2
START_S = 40      # genesis this long after A starts (A needs ~15 s to come up)
B_AFTER_S = 16    # B starts this long after genesis: it syncs A's first blocks by range
RUN_S = 100       # the chain runs this long after genesis
METRIC_PREFIXES = ("beacon_reqresp_", "lodestar_gossip_", "gossipsub_")


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


def main() -> None:
    install()
    OUT.mkdir(parents=True, exist_ok=True)
    keys = OUT / "lodestar.keys"
    keys.unlink(missing_ok=True)
    for side in ("a", "b"):
        subprocess.run(["rm", "-rf", str(WORK / side)], check=True)
        (WORK / side).mkdir(parents=True)
    env = dict(os.environ, LIBP2P_NOISE_KEYLOG=str(keys), NODE_OPTIONS=f"--require {PRELOAD}")
    cap = OUT / "lodestar.pcapng"
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
        time.sleep(max(0.0, genesis + RUN_S - time.time()))
        truth_nodes = read_nodes(link, nodes, SECONDS_PER_SLOT, REST, METRICS, METRIC_PREFIXES, VALIDATORS)
        block_files = {side: fetch_blocks(link, side) for side in ("a", "b")}
        for side in ("b", "a"):
            stop(nodes[side])
        for f in logs.values():
            f.close()
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
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port": PORT, "captured_at": "a"},
        "nodes": truth_nodes,
    }
    (OUT / "lodestar.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; blocks A {len(truth_nodes['a']['blocks'])}, "
          f"B {len(truth_nodes['b']['blocks'])}")


if __name__ == "__main__":
    main()
