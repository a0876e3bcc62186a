"""Do no harm: with p2pc installed, everything that is not P2P decodes exactly as stock.

Other projects' test captures (captures/noharm/README.md says where each comes from) are read by
stock tshark and by tshark with p2pc, frame by frame (tools/noharm.py): no stock layer may be
lost and no p2pc layer may appear, but where the capture really is P2P (expected.tsv).  Each kept
capture is one that an earlier p2pc took (issue #39): H.323 call setup, IBM DB2 DRDA, FastCGI,
DLMS, Monero, game and chat traffic, LLMNR over TCP, ZeroMQ ZMTP/1.0, and Ethereum's devp2p on
30303, inside FISCO's port range.
"""
from __future__ import annotations

import struct
import sys

import pytest

from conftest import REPO, tcp_pcap

sys.path.insert(0, str(REPO / "tools"))
import noharm  # noqa: E402

CORPUS = REPO / "captures" / "noharm"
EXPECTED = noharm.expected(CORPUS / "expected.tsv")
CAPTURES = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".pcap", ".pcapng"))
HEURISTICS = {"fisco_tcp", "fisco_tls", "btcc_tcp", "libp2p_tcp"}


@pytest.fixture(scope="module")
def stock():
    from p2pc.wsenv import Wireshark
    return Wireshark()


@pytest.fixture(scope="module")
def mine(tshark, stock):
    return noharm.protocols(tshark.ws) - noharm.protocols(stock)


def test_the_corpus_is_documented():
    readme = (CORPUS / "README.md").read_text()
    assert CAPTURES and all(name in readme for name in CAPTURES)
    assert {f for f, _ in EXPECTED} <= set(CAPTURES)


@pytest.mark.parametrize("name", CAPTURES)
def test_stock_decodes_the_same(tshark, stock, mine, name):
    cap = CORPUS / name
    before, after = noharm.layers(stock, cap), noharm.layers(tshark.ws, cap)
    assert before and len(before) == len(after)
    diffs = noharm.compare(before, after, mine)
    claimed = {layer for _, kind, layer in diffs if kind == "claimed"}
    if any(f == name for f, _ in EXPECTED):
        assert claimed <= {p for f, p in EXPECTED if f == name}
    else:
        assert diffs == []


def test_devp2p_on_fisco_port_range_stays_stock(tshark):
    """Ethereum's devp2p listens on 30303, which FISCO's port range covers: the connections'
    first bytes (an RLPx auth message) start no FISCO header, so the port lets them go."""
    cap = CORPUS / "ndpi-ethereum.pcap"
    assert tshark.fields(cap, ["frame.number"], dfilter="tcp.port == 30303 && tcp.len > 0")
    assert tshark.fields(cap, ["frame.number"], dfilter="fisco || fisco3 || p2pc") == []


def test_h323_keeps_its_call_setup(tshark, stock):
    cap = CORPUS / "ndpi-h323.pcap"
    layers = {layer for frame in noharm.layers(tshark.ws, cap) for layer in frame}
    assert {"q931", "h225", "h245"} <= layers
    assert "fisco" not in layers


def test_each_heuristic_can_be_switched_off(tshark, tmp_path):
    """Every heuristic docs/heuristics.md names is one of Wireshark's (Analyze > Enabled
    Protocols, tshark --disable-heuristic NAME), they are all p2pc has, and switching one off
    stops it."""
    listed = {tuple(line.split("\t")[:2]) for line in
              tshark.ws.run("tshark", ["-G", "heuristic-decodes"]).stdout.splitlines()}
    ours = {(table, proto) for table, proto in listed if proto in ("btcc", "fisco", "libp2p")}
    assert ours == {("tcp", "btcc"), ("tcp", "fisco"), ("tcp", "libp2p"), ("tls", "fisco")}
    doc = (REPO / "docs" / "heuristics.md").read_text()
    cap = CORPUS / "ndpi-dlms.pcap"
    for name in HEURISTICS:
        assert f"`{name}`" in doc
        res = tshark.ws.run("tshark", ["--disable-heuristic", name, "-r", tshark.ws.readable(cap), "-c", "1"])
        assert res.returncode == 0, res.stderr
    # FISCO's messages on ports it does not own, from the connection's start: the heuristic's.
    src = REPO / "captures" / "fisco" / "fisco-topic-on.pcapng"
    rows = tshark.fields(src, ["ip.src", "tcp.payload"], dfilter="tcp.len > 0")
    cap = tmp_path / "offport.pcap"
    tcp_pcap(cap, [("a" if ip == rows[0][0] else "b", bytes.fromhex(p)) for ip, p in rows], syn="a")
    assert len(tshark.records(cap)) == len(tshark.records(src))
    assert tshark.records(cap, extra=["--disable-heuristic", "fisco_tcp"]) == []


