"""p2pc diff (interop debugging, #28) and compare's refusals.  eth2-yamux and eth2-mplex are one
go-libp2p workload over two muxers: their truth files differ in the muxer and in the gossip
(two blocks over yamux, one over mplex), so every difference diff reports must be one of those,
or one the capture's own bytes show.  The interop matrix's cells (captures/interop/) are the
same eth2 workload between two different real stacks: there every difference diff reports of
two cells must be one the peers' own truth files or the captures' yamux frames show.  Expected
values come from the truth files, the source blocks (captures/data/ethereum), the muxer specs
and the capture read with dpkt."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import struct
import subprocess
from collections import Counter, defaultdict, deque

import dpkt
import pytest

from conftest import CAPTURES, DATA, REPO, dialer_listener, per_capture_kind, tcp_pcap
from conftest import run_p2pc as p2pc
from p2pc.records import unescape
from test_interop import INTEROP, NAMES as INTEROP_NAMES, keys as interop_keys, sent, truth as interop_truth

ETH2 = CAPTURES / "eth2"
YAMUX, MPLEX = str(ETH2 / "eth2-yamux.pcapng"), str(ETH2 / "eth2-mplex.pcapng")
DIFFER = 15
# A request under 128 bytes travels in one muxer frame: a yamux header is 12 bytes (yamux spec,
# "Framing"), an mplex header a uvarint of stream ID and flag plus a uvarint length, 1 + 1 here.
YAMUX_HEADER, MPLEX_HEADER = 12, 2
# A yamux frame carries at most the initial stream window, 256 KiB (yamux spec, "Flow
# Control"); an mplex message at most 1 MiB (libp2p/specs mplex, "Message size").  A framed
# Snappy data chunk holds at most 65,536 uncompressed bytes (framing_format.txt 4.2).
YAMUX_MAX_FRAME, MPLEX_MAX_FRAME, SNAPPY_CHUNK = 256 * 1024, 1024 * 1024, 65536


def truth(name: str) -> dict:
    return json.loads((ETH2 / f"{name}.truth.json").read_text())


def diff_json(*args: str) -> tuple[int, dict]:
    res = p2pc("diff", *args, "--format", "json")
    assert res.returncode in (0, DIFFER), res.stderr
    return res.returncode, json.loads(res.stdout)


def section(rep: dict, name: str) -> list[dict]:
    return next(s["rows"] for s in rep["sections"] if s["name"] == name)


def tcp_segments(capture: str):
    """(frame number, src, sport, dst, dport, flags, seq, payload) of each TCP segment, read by dpkt."""
    with open(capture, "rb") as f:
        for n, (_, buf) in enumerate(dpkt.pcapng.Reader(f), 1):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                t = ip.data
                yield (n, dpkt.utils.inet_to_str(ip.src), t.sport, dpkt.utils.inet_to_str(ip.dst), t.dport,
                       t.flags, t.seq, t.data)


def dialer_port(capture: str) -> int:
    return next(sp for _, _, sp, _, _, flags, _, _ in tcp_segments(capture)
                if flags & dpkt.tcp.TH_SYN and not flags & dpkt.tcp.TH_ACK)


@pytest.fixture(scope="module")
def yamux_mplex():
    return diff_json(YAMUX, MPLEX)


def test_a_capture_against_itself_is_equivalent():
    rc, rep = diff_json(MPLEX, MPLEX)
    assert rc == 0 and rep["equivalent"] and rep["title"] == "p2pc diff: A and B are equivalent"
    assert section(rep, "differences") == [] and section(rep, "unmatched") == []
    assert rep["totals"]["only_a"] == rep["totals"]["only_b"] == 0
    # Everything the truth says the workload sends is there, matched with itself.
    shas = {r["sha256"] for r in section(rep, "messages")}
    assert {b["sha256"] for b in truth("eth2-mplex")["blocks_by_range"]} <= shas
    assert all(r["differs"] == "" and r["payload_ratio"] == 1.0 for r in section(rep, "messages"))


def test_the_two_workloads_differ_only_in_muxer_and_gossip():
    """What diff may report as a difference: the truth files differ in these keys only."""
    ty, tm = truth("eth2-yamux"), truth("eth2-mplex")
    assert {k for k in ty if ty[k] != tm[k]} == {"capture", "muxer", "gossip"}
    assert (ty["muxer"], tm["muxer"]) == ("yamux", "mplex")
    assert ty["gossip"]["blocks"][:1] == tm["gossip"]["blocks"] and len(ty["gossip"]["blocks"]) == 2


@pytest.mark.once
def test_yamux_against_mplex_reports_what_the_truth_says(yamux_mplex):
    rc, rep = yamux_mplex
    assert rc == DIFFER and not rep["equivalent"] and rep["title"] == "p2pc diff: A and B differ"
    ty = truth("eth2-yamux")
    sha = {b["file"]: b["sha256"] for b in ty["blocks_by_range"]}
    for name, digest in sha.items():                  # the truth's digests are the source blocks'
        assert hashlib.sha256((DATA / "ethereum" / name).read_bytes()).hexdigest() == digest
    pairs = section(rep, "messages")
    by_sha = {}
    for r in pairs:
        by_sha.setdefault(r["sha256"], []).append(r)
    # Each block served by range is matched, with the source block's size uncompressed.
    for name, digest in sha.items():
        resp = [r for r in by_sha[digest] if r["msg_type"] == "beacon_blocks_by_range/2 response"]
        assert [(r["a_raw"], r["b_raw"]) for r in resp] == [((DATA / "ethereum" / name).stat().st_size,) * 2]
    # Gossip: the first block on both sides; the second over yamux (A) only.
    first, second = (sha[f] for f in ty["gossip"]["blocks"])
    assert [r["sha256"] for r in pairs if r["msg_type"] == "gossip beacon_block"] == [first]
    unmatched = section(rep, "unmatched")
    gossip = [r for r in unmatched if r["msg_type"].startswith("gossip")]
    assert [(r["side"], r["sha256"], r["src"]) for r in gossip] == \
        [("A", second, f"{ty['link']['addr_a']}:{dialer_port(YAMUX)}")]
    # Same go-libp2p and Snappy on both sides: what is sent of a message is the same; only the
    # muxer's bytes (header, hence wire) and how many muxer frames carried it differ.
    for r in pairs:
        assert (r["a_codec"], r["a_payload"], r["a_raw"]) == (r["b_codec"], r["b_payload"], r["b_raw"]), r
        assert set(r["differs"].split()) <= {"wire", "header", "frames"} and r["payload_ratio"] == 1.0, r
        assert r["a_frames"] >= max(1, math.ceil(r["a_wire"] / YAMUX_MAX_FRAME)), r
        assert r["b_frames"] >= max(1, math.ceil(r["b_wire"] / MPLEX_MAX_FRAME)), r
        assert r["a_stream"] is not None and r["b_stream"] is not None, r
        # The framed Snappy chunks of a req/resp message: as many as its SSZ needs, the same
        # on both sides; a gossip message is one Snappy block, no framing.
        framed = r["a_codec"] == "snappy-framed"
        assert r["a_chunks"] == r["b_chunks"] == (max(1, math.ceil(r["a_raw"] / SNAPPY_CHUNK)) if framed else 0), r
    # The source blocks, served by range: one chunk per 64 KiB of the block, from its file.
    for name, digest in sha.items():
        resp = [r for r in by_sha[digest] if r["msg_type"] == "beacon_blocks_by_range/2 response"]
        size = (DATA / "ethereum" / name).stat().st_size
        assert [(r["a_chunks"], r["b_chunks"]) for r in resp] == [(math.ceil(size / SNAPPY_CHUNK),) * 2]
        assert all(r["a_frames"] > 1 and r["b_frames"] > 1 for r in resp)
    requests = [r for r in pairs if r["msg_type"].endswith(" request")]
    assert requests and all(r["a_wire"] < 128 for r in requests)
    for r in requests:
        assert r["a_header"] - r["b_header"] == YAMUX_HEADER - MPLEX_HEADER, r
    # Responses come a round trip of the emulated link after their request, or later.
    rtt = 2 * ty["link"]["delay_ms_each_way"]
    timed = [r for r in requests if r["a_first_ms"] is not None]
    assert {r["msg_type"] for r in timed} == {f"{m} request" for m in
                                              ("status/1", "ping/1", "beacon_blocks_by_range/2")}
    for r in timed:
        assert rtt <= r["a_first_ms"] <= r["a_last_ms"] and rtt <= r["b_first_ms"] <= r["b_last_ms"], r
    # The negotiation: the muxer differs (offered and accepted), as the truth says; nothing else.
    assert {r["difference"] for r in section(rep, "differences")} == \
        {"only in A", "only in B", "wire differs", "header differs", "frames differs", "muxer offered differs",
         "muxer differs"}
    na, nb = section(rep, "negotiation")
    assert (na["side"], nb["side"]) == ("A", "B")
    assert (na["muxer"], nb["muxer"]) == (na["muxer_offered"], nb["muxer_offered"]) == ("/yamux/1.0.0", "/mplex/6.7.0")
    assert (na["dialer"], nb["dialer"]) == (f"{ty['link']['addr_a']}:{dialer_port(YAMUX)}",
                                            f"{ty['link']['addr_a']}:{dialer_port(MPLEX)}")


@pytest.mark.once
def test_the_unmatched_identify_carries_each_dialers_port(yamux_mplex):
    """The other unmatched messages: the listener's identify, whose observed address is the
    dialer's /ip4/ADDR/tcp/PORT (multiaddr codes 4 and 6), a different port in each capture."""
    _, rep = yamux_mplex
    link = truth("eth2-yamux")["link"]
    listener = f"{link['addr_b']}:{link['port_b']}"
    rest = [r for r in section(rep, "unmatched") if not r["msg_type"].startswith("gossip")]
    assert [(r["side"], r["msg_type"], r["src"]) for r in rest] == \
        [("A", "/ipfs/id/1.0.0", listener), ("B", "/ipfs/id/1.0.0", listener)]
    for r, capture in zip(rest, (YAMUX, MPLEX)):
        port = dialer_port(capture)
        observed = bytes([4, *map(int, link["addr_a"].split("."))]) + struct.pack(">BH", 6, port)
        sent = b"".join(p for n, s, sp, *_, p in tcp_segments(capture)
                        if n <= r["frame"] and f"{s}:{sp}" == listener)
        assert observed in sent
    assert dialer_port(YAMUX) != dialer_port(MPLEX)


