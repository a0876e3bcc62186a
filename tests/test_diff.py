"""p2pc diff (interop debugging, #28) and compare's refusals.  eth2-yamux and eth2-mplex are one
go-libp2p workload over two muxers: their truth files differ in the muxer and in the gossip
(two blocks over yamux, one over mplex), so every difference diff reports must be one of those,
or one the capture's own bytes show.  Expected values come from the truth files, the source
blocks (captures/data/ethereum), the muxer specs and the capture read with dpkt."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import struct
import subprocess

import dpkt
import pytest

from conftest import CAPTURES, DATA, REPO
from conftest import run_p2pc as p2pc

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
    """(frame number, src, sport, dst, dport, flags, payload) of each TCP segment, read by dpkt."""
    with open(capture, "rb") as f:
        for n, (_, buf) in enumerate(dpkt.pcapng.Reader(f), 1):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                t = ip.data
                yield n, dpkt.utils.inet_to_str(ip.src), t.sport, dpkt.utils.inet_to_str(ip.dst), t.dport, t.flags, t.data


def dialer_port(capture: str) -> int:
    return next(sp for _, _, sp, _, _, flags, _ in tcp_segments(capture)
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
    assert {r["difference"] for r in section(rep, "differences")} == \
        {"only in A", "only in B", "wire differs", "header differs", "frames differs"}


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


def test_diff_formats(yamux_mplex):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "analyzer/p2pc/schema/p2pc-report-1.json").read_text())
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(yamux_mplex[1])]
    assert not errors, errors[:3]
    res = p2pc("diff", YAMUX, MPLEX, "--format", "csv", "--section", "unmatched")
    assert res.returncode == DIFFER
    assert sorted(r["side"] for r in csv.DictReader(io.StringIO(res.stdout))) == ["A", "A", "B"]
    res = p2pc("diff", YAMUX, MPLEX, "--format", "html")
    assert "<h2>Compressed size, A vs B</h2>" in res.stdout and "B 1st resp ms" in res.stdout
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
