"""Conformance checks on the wire (plugin/core/spec.c): each p2pc.spec.* check fires on a crafted
capture that breaks its rule, once, in the frame that breaks it; the committed captures that
conform raise none; and the records dump's S lines are what `p2pc analyze` and `p2pc diff`
count in their conformance section.  The expected values come from the bytes crafted here and
the generators' truth files, never from p2pc's output."""
from __future__ import annotations

import json
import re
import struct
from collections import Counter

import dpkt
import pytest

from conftest import CAPTURES, REPO, per_capture_kind, run_p2pc, spec_checks, tcp_pcap
from craft import ACK, FIN, MPLEX_ID, RST, SYN, YAMUX_ID, mplex
from test_interop import INTEROP
from test_interop import keys as interop_keys
from test_libp2p import PING, ms, yamux

ETH = CAPTURES / "eth2"
MS = "/multistream/1.0.0"
BY_RANGE = "/eth2/beacon_chain/req/beacon_blocks_by_range/2/ssz_snappy"
MESHSUB = "/meshsub/1.1.0"
TOPIC = "/eth2/bba4da96/beacon_block/ssz_snappy"
MAX_PAYLOAD_SIZE = 10 * 1024 * 1024  # p2p-interface.md
MAX_REQUEST_BLOCKS = 1024


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """framing_format.txt 3: CRC-32C, rotated right by 15 bits, plus 0xa282ead8."""
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def framed(ssz: bytes) -> bytes:
    import snappy
    return snappy.StreamCompressor().add_chunk(ssz)


def session(path, proto: str, request: bytes, response: bytes | None = None, fin: bool = False) -> None:
    """A yamux connection whose stream 1 carries `request` on `proto` from the dialer and, if
    given, `response` back (with FIN when `fin`: the stream ends there)."""
    segs = [("a", ms(MS) + ms("/yamux/1.0.0")), ("b", ms(MS) + ms("/yamux/1.0.0")),
            ("a", yamux(1, 1, ms(MS) + ms(proto) + request))]
    if response is not None:
        segs.append(("b", yamux(ACK | (FIN if fin else 0), 1, ms(MS) + ms(proto) + response)))
    tcp_pcap(path, segs, syn="a", mss=1448)


def gossip(path, message: bytes) -> None:
    """A yamux connection whose stream 1 carries one gossipsub RPC publishing `message`."""
    rpc = b"\x12" + uvarint(len(message)) + message          # RPC.publish = 2
    session(path, MESHSUB, uvarint(len(rpc)) + rpc)


def pb(number: int, data: bytes) -> bytes:
    return uvarint(number << 3 | 2) + uvarint(len(data)) + data


def hits(tshark, path, extra: list[str] = ()) -> list[tuple[int, str]]:
    """The S lines of the records dump: (frame, check)."""
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(path), "-z", "p2pc,records", *extra]).stdout
    return [(int(f), c) for _, f, c in (l.split("\t") for l in out.splitlines() if l.startswith("S\t"))]


def expert_frames(tshark, path, check: str) -> list[int]:
    return [int(r[0]) for r in tshark.fields(path, ["frame.number"], dfilter=check)]


PING_BODY = struct.pack("<Q", 7)
NO_STREAM_ID = framed(PING_BODY)[10:]           # the stream identifier chunk is 4 + 6 bytes
BAD_CRC = bytearray(framed(PING_BODY))
BAD_CRC[14] ^= 0xFF                             # the first data chunk's CRC (after the identifier)
BIG = bytes(70000)                              # over 65,536 in one uncompressed chunk
BIG_CHUNK = (framed(PING_BODY)[:10] + bytes([0x01]) + (4 + len(BIG)).to_bytes(3, "little") +
             struct.pack("<I", masked_crc32c(BIG)) + BIG)
RANGE_REQUEST = struct.pack("<QQQ", 6507058, MAX_REQUEST_BLOCKS + 1, 1)
ERROR_BODY = b"no"