@pytest.mark.once
def test_two_sides_of_one_capture(tmp_path, yamux_mplex):
    """The two connections merged into one capture, told apart by --a and --b: the same diff."""
    both = tmp_path / "both.pcapng"
    subprocess.run(["mergecap", "-w", str(both), YAMUX, MPLEX], check=True)
    rc, rep = diff_json(str(both), "--a", f"tcp.port=={dialer_port(YAMUX)}",
                        "--b", f"tcp.port=={dialer_port(MPLEX)}")
    assert rc == DIFFER
    assert rep["rows"] == yamux_mplex[1]["rows"] and rep["totals"] == yamux_mplex[1]["totals"]
    assert rep["sides"]["a"]["capture"] == rep["sides"]["b"]["capture"] == str(both)
    res = p2pc("diff", str(both), "--a", "tcp.port==1")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr


# once: the report's formats; what it says is test_yamux_against_mplex_reports_what_the_truth_says's.
@pytest.mark.once
def test_diff_formats(yamux_mplex):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "analyzer/p2pc/schema/p2pc-report-1.json").read_text())
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(yamux_mplex[1])]
    assert not errors, errors[:3]
    res = p2pc("diff", YAMUX, MPLEX, "--format", "csv", "--section", "unmatched")
    assert res.returncode == DIFFER
    assert sorted(r["side"] for r in csv.DictReader(io.StringIO(res.stdout))) == ["A", "A", "B"]
    res = p2pc("diff", YAMUX, MPLEX, "--format", "csv", "--section", "negotiation")
    assert [(r["side"], r["muxer"]) for r in csv.DictReader(io.StringIO(res.stdout))] == \
        [("A", "/yamux/1.0.0"), ("B", "/mplex/6.7.0")]
    res = p2pc("diff", YAMUX, MPLEX, "--format", "html")
    assert "<h2>Payload bytes sent, A minus B, per message type</h2>" in res.stdout and "B 1st resp ms" in res.stdout
    assert "Negotiation of each connection" in res.stdout
    res = p2pc("diff", YAMUX, MPLEX, "--format", "markdown", "--section", "negotiation")
    assert res.returncode == DIFFER and "/mplex/6.7.0" in res.stdout
    res = p2pc("diff", MPLEX, MPLEX)
    assert res.returncode == 0 and res.stdout.startswith("p2pc diff: A and B are equivalent\n")


