"""The interop matrix (captures/interop/, issue #25): real libp2p implementations talking, two
different ones or one with itself, each peer writing down what it sent and received.  Every message p2pc decodes must be
one a peer says it sent, from that peer, in its order, with its lengths and the sha256 of its SSZ;
requests are the dialer's whoever speaks first; nothing is left undecoded or without a role."""
from __future__ import annotations

import hashlib
import json

import pytest

from conftest import CAPTURES, dialer_listener, per_capture_kind, truth_sent as sent
from craft import uvarint

INTEROP = CAPTURES / "interop"
NAMES = sorted(p.name.removesuffix(".truth.json") for p in INTEROP.glob("*.truth.json"))


def truth(name: str) -> dict:
    return json.loads((INTEROP / f"{name}.truth.json").read_text())


def keys(tshark, name: str) -> list[str]:
    """The key log option for a Noise or TLS cell (the go peer's keys or secrets) or a QUIC cell
    (the rust peer's TLS secrets, written by rust-libp2p itself; with js, whose QUIC transport
    cannot log them, the go peer's), else nothing.  (A TCP TLS cell
    with rust or js also has that peer's own secrets: test_the_other_peers_secrets_are_the_gos.)"""
    t = truth(name)
    if "keys" not in t:
        return []
    if t["security"] == "/quic-v1":
        return ["-o", f"tls.keylog_file:{tshark.ws.readable(INTEROP / t['keys'].get('rust', t['keys']['go']))}"]
    if t["security"] == "/tls/1.0.0":
        return ["-o", f"tls.keylog_file:{tshark.ws.readable(INTEROP / t['keys']['go'])}"]
    return ["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(INTEROP / t['keys']['go'])}"]


def received(peer: dict) -> list[tuple]:
    return [(m["protocol"], m["kind"], m["ssz_sha256"]) for m in peer["messages"] if m["dir"] == "received"]


@pytest.mark.parametrize("name", per_capture_kind(NAMES))
def test_the_peers_agree(name):
    """What one peer says it sent, the other says it received (the truth is the stacks' own)."""
    t = truth(name)
    for a, b in (("dialer", "listener"), ("listener", "dialer")):
        got = received(t["peers"][b])
        assert [(m["protocol"], m["kind"], m["ssz_sha256"]) for m in t["peers"][a]["messages"]
                if m["dir"] == "sent"] == got
    dialer, listener = name.split("-")[1:3]
    assert (t["dialer"]["stack"], t["listener"]["stack"]) == (f"{dialer}-libp2p", f"{listener}-libp2p")
    block = hashlib.sha256((CAPTURES / "data" / "ethereum" / t["block"]["file"]).read_bytes()).hexdigest()
    shas = [m["ssz_sha256"] for m in t["peers"]["listener"]["messages"]
            if m["protocol"] == "beacon_blocks_by_range/2" and m["kind"] == "response" and m["result"] == 0]
    assert shas == [block]


@pytest.mark.parametrize("name", per_capture_kind(NAMES))
def test_every_message_decodes_to_its_truth(tshark, name):
    """Each eth2 message p2pc reports is one its sender says it sent, in the sender's order, with
    its SSZ length, its Snappy bytes and the sha256 of its SSZ: requests from the dialer,
    responses from the listener, gossip from either (the py cells' listener publishes too)."""
    t = truth(name)
    cap = INTEROP / f"{name}.pcapng"
    extra = keys(tshark, name)
    dialer, listener = dialer_listener(t)
    recs = tshark.records(cap, extra=extra)
    pays = tshark.payloads(cap, extra=extra)
    assert len(recs) == len(pays)
    got = {dialer: [], listener: []}
    for rec, (frame, mtype, raw) in zip(recs, pays):
        assert (int(rec["frame"]), rec["msg_type"]) == (frame, mtype)
        if rec["proto"] == "eth2":
            got[rec["src"]].append((mtype, int(rec["raw_len"]), int(rec["payload_len"]), hashlib.sha256(raw).hexdigest()))
    assert got[dialer] == sent(t["peers"]["dialer"])
    assert got[listener] == sent(t["peers"]["listener"])
    assert all(m.endswith(" request") or m.startswith("gossip") for m, *_ in got[dialer])
    assert all(m.endswith(" response") or m.startswith("gossip") for m, *_ in got[listener])


