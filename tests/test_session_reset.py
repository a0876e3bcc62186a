"""Decoding across tshark's session reset (-M), with p2pc.live_state_mib (core/conn.h,
docs/live-state.md): the state a connection needs goes on in the next session, within a
budget, for libp2p and for the protocols TCP's reassembly frames (Bitcoin, FISCO 2.x and 3.x:
core/holes.h keeps the message a reset cuts); what the budget or a layer whose state is not
p2pc's (TLS) drops is undecoded, with its reason.  The expected records are those of the same capture read without a reset, which
the protocol tests check against the peers' truth."""
from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import CAPTURES, capture_kind, once_beyond_first, p2pc_report, per_capture_kind, same_figures
from p2pc.records import ONE_PASS_PREFS, parse_record

RESET = 61          # packets per session: resets inside handshakes, muxer frames and messages

# (capture, key log): plaintext and Noise, yamux and mplex, each side dialing, holes in the
# capture, the compression transport (its gzip and brotli windows), Bitswap, a Lodestar pair's
# gossip and requests, and a Prysm pair's (a second connection on the first one's endpoints).
CARRIED = [
    ("eth2/eth2-yamux.pcapng", None),
    ("eth2/eth2-mplex.pcapng", None),
    ("eth2/eth2-yamux-gap.pcapng", None),
    ("eth2/eth2-noise-yamux.pcapng", "eth2/eth2-noise-yamux.keys"),
    ("eth2/eth2-noise-yamux-gap.pcapng", "eth2/eth2-noise-yamux.keys"),
    ("interop/interop-js-rust-plaintext-yamux.pcapng", None),
    ("interop/interop-rust-js-plaintext-mplex-lf.pcapng", None),
    ("interop/interop-py-go-noise-yamux-lf.pcapng", "interop/interop-py-go-noise-yamux-lf.keys"),
    ("bitswap/bitswap-1.2.0-noise.pcapng", "bitswap/bitswap-1.2.0-noise.keys"),
    ("libp2p-compression/comp-gzip.pcapng", None),
    ("libp2p-compression/comp-cbrotli.pcapng", None),
    ("libp2p-compression/comp-gzip-gap.pcapng", None),
    ("lodestar/lodestar.pcapng", "lodestar/lodestar.keys"),
    ("prysm/prysm-tcp.pcapng", "prysm/prysm-tcp.keys"),
]
# Framed by TCP's reassembly: blocks of many segments (compressed and not), batches, both FISCO
# header variants and the 3.x gateway.
FRAMED = [
    "bitcoin/btc-compressed.pcapng",
    "bitcoin/btc-baseline.pcapng",
    "bitcoin/btc-xthin.pcapng",
    "fisco/fisco-sync-on.pcapng",
    "fisco/fisco-parallel-off.pcapng",
    "fisco/fisco3-on.pcapng",
    "fisco/fisco3-v1.pcapng",
]


def stream(tshark, capture: Path, *extra: str) -> list[str]:
    """The records tap's stream (what p2pc live reads), one pass as live runs it."""
    return tshark.read(["-n", "-q", "-r", tshark.ws.readable(capture), *ONE_PASS_PREFS, *extra,
                        "-z", "p2pc,records,stream"]).stdout.splitlines()


def messages(lines: list[str]) -> dict[tuple, list[tuple]]:
    """Per direction, its records in order, without the frame and stream numbers (a session
    reset numbers both anew)."""
    out: dict = defaultdict(list)
    for line in lines:
        if line.startswith("M\t"):
            m = parse_record(line)
            out[(m.src, m.srcport, m.dst, m.dstport)].append(
                (m.proto, m.msg_type, m.codec, m.wire_len, m.header_len, m.payload_len, m.raw_len,
                 m.batch_count, m.mux_stream, m.reason))
    return dict(out)


def keys(key: str | None) -> list[str]:
    return ["-o", f"libp2p_noise.keylog_file:{CAPTURES / key}"] if key else []


def carry(mib: int) -> list[str]:
    return ["-M", str(RESET), "-o", f"p2pc.live_state_mib:{mib}"]