@pytest.mark.parametrize("baseline,compressed,words", [
    ("bitcoin/btc-compressed", "fisco/fisco-serial-on", ["carries bitcoin", "fisco"]),
    ("bitcoin/btc-compressed", "bitcoin/btc-baseline", ["has no compressed message", "swapped"]),
])
def test_compare_refuses_what_is_not_off_and_on(baseline, compressed, words):
    res = p2pc("compare", str(CAPTURES / f"{baseline}.pcapng"), str(CAPTURES / f"{compressed}.pcapng"))
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and all(w in res.stderr for w in words), res.stderr


# Two different real stacks (the interop matrix, captures/interop/): the same eth2 workload,
# each peer's own account of what it sent in the cell's truth file.  The plaintext cells, whose
# yamux frames this test reads from the capture's bytes itself.
INTEROP_PAIRS = [
    # go-libp2p dials both; the responses are js-libp2p's against rust-libp2p's.
    ("interop-go-js-plaintext-yamux", "interop-go-rust-plaintext-yamux"),
    # go-libp2p listens in both; the requests and the gossip are js-libp2p's against rust-libp2p's.
    ("interop-js-go-plaintext-yamux-lf", "interop-rust-go-plaintext-yamux-lf"),
    # Every message from go-libp2p in A is js-libp2p's in B, and the other way round.
    ("interop-go-js-plaintext-yamux", "interop-js-go-plaintext-yamux-lf"),
]
ETH2_ONLY = ["-Y", 'p2pc.proto=="eth2"']    # identify is no part of the truth: each stack its own


def tcp_arrivals(capture: str) -> dict[tuple[str, int], tuple[bytes, list[int]]]:
    """Each TCP direction's bytes, (src, sport) -> (payload in sequence order, each byte once;
    the frame that first carried each byte)."""
    isn: dict = {}
    segs: dict = defaultdict(dict)
    for n, src, sport, _, _, flags, seq, data in tcp_segments(capture):
        if flags & dpkt.tcp.TH_SYN:
            isn[(src, sport)] = seq + 1
        elif data:
            segs[(src, sport)].setdefault(seq, (n, data))
    out = {}
    for key, by_seq in segs.items():
        buf, frames = bytearray(), []
        for seq in sorted(by_seq, key=lambda s: (s - isn[key]) % 2**32):
            off = (seq - isn[key]) % 2**32
            n, data = by_seq[seq]
            new = data[len(buf) - off:] if off + len(data) > len(buf) else b""
            buf += new
            frames += [n] * len(new)
        out[key] = (bytes(buf), frames)
    return out


def tcp_directions(capture: str) -> dict[tuple[str, int], bytes]:
    """Each TCP direction's bytes, (src, sport) -> payload in sequence order, each byte once."""
    return {key: data for key, (data, _) in tcp_arrivals(capture).items()}


def read_uvarint(buf: bytes, p: int) -> tuple[int, int]:
    """The uvarint at buf[p] and the offset after it."""
    n = shift = 0
    while buf[p] & 0x80:
        n |= (buf[p] & 0x7F) << shift
        p, shift = p + 1, shift + 7
    return n | buf[p] << shift, p + 1