def fisco_msg(module: int, ptype: int, seq: int, body: bytes) -> bytes:
    return struct.pack(">IHhHHI", 16 + len(body), 0, 1, module, ptype, seq) + body


def test_the_heuristic_lets_go_of_a_wrong_guess(tshark, tmp_path):
    """A connection whose first segment is a whole FISCO message is claimed; when its next
    header does not parse, the connection is let go from the next frame (stock's again)."""
    cap = tmp_path / "letgo.pcap"
    tcp_pcap(cap, [("a", fisco_msg(2, 1, 0, b"7")), ("a", b"GARBAGE-NOT-A-HEADER" * 3),
                   ("b", b"more bytes of another protocol"), ("a", fisco_msg(2, 1, 0, b"8"))],
             syn="a")
    rows = tshark.fields(cap, ["frame.number", "frame.protocols"], dfilter="tcp.len > 0")
    assert [("fisco" in p) for _, p in rows] == [True, True, False, False]
    assert "connection let go" in tshark.fields(cap, ["_ws.col.Info"], dfilter="tcp.len > 0")[1][0]
    # The message it took; the bytes after it are not FISCO's, so no record counts them.
    assert [(r["msg_type"], r["wire_len"]) for r in tshark.records(cap)] == [("Topic.SendTopicSeq", "17")]


@pytest.mark.parametrize("first", [
    b"\x03\x00\x00\xa0\x08\x02\x00\x01" + bytes(152),                      # TPKT + Q.931 (H.323)
    fisco_msg(2, 1, 0, b"7")[:16] + b"x" * 100,                             # a header, then no topic seq
    fisco_msg(8, 0, 2, b"\xc2\x80\x80"),                                    # PBFT that is no PBFT list
    fisco_msg(2, 1, 0, b"7")[:12],                                          # a header cut short
])
def test_the_heuristic_wants_a_whole_message_that_parses(tshark, tmp_path, first):
    cap = tmp_path / "weak.pcap"
    tcp_pcap(cap, [("a", first), ("b", b"\x00" * 40)], syn="a")
    assert tshark.fields(cap, ["frame.number"], dfilter="fisco || fisco3") == []


def test_no_heuristic_on_a_stock_port(tshark, tmp_path):
    """FISCO bytes on a port a stock dissector owns (FTP's 21) are left to it, not guessed at."""
    cap = tmp_path / "stockport.pcap"
    tcp_pcap(cap, [("a", fisco_msg(2, 1, 0, b"7")), ("b", fisco_msg(2, 1, 0, b"7"))], (40001, 21), syn="a")
    assert tshark.fields(cap, ["frame.number"], dfilter="fisco") == []
    assert tshark.fields(cap, ["frame.number"], dfilter="fisco", extra=["-d", "tcp.port==21,fisco"])


def test_libp2p_claims_its_exact_header_on_a_stock_port(tshark, stock):
    """Ethereum consensus clients listen on 9000, which stock gives to S101: S101 declines the
    multistream header (TCP tries ports first), and libp2p's heuristic takes it."""
    decodes = stock.run("tshark", ["-G", "decodes"]).stdout.splitlines()
    assert "tcp.port\t9000\ts101" in decodes
    assert tshark.records(REPO / "captures" / "eth2" / "eth2-mplex.pcapng")


def test_the_test_ports_are_no_stock_dissectors(stock):
    """The heuristics' tests craft connections on 40001/40002 (tools/craft.py) and move FISCO to
    40002: a Wireshark that gives one of those ports to a dissector of its own would stop the
    heuristic there, by design (4.4 gives 40000 to SAP NI)."""
    decodes = set(stock.run("tshark", ["-G", "decodes"]).stdout.splitlines())
    assert not [d for d in decodes if d.split("\t")[:2] in (["tcp.port", "40001"], ["tcp.port", "40002"])]