@pytest.mark.parametrize("name", per_capture_kind(NAMES))
def test_one_pass_equals_two(tshark, name):
    extra = keys(tshark, name)
    cap = INTEROP / f"{name}.pcapng"
    assert tshark.records(cap, extra=extra) == tshark.records(cap, two_pass=True, extra=extra)


# The fields the tests below read frame by frame, read once a cell: one tshark run, which the
# session's memory answers for every test after the first (a display filter a test needs is
# applied here in Python: a layer's presence is its name in frame.protocols).
FRAME_FIELDS = ["ip.src", "tcp.len", "frame.protocols", "yamux.flags.syn", "mplex.flag", "multistream.message",
                "libp2p_noise.early_muxer", "tls.handshake.type", "tls.handshake.extensions_alpn_str"]


def cell_frames(tshark, name: str) -> list[dict]:
    """Every frame of the cell (keys given, if it has them), as FRAME_FIELDS; a field that
    occurs more than once in a frame has its values joined with '|'."""
    rows = tshark.fields(INTEROP / f"{name}.pcapng", FRAME_FIELDS, extra=keys(tshark, name))
    return [dict(zip(FRAME_FIELDS, r)) for r in rows]


def has(frame: dict, proto: str) -> bool:
    return proto in frame["frame.protocols"].split(":")


@pytest.mark.parametrize("name", per_capture_kind(NAMES))
def test_no_role_unknown_nor_undecoded(tshark, name):
    rows = tshark.fields(INTEROP / f"{name}.pcapng", ["frame.number"],
                         dfilter="libp2p.role.unknown || libp2p.role.conflict || multistream.undecoded",
                         extra=keys(tshark, name))
    assert rows == []


# Listeners that send their multistream header as they accept, before the dialer's proposal has
# come (docs/interop.md, "Who speaks first"): go-multistream v0.6.0 Negotiate() writes it before
# reading (multistream.go:206); py-libp2p 0.8.1's Multiselect.handshake() too (multiselect.py:139).
# js-libp2p's @libp2p/multistream-select 7.0.28 handle() reads first (handle.js:63), rust-libp2p's
# multistream-select 0.14.0 listener starts in State::RecvHeader (listener_select.rs:67).
EAGER_LISTENERS = {"go-libp2p", "py-libp2p"}
TCP_NAMES = [n for n in NAMES if truth(n)["security"] != "/quic-v1"]


def first_speaker(t: dict) -> str:
    """Who the cell's first TCP payload byte should be from: at the dialer, the dialer; at a
    listener that speaks as it accepts (the generator holds the dialer's first bytes), the listener."""
    eager = t["link"]["captured_at"] == "listener" and t["listener"]["stack"] in EAGER_LISTENERS
    return "listener" if eager else "dialer"


@pytest.mark.parametrize("name", per_capture_kind(TCP_NAMES))
def test_who_speaks_first(tshark, name):
    """The first TCP payload byte is the side first_speaker() says, and p2pc's roles are the
    same either way (test_every_message_decodes_to_its_truth: requests are the dialer's)."""
    t = truth(name)
    dialer, listener = dialer_listener(t)
    first = next(f["ip.src"] for f in cell_frames(tshark, name) if int(f["tcp.len"] or 0) > 0)
    assert first == {"dialer": dialer, "listener": listener}[first_speaker(t)]


@pytest.mark.parametrize("name", per_capture_kind(TCP_NAMES))
def test_both_sides_open_streams(tshark, name):
    """In every TCP cell each peer opens muxed streams of its own (identify, and gossip where the
    cell gossips): a yamux SYN or an mplex NewStream from the dialer and from the listener."""
    t = truth(name)
    opening = [f["ip.src"] for f in cell_frames(tshark, name)
               if "1" in f["yamux.flags.syn"].split("|") or "0" in f["mplex.flag"].split("|")]
    assert set(opening) == set(dialer_listener(t))