def yamux_streams(direction: bytes, arrivals: list[int] = ()) -> dict[int, tuple[bytes, list[tuple[int, int]], list[int]]]:
    """A connection direction's yamux streams (after the "/yamux/1.0.0" of multistream-select):
    stream id -> (the bytes its Data frames carry, (offset, length) of each non-empty one, and
    the frame that carried each of those bytes, from the direction's `arrivals`)."""
    p = direction.index(b"\x0d/yamux/1.0.0\n") + 14
    streams: dict = {}
    while p + 12 <= len(direction):
        version, kind, _, sid, length = struct.unpack(">BBHII", direction[p:p + 12])
        assert version == 0
        p += 12
        if kind == 0 and length:
            data, frames, came = streams.setdefault(sid, (bytearray(), [], []))
            frames.append((len(data), length))
            data += direction[p:p + length]
            came += arrivals[p:p + length]
            p += length
    return {sid: (bytes(d), f, c) for sid, (d, f, c) in streams.items()}


def after_multistream(data: bytes) -> int:
    """Past a muxed stream's multistream-select: its header and protocol, each a uvarint length
    and the bytes (both sides send two: the proposal, or the echo)."""
    p = 0
    for _ in range(2):
        n, p = read_uvarint(data, p)
        p += n
    return p


def interop_sent(name: str) -> list[dict]:
    """What each peer of a plaintext yamux cell says it sent (the truth: type, SSZ length and
    sha256, Snappy bytes), with what the capture's bytes show of it: the yamux Data frames that
    carry its bytes, and its header bytes.  A message's header is its own bytes around the
    Snappy ones (eth2: uvarint length, result byte, context; gossip: the RPC around the data)
    and a yamux header (12 bytes, yamux spec "Framing") for every Data frame that starts after
    the stream's previous message (or gossipsub RPC) ended, up to the message's end.  Framed
    Snappy chunks: one per 65,536 bytes of SSZ (framing_format.txt 4.2)."""
    t = interop_truth(name)
    conns = tcp_directions(str(INTEROP / f"{name}.pcapng"))
    out = []
    for role, addr in zip(("dialer", "listener"), dialer_listener(t)):
        streams = yamux_streams(next(b for (src, _), b in conns.items() if src == addr))
        ends: dict = {}
        for m, (mtype, raw, payload, sha) in zip([m for m in t["peers"][role]["messages"] if m["dir"] == "sent"],
                                                 sent(t["peers"][role])):
            if m["kind"] == "gossip":
                sid, (data, frames, _) = next((s, v) for s, v in streams.items()
                                              if v[0][:40].find(b"/meshsub/") > 0 and len(v[0]) > payload)
                start = after_multistream(data)
                while True:                     # the RPC that carries the message
                    n, p = read_uvarint(data, start)
                    if n >= payload:
                        break
                    start = p + n
                prev, end, codec = start, p + n, "snappy"
            else:
                proto_id = f"/eth2/beacon_chain/req/{m['protocol']}/ssz_snappy".encode()
                sid, (data, frames, _) = next((s, v) for s, v in streams.items() if v[0][:100].find(proto_id) > 0)
                prev = ends.get(sid, 0)
                start = ends.get(sid) or after_multistream(data)
                p = start + (1 + 4 * ("context" in m) if m["kind"] == "response" else 0)
                end = read_uvarint(data, p)[1] + payload
                ends[sid], codec = end, "snappy-framed"
            header = end - start - payload + 12 * sum(1 for off, _ in frames if prev <= off < end)
            out.append({"msg_type": mtype, "sha256": sha, "codec": codec, "raw": raw, "payload": payload,
                        "header": header, "wire": payload + header,
                        "frames": sum(1 for off, n in frames if off < end and off + n > start),
                        "chunks": math.ceil(raw / SNAPPY_CHUNK) if codec == "snappy-framed" else 0})
    return out


def expected_diff(a: str, b: str) -> tuple[list[dict], list[tuple[str, dict]]]:
    """What diff must report of cells a and b, from the truth and the captures' bytes: the
    pairs (one message of each side with the same type and SSZ sha256, in order), each with the
    columns whose values differ, and the messages left over, with their side."""
    cols = ("codec", "wire", "payload", "raw", "header", "frames", "chunks")
    waiting: dict = defaultdict(deque)
    for m in interop_sent(b):
        waiting[(m["msg_type"], m["sha256"])].append(m)
    pairs, only = [], []
    for x in interop_sent(a):
        if waiting[(x["msg_type"], x["sha256"])]:
            y = waiting[(x["msg_type"], x["sha256"])].popleft()
            pairs.append({"msg_type": x["msg_type"], "sha256": x["sha256"],
                          **{f"a_{c}": x[c] for c in cols}, **{f"b_{c}": y[c] for c in cols},
                          "differs": {c for c in cols if x[c] != y[c]}})
        else:
            only.append(("A", x))
    only += [("B", y) for q in waiting.values() for y in q]
    return pairs, only


MS_HEADER = "/multistream/1.0.0"
# The negotiation columns diff compares between A and B, and the words of their difference.
NEGOTIATION_DIFFERS = {"first_speaker": "who spoke first", "security_offered": "security offered",
                       "security": "security", "muxer_offered": "muxer offered", "muxer": "muxer",
                       "early_muxer": "early muxer negotiation", "protocols_offered": "protocols offered",
                       "protocols_accepted": "protocols accepted", "lazy": "lazy multistream",
                       "gossipsub": "gossipsub version", "signing": "signing"}