@pytest.mark.parametrize("capture,key", per_capture_kind(CARRIED, lambda v: v[0]), ids=[Path(c).stem for c, _ in CARRIED])
def test_libp2p_goes_on_decoding_across_session_resets(tshark, capture, key):
    """A reset every 61 packets, with a budget: every direction's records equal the ones of the
    capture read without a reset, message for message, the bytes the capture ends with included
    (tails: a compressed stream's trailer)."""
    cap = CAPTURES / capture
    want = messages(stream(tshark, cap, *keys(key)))
    assert sum(len(v) for v in want.values()) > 5
    assert messages(stream(tshark, cap, *keys(key), *carry(64))) == want


@pytest.mark.parametrize("capture,every", once_beyond_first([(c, e) for e in (RESET, 7) for c in FRAMED],
                                                            lambda v: (capture_kind(v[0]), v[1])),
                         ids=[f"{e}-{Path(c).stem}" for e in (RESET, 7) for c in FRAMED])
def test_messages_a_reset_cuts_are_finished_in_the_next_session(tshark, capture, every):
    """A reset every 61 (or 7) packets cuts messages TCP was reassembling: each is finished in
    the next session from p2pc's copy of its first bytes, so every direction's records equal the
    ones read without a reset, message for message; with carrying off (checked at 61: at 7 it
    loses more, and costs Wireshark 4.0 a tenth of a second a reset), they do not."""
    cap = CAPTURES / capture
    want = messages(stream(tshark, cap))
    assert sum(len(v) for v in want.values()) > 5
    assert not [r for v in want.values() for r in v if r[1] == "undecoded"]
    assert messages(stream(tshark, cap, "-M", str(every), "-o", "p2pc.live_state_mib:64")) == want
    if every == RESET:
        assert messages(stream(tshark, cap, "-M", str(every))) != want


def test_without_a_budget_a_reset_forgets_libp2p_connections(tshark):
    """p2pc.live_state_mib 0 (the default: the GUI, tshark -2, p2pc analyze): a reset forgets the
    connections, as before, and most messages are lost: what the budget is for."""
    cap = CAPTURES / "eth2/eth2-noise-yamux.pcapng"
    k = keys("eth2/eth2-noise-yamux.keys")
    want = sum(len(v) for v in messages(stream(tshark, cap, *k)).values())
    got = messages(stream(tshark, cap, *k, "-M", str(RESET)))
    decoded = sum(1 for v in got.values() for r in v if r[1] != "undecoded")
    assert decoded < want / 2


def test_the_reader_is_told_which_connections_go_on(tshark):
    """#CARRIED names each connection whose state the next session goes on with, before the
    #RESET that starts it."""
    cap = CAPTURES / "eth2/eth2-yamux.pcapng"
    (conn,) = {tuple(sorted([(m.src, m.srcport), (m.dst, m.dstport)]))
               for m in map(parse_record, (l for l in stream(tshark, cap) if l.startswith("M\t")))}
    lines = stream(tshark, cap, *carry(64))
    first = lines.index(next(l for l in lines if l.startswith("#RESET")))
    _, a, pa, b, pb = lines[first - 1].split("\t")
    assert tuple(sorted([(a, int(pa)), (b, int(pb))])) == conn
    assert not [l for l in stream(tshark, cap, "-M", str(RESET)) if l.startswith("#CARRIED")]


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """24 copies of an eth2 connection, each on its own addresses (tcprewrite), all open at
    once (mergecap by time)."""
    tmp = tmp_path_factory.mktemp("many")
    parts = []
    for c in range(24):
        part = tmp / f"c{c}.pcap"
        subprocess.run(["tcprewrite", f"--pnat=192.0.2.0/24:10.9.{c}.0/24",
                        f"--infile={CAPTURES / 'eth2/eth2-yamux.pcapng'}", f"--outfile={part}"],
                       check=True, stdout=subprocess.DEVNULL)
        parts.append(str(part))
    out = tmp / "many.pcapng"
    subprocess.run(["mergecap", "-F", "pcapng", "-w", str(out), *parts], check=True)
    tmp.chmod(0o755)
    out.chmod(0o644)
    return out