def test_every_pair_is_captured_in_each_order_its_listener_allows():
    """Each dialer stack, listener stack, security and muxer of the TCP cells is captured with the
    dialer first, and, when its listener speaks as it accepts, with the listener first too."""
    orders: dict = {}
    for name in TCP_NAMES:
        t = truth(name)
        cell = (t["dialer"]["stack"], t["listener"]["stack"], name.split("-", 3)[3].removesuffix("-lf"))
        orders.setdefault(cell, set()).add(first_speaker(t))
    assert orders == {cell: {"dialer", "listener"} if cell[1] in EAGER_LISTENERS else {"dialer"} for cell in orders}


MUXERS = {"/yamux/1.0.0": "yamux", "/mplex/6.7.0": "mplex"}


# QUIC has no libp2p security or muxer of its own (test_quic_connections_say_so).
@pytest.mark.parametrize("name", per_capture_kind([n for n in NAMES if any("connections" in p for p in truth(n)["peers"].values())
                                                    and truth(n)["security"] != "/quic-v1"]))
def test_the_muxer_is_the_one_the_peers_used(tshark, name):
    """Each peer that reports its connection (go-libp2p's ConnState, js-libp2p's connection) says
    which security and muxer it used, go-libp2p also whether the muxer was agreed inside the
    handshake (Noise extensions, TLS ALPN).  p2pc dissects that muxer and no other; agreed early,
    multistream-select never names it (Noise: libp2p_noise.early_muxer names it; TLS: the ALPN
    the server chose), otherwise multistream-select negotiates it and nothing is agreed early."""
    t = truth(name)
    conns = [c for p in t["peers"].values() for c in p.get("connections", [])]
    reports = len([p for p in t["peers"].values() if "connections" in p])
    assert [(c["security"], c["muxer"]) for c in conns] == [(t["security"], t["muxer"])] * reports
    early = {c["early_muxer"] for c in conns if "early_muxer" in c}
    # Only go-libp2p says whether it agreed the muxer early; without a go peer the cells are
    # plaintext, whose exchange has no room for muxers.
    assert len(early) == 1 or t["security"] == "/plaintext/2.0.0"
    early = early.pop() if early else False
    every = cell_frames(tshark, name)
    for muxer, proto in MUXERS.items():
        assert any(has(f, proto) for f in every) == (muxer == t["muxer"])
    ms = [m for f in every for m in f["multistream.message"].split("|")]
    noise = [f["libp2p_noise.early_muxer"] for f in every if f["libp2p_noise.early_muxer"]]
    # The ALPN the server chose, in its EncryptedExtensions (handshake type 8).
    alpn = [f["tls.handshake.extensions_alpn_str"] for f in every if "8" in f["tls.handshake.type"].split("|")]
    assert (t["muxer"] in ms) == (not early)
    if t["security"] == "/noise":
        assert noise == ([t["muxer"]] if early else [])
    if t["security"] == "/tls/1.0.0":
        assert alpn == [t["muxer"] if early else "libp2p"]


@pytest.mark.parametrize("name", [n for n in NAMES if truth(n)["security"] == "/quic-v1"
                                  and any("connections" in p for p in truth(n)["peers"].values())])
def test_quic_connections_say_so(tshark, name):
    """Over QUIC each peer that reports its connection names the transport and no libp2p
    security or muxer (go-libp2p's ConnState leaves them empty; js-libp2p 3.3.11 reports
    "native" and "quic" for @chainsafe/libp2p-quic's connection), and p2pc dissects no
    yamux nor mplex in it: its streams are QUIC's."""
    t = truth(name)
    conns = {p["stack"]: [(c["transport"], c["security"], c["muxer"]) for c in p["connections"]]
             for p in t["peers"].values() if "connections" in p}
    want = {"go-libp2p": [("quic-v1", "", "")], "js-libp2p": [("quic-v1", "native", "quic")]}
    assert conns == {stack: want[stack] for stack in conns}
    assert not any(has(f, proto) for f in cell_frames(tshark, name) for proto in MUXERS.values())