def multistream(prop: bytes, pc: list[int], ans: bytes, ac: list[int], p: int = 0, q: int = 0):
    """One multistream-select negotiation (multistream-select spec) read from its two
    directions' bytes, the proposer's from offset p, the answerer's from q, with the frame that
    carried each byte: (the protocol IDs proposed, the one echoed (None: refused or no answer),
    the offsets after both sides' messages, and whether the proposer's next byte came in a frame
    before the one that completed the echo: lazy)."""
    def message(buf: bytes, at: int) -> tuple[str | None, int]:
        if at >= len(buf):
            return None, at
        n, at = read_uvarint(buf, at)
        return buf[at:at + n].decode().removesuffix("\n"), at + n
    (h1, p), (h2, q) = message(prop, p), message(ans, q)
    assert h1 == MS_HEADER and h2 in (MS_HEADER, None)
    offered, answer = [], "na"
    while answer == "na":
        text, p = message(prop, p)
        answer, q = message(ans, q)
        offered.append(text)
    lazy = answer is not None and p < len(prop) and pc[p] < ac[q - 1]
    return offered, answer, p, q, lazy


def pb_fields(buf: bytes):
    """(field number, bytes of a length-delimited field or None) of a protobuf message."""
    p = 0
    while p < len(buf):
        key, p = read_uvarint(buf, p)
        if key & 7 == 2:
            n, p = read_uvarint(buf, p)
            yield key >> 3, buf[p:p + n]
            p += n
        else:
            assert key & 7 == 0
            _, p = read_uvarint(buf, p)
            yield key >> 3, None


def expected_negotiation(name: str) -> dict:
    """What diff must report of a plaintext yamux cell's connection, from the truth (roles,
    security, muxer) and the capture's bytes read with dpkt: the connection's two multistream
    negotiations (security, then, after each side's length-prefixed plaintext Exchange, the
    muxer), each yamux stream's (the dialer, yamux's client, opens the odd ones: yamux spec,
    "Stream Identification"), who sent the first payload byte, and the gossip messages'
    signing fields (from 1, seqno 3, signature 5, key 6 of gossipsub's Message, published in
    RPC field 2)."""
    t = interop_truth(name)
    capture = str(INTEROP / f"{name}.pcapng")
    dialer, listener = dialer_listener(t)
    syn = [(s, sp, d, dp) for _, s, sp, d, dp, flags, *_ in tcp_segments(capture)
           if flags & dpkt.tcp.TH_SYN and not flags & dpkt.tcp.TH_ACK]
    assert [(s, d) for s, _, d, _ in syn] == [(dialer, listener)]       # one connection, dialed as the truth says
    _, dport, _, lport = syn[0]
    dirs = tcp_arrivals(capture)
    (db, dc), (lb, lc) = dirs[(dialer, dport)], dirs[(listener, lport)]
    first = next(s for _, s, *_, data in tcp_segments(capture) if data)
    sec, sec_ok, p, q, sec_lazy = multistream(db, dc, lb, lc)
    assert sec_ok == t["security"] == "/plaintext/2.0.0"
    p, q = sum(read_uvarint(db, p)), sum(read_uvarint(lb, q))            # the Exchange messages
    mux, mux_ok, *_, mux_lazy = multistream(db, dc, lb, lc, p, q)
    assert mux_ok == t["muxer"]
    streams = {"dialer": yamux_streams(db, dc), "listener": yamux_streams(lb, lc)}
    offered, accepted, lazy, gossip, signed = set(), set(), Counter(), 0, 0
    opened = Counter()
    for sid in set(streams["dialer"]) | set(streams["listener"]):
        opener, other = ("dialer", "listener") if sid % 2 else ("listener", "dialer")
        prop, pc = streams[opener].get(sid, (b"", [], []))[::2]
        ans, ac = streams[other].get(sid, (b"", [], []))[::2]
        ids, ok, p, q, is_lazy = multistream(prop, pc, ans, ac)
        offered |= set(ids)
        if ok is None:
            continue
        accepted.add(ok)
        opened[opener] += 1
        lazy[opener] += is_lazy
        if ok.startswith("/meshsub/"):
            for data, at in ((prop, p), (ans, q)):
                while at < len(data):
                    n, at = read_uvarint(data, at)
                    for msg in (v for k, v in pb_fields(data[at:at + n]) if k == 2):
                        gossip += 1
                        signed += any(k in (1, 3, 5, 6) for k, _ in pb_fields(msg))
                    at += n
    return {"dialer": f"{dialer}:{dport}", "listener": f"{listener}:{lport}",
            "first_speaker": "dialer" if first == dialer else "listener",
            "security_offered": " ".join(sec), "security": sec_ok, "muxer_offered": " ".join(mux),
            "muxer": mux_ok, "early_muxer": "", "protocols_offered": " ".join(sorted(offered)),
            "protocols_accepted": " ".join(sorted(accepted)),
            "lazy": ", ".join([w for w, y in (("security", sec_lazy), ("muxer", mux_lazy)) if y] +
                              [f"{r}'s streams" for r in ("dialer", "listener") if lazy[r]]),
            "lazy_streams": ", ".join(f"{r} {lazy[r]}/{opened[r]}" for r in ("dialer", "listener") if opened[r]),
            "gossipsub": " ".join(sorted(a for a in accepted if a.startswith("/meshsub/"))),
            "signing": "" if not gossip else "StrictNoSign" if not signed else
                       "StrictSign" if signed == gossip else "mixed"}


def negotiation_differences(a: dict, b: dict) -> set[str]:
    return {f"{words} differs" for col, words in NEGOTIATION_DIFFERS.items() if a[col] != b[col]}