def test_a_budget_smaller_than_the_working_set_evicts_and_says_so(tshark, many):
    """1 MiB holds about 16 of the 24 connections (64 KiB each and what they buffer): at each
    reset the least recently used ones are evicted.  Each direction's decoded records are then
    the ones read without a reset up to its eviction, in order, and what it sends after is
    undecoded, reason "evicted": nothing else is lost or made up."""
    want = messages(stream(tshark, many))
    got = messages(stream(tshark, many, "-M", "500", "-o", "p2pc.live_state_mib:1"))
    evicted = {d for d, recs in got.items() if any(r[9] == "evicted" for r in recs)}
    assert 0 < len(evicted) < len(want)
    assert set(got) == set(want)
    for d, recs in got.items():
        decoded = [r for r in recs if r[1] != "undecoded"]
        assert all(r[9] == "evicted" for r in recs if r[1] == "undecoded"), d
        if d in evicted:
            assert decoded == want[d][:len(decoded)], d
            assert sum(r[3] for r in recs if r[1] == "undecoded") > 0
        else:
            assert decoded == want[d], d
    # A budget that holds them all: every direction decodes as without a reset.
    assert messages(stream(tshark, many, "-M", "500", "-o", "p2pc.live_state_mib:64")) == want


def test_a_tls_connection_is_undecoded_after_a_reset_with_the_reason(tshark):
    """Wireshark's TLS keeps its own session state, which a reset drops: the connection's
    records up to the reset are those read without one, and its bytes after it are undecoded,
    reason "reset", every byte of them."""
    cap = CAPTURES / "eth2/eth2-tls-yamux.pcapng"
    tls = ["-o", f"tls.keylog_file:{CAPTURES / 'eth2/eth2-tls-yamux.keys'}"]
    want = messages(stream(tshark, cap, *tls))
    lines = stream(tshark, cap, *tls, "-M", "150", "-o", "p2pc.live_state_mib:64")
    got = messages(lines)
    for d, recs in got.items():
        decoded = [r for r in recs if r[1] != "undecoded"]
        assert decoded == want[d][:len(decoded)]
        assert {r[9] for r in recs if r[1] == "undecoded"} <= {"reset"}
    dropped = sum(r[3] for recs in got.values() for r in recs if r[9] == "reset")
    assert dropped > 0
    assert not [l for l in lines if l.startswith("#CARRIED")]


def reuse(tmp: Path, first: str, packets: int, second: str, ports: str) -> Path:
    """A connection that never ended in the capture (`first` cut after `packets` packets), then,
    an hour later, a new one on the same endpoints (`second`, its client port rewritten to the
    first's: `ports`, tcprewrite's --portmap)."""
    cut, moved, later, both = (tmp / f"{n}.pcapng" for n in ("cut", "moved", "later", "both"))
    subprocess.run(["editcap", "-r", str(CAPTURES / first), str(cut), f"1-{packets}"], check=True)
    subprocess.run(["tcprewrite", f"--portmap={ports}", f"--infile={CAPTURES / second}", f"--outfile={moved}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["editcap", "-t", "3600", str(moved), str(later)], check=True)
    subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(both), str(cut), str(later)], check=True)
    tmp.chmod(0o755)
    both.chmod(0o644)
    return both


# (first, its packets, second, port map): eth2 over yamux then mplex, the first cut inside
# messages its pipes hold (libp2p/engine.c's tails); Bitcoin, inside a block TCP reassembles
# (core/holes.c's); the compression transport, gzip then brotli, its compressed bytes no
# message claimed (packet-libp2p-compression.c's).
REUSED = {"eth2": ("eth2/eth2-yamux.pcapng", 2400, "eth2/eth2-mplex.pcapng", "36186:52396"),
          "bitcoin": ("bitcoin/btc-compressed.pcapng", 700, "bitcoin/btc-baseline.pcapng", "44264:44254"),
          "compression": ("libp2p-compression/comp-gzip.pcapng", 400, "libp2p-compression/comp-cbrotli.pcapng",
                          "40650:58600")}


@pytest.fixture(scope="module")
def reused(tmp_path_factory) -> Path:
    """eth2's REUSED capture."""
    return reuse(tmp_path_factory.mktemp("reused"), *REUSED["eth2"])


