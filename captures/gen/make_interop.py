#!/usr/bin/env python3
"""Make the interop captures in captures/interop/: two different real libp2p implementations, or one
with itself (go-libp2p also for the muxer agreed in the security handshake or not), each installed
from its registry at a pinned version, speaking eth2peers' workload to each other over netem.py's
emulated link (60 ms each way, 20 Mbit/s), captured on node A.

Stacks (each a program of its own; the truth is what each peer says it sent and received):
  go    captures/gen/libp2p/ (eth2peers: go-libp2p v0.39.1, go-libp2p-pubsub v0.15.0; go.sum)
  js    captures/gen/js/ (eth2peer.mjs: libp2p 3.3.11 and its modules; package-lock.json)
  rust  captures/gen/rust/ (eth2peer-rs: libp2p 0.57.1; Cargo.lock)
  py    captures/gen/py/ (eth2peer.py: py-libp2p 0.8.1; requirements.txt, in a venv of its own)

A cell is a pair, a direction, a security and a muxer.  For a pair "x-y" stack x runs on node A
(where the capture is taken) and y on node B; "x>y" cells have x dial, "y>x" cells have y dial,
so the listener is on either side of the capture.  The workload: status, ping, metadata,
beacon_blocks_by_range (the smallest real block in captures/data/ethereum, then a
ResourceUnavailable error chunk), the block published on /eth2/bba4da96/beacon_block/ssz_snappy
in the plaintext/yamux cells only (a second copy of a 440 KB block would double the others) or,
in the go<->py plaintext/yamux cells, small real gossip messages both ways (the gossip plan:
PLAN, gossip_plan(); py-libp2p publishes first), goodbye.  Noise and TLS cells with a go peer run eth2peers with keylog/'s patch and keep its keys
(<name>.keys); the other stacks cannot log Noise keys cheaply, so their pairs are plaintext.
TCP TLS cells of go with rust, js and py (yamux) keep the other peer's TLS secrets as well,
written by its stack with no patch, as <name>.<stack>.keys: rust-libp2p's libp2p-tls 0.7.0 gives
rustls a KeyLogFile ($SSLKEYLOGFILE), @libp2p/tls 3.1.10 (the release of js-libp2p 3.3.11's
@libp2p/utils 7.4.1) makes a node:tls TLSSocket, which node's --tls-keylog (in NODE_OPTIONS) logs,
and py-libp2p 0.8.1's TLSTransport takes a key log file in its IdentityConfig (eth2peer.py passes
$SSLKEYLOGFILE), which it sets as Python's ssl keylog_filename.
go-go cells run Noise and TCP TLS with the muxer agreed in the handshake (noise, tls: Noise
extensions, ALPN) and with no muxers handed to the security transport (noise-ms, tls-ms:
multistream-select agrees it inside).
QUIC cells (/quic-v1: TLS 1.3 inside QUIC, no muxer; named interop-<dialer>-<listener>-quic[-lf])
keep each peer's TLS secrets from $SSLKEYLOGFILE: the rust peer's (rust-libp2p writes them
through libp2p-tls's rustls KeyLogFile, unpatched) as <name>.keys, the go peer's (keylog/'s
patch) as <name>.go.keys.  go<->js QUIC cells keep the go peer's secrets alone, as <name>.keys:
js-libp2p's QUIC transport, @chainsafe/libp2p-quic 2.1.1, cannot log its own (its rustls is inside a
native module built with libp2p-tls 0.6.2, which sets no key_log); TLS 1.3's traffic secrets are the
connection's, so the go peer's decrypt both directions.  That package is not in js/package.json
(this registry 404s its other platform packages, so `npm ci` would refuse the lock): a js QUIC
cell installs it first with `npm install --no-save` at JS_QUIC's exact version, recorded in the truth.

Regenerate (root; Go, Node.js/npm and cargo): sudo python3 captures/gen/make_interop.py [name ...]
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK, listener_addr  # noqa: E402
from make_eth2 import build as build_go  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "interop"
BLOCK = HERE.parent / "data" / "ethereum" / "eth_mainnet_SignedBeaconBlock_capella_slot6507058.ssz"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 9000
HOLD_MS = 30   # the dialer's first payload, in cells captured at the listener (make())
SEEDS = {"dialer": 1, "listener": 2}
SECURITY_IDS = {"plaintext": "/plaintext/2.0.0", "noise": "/noise", "noise-ms": "/noise", "tls": "/tls/1.0.0",
                "tls-ms": "/tls/1.0.0", "quic": "/quic-v1"}
MUXER_IDS = {"yamux": "/yamux/1.0.0", "mplex": "/mplex/6.7.0", "none": None}
# The py cells' gossip (eth2peers' -gossip-plan, eth2peer.py's --gossip-plan): real messages of
# the types the eth2 gossip topics carry, taken from a real block's body, the dialer's on one
# topic and the listener's on another.  capella: body fields in order (consensus-specs
# capella/beacon-chain.md, BeaconBlockBody); the lists are SSZ offsets, these two of fixed-size items.
PLAN_BLOCK = HERE.parent / "data" / "ethereum" / "eth_mainnet_SignedBeaconBlock_capella_slot6209716.ssz"
# The py peer publishes 2 (its router sends the first only: docs/interop.md), the go peer 3.
PLAN = {"dialer": ("voluntary_exit", "SignedVoluntaryExit", 112), "listener": ("bls_to_execution_change",
                                                                             "SignedBLSToExecutionChange", 172)}
PLAN_COUNT = {"py": 2, "go": 3}
# js-libp2p's QUIC transport (the release for libp2p 3.x), installed for js QUIC cells only.
JS_QUIC = ("@chainsafe/libp2p-quic", "2.1.1")


def cells() -> dict[str, tuple[str, str, str, str]]:
    """name: (stack on node A, stack on node B, which dials ("a" or "b"), security, muxer)."""
    out = {}
    tcp = [("plaintext", "yamux"), ("noise", "yamux"), ("plaintext", "mplex"), ("noise", "mplex")]
    # go with go: the muxer agreed in the handshake (Noise extensions, TLS ALPN) and, with no
    # muxers handed to the security transport (-security noise-ms, tls-ms), by multistream-select.
    early = [(sec, "yamux") for sec in ("noise", "noise-ms", "tls", "tls-ms")]
    py = [("plaintext", "yamux"), ("plaintext", "mplex"), ("noise", "yamux"), ("tls", "yamux")]
    # TCP TLS and yamux of go with js and rust (issue #25), each direction: four cells, as CI runs
    # every cell's tests four times.
    # QUIC (issue #27) of go with rust and with js: go's key log decrypts the go-js cells.
    for a, b, combos in [("go", "js", [*tcp, ("tls", "yamux"), ("quic", "none")]),
                         ("go", "rust", [*tcp, ("tls", "yamux"), ("quic", "none")]),
                         ("js", "rust", [("plaintext", "yamux"), ("plaintext", "mplex")]), ("go", "go", early),
                         ("go", "py", py)]:
        for sec, mux in combos:
            out[f"interop-{a}-{b}-{kind(sec, mux)}"] = (a, b, "a", sec, mux)
            out[f"interop-{b}-{a}-{kind(sec, mux)}-lf"] = (a, b, "b", sec, mux)
    # Who speaks first (docs/interop.md, "Who speaks first"): at the dialer, the dialer; at a
    # listener whose stack sends its multistream header as it accepts (go, py: EAGER_LISTENERS),
    # the listener, as make() holds the dialer's first bytes.  Above, a go or py listener is captured
    # at one end only; these cells capture the same pairs at the other.
    for x, combos in (("js", [*tcp, ("tls", "yamux")]), ("rust", [*tcp, ("tls", "yamux")]), ("py", py)):
        for sec, mux in combos:
            out[f"interop-{x}-go-{kind(sec, mux)}"] = (x, "go", "a", sec, mux)
    for sec, mux in py:
        out[f"interop-go-py-{kind(sec, mux)}-lf"] = ("py", "go", "b", sec, mux)
    # Each stack with itself, plaintext (a Noise cell's keys here are the go peer's): js and rust
    # captured at the dialer (their listeners wait, so the other end adds no order), py at both.
    # py with py does not gossip: its router sends one message without from and seqno (below).
    for x, combos in (("js", [("plaintext", "yamux"), ("plaintext", "mplex")]),
                      ("rust", [("plaintext", "yamux"), ("plaintext", "mplex")]), ("py", [("plaintext", "mplex")])):
        for sec, mux in combos:
            out[f"interop-{x}-{x}-{kind(sec, mux)}"] = (x, x, "a", sec, mux)
            if x == "py":
                out[f"interop-{x}-{x}-{kind(sec, mux)}-lf"] = (x, x, "b", sec, mux)
    return out


def kind(sec: str, mux: str) -> str:
    return sec if sec == "quic" else f"{sec}-{mux}"


def build(stacks: set[str]) -> dict[str, object]:
    exes: dict[str, object] = {}
    if "go" in stacks:
        exes["go"] = build_go()
    if "js" in stacks:
        js = HERE / "js"
        if not (js / "node_modules").exists():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=js, check=True)
        exes["js"] = ["node", "--import", str(js / "polyfill.mjs"), str(js / "eth2peer.mjs")]
    if "rust" in stacks:
        rs = HERE / "rust"
        subprocess.run(["cargo", "build", "--release", "--locked", "-j", "1"], cwd=rs, check=True)
        exes["rust"] = [str(rs / "target" / "release" / "eth2peer-rs")]
    if "py" in stacks:
        venv = WORK / "py-venv"
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", str(HERE / "py" / "requirements.txt")],
                       check=True)
        exes["py"] = [str(venv / "bin" / "python"), str(HERE / "py" / "eth2peer.py")]
    return exes


def install_js_quic() -> str:
    """Installs JS_QUIC into js/node_modules without touching package.json or the lock (see the
    docstring), and returns the version installed."""
    js, (pkg, version) = HERE / "js", JS_QUIC
    subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund", f"{pkg}@{version}"],
                   cwd=js, check=True)
    got = json.loads((js / "node_modules" / pkg / "package.json").read_text())["version"]
    if got != version:
        raise SystemExit(f"{pkg}: {got} installed, {version} wanted")
    return got


def body_lists(block: bytes) -> dict[str, bytes]:
    """A capella SignedBeaconBlock's body lists of fixed-size items, by field name: after the
    randao_reveal (96), eth1_data (72) and graffiti (32), the offsets of proposer_slashings,
    attester_slashings, attestations, deposits and voluntary_exits, the sync_aggregate (160),
    the offsets of execution_payload and bls_to_execution_changes."""
    u32 = lambda b, at: int.from_bytes(b[at:at + 4], "little")  # noqa: E731
    msg = block[u32(block, 0):]
    body = msg[u32(msg, 80):]
    offs = [u32(body, 200 + 4 * i) for i in range(5)] + [u32(body, 380), u32(body, 384), len(body)]
    return {"voluntary_exit": body[offs[4]:offs[5]], "bls_to_execution_change": body[offs[6]:offs[7]]}


def gossip_plan(name: str, stacks: dict[str, str]) -> tuple[Path, dict]:
    """The plan file both peers read, and its provenance for the truth."""
    digest = "bba4da96"
    lists = body_lists(PLAN_BLOCK.read_bytes())
    folder = WORK / f"{name}.gossip"
    folder.mkdir(parents=True, exist_ok=True)
    plan: dict = {"topics": [f"/eth2/{digest}/{PLAN[r][0]}/ssz_snappy" for r in ("dialer", "listener")]}
    prov: dict = {"source": PLAN_BLOCK.name, "topics": plan["topics"]}
    for role, (topic, ssz_type, size) in PLAN.items():
        count = PLAN_COUNT[stacks[role]]
        items = lists[topic]
        assert len(items) % size == 0 and len(items) // size >= count
        plan[role], prov[role] = [], []
        for i in range(count):
            f = folder / f"{role}-{topic}-{i}.ssz"
            f.write_bytes(items[i * size:(i + 1) * size])
            plan[role].append({"topic": f"/eth2/{digest}/{topic}/ssz_snappy", "file": str(f)})
            field = "voluntary_exits" if topic == "voluntary_exit" else "bls_to_execution_changes"
            prov[role].append({"type": ssz_type, "from": f"body.{field}[{i}]", "ssz_len": size,
                               "ssz_sha256": hashlib.sha256(f.read_bytes()).hexdigest()})
    path = WORK / f"{name}.gossip.json"
    path.write_text(json.dumps(plan, indent=1))
    return path, prov


def argv(stack: str, exes: dict, role: str, sec: str, mux: str, gossip: int, blocks: Path, truth: Path,
         idfile: Path | None, peer: str | None, keyed: bool, plan: Path | None = None) -> list[str]:
    return _argv(stack, exes, role, sec, mux, gossip, blocks, truth, idfile, peer, keyed) + \
        ([f"-{'-' * (stack != 'go')}gossip-plan", str(plan)] if plan else [])


def _argv(stack: str, exes: dict, role: str, sec: str, mux: str, gossip: int, blocks: Path, truth: Path,
          idfile: Path | None, peer: str | None, keyed: bool) -> list[str]:
    seed = SEEDS["listener" if role == "listen" else "dialer"]
    quic = sec == "quic"
    listen = f"/ip4/0.0.0.0/udp/{PORT}/quic-v1" if quic else f"/ip4/0.0.0.0/tcp/{PORT}"
    if stack == "go":
        exe = exes["go"][1] if keyed else exes["go"][0]
        # eth2peers' -security and -muxer do not apply to QUIC (TLS 1.3 inside, no muxer).
        cmd = [str(exe), "-role", role, "-muxer", "yamux" if quic else mux, "-blocks", str(blocks),
               "-gossip", str(gossip), "-session", "full", "-security", "tls" if quic else sec,
               "-transport", "quic" if quic else "tcp", "-seed", str(seed), "-truth", str(truth)]
        return cmd + (["-idfile", str(idfile), "-listen", listen] if role == "listen" else ["-peer", peer])
    cmd = [*exes[stack], "--role", role, "--muxer", mux, "--security", sec, "--block", str(BLOCK),
           "--gossip", str(gossip), "--seed", str(seed), "--truth", str(truth)]
    # --transport quic: eth2peer-rs (libp2p-quic) and eth2peer.mjs (@chainsafe/libp2p-quic); TCP is
    # every peer's default.
    cmd += ["--transport", "quic"] if quic else []
    return cmd + (["--idfile", str(idfile), "--listen", listen] if role == "listen" else ["--peer", peer])


def make(name: str, a: str, b: str, dials: str, sec: str, mux: str, exes: dict) -> None:
    cap = OUT / f"{name}.pcapng"
    dialer, listener = (dials, "b" if dials == "a" else "a")
    stack = {"a": a, "b": b}
    # The plaintext/yamux cells gossip: the block, or with a py peer the gossip plan's small
    # messages both ways (the block's 440 KB a second time would double the capture).
    gossip = 1 if (sec, mux) == ("plaintext", "yamux") and "py" not in (a, b) else 0
    plan, plan_prov = gossip_plan(name, {"dialer": stack[dials], "listener": stack["b" if dials == "a" else "a"]}) \
        if (sec, mux) == ("plaintext", "yamux") and "py" in (a, b) else (None, None)
    blocks = WORK / "interop-blocks"
    blocks.mkdir(parents=True, exist_ok=True)
    shutil.copy(BLOCK, blocks / BLOCK.name)
    idfile, keys = WORK / f"{name}.id", OUT / f"{name}.keys"
    idfile.unlink(missing_ok=True)
    keys.unlink(missing_ok=True)
    truths = {side: WORK / f"{name}.{side}.json" for side in ("a", "b")}
    for t in truths.values():
        t.unlink(missing_ok=True)
    # The go peer logs its Noise keys (eth2peers-keylog); either side's keys decrypt a connection.
    # Over QUIC each peer logs its TLS secrets to a file of its own: the rust peer's <name>.keys,
    # the go peer's <name>.go.keys.
    # TCP TLS with another stack: the go peer's secrets are <name>.keys, the other peer's, which
    # its stack writes unpatched, <name>.<stack>.keys (rust: libp2p-tls's rustls KeyLogFile reads
    # $SSLKEYLOGFILE; js: @libp2p/tls runs node:tls, whose --tls-keylog logs every TLSSocket).
    # go with js over QUIC: the go peer's secrets alone, as <name>.keys (the js peer cannot write
    # its own; its $SSLKEYLOGFILE points at a scratch file, and the truth says whether it appeared).
    quic = sec == "quic"
    keyed = sec != "plaintext" and "go" in stack.values()
    js_quic = quic and "js" in stack.values()
    tls_keys = {st: OUT / (f"{name}.keys" if st == "rust" else f"{name}.{st}.keys") for st in stack.values()} \
        if quic else {}
    if js_quic:
        tls_keys = {"go": OUT / f"{name}.keys", "js": WORK / f"{name}.js.keys"}
        quic_version = install_js_quic()
    other = next((st for st in stack.values() if st != "go"), None) if sec == "tls" and keyed else None
    if other:
        tls_keys = {other: OUT / f"{name}.{other}.keys"}
    for path in tls_keys.values():
        path.unlink(missing_ok=True)
    env = {}
    for side in ("a", "b"):
        if quic:
            env[side] = dict(os.environ, SSLKEYLOGFILE=str(tls_keys[stack[side]]))
        elif stack[side] == other:
            env[side] = dict(os.environ, SSLKEYLOGFILE=str(tls_keys[other]))
            if other == "js":
                env[side]["NODE_OPTIONS"] = f"{os.environ.get('NODE_OPTIONS', '')} --tls-keylog={tls_keys[other]}".strip()
        else:
            env[side] = dict(os.environ, LIBP2P_NOISE_KEYLOG=str(keys), SSLKEYLOGFILE=str(keys))
    addrs = {"a": EmulatedLink.addr_a, "b": EmulatedLink.addr_b}
    # Captured at the listener, the dialer's first bytes are held, so that a listener that speaks
    # as it accepts is first (netem.py); at the dialer nothing is: its first write goes out first.
    hold = {dialer: HOLD_MS} if listener == "a" and not quic else {}
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap, hold_first_payload_ms=hold) as link:
        lp = link.popen(listener, argv(stack[listener], exes, "listen", sec, mux, gossip, blocks, truths[listener],
                                       idfile, None, keyed and stack[listener] == "go", plan), env=env[listener])
        addr = listener_addr(idfile, addrs[listener], timeout=30)
        link.run(dialer, argv(stack[dialer], exes, "dial", sec, mux, gossip, blocks, truths[dialer], None, addr,
                              keyed and stack[dialer] == "go", plan), timeout=float(os.environ.get("INTEROP_TIMEOUT", 180)),
                 env=env[dialer])
        lp.wait(60)
    peer = {side: json.loads(truths[side].read_text()) for side in ("a", "b")}
    truth = {
        "capture": cap.name, "security": SECURITY_IDS[sec], "muxer": MUXER_IDS[mux], "session": "interop",
        "seeds": {"a" if dialer == "a" else "b": SEEDS["dialer"], listener: SEEDS["listener"]},
        "key_type": "ed25519",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, f"port_{listener}": PORT,
                 "dialer": addrs[dialer], "listener": addrs[listener], "listener_port": PORT,
                 "captured_at": "dialer" if dialer == "a" else "listener",
                 **({"hold_first_payload_ms": {"dialer": HOLD_MS}} if hold else {})},
        "dialer": {"node": dialer, "stack": peer[dialer]["stack"], "version": peer[dialer]["version"]},
        "listener": {"node": listener, "stack": peer[listener]["stack"], "version": peer[listener]["version"]},
        "block": {"file": BLOCK.name, "fork": "capella", "gossiped": gossip},
        **({"gossip_plan": plan_prov} if plan_prov else {}),
        # What each peer says it sent and received, as it wrote it.
        "peers": {"dialer": peer[dialer], "listener": peer[listener]},
    }
    if keyed and quic:
        written = {st: path for st, path in tls_keys.items() if st != "js"}
        for path in written.values():
            os.chmod(path, 0o644)
        truth["keys"] = {st: path.name for st, path in written.items()}
    if js_quic:
        truth["js_quic"] = {"package": JS_QUIC[0], "version": quic_version, "installed": "npm install --no-save",
                            "sslkeylogfile_written": tls_keys["js"].exists()}
        tls_keys["js"].unlink(missing_ok=True)
    elif keyed:
        os.chmod(keys, 0o644)
        truth["keys"] = {"go": keys.name, "side": "dialer" if stack[dialer] == "go" else "listener"}
        for st, path in tls_keys.items():
            os.chmod(path, 0o644)
            truth["keys"][st] = path.name
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    all_cells = cells()
    names = sys.argv[1:] or list(all_cells)
    exes = build({s for n in names for s in all_cells[n][:2]})
    for name in names:
        make(name, *all_cells[name], exes)


if __name__ == "__main__":
    main()