def test_the_js_snappy_encoder_frames_the_block_774_bytes_smaller():
    """The figure docs/interop.md gives, from the peers' own accounts: the 859,343-byte block
    as framed Snappy (by range) and as a Snappy block (gossip), by each stack's encoder."""
    framed, block = defaultdict(set), defaultdict(set)
    for name in INTEROP_NAMES:
        t = interop_truth(name)
        for role in ("dialer", "listener"):
            for m in t["peers"][role]["messages"]:
                if m["dir"] == "sent" and m["ssz_len"] == 859343:
                    (block if m["kind"] == "gossip" else framed)[t[role]["stack"]].add(
                        m["data_len"] if m["kind"] == "gossip" else m["framed_len"])
    assert framed == {"go-libp2p": {440541}, "rust-libp2p": {440541}, "js-libp2p": {439767}, "py-libp2p": {440541}}
    assert block == {"go-libp2p": {440381}, "rust-libp2p": {440381}, "js-libp2p": {439607}}


@pytest.mark.once
@pytest.mark.parametrize("a,b", INTEROP_PAIRS, ids=[f"{a}-vs-{b}" for a, b in INTEROP_PAIRS])
def test_two_stacks_differ_where_their_truth_says(a, b):
    """Every difference diff reports of two stacks' cells is one the truth (what each peer
    says it sent) or the capture's own yamux frames show; every matched pair is one message of
    each side with the same type and SSZ sha256; what it reports is what they say, column by
    column."""
    rc, rep = diff_json(str(INTEROP / f"{a}.pcapng"), str(INTEROP / f"{b}.pcapng"), *ETH2_ONLY)
    pairs, only = expected_diff(a, b)
    cols = [k for k in pairs[0] if k != "differs"]
    got = section(rep, "messages")
    assert sorted((tuple(r[k] for k in cols), set(r["differs"].split())) for r in got) == \
        sorted((tuple(p[k] for k in cols), p["differs"]) for p in pairs)
    assert sorted((r["side"], r["msg_type"], r["sha256"], r["payload"]) for r in section(rep, "unmatched")) == \
        sorted((s, m["msg_type"], m["sha256"], m["payload"]) for s, m in only)
    kinds = Counter(c for p in pairs for c in p["differs"])
    # The negotiation of each side's connection, as the truth and the capture's bytes give it;
    # a difference of it is a difference of A and B (its count of messages: none).
    ea, eb = expected_negotiation(a), expected_negotiation(b)
    assert [{k: r[k] for k in ea} for r in section(rep, "negotiation")] == [ea, eb]
    negotiated = negotiation_differences(ea, eb)
    assert {r["difference"]: r["messages"] for r in section(rep, "differences")} == \
        {**{f"{c} differs": n for c, n in kinds.items()},
         **{f"only in {s}": n for s, n in Counter(s for s, _ in only).items()},
         **{d: None for d in negotiated}}
    assert rc == (DIFFER if kinds or only or negotiated else 0) and rep["equivalent"] == (rc == 0)
    # The stacks' Snappy encoders on the same content: the block, 774 bytes apart.
    block = [p for p in pairs if p["a_raw"] == 859343 and "payload" in p["differs"]]
    assert block and all(abs(p["a_payload"] - p["b_payload"]) == 774 for p in block)
    assert section(rep, "conformance") == []