@pytest.mark.parametrize("kind", REUSED)
def test_a_new_connection_on_the_same_endpoints_starts_afresh(tshark, tmp_path, reused, kind):
    """A connection carried over a reset, then a new one on the same endpoints (REUSED): its
    SYN retires the old state, and the new connection decodes from its start, as it does
    without a reset; what the old one held when the capture left it (a tail) is printed at the
    end, as it is without a reset, not lost with its state nor cut by a reset."""
    cap = reused if kind == "eth2" else reuse(tmp_path, *REUSED[kind])
    want = messages(stream(tshark, cap))
    assert sum(len(v) for v in want.values()) >= 2 * 13
    assert [r for v in want.values() for r in v if r[1] == "undecoded" and not r[9]]
    for every in (RESET, 300):
        assert messages(stream(tshark, cap, "-M", str(every), "-o", "p2pc.live_state_mib:64")) == want, every


def test_bitcoin_over_the_budget_says_why(tshark):
    """A budget smaller than one Bitcoin connection (64 KiB and the part of a block it keeps):
    the connection is evicted at the first reset that cuts a block, the bytes of the message it
    cut and those before the next message header are undecoded, reason "evicted", and every
    message decoded is one the capture read without a reset has."""
    cap = CAPTURES / "bitcoin/btc-compressed.pcapng"
    want = messages(stream(tshark, cap))
    got = messages(stream(tshark, cap, "-M", "300", "-o", "p2pc.live_state_mib:1"))
    undecoded = [r for recs in got.values() for r in recs if r[1] == "undecoded"]
    assert undecoded and {r[9] for r in undecoded} == {"evicted"}
    for d, recs in got.items():
        decoded = Counter(r for r in recs if r[1] != "undecoded")
        assert not decoded - Counter(want[d]), d


def test_fisco_over_tls_after_a_reset_is_undecoded_with_the_reason(tshark):
    """FISCO's TLS is Wireshark's, which a reset drops: the records up to the reset are those read
    without one, and every byte after it is undecoded, reason "reset"."""
    cap = CAPTURES / "fisco/fisco-tls.pcapng"
    want = messages(stream(tshark, cap))
    got = messages(stream(tshark, cap, "-M", str(RESET), "-o", "p2pc.live_state_mib:64"))
    for d, recs in got.items():
        decoded = [r for r in recs if r[1] != "undecoded"]
        assert decoded == want[d][:len(decoded)], d
        assert {r[9] for r in recs if r[1] == "undecoded"} <= {"reset"}
    assert sum(r[3] for recs in got.values() for r in recs if r[9] == "reset") > 0


# What `p2pc live` reads with a session reset every few hundred packets (capture, key log,
# packets per session): Bitcoin blocks, FISCO 2.x and 3.x, eth2 over yamux, mplex and Noise,
# the compression transport, a Lodestar and a Prysm pair, and a new connection on an earlier
# one's endpoints (`reused`).
LIVE = [
    ("bitcoin/btc-compressed.pcapng", None, 300),
    ("fisco/fisco-parallel-off.pcapng", None, 150),
    ("fisco/fisco3-v1.pcapng", None, 60),
    ("eth2/eth2-yamux.pcapng", None, 300),
    ("eth2/eth2-noise-yamux.pcapng", "eth2/eth2-noise-yamux.keys", 300),
    ("libp2p-compression/comp-gzip.pcapng", None, 150),
    ("libp2p-compression/comp-cbrotli.pcapng", None, 150),
    ("lodestar/lodestar.pcapng", "lodestar/lodestar.keys", 300),
    ("prysm/prysm-tcp.pcapng", "prysm/prysm-tcp.keys", 200),
    ("reused", None, 300),
]
SERIES = {"p2pc_messages_total": "messages", "p2pc_wire_bytes_total": "wire_bytes",
          "p2pc_payload_bytes_total": "payload_bytes", "p2pc_raw_bytes_total": "raw_bytes"}
SAVED = {"payload": "payload_saved", "header": "header_saved", "ack": "ack_saved"}