# Whether each pair agrees the muxer inside the security handshake, from the stacks' sources:
# go-libp2p v0.39.1 offers its muxers in the Noise extensions and in TLS ALPN (noise-ms, tls-ms:
# eth2peers hands the security transport no muxers); @chainsafe/libp2p-noise 17.0.0 lists
# js-libp2p's muxers in the Noise extensions; libp2p-noise 0.47.0 (rust-libp2p 0.57.1) sends no
# muxers and libp2p-tls 0.7.0 offers only the ALPN "libp2p"; py-libp2p 0.8.1's Noise payload has
# the stream_muxers field, but its transport (security/noise/transport.py) fills in none.
# @libp2p/tls 3.1.10 offers js-libp2p's muxers in ALPN before "libp2p" (dist/src/tls.js,
# ALPNProtocols) and picks the first muxer it knows from the client's list (ALPNCallback).
EARLY = {("go", "go", "noise"): True, ("go", "go", "tls"): True, ("go", "js", "noise"): True,
         ("go", "go", "noise-ms"): False, ("go", "go", "tls-ms"): False, ("go", "rust", "noise"): False,
         ("go", "py", "noise"): False, ("go", "js", "tls"): True, ("go", "rust", "tls"): False,
         ("go", "py", "tls"): False}


@pytest.mark.parametrize("name", [n for n in NAMES if truth(n)["security"] in ("/noise", "/tls/1.0.0")])
def test_which_stacks_agree_the_muxer_early(name):
    """The go peer's own account (ConnState) of each Noise and TLS cell is what the sources say."""
    dialer, listener, sec = name.split("-")[1:4]
    if sec in ("noise", "tls") and name.split("-")[4] == "ms":
        sec += "-ms"
    go = next(p for p in truth(name)["peers"].values() if p["stack"] == "go-libp2p")
    assert [c["early_muxer"] for c in go["connections"]] == [EARLY[tuple(sorted((dialer, listener))) + (sec,)]]


OTHER_KEYS = ("rust", "js", "py")


@pytest.mark.parametrize("name", [n for n in NAMES if truth(n)["security"] == "/tls/1.0.0"
                                  and set(OTHER_KEYS) & set(truth(n).get("keys", {}))])
def test_the_other_peers_secrets_are_the_gos(name):
    """The rust, js or py peer of a TCP TLS cell logs its secrets with no patch (libp2p-tls's
    rustls KeyLogFile; node's --tls-keylog on @libp2p/tls's TLSSocket; py-libp2p's TLSTransport
    IdentityConfig key log, Python's ssl keylog_filename): the same connection's secrets as the go
    peer's key log, which the tests above decrypt with, plus its EXPORTER_SECRET."""
    t = truth(name)

    def lines(stack):
        """The key log's secrets, without its comments (Python's ssl starts the file with one)."""
        return {tuple(line.split()) for line in (INTEROP / t["keys"][stack]).read_text().splitlines()
                if line and not line.startswith("#")}

    other = lines(next(st for st in OTHER_KEYS if st in t["keys"]))
    go = lines("go")
    assert go and go == {line for line in other if line[0] != "EXPORTER_SECRET"}
    assert {line[1] for line in other} == {line[1] for line in go}   # one connection, one client_random


# How each stack writes a status request's stream (docs/interop.md): the groups of multistream
# header, protocol and request (or echo of both and response) that go out as one yamux Data frame.
# go-libp2p's dialer is lazy (its proposal rides with the request); js-libp2p and rust-libp2p send
# the proposal first; py-libp2p writes each multistream message on its own.  Every listener
# echoes the header, then the protocol, then answers.
DIALER_WRITES = {"go-libp2p": [("header", "protocol", "message")], "js-libp2p": [("header", "protocol"), ("message",)],
                 "rust-libp2p": [("header", "protocol"), ("message",)],
                 "py-libp2p": [("header",), ("protocol",), ("message",)]}
LISTENER_WRITES = [("header",), ("protocol",), ("message",)]


