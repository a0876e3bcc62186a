#!/usr/bin/env python3
"""Make the Ethereum consensus-layer captures in captures/eth2/ from real go-libp2p hosts.

captures/gen/libp2p/ is a Go program on go-libp2p v0.39 (plaintext security, yamux or mplex
through github.com/libp2p/go-mplex v0.7.0) and go-libp2p-pubsub v0.15.0: the dialer asks the
listener for status, ping, metadata and beacon_blocks_by_range (three real mainnet blocks and an
error chunk), publishes blocks on the mainnet beacon_block gossip topic, and says goodbye.  The
hosts run in two network namespaces over netem.py's emulated link.  Needs root and Go.

Sessions: eth2-yamux and eth2-mplex (the full workload), eth2-broken (the listener's answers to
eight pings each break one rule of the encoding, a request for a protocol the listener does not
serve is refused with "na", a gossip message is not Snappy), eth2-noise (status, ping and
goodbye over /noise).  eth2-yamux-lf and eth2-noise-yamux-lf are eth2-yamux and eth2-noise-yamux
captured on the listener's side, where its multistream header is the first payload on the wire
(the dialer then runs on node B).  eth2-noise-secp256k1 (status, ping and goodbye over /noise between
secp256k1 identities, keys kept).  eth2-noise-yamux (the full workload over /noise, yamux agreed in the
handshake's extensions), eth2-noise-mplex (the full workload over /noise, mplex agreed by
multistream-select inside), eth2-tls-yamux (the full workload over /tls/1.0.0, yamux agreed by ALPN):
the hosts are built with keylog/'s patches (go build -overlay) and write their Noise keys and TLS
secrets beside the capture (<name>.keys); eth2-tls-embedded is eth2-tls-yamux with its secrets
injected into the pcapng (editcap --inject-secrets).  eth2-quic is the full workload over /quic-v1
(QUIC: TLS 1.3 inside, each libp2p stream a QUIC stream, no muxer), the TLS secrets of both
hosts' QUIC connections beside it (keylog/quic-transport.go.patch).  eth2-tcp-quic is the same two
peers over both transports, one connection after the other (session "dual"): /noise with yamux over
TCP (status, ping, a gossiped block), then /quic-v1 (status, ping, metadata, blocks by range, another
gossiped block, goodbye); the key log beside it holds both hosts' Noise keys and QUIC secrets, and
its truth what each peer says it sent and received over which transport (-truth).  eth2-pubsub-trace
is eth2-yamux's workload whose truth also holds, per peer, the entries of every RPC
go-libp2p-pubsub's tracer saw it send (SendRPC: per kind and topic, as the tracer counts them).
eth2-badcrc and eth2-truncated are cut from eth2-yamux with editcap.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK, go_build, listener_addr  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "eth2"
BLOCKS = HERE.parent / "data" / "ethereum"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 9000
# name: (muxer, blocks gossiped, session, security)
SESSIONS = {"eth2-yamux": ("yamux", 2, "full", "plaintext"), "eth2-mplex": ("mplex", 1, "full", "plaintext"),
            "eth2-broken": ("yamux", 0, "broken", "plaintext"), "eth2-noise": ("yamux", 0, "short", "noise"),
            "eth2-noise-yamux": ("yamux", 1, "full", "noise"), "eth2-noise-mplex": ("mplex", 1, "full", "noise-ms"),
            "eth2-tls-yamux": ("yamux", 1, "full", "tls"), "eth2-noise-secp256k1": ("yamux", 0, "short", "noise"),
            "eth2-yamux-lf": ("yamux", 1, "full", "plaintext"), "eth2-noise-yamux-lf": ("yamux", 1, "full", "noise"),
            "eth2-quic": ("none", 1, "full", "quic"), "eth2-tcp-quic": ("yamux", 2, "dual", "noise"),
            "eth2-pubsub-trace": ("yamux", 2, "full", "plaintext")}
# Sessions whose peers also say what go-libp2p-pubsub's tracer saw them send (-trace-pubsub:
# every RPC's entries per kind and topic, the truth's peers.*.pubsub_sent).
TRACED = {"eth2-pubsub-trace"}
# Sessions captured on the listener's side (node A listens, B dials): the listener's multistream
# header, sent as it accepts, is on the wire a round trip before the dialer's proposal, as real
# go-libp2p listeners on a LAN are.  The others are captured on the dialer's side, where the
# dialer's proposal goes out before the listener's header arrives.
LISTENER_FIRST = {"eth2-yamux-lf", "eth2-noise-yamux-lf"}
# Sessions whose identities are secp256k1 keys (as Ethereum clients'), not Ed25519.
SECP256K1 = {"eth2-noise-secp256k1"}
# Sessions that write their keys (the key log beside the capture); eth2-noise keeps none.
KEYED = {"eth2-noise-yamux", "eth2-noise-mplex", "eth2-tls-yamux", "eth2-noise-secp256k1", "eth2-noise-yamux-lf",
         "eth2-quic", "eth2-tcp-quic"}
GO_LIBP2P = "github.com/libp2p/go-libp2p@v0.39.1"
QUIC_GO = "github.com/quic-go/quic-go@v0.49.0"
PATCHES = [(GO_LIBP2P, "p2p/security/noise/handshake.go", HERE / "libp2p" / "keylog" / "noise-handshake.go.patch"),
           (GO_LIBP2P, "p2p/security/tls/transport.go", HERE / "libp2p" / "keylog" / "tls-transport.go.patch"),
           (GO_LIBP2P, "p2p/transport/quic/transport.go", HERE / "libp2p" / "keylog" / "quic-transport.go.patch"),
           # Not a key log: quic-go v0.49.0 panics on the server when built with a Go newer than it
           # knows (1.26 here), whose SendSessionTicket no longer fails when tickets are disabled.
           (QUIC_GO, "internal/handshake/crypto_setup.go",
            HERE / "libp2p" / "keylog" / "quic-go-session-ticket.go.patch")]
SECURITY_IDS = {"plaintext": "/plaintext/2.0.0", "noise": "/noise", "noise-ms": "/noise", "tls": "/tls/1.0.0",
                "quic": "/quic-v1"}
SEEDS = {"a": 1, "b": 2}     # identity keys: Ed25519 from 32 bytes of the seed
# The listener's answers to the broken session's pings, in order (main.go brokenPings).
BROKEN_PINGS = ["bad_crc", "unskippable", "length_mismatch", "too_long", "compressed_too_long",
                "decompress_failed", "trailing", "truncated"]
INVALID_GOSSIP = "this gossip message is not snappy-compressed"
# The SSZ values main.go sends (status(), the ping/goodbye/metadata handlers, byRange).
SSZ = {"status": {"fork_digest": "bba4da96", "finalized_epoch": 203000, "head_slot": 6507058},
       "ping_request": 3, "ping_response": 7, "goodbye_reason": 1,
       "metadata": {"seq_number": 7, "attnets": "ff" * 8, "syncnets": "0f"},
       "by_range": {"start_slot": 6507058, "count": 8, "step": 1}}


def build() -> tuple[Path, Path]:
    """The hosts, and the hosts patched to write their keys."""
    return go_build("libp2p", "eth2peers"), go_build("libp2p", "eth2peers-keylog", patches=PATCHES)


def make(name: str, muxer: str, gossip: int, session: str, security: str, exes: tuple[Path, Path]) -> None:
    cap = OUT / f"{name}.pcapng"
    idfile = WORK / f"{name}.id"
    idfile.unlink(missing_ok=True)
    exe = exes[1] if name in KEYED else exes[0]
    # The dialer's keys beside the capture (<name>.keys), the listener's too (<name>.listener.keys):
    # the keys of either side decrypt a connection.
    dialer, listener = ("b", "a") if name in LISTENER_FIRST else ("a", "b")
    keys = {dialer: OUT / f"{name}.keys", listener: OUT / f"{name}.listener.keys"}
    env = {}
    for side, path in keys.items():
        path.unlink(missing_ok=True)
        env[side] = dict(os.environ, LIBP2P_NOISE_KEYLOG=str(path), SSLKEYLOGFILE=str(path)) if name in KEYED else None
    addrs = {"a": EmulatedLink.addr_a, "b": EmulatedLink.addr_b}
    truths = {side: WORK / f"{name}.{side}.json" for side in ("a", "b")}
    for t in truths.values():
        t.unlink(missing_ok=True)
    # QUIC has TLS 1.3 inside and no muxer: -security and -muxer do not apply to it.
    quic, dual = security == "quic", session == "dual"
    transport = "both" if dual else "quic" if quic else "tcp"
    tcp_addr, quic_addr = f"/ip4/0.0.0.0/tcp/{PORT}", f"/ip4/0.0.0.0/udp/{PORT}/quic-v1"
    listen = f"{tcp_addr},{quic_addr}" if dual else quic_addr if quic else tcp_addr
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        common = ["-muxer", "yamux" if quic else muxer, "-blocks", str(BLOCKS), "-gossip", str(gossip),
                  "-session", session, "-security", "tls" if quic else security,
                  "-transport", transport, "-keytype", "secp256k1" if name in SECP256K1 else "ed25519",
                  *(["-trace-pubsub"] if name in TRACED else [])]
        lp = link.popen(listener, [str(exe), "-role", "listen", *common, "-idfile", str(idfile),
                                   "-seed", str(SEEDS["b"]), "-listen", listen, "-truth", str(truths[listener])],
                        env=env[listener])
        addr = listener_addr(idfile, addrs[listener])
        if dual:    # the listener's TCP address, then its QUIC one
            pid = addr.rsplit("/p2p/", 1)[1]
            addr = ",".join(f"{a.replace('0.0.0.0', addrs[listener])}/p2p/{pid}" for a in (tcp_addr, quic_addr))
        link.run(dialer, [str(exe), "-role", "dial", *common, "-peer", addr, "-seed", str(SEEDS["a"]),
                          "-truth", str(truths[dialer])], timeout=180, env=env[dialer])
        lp.wait(60)
    for path in keys.values():
        if path.exists():
            os.chmod(path, 0o644)
    blocks = sorted(BLOCKS.glob("*.ssz"))
    truth = {
        "capture": cap.name, "muxer": muxer, "session": session,
        "security": SECURITY_IDS[security], "seeds": SEEDS,
        "key_type": "secp256k1" if name in SECP256K1 else "ed25519",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, f"port_{listener}": PORT,
                 "dialer": addrs[dialer], "listener": addrs[listener], "listener_port": PORT,
                 "captured_at": "listener" if name in LISTENER_FIRST else "dialer"},
        "requests": ["status/1", "ping/1", "metadata/2", "beacon_blocks_by_range/2", "goodbye/1"],
        "blocks_by_range": [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                             "fork": "bellatrix" if "bellatrix" in p.name else "capella"} for p in blocks],
        "error_chunk": {"result": 3, "message": "blocks beyond the three real ones are not served"},
        "gossip": {"topic": "/eth2/bba4da96/beacon_block/ssz_snappy",
                   "blocks": [p.name for p in blocks[:gossip]]},
        "ssz": SSZ,
    }
    if session == "full":
        # The last block's final 100 bytes and the error chunk went out in one write.
        truth["shared_write"] = {"tail_bytes": 100, "then": "error_chunk"}
    if session == "broken":
        truth.update(requests=["status/1"] + ["ping/1"] * len(BROKEN_PINGS) + ["goodbye/1"],
                     broken_pings=BROKEN_PINGS,
                     refused="/eth2/beacon_chain/req/light_client_bootstrap/1/ssz_snappy",
                     gossip={"topic": "/eth2/bba4da96/beacon_block/ssz_snappy", "blocks": [],
                             "invalid_data": INVALID_GOSSIP})
        del truth["blocks_by_range"], truth["error_chunk"]
    if session == "short":
        truth.update(requests=["status/1", "ping/1", "goodbye/1"], gossip=None)
        del truth["blocks_by_range"], truth["error_chunk"]
    if session == "dual":
        truth.update(requests=["status/1", "ping/1", "status/1", "ping/1", "metadata/2", "beacon_blocks_by_range/2",
                               "goodbye/1"],
                     transports=[{"transport": "tcp", "security": "/noise", "muxer": "/yamux/1.0.0", "port": PORT},
                                 {"transport": "quic-v1", "security": "/quic-v1 (TLS 1.3)", "muxer": None,
                                  "port": PORT}])
    if name in KEYED:
        truth["keys"] = {"dialer": keys[dialer].name, "listener": keys[listener].name}
        truth["muxer_negotiation"] = {"noise": "noise extensions", "noise-ms": "multistream-select",
                                      "tls": "alpn", "quic": "none (QUIC streams)"}[security]
    # What each peer says it sent and received (its -truth), as it wrote it.
    truth["peers"] = {"dialer": json.loads(truths[dialer].read_text()),
                      "listener": json.loads(truths[listener].read_text())}
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def broken_variants() -> None:
    """eth2-badcrc: the first 120 frames of eth2-yamux with one bit of the ping response's
    masked CRC-32C flipped.  eth2-truncated: eth2-yamux cut in the middle of the first block's
    response chunk."""
    src = OUT / "eth2-yamux.pcapng"
    head = WORK / "head.pcapng"
    subprocess.run(["editcap", "-r", str(src), str(head), "1-120"], check=True)
    data = bytearray(head.read_bytes())
    # stream identifier, an uncompressed chunk of 8 + 4 bytes, its CRC, then uint64 7 (the pong)
    marker = b"sNaPpY\x01\x0c\x00\x00"
    pos = 0
    while True:
        pos = data.index(marker, pos) + len(marker)
        if data[pos + 4:pos + 12] == (7).to_bytes(8, "little"):
            data[pos] ^= 0x01
            break
    (OUT / "eth2-badcrc.pcapng").write_bytes(bytes(data))
    subprocess.run(["editcap", "-r", str(src), str(OUT / "eth2-truncated.pcapng"), "1-300"], check=True)


def tls_embedded() -> None:
    """eth2-tls-embedded: eth2-tls-yamux with the dialer's TLS secrets inside the pcapng (a
    Decryption Secrets Block), so that it decrypts with no key log at all."""
    src = OUT / "eth2-tls-yamux.pcapng"
    secrets = WORK / "tls-secrets.keys"
    lines = (OUT / "eth2-tls-yamux.keys").read_text().splitlines()
    secrets.write_text("".join(f"{line}\n" for line in lines if not line.startswith("LOCAL_")))
    subprocess.run(["editcap", "--inject-secrets", f"tls,{secrets}", str(src),
                    str(OUT / "eth2-tls-embedded.pcapng")], check=True)
    truth = json.loads((OUT / "eth2-tls-yamux.truth.json").read_text())
    truth.update(capture="eth2-tls-embedded.pcapng", keys=None, secrets="embedded (editcap --inject-secrets)")
    (OUT / "eth2-tls-embedded.truth.json").write_text(json.dumps(truth, indent=1) + "\n")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    exes = build()
    names = sys.argv[1:] or list(SESSIONS)
    for name in names:
        make(name, *SESSIONS[name], exes)
    if "eth2-yamux" in names:
        broken_variants()
    if "eth2-tls-yamux" in names:
        tls_embedded()


if __name__ == "__main__":
    main()
