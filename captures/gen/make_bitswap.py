#!/usr/bin/env python3
"""Make the Bitswap captures in captures/bitswap/.

Two real go-libp2p hosts running boxo's Bitswap (captures/gen/bitswap/: boxo v0.39.0 on
go-libp2p v0.48.0 and quic-go v0.59.0, pinned by its go.mod and go.sum), plaintext security and
yamux, over netem.py's emulated link (20 ms each way, 20 Mbit/s).  The provider (B) imports two texts from captures/data/text as UnixFS DAGs (16 KiB
chunks, a CIDv0 dag-pb root each) and serves them; the fetcher (A) walks both DAGs over
Bitswap.  One capture per protocol version: both hosts support only that one.  Bitswap 1.0.0
carries a block as its bare data, named by its CIDv0, so its run uses dag-pb leaves (CIDv0);
the others use raw leaves (CIDv1, as `ipfs add --raw-leaves`).

bitswap-1.2.0-noise and bitswap-1.2.0-quic are the 1.2.0 exchange over /noise with yamux (agreed
in the handshake's extensions) and over /quic-v1.  Their hosts are built with
captures/gen/libp2p/keylog's patches, the ones the eth2 captures use (golib.go_build copies
go-libp2p v0.48.0 into _work, patches it and points a replace directive at the copy; the v0.39.1
patches apply to v0.48.0 unchanged, and quic-go v0.59.0 needs no session-ticket patch: it
handles Go 1.26's silent SendSessionTicket itself).  Each host writes its keys beside the
capture: the fetcher's as <name>.keys, the provider's as <name>.provider.keys (Noise keys in
the WireGuard key log format for libp2p_noise.keylog_file, QUIC TLS secrets in the NSS format
for tls.keylog_file); either side's keys decrypt the connection.

The truth (bitswap-<version>.truth.json) is what the peers wrote: the provider's blocks (CID,
size) and every Bitswap message each peer received, as boxo decoded it.  Needs root and Go.

    sudo python3 captures/gen/make_bitswap.py            # all
    sudo python3 captures/gen/make_bitswap.py 1.2.0      # one version
    sudo python3 captures/gen/make_bitswap.py 1.2.0-noise 1.2.0-quic
"""
from __future__ import annotations

import json
import os
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
# capture name -> (protocol ID, raw leaves, transport)
VERSIONS = {
    "1.2.0": ("/ipfs/bitswap/1.2.0", True, "plaintext"),
    "1.1.0": ("/ipfs/bitswap/1.1.0", True, "plaintext"),
    "1.0.0": ("/ipfs/bitswap/1.0.0", False, "plaintext"),
    "1.2.0-noise": ("/ipfs/bitswap/1.2.0", True, "noise"),
    "1.2.0-quic": ("/ipfs/bitswap/1.2.0", True, "quic"),
}
# transport -> (security, muxer) as the truth names them
SECURITY = {"plaintext": ("/plaintext/2.0.0", "/yamux/1.0.0"), "noise": ("/noise", "/yamux/1.0.0"),
            "quic": ("/quic-v1", None)}
GO_LIBP2P = "github.com/libp2p/go-libp2p@v0.48.0"
KEYLOG = HERE / "libp2p" / "keylog"
PATCHES = [(GO_LIBP2P, "p2p/security/noise/handshake.go", KEYLOG / "noise-handshake.go.patch"),
           (GO_LIBP2P, "p2p/transport/quic/transport.go", KEYLOG / "quic-transport.go.patch")]


def make(version: str, exes: tuple[Path, Path]) -> None:
    proto, raw_leaves, transport = VERSIONS[version]
    keyed = transport != "plaintext"
    exe = exes[keyed]
    cap = OUT / f"bitswap-{version}.pcapng"
    idfile, truth_a, truth_b = (WORK / f"bitswap-{version}.{n}.json" for n in ("id", "a", "b"))
    for f in (idfile, truth_a, truth_b):
        f.unlink(missing_ok=True)
    keys = {"a": OUT / f"bitswap-{version}.keys", "b": OUT / f"bitswap-{version}.provider.keys"}
    env = {}
    for side, path in keys.items():
        path.unlink(missing_ok=True)
        env[side] = dict(os.environ, LIBP2P_NOISE_KEYLOG=str(path), SSLKEYLOGFILE=str(path)) if keyed else None
    listen = f"/ip4/0.0.0.0/udp/{PORT}/quic-v1" if transport == "quic" else f"/ip4/0.0.0.0/tcp/{PORT}"
    common = ["-proto", proto, "-transport", transport, "-idfile", str(idfile),
              f"-raw-leaves={str(raw_leaves).lower()}"]
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "-role", "provide", *common, "-truth", str(truth_b), "-seed", "2",
                             "-listen", listen, *(str(DATA / f) for f in FILES)], env=env["b"])
        for _ in range(100):
            if idfile.exists() and idfile.read_text().endswith("\n"):
                break
            time.sleep(0.1)
        ident = json.loads(idfile.read_text())
        for wildcard in ("/ip4/0.0.0.0/", "/ip4/127.0.0.1/"):
            ident["addr"] = ident["addr"].replace(wildcard, f"/ip4/{link.addr_b}/")
        idfile.write_text(json.dumps(ident) + "\n")
        link.run("a", [str(exe), "-role", "fetch", *common, "-truth", str(truth_a), "-seed", "1"],
                 check=True, timeout=120, env=env["a"])
        b.wait(30)
    for path in keys.values():
        if path.exists():
            os.chmod(path, 0o644)
    a, bt = json.loads(truth_a.read_text()), json.loads(truth_b.read_text())
    security, muxer = SECURITY[transport]
    truth = {
        "capture": cap.name,
        "protocol": proto,
        "transport": "udp" if transport == "quic" else "tcp",
        "security": security,
        "muxer": muxer,
        "versions": {"boxo": "v0.39.0", "go-libp2p": "v0.48.0", "quic-go": "v0.59.0"},
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        "peers": {"a": {"role": "fetcher", "id": a["peer"]}, "b": {"role": "provider", "id": bt["peer"]}},
        "files": [{**r, "file": f"captures/data/{FILES[i]}"} for i, r in enumerate(ident["roots"])],
        # Each message a peer received, as boxo decoded it (lists in no particular order within
        # a message: boxo keeps them in maps), with its protobuf size.
        "received_by_a": a["received"],
        "received_by_b": bt["received"],
    }
    if keyed:   # the fetcher's keys, the provider's: either decrypts the connection
        truth["keys"] = {"fetcher": keys["a"].name, "provider": keys["b"].name}
    (OUT / f"bitswap-{version}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; A received {len(a['received'])} messages, "
          f"B {len(bt['received'])}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = sys.argv[1:] or list(VERSIONS)
    plain = go_build("bitswap", "bitswappeers")
    keylog = go_build("bitswap", "bitswappeers-keylog", patches=PATCHES) \
        if any(VERSIONS[v][2] != "plaintext" for v in wanted) else plain
    for version in wanted:
        make(version, (plain, keylog))


if __name__ == "__main__":
    main()