@pytest.mark.parametrize("name", [n for n in NAMES if n.split("-")[3:5] == ["plaintext", "yamux"]])
def test_how_each_stack_writes_a_request_stream(name):
    """The yamux Data frames of the status stream, read from the capture's bytes with dpkt, against
    the lengths of what they carry: "/multistream/1.0.0\\n" and the protocol ID, each behind its
    uvarint length, and the request or response chunk as its sender's truth gives it."""
    from test_diff import tcp_directions, yamux_streams   # test_diff imports this module

    t = truth(name)
    pid = b"/eth2/beacon_chain/req/status/1/ssz_snappy\n"
    conns = tcp_directions(str(INTEROP / f"{name}.pcapng"))
    for role, addr, writes in (("dialer", t["link"]["dialer"], DIALER_WRITES[t["dialer"]["stack"]]),
                               ("listener", t["link"]["listener"], LISTENER_WRITES)):
        msg = next(m for m in t["peers"][role]["messages"] if m["dir"] == "sent" and m["protocol"] == "status/1")
        sizes = {"header": 1 + len(b"/multistream/1.0.0\n"), "protocol": 1 + len(pid),
                 "message": (role == "listener") + len(uvarint(msg["ssz_len"])) + msg["framed_len"]}
        streams = yamux_streams(next(b for (src, _), b in conns.items() if src == addr))
        _, frames, _ = next(v for v in streams.values() if v[0].find(pid) > 0)
        assert [n for _, n in frames[:len(writes)]] == [sum(sizes[k] for k in group) for group in writes]


# py-libp2p 0.8.1's gossipsub with go-libp2p-pubsub v0.15.0 (docs/interop.md, "py-libp2p's
# gossipsub"): the py peer publishes its messages without from and seqno (the StrictNoSign the go
# peer enforces), and its router sends only the first it sees: GossipSub._check_equivocation keys
# messages by from + seqno, b"" for all of them.
PY_GOSSIP = [n for n in NAMES if any("gossipsub" in p for p in truth(n)["peers"].values())]


@pytest.mark.parametrize("name", PY_GOSSIP)
def test_py_libp2p_sends_only_its_first_gossip_message(tshark, name):
    """The py peer published two messages (first, after blocks by range): the first is on the
    wire and the go peer received it; the second, which py-libp2p's router dropped, is on the wire
    nowhere.  The go peer then published three, and the py peer received all three.  Every one
    is a message of the cell's plan, from the block it names, in order; the meshsub version
    agreed is 1.2.0, and no gossip message carries from, seqno, signature or key."""
    t = truth(name)
    py = next(p for p in t["peers"].values() if p["stack"] == "py-libp2p")
    go = next(p for p in t["peers"].values() if p["stack"] == "go-libp2p")
    py_role = next(r for r in ("dialer", "listener") if t["peers"][r] is py)
    go_role = "listener" if py_role == "dialer" else "dialer"
    assert py["gossipsub"] == {"meshsub_offered": ["/meshsub/1.2.0", "/meshsub/1.1.0", "/meshsub/1.0.0"],
                               "strict_signing": False, "published_with": "Pubsub.push_msg"}

    def gossip(peer, *dirs):
        return [m for m in peer["messages"] if m["kind"] == "gossip" and m["dir"] in dirs]

    published = gossip(py, "sent", "dropped")
    assert [m["dir"] for m in published] == ["sent", "dropped"]
    assert [m["ssz_sha256"] for m in published] == [m["ssz_sha256"] for m in t["gossip_plan"][py_role]]
    assert [m["ssz_sha256"] for m in gossip(go, "sent")] == [m["ssz_sha256"] for m in t["gossip_plan"][go_role]]
    assert len(gossip(go, "sent")) == 3
    assert [m["msg_id"] for m in gossip(go, "received")] == [published[0]["msg_id"]]
    assert [m["msg_id"] for m in gossip(py, "received")] == [m["msg_id"] for m in gossip(go, "sent")]
    cap = INTEROP / f"{name}.pcapng"
    wire = [r[0] for r in tshark.fields(cap, ["eth2.gossip.message_id"], dfilter="eth2.gossip.message_id")]
    assert published[1]["msg_id"] not in wire
    assert sorted(wire) == sorted([published[0]["msg_id"]] + [m["msg_id"] for m in gossip(go, "sent")])
    ms = {m for r in tshark.fields(cap, ["multistream.message"], dfilter="multistream") for m in r[0].split("|")}
    assert {m for m in ms if m.startswith(("/meshsub/", "/floodsub/"))} == {"/meshsub/1.2.0"}
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.spec.gossip.strict_no_sign") == []