# What Wireshark gives diff here (the negotiation's fields, the records) differs only by the cell's
# security, muxer and variant (the stacks' names first): one cell of each runs on every version.
@pytest.mark.parametrize("name", per_capture_kind(INTEROP_NAMES))
def test_an_interop_cell_against_itself_is_equivalent(tshark, name):
    res = p2pc("diff", str(INTEROP / f"{name}.pcapng"), str(INTEROP / f"{name}.pcapng"),
               *interop_keys(tshark, name), "--format", "json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["equivalent"] and section(rep, "differences") == [] and section(rep, "unmatched") == []
    t = interop_truth(name)
    # The negotiation: the same of A and B; what the truth (roles, security, muxer) and, in
    # plaintext, the capture's bytes say.  QUIC (no tcp.stream) is not derived.
    rows = section(rep, "negotiation")
    if t["security"] == "/quic-v1":
        assert rows == [] and {f"{s}: negotiation of its connections that are not TCP (QUIC)" for s in "AB"} <= \
            {r["figure"] for r in section(rep, "not_derived")}
    else:
        na, nb = rows
        assert {**na, "side": "B"} == nb and (na["side"], na["connection"]) == ("A", 0)
        capture = str(INTEROP / f"{name}.pcapng")
        dialer, listener = dialer_listener(t)
        assert (na["dialer"], na["listener"]) == (f"{dialer}:{dialer_port(capture)}", f"{listener}:{t['link']['listener_port']}")
        first = next(s for _, s, *_, data in tcp_segments(capture) if data)
        assert na["first_speaker"] == ("dialer" if first == dialer else "listener")
        assert (na["security"], na["muxer"]) == (t["security"], t["muxer"])
        how = {"/noise": "noise", "/tls/1.0.0": "tls alpn"}.get(t["security"])
        assert na["early_muxer"] in ("", f"{t['muxer']} ({how})")
        if (t["security"], t["muxer"]) == ("/plaintext/2.0.0", "/yamux/1.0.0"):     # what the test reads
            assert {k: na[k] for k in expected_negotiation(name)} == expected_negotiation(name)
    # Every eth2 message a peer says it sent is a pair, by its sha256.
    assert Counter(r["sha256"] for r in section(rep, "messages") if r["proto"] == "eth2") == \
        Counter(sha for role in ("dialer", "listener") for *_, sha in sent(t["peers"][role]))


@pytest.mark.once
def test_two_stacks_in_one_capture(tmp_path):
    """Two cells merged into one capture, each side chosen by its dialer's port (--a, --b):
    the same diff as of the two files."""
    a, b = (str(INTEROP / f"{n}.pcapng") for n in INTEROP_PAIRS[0])
    both = str(tmp_path / "both.pcapng")
    subprocess.run(["mergecap", "-w", both, a, b], check=True)
    rc, rep = diff_json(both, "--a", f"tcp.port=={dialer_port(a)}", "--b", f"tcp.port=={dialer_port(b)}",
                        *ETH2_ONLY)
    rc2, rep2 = diff_json(a, b, *ETH2_ONLY)
    assert rc == rc2 == DIFFER
    assert rep["rows"] == rep2["rows"] and section(rep, "differences") == section(rep2, "differences")


@pytest.mark.once
def test_the_worked_example_is_what_diff_reports():
    """docs/interop.md's worked example: its table is the pairs that differ, with the figures
    the truth and the captures' yamux frames give (test_two_stacks_differ_where_their_truth_says
    holds diff to the same), and its figures are diff's own."""
    a, b = INTEROP_PAIRS[2]
    doc = (REPO / "docs/interop.md").read_text().split("## A worked example: go-libp2p against js-libp2p")[1]
    assert f"p2pc diff {a}.pcapng {b}.pcapng -Y 'p2pc.proto==\"eth2\"'\n$ echo $?\n{DIFFER}\n" in doc
    lines = [l for l in doc.split("What it says:")[0].splitlines() if l.startswith("|")][2:]
    table = [[c.strip() for c in l.strip("|").split("|")] for l in lines]
    stacks = {"dialer": interop_truth(a)["dialer"]["stack"], "listener": interop_truth(a)["listener"]["stack"]}
    pairs, only = expected_diff(a, b)
    want = []
    for p in pairs:
        if p["differs"]:
            sender = stacks["listener" if p["msg_type"].endswith(" response") else "dialer"]
            other = next(s for s in stacks.values() if s != sender)
            want.append([p["msg_type"], f"{sender.removesuffix('-libp2p')} → {other.removesuffix('-libp2p')}",
                         *(f"{p[k]:,}" for k in ("a_payload", "b_payload", "a_header", "b_header", "a_frames", "b_frames"))])
    got = [[t.removesuffix(" (the block)"), *rest] for t, *rest in table]
    assert sorted(got) == sorted(want) and not only
    assert len(pairs) == 10 and len(table) == 7
    # The block's 774 bytes, the js-libp2p encoder's against go-libp2p's.
    block = [p for p in pairs if p["a_raw"] == 859343]
    assert sorted(p["b_payload"] - p["a_payload"] for p in block) == [-774, 774]
    _, rep = diff_json(str(INTEROP / f"{a}.pcapng"), str(INTEROP / f"{b}.pcapng"), *ETH2_ONLY)
    shown = {(r["msg_type"], r["a_payload"]): r for r in section(rep, "messages")}
    for t, _, pa, pb, ha, hb, fa, fb in got:
        r = shown[(t, int(pa.replace(",", "")))]
        assert [f"{r[k]:,}" for k in ("b_payload", "a_header", "b_header", "a_frames", "b_frames")] == [pb, ha, hb, fa, fb]
    # The negotiation table: each figure what the truth and the captures' bytes give, and its two
    # differences the ones diff reports (test_two_stacks_differ_where_their_truth_says).
    ea, eb = expected_negotiation(a), expected_negotiation(b)
    part = doc.split("- **The negotiation**")[1].split("\n\n")
    assert "`who spoke first differs`, `lazy multistream differs`" in part[0].replace("\n  ", " ")
    assert negotiation_differences(ea, eb) == {"who spoke first differs", "lazy multistream differs"}
    cells = [[c.strip() for c in l.strip("|").split("|")] for l in part[1].splitlines()[2:]]
    assert len(cells) == 7 and all([ea[col], eb[col]] == ab for col, *ab in cells)
    # A is captured at its dialer, B at its listener: the round trip is in A's times only.
    rtt = 2 * interop_truth(a)["link"]["delay_ms_each_way"]
    assert (interop_truth(a)["link"]["captured_at"], interop_truth(b)["link"]["captured_at"]) == ("dialer", "listener")
    timed = [r for r in section(rep, "messages") if r["a_first_ms"] is not None]
    assert timed and all(r["a_first_ms"] >= rtt and r["b_first_ms"] < r["a_first_ms"] for r in timed)
    assert all(r["b_first_ms"] < rtt for r in timed if r["msg_type"] in ("status/1 request", "ping/1 request"))


@pytest.mark.once
def test_signing_differs(tmp_path):
    """Two crafted gossip connections (test_spec's): the same message with from, seqno and
    signature (A) and without them (B, eth2's StrictNoSign)."""
    import snappy
    from test_spec import TOPIC, gossip, pb
    message = pb(2, snappy.compress(bytes(100))) + pb(4, TOPIC.encode())
    signed, unsigned = tmp_path / "signed.pcap", tmp_path / "unsigned.pcap"
    gossip(signed, pb(1, b"\x00\x25\x08\x02") + message + pb(3, bytes(8)) + pb(5, bytes(64)))
    gossip(unsigned, message)
    rc, rep = diff_json(str(signed), str(unsigned))
    assert rc == DIFFER
    assert [(r["side"], r["signing"]) for r in section(rep, "negotiation")] == [("A", "StrictSign"), ("B", "StrictNoSign")]
    assert "signing differs" in {r["difference"] for r in section(rep, "differences")}
    rc, rep = diff_json(str(signed), str(signed))
    assert rc == 0 and section(rep, "differences") == []


def test_early_muxer_negotiation(tshark):
    """go-libp2p over TLS (the muxer in ALPN) against go-libp2p over Noise (the muxer in its
    extensions): the truth files differ in the security protocol and how the muxer was agreed
    (muxer_negotiation), not in the muxer; so does the negotiation."""
    tls, noise = truth("eth2-tls-yamux"), truth("eth2-noise-yamux")
    assert (tls["muxer_negotiation"], noise["muxer_negotiation"]) == ("alpn", "noise extensions")
    assert tls["muxer"] == noise["muxer"] == "yamux"
    rc, rep = diff_json(str(ETH2 / "eth2-tls-yamux.pcapng"), str(ETH2 / "eth2-noise-yamux.pcapng"),
                        "-o", f"tls.keylog_file:{tshark.ws.readable(ETH2 / tls['keys']['dialer'])}",
                        "-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(ETH2 / noise['keys']['dialer'])}")
    assert rc == DIFFER
    na, nb = section(rep, "negotiation")
    assert (na["security"], nb["security"]) == (tls["security"], noise["security"])
    assert (na["early_muxer"], nb["early_muxer"]) == ("/yamux/1.0.0 (tls alpn)", "/yamux/1.0.0 (noise)")
    assert na["muxer"] == nb["muxer"] == "/yamux/1.0.0"
    assert {r["difference"] for r in section(rep, "differences") if r["messages"] is None} == \
        {"security offered differs", "security differs", "early muxer negotiation differs"}


# Strings a peer chose (#40): a TLS ALPN that is a spreadsheet formula, and a multistream
# protocol ID that clears the screen and sets the terminal's title (ECMA-48 CSI 2J, OSC 0).
FORMULA_ALPN = '=HYPERLINK("http://x")'
TERMINAL_PROTO = "/x/\x1b[2J\x1b]0;pwned\x07/1"
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# How the analyzer gets TERMINAL_PROTO from tshark: raw on 4.0; 4.4 and 4.6 print a string
# field's BEL as C's "\a" themselves (the analyzer then escapes that backslash like any other).
TSHARK_RENDERINGS = (TERMINAL_PROTO, TERMINAL_PROTO.replace("\x07", "\\a"))


@pytest.fixture(scope="module")
def hostile_sides(tmp_path_factory):
    """A: a libp2p TLS connection whose peers offer and pick FORMULA_ALPN; B: a yamux
    connection whose streams negotiate TERMINAL_PROTO and ping."""
    from craft import MS, YAMUX_ID, l2p_conn, ms, tls12_hello, ystream
    d = tmp_path_factory.mktemp("hostile")
    app = b"\x17\x03\x03\x00\x20" + bytes(32)            # one TLS application data record
    tcp_pcap(d / "a.pcap", [("a", MS + ms("/tls/1.0.0")), ("b", MS + ms("/tls/1.0.0")),
                            ("a", tls12_hello(False, ["libp2p", FORMULA_ALPN])),
                            ("b", tls12_hello(True, [FORMULA_ALPN])), ("a", app), ("b", app)],
             ports=(40003, 4001), syn="a")
    a = ystream(1, TERMINAL_PROTO, bytes(8)) + ystream(3, "/ipfs/ping/1.0.0", bytes(32))
    b = ystream(1, TERMINAL_PROTO, bytes(8), opener=False) + ystream(3, "/ipfs/ping/1.0.0", bytes(32), opener=False)
    tcp_pcap(d / "b.pcap", l2p_conn(YAMUX_ID, a, b), ports=(40001, 4001), syn="a")
    return str(d / "a.pcap"), str(d / "b.pcap")


@pytest.mark.once
def test_peer_strings_are_neither_formulas_nor_terminal_controls(hostile_sides):
    for fmt in ("csv", "markdown", "table"):
        res = p2pc("diff", *hostile_sides, "--format", fmt, "--section", "negotiation")
        assert res.returncode == DIFFER, res.stderr
        assert not RAW_CONTROL.search(res.stdout + res.stderr), fmt
        # Escaped as the records tap escapes, so the value stays readable.
        assert r"/x/\x1b[2J\x1b]0;pwned\x07/1" in res.stdout or r"/x/\x1b[2J\x1b]0;pwned\\a/1" in res.stdout, fmt
        if fmt == "csv":
            a, b = csv.DictReader(io.StringIO(res.stdout))
            assert a["muxer"] == "'" + FORMULA_ALPN and a["early_muxer"] == f"'{FORMULA_ALPN} (tls alpn)"
            assert set(TSHARK_RENDERINGS) & set(unescape(b["protocols_accepted"]).split())
    res = p2pc("diff", *hostile_sides, "--format", "csv", "--section", "all")
    cells = [r["value"] for r in csv.DictReader(io.StringIO(res.stdout))]
    assert "'" + FORMULA_ALPN in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")
                or c.startswith("-") and not c.lstrip("-").replace(".", "").isdigit()]
    assert not RAW_CONTROL.search(res.stdout)