CRAFTED = [
    # (check, protocol, request, response, fin, frame of the violation)
    ("p2pc.spec.snappy.stream_identifier", PING, uvarint(8) + NO_STREAM_ID, None, False, 6),
    ("p2pc.spec.snappy.crc", PING, uvarint(8) + bytes(BAD_CRC), None, False, 6),
    # Several segments: the violation is in the last frame, which completes the message.
    ("p2pc.spec.snappy.chunk_length", PING, uvarint(len(BIG)) + BIG_CHUNK, None, False, -1),
    ("p2pc.spec.eth2.request_limit", BY_RANGE, uvarint(24) + framed(RANGE_REQUEST), None, False, 6),
    # A success chunk of a method with context bytes, the stream ending after two of them.
    ("p2pc.spec.eth2.context", BY_RANGE, uvarint(24) + framed(struct.pack("<QQQ", 1, 1, 1)),
     b"\x00\xbb\xa4", True, 7),
    # Result 5: in the reserved range [4, 127].
    ("p2pc.spec.eth2.result", PING, uvarint(8) + framed(PING_BODY),
     b"\x05" + uvarint(len(ERROR_BODY)) + framed(ERROR_BODY), False, 7),
]


@pytest.mark.parametrize("check,proto,req,response,fin,frame", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_each_check_fires_on_the_rule_it_breaks(tshark, tmp_path, check, proto, req, response, fin, frame):
    path = tmp_path / "crafted.pcap"
    session(path, proto, req, response, fin)
    if frame == -1:
        frame = len(list(dpkt.pcap.Reader(open(path, "rb"))))
    assert (frame, check) in hits(tshark, path)
    assert Counter(c for _, c in hits(tshark, path))[check] == 1
    assert expert_frames(tshark, path, check) == [frame]


def test_the_same_messages_conforming_raise_nothing(tshark, tmp_path):
    """The crafted sessions with the rule kept: no S line (each check would fail its test above
    only by firing; this one fails when a check fires on what conforms)."""
    for proto, request, response in [
            (PING, uvarint(8) + framed(PING_BODY), b"\x00" + uvarint(8) + framed(PING_BODY)),
            (BY_RANGE, uvarint(24) + framed(struct.pack("<QQQ", 1, MAX_REQUEST_BLOCKS, 1)), None),
            (PING, uvarint(8) + framed(PING_BODY), b"\x03" + uvarint(len(ERROR_BODY)) + framed(ERROR_BODY))]:
        path = tmp_path / "ok.pcap"
        session(path, proto, request, response)
        assert hits(tshark, path) == []


def test_gossip_size_and_strict_no_sign(tshark, tmp_path):
    import snappy
    block = bytes(100)
    ok = pb(2, snappy.compress(block)) + pb(4, TOPIC.encode())
    path = tmp_path / "gossip.pcap"
    gossip(path, ok)
    assert hits(tshark, path) == []
    # from, seqno and signature on an eth2 topic (StrictNoSign).
    gossip(path, pb(1, b"\x00\x25\x08\x02") + ok + pb(3, bytes(8)) + pb(5, bytes(64)))
    assert hits(tshark, path) == [(6, "p2pc.spec.gossip.strict_no_sign")]
    # A Snappy block declaring one byte over MAX_PAYLOAD_SIZE uncompressed.
    gossip(path, pb(2, uvarint(MAX_PAYLOAD_SIZE + 1) + b"\x00" * 8) + pb(4, TOPIC.encode()))
    assert (6, "p2pc.spec.gossip.size") in hits(tshark, path)
    # The same on a topic that is not eth2's: signing is that network's business.
    gossip(path, pb(1, b"\x00") + pb(2, snappy.compress(block)) + pb(4, b"/my/topic"))
    assert hits(tshark, path) == []


# What each of the broken session's ping answers breaks (captures/gen/make_eth2.py
# BROKEN_PINGS); the others break no rule p2pc.spec.* checks (decoding failures, trailing bytes).
BROKEN_CHECKS = {
    "bad_crc": {"p2pc.spec.snappy.crc"},
    "unskippable": {"p2pc.spec.snappy.unskippable"},
    # a declared length of 4 for a ping's 8 bytes: under the type's size, and not what decodes
    "length_mismatch": {"p2pc.spec.eth2.length", "p2pc.spec.eth2.too_short"},
    "too_long": {"p2pc.spec.eth2.too_long", "p2pc.spec.eth2.length"},
    "compressed_too_long": {"p2pc.spec.eth2.compressed_length"},
}


def test_committed_captures_conform_or_break_what_their_truth_says(tshark):
    for name in ("eth2-yamux", "eth2-mplex", "eth2-noise-yamux"):
        assert hits(tshark, ETH / f"{name}.pcapng") == [], name
    truth = json.loads((ETH / "eth2-broken.truth.json").read_text())
    want = set().union(*(BROKEN_CHECKS.get(p, set()) for p in truth["broken_pings"]))
    got = hits(tshark, ETH / "eth2-broken.pcapng")
    assert {c for _, c in got} == want
    # Each ping answer is its own frame, in the order of broken_pings.
    firsts = {c: min(f for f, c2 in got if c2 == c) for c in want}
    order = [p for p in truth["broken_pings"] if p in BROKEN_CHECKS]
    assert firsts["p2pc.spec.snappy.crc"] < firsts["p2pc.spec.snappy.unskippable"] < \
        firsts["p2pc.spec.eth2.too_short"] < firsts["p2pc.spec.eth2.too_long"] < \
        firsts["p2pc.spec.eth2.compressed_length"], order


# Committed captures whose truth names, per message, the p2pc.spec.* item it raises.
TRUTH_CHECKED = [CAPTURES / "bitcoin" / "btc-not-negotiated", CAPTURES / "bitcoin" / "btc-malformed",
                 CAPTURES / "fisco" / "fisco-malformed"]


@pytest.mark.parametrize("base", TRUTH_CHECKED, ids=[b.name for b in TRUTH_CHECKED])
def test_buip017_and_fisco_checks_are_what_the_truth_says(tshark, base):
    """BUIP017 (compression without the service bit, not smaller) and FISCO (compressed at or
    below the threshold): one S line per message whose truth names a p2pc.spec.* item."""
    truth = json.loads(base.with_suffix(".truth.json").read_text())
    want = Counter(m["expert"] for m in truth["messages"] if m.get("expert", "").startswith("p2pc.spec."))
    assert want and Counter(c for _, c in hits(tshark, base.with_suffix(".pcapng"))) == want


def test_conforming_bitcoin_and_fisco_raise_nothing(tshark):
    for c in (CAPTURES / "bitcoin" / "btc-compressed.pcapng", CAPTURES / "fisco" / "fisco-serial-on.pcapng",
              CAPTURES / "fisco" / "fisco3-on.pcapng"):
        assert hits(tshark, c) == [], c


def test_analyze_and_diff_count_them(tshark):
    broken = str(ETH / "eth2-broken.pcapng")
    want = Counter(c for _, c in hits(tshark, ETH / "eth2-broken.pcapng"))
    res = run_p2pc("analyze", broken, "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = next(s["rows"] for s in json.loads(res.stdout)["sections"] if s["name"] == "conformance")
    assert {r["check"]: r["count"] for r in rows} == want
    assert all(r["file"] == broken for r in rows)
    firsts = {}
    for f, c in hits(tshark, ETH / "eth2-broken.pcapng"):
        firsts[c] = min(firsts.get(c, f), f)
    assert {r["check"]: r["first_frame"] for r in rows} == firsts
    res = run_p2pc("diff", broken, str(ETH / "eth2-yamux.pcapng"), "--format", "json")
    assert res.returncode == 15, res.stderr
    rows = next(s["rows"] for s in json.loads(res.stdout)["sections"] if s["name"] == "conformance")
    assert {r["check"]: (r["a_count"], r["b_count"]) for r in rows} == {c: (n, 0) for c, n in want.items()}


def test_the_undecoded_reason_is_a_column(tshark):
    """A capture budget of 1 MiB stops eth2-yamux's Snappy output inside its second block (each
    of its blocks is over 800 KB uncompressed, the truth's source files): those messages are
    undecoded, reason bound, in the dump as in the tree; no other record has a reason."""
    opts = ["-o", "p2pc.max_capture_decompressed_mib:1"]
    recs = tshark.records(ETH / "eth2-yamux.pcapng", extra=opts)
    bound = [r for r in recs if r["reason"]]
    assert bound and all(r["reason"] == "bound" and r["msg_type"] == "undecoded"
                         and r["raw_len"] == r["payload_len"] for r in bound)
    assert all(r["reason"] == "" for r in recs if r not in bound)
    tree = tshark.fields(ETH / "eth2-yamux.pcapng", ["frame.number"], dfilter='p2pc.undecoded_reason == "bound"',
                         extra=opts)
    assert sorted({int(r[0]) for r in tree}) == sorted({int(r["frame"]) for r in bound})
    assert not any(r["reason"] for r in tshark.records(ETH / "eth2-yamux.pcapng"))


# -- the muxers' rules: yamux (hashicorp/yamux spec.md, libp2p's yamux spec) and mplex -------
# A crafted connection: A dials (its TCP SYN says so), both sides agree on the muxer, then the
# muxer frames given, one segment each: the n-th of them is frame 5 + n (3 frames of handshake,
# 2 of multistream-select).
WINDOW = 256 * 1024                 # yamux spec, Flow Control: each stream's initial window
OPEN = ms(MS) + ms("/p2pc/test/1.0.0")   # a stream's negotiation: a protocol of no spec p2pc checks
WU, PING_FRAME, GO_AWAY = 1, 2, 3   # yamux frame types


def muxed(path, muxer: str, frames: list[tuple[str, bytes]]) -> None:
    tcp_pcap(path, [("a", ms(MS) + ms(muxer)), ("b", ms(MS) + ms(muxer)), *frames], syn="a", mss=1448)


MUX_CRAFTED = [
    # (check, muxer, frames, index of the frame that breaks the rule)
    ("p2pc.spec.yamux.version", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", b"\x01" + yamux(0, 1, b"x")[1:])], 2),
    ("p2pc.spec.yamux.flags", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", yamux(0x10, 1, b"x"))], 2),
    ("p2pc.spec.yamux.session_id", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("b", yamux(0, 0, type_=WU, length=1))], 2),
    ("p2pc.spec.yamux.session_id", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", yamux(SYN, 1, type_=PING_FRAME, length=7))], 2),
    # The listener (B) opens an odd stream: the dialer's parity.
    ("p2pc.spec.yamux.stream_id", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("b", yamux(SYN, 3, OPEN))], 2),
    ("p2pc.spec.yamux.syn", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", yamux(SYN, 1, b"x"))], 2),
    ("p2pc.spec.yamux.ack", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", yamux(ACK, 1, b"x"))], 2),
    ("p2pc.spec.yamux.ack", YAMUX_ID, [("a", yamux(SYN | ACK, 1, OPEN))], 1),
    ("p2pc.spec.yamux.after_fin", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", yamux(FIN, 1)), ("a", yamux(0, 1, b"x"))], 3),
    ("p2pc.spec.yamux.after_fin", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("a", yamux(FIN, 1, b"x")), ("a", yamux(0, 1, b"y"))], 3),
    # One byte past the window the stream has left after the first frame.
    ("p2pc.spec.yamux.window", YAMUX_ID, [("a", yamux(SYN, 3, OPEN)),
                                          ("a", yamux(0, 3, b"x" * 64, length=WINDOW - len(OPEN) + 1))], 2),
    ("p2pc.spec.yamux.go_away", YAMUX_ID, [("a", yamux(SYN, 1, OPEN)), ("b", yamux(0, 0, type_=GO_AWAY, length=3))], 2),
    ("p2pc.spec.mplex.flag", MPLEX_ID, [("a", mplex(1, 0, b"1")), ("a", mplex(1, 7, b"x"))], 2),
    ("p2pc.spec.mplex.new_stream", MPLEX_ID, [("a", mplex(1, 0, b"1")), ("a", mplex(1, 0, b"1"))], 2),
    # A message on a stream its opener never opened: A opened 1 only.
    ("p2pc.spec.mplex.stream", MPLEX_ID, [("a", mplex(1, 0, b"1")), ("a", mplex(5, 2, b"x"))], 2),
    ("p2pc.spec.mplex.stream", MPLEX_ID, [("a", mplex(1, 0, b"1")), ("a", mplex(1, 4)), ("a", mplex(1, 2, b"x"))], 3),
    ("p2pc.spec.mplex.stream", MPLEX_ID, [("a", mplex(1, 0, b"1")), ("b", mplex(1, 3)), ("b", mplex(1, 1, b"x"))], 3),
    ("p2pc.spec.mplex.close_body", MPLEX_ID, [("a", mplex(1, 0, b"1")), ("a", mplex(1, 4, b"xy"))], 2),
]


@pytest.mark.parametrize("check,muxer,frames,n", MUX_CRAFTED, ids=[f"{c[0]}-{i}" for i, c in enumerate(MUX_CRAFTED)])
def test_each_muxer_check_fires_on_the_rule_it_breaks(tshark, tmp_path, check, muxer, frames, n):
    """The frame that breaks the rule raises the check once, and nothing else does (the S lines,
    and the expert item's filter, in one pass and in two)."""
    path = tmp_path / "muxed.pcap"
    muxed(path, muxer, frames)
    assert hits(tshark, path) == [(5 + n, check)]
    assert expert_frames(tshark, path, check) == [5 + n]
    assert [int(r[0]) for r in tshark.fields(path, ["frame.number"], dfilter=check, two_pass=True)] == [5 + n]


def test_analyze_and_diff_count_the_muxers_checks(tmp_path):
    """A muxer's check is counted like any other: analyze's and diff's conformance sections."""
    ping = [("a", mplex(1, 0, b"1")), ("a", mplex(1, 2, ms(MS) + ms(PING) + uvarint(8) + framed(PING_BODY)))]
    bad, ok = tmp_path / "bad.pcap", tmp_path / "ok.pcap"
    muxed(ok, MPLEX_ID, ping)
    muxed(bad, MPLEX_ID, ping + [("a", mplex(1, 0, b"1"))])     # frame 8: NewStream again
    check = "p2pc.spec.mplex.new_stream"
    res = run_p2pc("analyze", str(bad), "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = next(s["rows"] for s in json.loads(res.stdout)["sections"] if s["name"] == "conformance")
    assert [(r["check"], r["count"], r["first_frame"]) for r in rows] == [(check, 1, 8)]
    res = run_p2pc("diff", str(ok), str(bad), "--format", "json")
    rows = next(s["rows"] for s in json.loads(res.stdout)["sections"] if s["name"] == "conformance")
    assert [(r["check"], r["a_count"], r["b_count"], r["b_first_frame"]) for r in rows] == [(check, 0, 1, 8)]


def test_the_muxers_conforming_raise_nothing(tshark, tmp_path):
    """What each rule allows: the receiver's ACK, window updates that widen the window (then
    a frame as long as it), both sides closing, session pings and a normal Go Away; data the
    other side sent before it saw a RST (yamux) or Reset (mplex) is not late."""
    yamux_ok = [("a", yamux(SYN, 1, OPEN)), ("b", yamux(ACK, 1, type_=WU, length=1024)),
                ("a", yamux(0, 1, b"x" * (WINDOW - len(OPEN) + 1024))),
                ("a", yamux(FIN, 1)), ("b", yamux(FIN, 1)),
                ("b", yamux(SYN, 2, OPEN)), ("a", yamux(ACK, 2, type_=WU, length=0)),
                ("a", yamux(SYN, 3, OPEN)), ("a", yamux(RST, 3)), ("b", yamux(ACK, 3, b"late")),
                ("a", yamux(SYN, 0, type_=PING_FRAME, length=7)), ("b", yamux(ACK, 0, type_=PING_FRAME, length=7)),
                ("b", yamux(0, 0, type_=GO_AWAY, length=2))]
    mplex_ok = [("a", mplex(1, 0, b"1")), ("a", mplex(1, 2, b"x")), ("b", mplex(1, 1, b"y")),
                ("a", mplex(1, 4)), ("b", mplex(1, 3)), ("b", mplex(0, 0, b"0")), ("b", mplex(0, 2, b"z")),
                ("a", mplex(2, 0, b"2")), ("a", mplex(2, 6)), ("b", mplex(2, 1, b"late")),
                ("a", mplex(1, 0, b"1"))]       # a stream ID both closed, reused
    for muxer, frames in ((YAMUX_ID, yamux_ok), (MPLEX_ID, mplex_ok)):
        path = tmp_path / "ok.pcap"
        muxed(path, muxer, frames)
        assert hits(tshark, path) == [], muxer


def _real_captures() -> list[tuple[str, list]]:
    """The committed captures of real yamux and mplex peers, with their keys (the dialer's)."""
    out = []
    for path in sorted(ETH.glob("eth2-*.pcapng")):
        if "yamux" in path.name or "mplex" in path.name:
            t = json.loads(path.with_suffix(".truth.json").read_text())
            kind = "tls" if "tls" in path.name else "libp2p_noise"
            out.append((path, [("-o", kind, ETH / t["keys"]["dialer"])] if "keys" in t else []))
    out += [(p, "interop") for p in sorted(INTEROP.glob("*.pcapng"))]
    return out


@pytest.mark.parametrize("path,keys", per_capture_kind(_real_captures(), lambda v: v[0]), ids=lambda v: v.name if hasattr(v, "name") else "")
def test_real_muxers_break_no_rule(tshark, path, keys):
    """go-libp2p's, js-libp2p's and rust-libp2p's yamux and mplex, decrypted where their keys
    were logged: no conformance check fires (nor any other: these peers conform)."""
    if keys == "interop":
        extra = interop_keys(tshark, path.name.removesuffix(".pcapng"))
    else:
        extra = [a for _, kind, f in keys for a in ("-o", f"{kind}.keylog_file:{tshark.ws.readable(f)}")]
    assert any(r["proto"] == "eth2" for r in tshark.records(path, extra=extra))     # decoded
    assert hits(tshark, path, extra) == []


def test_the_docs_list_every_check():
    """docs/tap-format.md's table of checks is spec.c's, one row per check (`.x` after a check
    names its sibling)."""
    doc = (REPO / "docs/tap-format.md").read_text().split("The checks:")[1].split("\n- **")[0]
    named = []
    for row in (l for l in doc.splitlines() if l.strip().startswith("| `")):
        for name in re.findall(r"`([^`]+)`", row.split("|")[1]):
            named.append(name if name.startswith("p2pc.") else named[-1].rsplit(".", 1)[0] + name)
    assert sorted(named) == sorted(spec_checks())
    muxers = [c for c in spec_checks() if c.startswith(("p2pc.spec.yamux.", "p2pc.spec.mplex."))]
    table = (REPO / "docs/libp2p-eth2.md").read_text()
    assert muxers and all(f"| `{c}` |" in table for c in muxers)