def live_read(lines: list[str]) -> tuple[dict, dict, dict, int]:
    """What `p2pc live` makes of the stream tap's lines (LiveTotals, its metrics): the final
    report, by direction too, the metrics summed per (proto, msg_type) and column of the
    report, and the session resets read."""
    from p2pc.live import LiveTotals
    from p2pc.metrics import Metrics
    from p2pc.report import live_report
    totals_ = LiveTotals()
    metrics = Metrics(("127.0.0.1", 0), totals_, "lo", "capture")
    try:
        for line in lines:
            totals_.line(line)
        metrics.ended(0)
        served: dict = defaultdict(float)
        for family in metrics.registry.collect():
            for s in family.samples:
                column = SERIES.get(s.name) or (SAVED[s.labels["kind"]] if s.name == "p2pc_saved_bytes" else None)
                if column:
                    served[(s.labels["proto"], s.labels["msg_type"], column)] += s.value
    finally:
        metrics.close()
    # As its JSON output has them (tuples become lists).
    reports = [json.loads(json.dumps(live_report(totals_, "lo", "capture", by, False, None, True)))
               for by in (False, True)]
    return reports[0], reports[1], dict(served), totals_.epoch


@pytest.mark.parametrize("capture,key,every", per_capture_kind(LIVE, lambda v: v[0]), ids=[Path(c).stem for c, _, _ in LIVE])
def test_live_equals_analyze_after_every_reset(request, tshark, capture, key, every):
    """`p2pc live` of a capture read with a session reset every few hundred packets reports what
    `p2pc analyze` of the capture reports, every column of every row, per connection direction
    too (messages, wire, header, payload, the savings and the totals), and its metrics say the
    same: the header and ACK savings take each connection direction's segments and ACKs as a
    whole, however many sessions they came in."""
    cap = request.getfixturevalue("reused") if capture == "reused" else CAPTURES / capture
    live, live_by_dir, served, resets = live_read(stream(tshark, cap, *keys(key), "-M", str(every),
                                                         "-o", "p2pc.live_state_mib:64"))
    assert resets >= 2
    offline = p2pc_report("analyze", str(cap), *keys(key))
    for part in ("rows", "totals", "sections", "warnings"):
        assert live[part] == offline[part], part
    assert same_figures(live, offline)
    offline_by_dir = p2pc_report("analyze", "--by-direction", str(cap), *keys(key))
    assert live_by_dir["rows"] == offline_by_dir["rows"]
    assert {r["direction"] for r in offline_by_dir["rows"]} and all(r["messages"] for r in offline["rows"])
    for r in offline["rows"]:
        for column in (*SERIES.values(), *SAVED.values()):
            # The report rounds a row's header and ACK savings; the metric is the model's figure.
            assert abs(served.get((r["proto"], r["msg_type"], column), 0) - r[column]) <= 0.5, (r["msg_type"], column)


def test_a_reset_forgets_a_connection_that_ended(tshark, tmp_path):
    """The stream tap keeps a connection's number and counts over resets while a frame of it may
    still come, and forgets one that ended before the session a reset ends (memory stays
    bounded): eth2-yamux's connection ends with a RST; its last pure ACK again, an hour later,
    right after it is still that connection's (one more frame and pure ACK on its counts); after
    700 packets of another connection (two resets at -M 300) it is a connection of its own."""
    eth2 = CAPTURES / "eth2/eth2-yamux.pcapng"
    ack, btc, both = (tmp_path / f"{n}.pcapng" for n in ("ack", "btc", "both"))
    subprocess.run(["editcap", "-r", "-t", "3600", str(eth2), str(ack), "2540"], check=True)
    subprocess.run(["editcap", "-r", "-t", "5000", str(CAPTURES / "bitcoin/btc-compressed.pcapng"), str(btc),
                    "1-700"], check=True)
    tmp_path.chmod(0o755)

    def t_lines(*parts: Path) -> list:
        subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(both), *map(str, parts)], check=True)
        both.chmod(0o644)
        return [parse_record(l) for l in stream(tshark, both, *carry(64)) if l.startswith("T\t")]

    ts = t_lines(eth2, ack)
    before = [t for t in ts[:-1] if (t.src, t.srcport) == (ts[-1].src, ts[-1].srcport)][-1]
    assert ts[-1].stream == before.stream == ts[0].stream
    assert (ts[-1].frames, ts[-1].pure_acks) == (before.frames + 1, before.pure_acks + 1)
    ts = t_lines(eth2, btc, ack)
    assert ts[-1].stream not in {t.stream for t in ts[:-1]}
    assert (ts[-1].frames, ts[-1].pure_acks) == (1, 1)
