"""Hostile input: the reproducers in tests/data/repro (see its README) and out-of-range
preferences get an expert item or a clear one-line error, never a crash, a traceback or a wrong
number."""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import CAPTURES, REPO, p2pc_report, tcp_pcap, unremembered
from conftest import run_p2pc as p2pc
from p2pc.records import parse_record
from p2pc.wsenv import Wireshark, built_plugin
from test_spec import hits as spec_hits

REPRO = REPO / "tests" / "data" / "repro"
OOO = ["-o", "tcp.reassemble_out_of_order:TRUE"]
ANALYZER_REPROS = ["analyzer-traceback-btc-command-tab-newline.pcapng.gz", "analyzer-traceback-indexerror.pcapng.gz"]


def btc_command_capture(path) -> None:
    """A pcap of one Bitcoin message (mainnet magic, empty payload) to port 8333 whose command
    holds a TAB and a LF: a peer chooses its command bytes."""
    msg = struct.pack("<I12sI", 0xD9B4BEF9, b"in\tv\nx", 0) + bytes.fromhex("5df6e0e2")
    tcp_pcap(path, [("a", msg)], (40000, 8333))


@pytest.mark.parametrize("name", ANALYZER_REPROS)
def test_records_never_split_whatever_the_peer_sent(tshark, name):
    """Every record line has its columns: the analyzer's parser reads each (a wrong column
    count is a MalformedRecord)."""
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(REPRO / name), "-z", "p2pc,records"]).stdout
    m_lines = [parse_record(l) for l in out.splitlines() if l.startswith("M\t")]
    assert m_lines


def test_a_command_with_control_characters_keeps_its_record_whole(tshark, tmp_path):
    """A command a peer made up, holding TAB and LF: its record line keeps its columns and
    names it unknown; the bytes as sent are in bitcoin.command."""
    cap = tmp_path / "btc-command-tab-newline.pcap"
    btc_command_capture(cap)
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(cap), "-z", "p2pc,records"]).stdout
    m_lines = [parse_record(l) for l in out.splitlines() if l.startswith("M\t")]
    assert len(m_lines) == 1 and m_lines[0].msg_type == "unknown"
    assert tshark.fields(cap, ["bitcoin.command"]) == [[r"in\tv\nx"]]   # as tshark escapes it


@pytest.mark.parametrize("name", ANALYZER_REPROS)
def test_analyzer_reports_mutated_captures_without_traceback(name):
    res = p2pc("analyze", "--format", "json", str(REPRO / name))
    assert "Traceback" not in res.stderr
    assert res.returncode in (0, 8), res.stderr


# Bitcoin's commands (packet-bitcoin-compress.c, btc_command_names): Bitcoin Core's 35, five
# earlier ones Wireshark still knows, BUIP017's five and Xthin's five.
BTC_COMMANDS = 50


def test_made_up_commands_are_one_unknown_row_with_every_byte(tshark):
    """20,000 distinct made-up commands (each a message of its own) are one `unknown` row, not
    20,000 rows and label sets; each is still in the packet tree as sent, with the note, and the
    report's wire bytes are still the capture's TCP payload."""
    cap = REPRO / "cardinality-btc.pcap.gz"
    rows = [r for r in p2pc_report("analyze", str(cap))["rows"] if r["proto"] == "bitcoin"]
    assert len(rows) <= BTC_COMMANDS + 1
    assert {r["msg_type"] for r in rows} == {"version", "unknown"}
    unknown = next(r for r in rows if r["msg_type"] == "unknown")
    assert unknown["messages"] == 20000
    sent = [c for row in tshark.fields(cap, ["bitcoin.command"]) for c in row[0].split("|") if c]
    assert len(set(sent) - {"version"}) == 20000
    noted = tshark.fields(cap, ["bitcoin.command"], dfilter="p2pc.unknown_msg_type")
    assert sum(len(r[0].split("|")) for r in noted) == 20000
    tcp_payload = sum(int(r[0]) for r in tshark.fields(cap, ["tcp.len"], dfilter="tcp.len > 0"))
    assert sum(r["wire_bytes"] for r in rows) == tcp_payload == 480242


def test_decompression_cap_out_of_range_takes_the_nearest_limit(tshark):
    """As the README says: p2pc.max_decompressed_mib:0 (it would let no decoder produce a byte)
    is neither refused nor reported (exit 0, nothing on stderr): the range's 1 MiB minimum
    applies, so the 999,887-byte block decodes and the 1,381,836-byte one does not (with the
    default 128 MiB both do)."""
    cap = CAPTURES / "bitcoin" / "btc-compressed.pcapng"
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(cap), "-o", "p2pc.max_decompressed_mib:0",
                      "-z", "p2pc,records"])
    assert res.returncode == 0 and res.stderr == "", res.stderr
    raw = lambda recs: {int(r["payload_len"]): int(r["raw_len"]) for r in recs if r["msg_type"] == "cblock"}  # noqa: E731
    assert raw(tshark.records(cap))[903192] == 999887 and raw(tshark.records(cap))[1250565] == 1381836
    got = raw(tshark.records(cap, extra=["-o", "p2pc.max_decompressed_mib:0"]))
    assert got[903192] == 999887 and got[1250565] == 1250565     # past 1 MiB: left compressed


def test_service_bit_out_of_range_takes_the_default(tshark):
    """As the README says: a service bit past 63 names no bit of the 64-bit field; it is neither
    refused nor reported (exit 0, nothing on stderr): the default bit 5 applies, and the
    compressed session is still negotiated, as with bit 5 itself (bit 6 would not be)."""
    cap = CAPTURES / "bitcoin" / "btc-compressed.pcapng"
    res = tshark.run(["-n", "-r", tshark.ws.readable(cap), "-o", "btcc.service_bit:99"])
    assert res.returncode == 0 and res.stderr == "", res.stderr
    neg = lambda bit: tshark.fields(cap, ["btcc.negotiated"], dfilter="bitcoin.command == \"cblock\"",  # noqa: E731
                                    extra=["-o", f"btcc.service_bit:{bit}"])
    rows = neg(99)
    assert rows and all(set(r[0].split("|")) == {"1"} for r in rows) and rows == neg(5) != neg(6)


def test_reordered_segments_decode_every_record(tshark):
    """Two segments of one gzip direction swapped: every record of the unreordered capture
    decodes, with tcp.reassemble_out_of_order (which the analyzer sets) and without it (where
    TCP 4.0 withholds the late segment as a retransmission and p2pc takes it from the frame)."""
    # Each message's own bytes (raw_len is its share of the stream's output, which follows
    # the frames the segments arrive in).
    want = sorted((m, p) for _, m, p in tshark.payloads(CAPTURES / "libp2p-compression" / "comp-gzip.pcapng"))
    assert len([m for m, _ in want if m != "undecoded"]) == 31
    for extra in (OOO, []):
        got = tshark.payloads(REPRO / "gzip-out-of-order.pcapng.gz", extra=extra)
        assert sorted((m, p) for _, m, p in got) == want


@pytest.mark.parametrize("capture", ["eth2/eth2-yamux-gap.pcapng", "eth2/eth2-noise-yamux-gap.pcapng",
                                     "libp2p-compression/comp-gzip-gap.pcapng"])
def test_a_hole_the_capture_never_fills_is_counted_with_out_of_order_reassembly(tshark, capture):
    """TCP's out-of-order reassembly never hands over the segments after a hole the capture
    never fills (Wireshark keeps them queued for the missing bytes): p2pc takes them from the
    frames, so the records equal those without it, which the protocol suites check against the
    generators' truth (the stream resynchronised, the rest counted as undecoded), and
    `p2pc analyze`, which sets it, counts them all."""
    c = CAPTURES / capture
    plain = tshark.records(c)
    assert any(r["msg_type"] == "undecoded" for r in plain)
    assert tshark.records(c, extra=OOO) == plain
    assert tshark.records(c, two_pass=True, extra=OOO) == plain
    totals = json.loads(p2pc("analyze", "--format", "json", str(c)).stdout)["totals"]
    assert totals["messages"] == len(plain)
    assert totals["wire_bytes"] == sum(int(r["wire_len"]) for r in plain)


def test_a_retransmission_with_different_bytes_is_flagged(tshark):
    """The first copy is decoded (every record as in the original capture). TCP hands a
    retransmission's bytes to no subdissector while it analyses sequence numbers (it flags the
    frame itself): p2pc finds them in the frame; with that analysis off, p2pc sees the copy. Either
    way the bytes that differ are flagged."""
    cap = REPRO / "gzip-retransmit-different-bytes.pcapng.gz"
    want = tshark.records(CAPTURES / "libp2p-compression" / "comp-gzip.pcapng")
    key = lambda r: (r["msg_type"], r["raw_len"], r["src"])
    assert sorted(map(key, tshark.records(cap))) == sorted(map(key, want))
    no_seq = ["-o", "tcp.analyze_sequence_numbers:FALSE"]
    assert sorted(map(key, tshark.records(cap, extra=no_seq))) == sorted(map(key, want))
    flagged = tshark.fields(cap, ["frame.number"], dfilter="p2pc.retransmission_differs", extra=no_seq)
    retransmitted = tshark.fields(cap, ["frame.number"], dfilter="tcp.analysis.retransmission")
    assert flagged == retransmitted and len(flagged) == 1
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.retransmission_differs") == retransmitted


def with_duplicates(src, dst, dups: dict[int, bool]) -> None:
    """Write src with each frame of `dups` repeated right after itself (a retransmission), its
    TCP payload's middle byte flipped when dups[frame] is True.  Packets are pcapng Enhanced
    Packet Blocks (type 6): caplen at byte 20, the frame from byte 28."""
    raw = src.read_bytes()
    out, pos, frame = bytearray(), 0, 0
    while pos < len(raw):
        btype, blen = struct.unpack_from("<II", raw, pos)
        block = raw[pos:pos + blen]
        out += block
        if btype == 6:
            frame += 1
            if frame in dups:
                copy = bytearray(block)
                if dups[frame]:
                    caplen = struct.unpack_from("<I", copy, 20)[0]
                    copy[28 + caplen - tcp_payload_len(copy) // 2 - 1] ^= 0x01
                out += copy
        pos += blen
    dst.write_bytes(bytes(out))


def tcp_payload_len(block: bytes) -> int:
    """The TCP payload length of an Ethernet/IPv4 frame in an Enhanced Packet Block."""
    ip = 28 + 14
    ihl = (block[ip] & 0x0F) * 4
    total = struct.unpack_from(">H", block, ip + 2)[0]
    return total - ihl - (block[ip + ihl + 12] >> 4) * 4


def over_ipv6_in_a_vlan(src, dst) -> None:
    """Write src with its Ethernet/IPv4 frames made Ethernet/802.1Q/IPv6 (2001:db8::a.b.c.d for
    a.b.c.d), their TCP segments unchanged: the headers in front of each segment grow by 24
    bytes.  An Enhanced Packet Block (type 6): caplen and origlen at bytes 20 and 24, the frame
    from byte 28, padded to 4, then options and the block's length again."""
    raw = src.read_bytes()
    out, pos = bytearray(), 0
    while pos < len(raw):
        btype, blen = struct.unpack_from("<II", raw, pos)
        block = raw[pos:pos + blen]
        pos += blen
        if btype != 6 or block[40:42] != b"\x08\x00":
            out += block
            continue
        caplen, origlen = struct.unpack_from("<II", block, 20)
        frame = block[28:28 + caplen]
        ihl = (frame[14] & 0x0F) * 4
        total = struct.unpack_from(">H", frame, 16)[0]
        prefix = bytes.fromhex("20010db8") + bytes(8)
        ipv6 = struct.pack(">IHBB", 6 << 28, total - ihl, frame[23], frame[22]) + prefix + frame[26:30] + \
            prefix + frame[30:34]
        new = frame[:12] + bytes.fromhex("8100000786dd") + ipv6 + frame[14 + ihl:]
        options = block[28 + (caplen + 3) // 4 * 4:blen - 4]
        body = block[8:20] + struct.pack("<II", len(new), origlen + len(new) - caplen) + new + \
            bytes(-len(new) % 4) + options
        out += struct.pack("<II", 6, len(body) + 12) + body + struct.pack("<I", len(body) + 12)
    dst.write_bytes(bytes(out))


def assert_item_covers_the_flipped_byte(tshark, cap, frame: int, extra: list[str] | None = None) -> None:
    """p2pc.retransmission_differs in `frame` (a copy written by with_duplicates) covers the byte
    flipped in the middle of its TCP payload, and nothing outside the payload."""
    pdml = tshark.run(["-n", "-r", tshark.ws.readable(cap), "-Y", f"frame.number == {frame}", "-T", "pdml",
                       *(extra or [])]).stdout
    tcp_pos, tcp_size = (int(x) for x in re.search(r'<field name="tcp.payload"[^>]* size="(\d+)" pos="(\d+)"', pdml)
                         .groups()[::-1])
    pos, size = (int(x) for x in re.search(r'<proto name="p2pc"[^>]* size="(\d+)" pos="(\d+)"', pdml).groups()[::-1])
    flipped = tcp_pos + tcp_size - tcp_size // 2 - 1
    assert pos <= flipped < pos + size and tcp_pos <= pos and pos + size <= tcp_pos + tcp_size


@pytest.mark.parametrize("ipv6_in_a_vlan", [False, True], ids=["ethernet-ipv4", "vlan-ipv6"])
def test_a_retransmission_with_different_bytes_is_flagged_with_default_tcp_prefs(tshark, tmp_path, ipv6_in_a_vlan):
    """eth2-yamux with two of A's data segments retransmitted: one identical (ignored), one with
    a byte flipped.  TCP analyses sequence numbers (its default) and keeps both from p2pc; by
    default (p2pc.check_retransmissions) the changed one gets the expert item over the segment
    that holds the flipped byte, the identical one none, and every record is the original's.
    p2pc finds the copy's bytes behind whatever link and IP headers carry them: the same capture
    with every frame rewritten as IPv6 in an 802.1Q VLAN gets the item on the same bytes."""
    src = CAPTURES / "eth2" / "eth2-yamux.pcapng"
    a = json.loads((CAPTURES / "eth2" / "eth2-yamux.truth.json").read_text())["link"]["addr_a"]
    data = [int(r[0]) for r in tshark.fields(src, ["frame.number", "tcp.len"], dfilter=f"ip.src == {a} && tcp.len > 100")]
    same, changed = data[3], data[5]
    cap = tmp_path / "retrans.pcapng"
    with_duplicates(src, cap, {same: False, changed: True})
    if ipv6_in_a_vlan:
        over_ipv6_in_a_vlan(cap, tmp_path / "retrans6.pcapng")
        over_ipv6_in_a_vlan(src, tmp_path / "orig6.pcapng")
        cap, src = tmp_path / "retrans6.pcapng", tmp_path / "orig6.pcapng"
        assert {tuple(r) for r in tshark.fields(cap, ["vlan.id", "ipv6.nxt"], dfilter="tcp")} == {("7", "6")}
    # The copies are frames same + 1 and changed + 2 (the first insertion shifts the second).
    assert [r[0] for r in tshark.fields(cap, ["frame.number"], dfilter="tcp.analysis.retransmission")] == \
        [str(same + 1), str(changed + 2)]
    # TCP kept both copies from every subdissector: p2pc's TCP layer (which names the Protocol
    # column "libp2p") never ran on them.  It hands them over only with both of its preferences
    # that withhold them off (and desegmentation off breaks other dissectors).
    protocol = lambda extra: tshark.fields(cap, ["_ws.col.Protocol"], dfilter="tcp.analysis.retransmission",  # noqa: E731
                                           extra=extra)
    assert protocol([]) == [["TCP"]] * 2
    prefs = ["tcp.no_subdissector_on_error:FALSE", "tcp.desegment_tcp_streams:FALSE"]
    for pref in prefs:
        assert protocol(["-o", pref]) == [["TCP"]] * 2
    assert protocol(["-o", prefs[0], "-o", prefs[1]]) == [["libp2p"]] * 2
    for two_pass in (False, True):
        assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.retransmission_differs",
                             two_pass=two_pass) == [[str(changed + 2)]]
    assert_item_covers_the_flipped_byte(tshark, cap, changed + 2)
    off = ["-o", "p2pc.check_retransmissions:FALSE"]
    assert not tshark.fields(cap, ["frame.number"], dfilter="p2pc.retransmission_differs", extra=off)
    # The libp2p-only preference it replaced is obsolete: tshark's -o says so.
    old = tshark.run(["-n", "-q", "-r", tshark.ws.readable(src), "-o", "libp2p.check_retransmissions:FALSE"],
                     check=False)
    assert old.returncode != 0 and "obsolete" in old.stderr
    key = lambda r: (r["msg_type"], r["raw_len"], r["src"])  # noqa: E731
    assert sorted(map(key, tshark.records(cap))) == sorted(map(key, tshark.records(src)))


# Protocols that frame with tcp_dissect_pdus: (protocol, capture and truth file, preferences).
# fisco-tls is FISCO inside TLS on port 30300 (the FISCO dissector hands the connection to TLS),
# then the same through the TLS heuristic on a port FISCO does not know (it sees decrypted data
# only).
TCP_PDUS = {
    "bitcoin": ("bitcoin", "bitcoin/btc-compressed", []),
    "fisco": ("fisco", "fisco/fisco-serial-on", []),
    "fisco3": ("fisco3", "fisco/fisco3-on", []),
    "fisco-tls": ("fisco", "fisco/fisco-tls", []),
    "fisco-tls-heuristic": ("fisco", "fisco/fisco-tls", ["-o", "fisco.tcp.port:1", "-o", "fisco.tls.port:1",
                                                         "-d", "tcp.port==30300,tls"]),
}


def messages_sent(recs: list[dict], proto: str, truth: dict) -> int:
    """The records of the truth file's messages: FISCO's every one; Bitcoin's, what peer A sent
    after the handshake (tests/test_bitcoin.py's sent_records)."""
    if proto == "bitcoin":
        return sum(r["src"] == truth["link"]["addr_a"] and r["msg_type"] not in {"version", "verack", "inv"}
                   for r in recs)
    return sum(r["proto"] == proto for r in recs)


@pytest.mark.parametrize("case", TCP_PDUS)
def test_a_retransmission_with_different_bytes_is_flagged_in_tcp_dissect_pdus_protocols(tshark, tmp_path, case):
    """Bitcoin and FISCO 2.x and 3.x (tcp_dissect_pdus) with two of A's data segments retransmitted, both in
    the middle of a message (segments TCP hands to no subdissector even the first time): one
    identical, one with a byte flipped.  Only the changed copy gets p2pc.retransmission_differs,
    over the flipped byte, in one pass and two, and not with p2pc.check_retransmissions off; every
    record is the original capture's, one per message of the truth file."""
    proto, name, extra = TCP_PDUS[case]
    src = CAPTURES / f"{name}.pcapng"
    truth = json.loads((CAPTURES / f"{name}.truth.json").read_text())
    a = truth["link"]["addr_a"]
    data = [int(r[0]) for r in tshark.fields(src, ["frame.number"], extra=extra,
                                             dfilter=f"ip.src == {a} && tcp.len > 100 && !{proto}")]
    same, changed = data[len(data) // 3], data[len(data) // 3 + 2]
    cap = tmp_path / "retrans.pcapng"
    with_duplicates(src, cap, {same: False, changed: True})
    assert [r[0] for r in tshark.fields(cap, ["frame.number"], dfilter="tcp.analysis.retransmission")] == \
        [str(same + 1), str(changed + 2)]
    for two_pass in (False, True):
        assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.retransmission_differs",
                             two_pass=two_pass, extra=extra) == [[str(changed + 2)]]
    assert_item_covers_the_flipped_byte(tshark, cap, changed + 2, extra)
    off = ["-o", "p2pc.check_retransmissions:FALSE"]
    assert not tshark.fields(cap, ["frame.number"], dfilter="p2pc.retransmission_differs", extra=extra + off)
    key = lambda r: (r["proto"], r["msg_type"], r["raw_len"], r["src"])  # noqa: E731
    recs = tshark.records(cap, extra=extra)
    assert sorted(map(key, recs)) == sorted(map(key, tshark.records(src, extra=extra)))
    assert messages_sent(recs, proto, truth) == len(truth["messages"])


def test_a_yamux_length_past_the_window_is_caught_where_it_is_claimed(tshark):
    """Frame 36's yamux length set to 0x00FFFFFF: more than flow control lets the sender send.
    The frame's bytes are undecoded (expert item and a record of their own) at frame 36, and
    decoding resumes at the next frame: every other message of the intact capture decodes."""
    cap = REPRO / "yamux-len-00ffffff.pcapng.gz"
    undecoded = tshark.fields(cap, ["frame.number"], dfilter="multistream.undecoded")
    assert undecoded and undecoded[0] == ["36"]
    # The header breaks yamux's flow control there, and no other rule anywhere.
    assert spec_hits(tshark, cap) == [(36, "p2pc.spec.yamux.window")]
    recs = tshark.records(cap)
    lost = [r for r in recs if r["msg_type"] == "undecoded"]
    assert lost and all(int(r["wire_len"]) > 0 for r in lost)
    key = lambda r: (r["msg_type"], r["raw_len"], r["src"])
    intact = sorted(map(key, tshark.records(CAPTURES / "eth2" / "eth2-yamux.pcapng")))
    decoded = sorted(map(key, (r for r in recs if r["msg_type"] != "undecoded")))
    assert set(decoded) <= set(intact) and len(decoded) == len(intact) - 1


# A capture with one data segment dropped (editcap), the nth carrying over 1000 bytes: the
# records of every direction still add up to the TCP payload the capture holds.
HOLES = {
    "bitcoin": ("bitcoin/btc-compressed", 20),
    "fisco": ("fisco/fisco-sync-on", 5),
    "fisco3": ("fisco/fisco3-on", 5),
}


def tcp_payload_by_direction(tshark, cap) -> Counter:
    """Sum of tcp.len per (src, srcport), from TCP's own fields."""
    got: Counter = Counter()
    for src, port, n in tshark.fields(cap, ["ip.src", "tcp.srcport", "tcp.len"], dfilter="tcp.len > 0"):
        got[(src, port)] += int(n)
    return got


def wire_by_direction(recs: list[dict]) -> Counter:
    got: Counter = Counter()
    for r in recs:
        got[(r["src"], r["srcport"])] += int(r["wire_len"])
    return got


@pytest.mark.parametrize("case", HOLES)
def test_bytes_after_a_hole_are_counted_as_undecoded(tshark, tmp_path, case):
    """A segment the capture missed: TCP keeps the message it cut (and, with out-of-order
    reassembly, every later segment) waiting for it.  Those bytes are an undecoded record, so
    that per direction the records' wire bytes equal the TCP payload the capture holds, in one
    pass and two, with out-of-order reassembly and without; p2pc.hole marks the hole once, in
    the frame where the receiver acknowledges past the bytes never captured; the records
    before the hole are the whole capture's; `p2pc analyze` counts every byte."""
    name, nth = HOLES[case]
    src = CAPTURES / f"{name}.pcapng"
    big = tshark.fields(src, ["frame.number", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "tcp.seq"],
                        dfilter="tcp.len > 1000")
    drop, sender, receiver, sport, dport, seq = big[nth - 1]
    drop = int(drop)
    cap = tmp_path / "hole.pcapng"
    subprocess.run(["editcap", str(src), str(cap), str(drop)], check=True, capture_output=True)
    want = tcp_payload_by_direction(tshark, cap)
    # The first frame where the receiver acknowledges the missing bytes (frames after the
    # dropped one are numbered one less).
    acks = tshark.fields(cap, ["frame.number"], dfilter=f"ip.src == {receiver} && tcp.srcport == {dport} && "
                         f"ip.dst == {sender} && tcp.ack > {seq} && frame.number >= {drop}")
    whole = [r for r in tshark.records(src) if int(r["frame"]) < drop]
    p2p = {(r["src"], r["srcport"]) for r in tshark.records(src)}
    for extra in ([], OOO):
        one_pass = tshark.records(cap, extra=extra)
        for two_pass in (False, True):
            recs = tshark.records(cap, two_pass=two_pass, extra=extra)
            assert recs == one_pass
            got = wire_by_direction(recs)
            assert {k: got[k] for k in p2p} == {k: want[k] for k in p2p}, (extra, two_pass)
            assert any(r["msg_type"] == "undecoded" for r in recs)
            assert [r for r in recs if int(r["frame"]) < drop] == whole
            assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.hole", two_pass=two_pass,
                                 extra=extra) == [acks[0]], (extra, two_pass)
    totals = p2pc_report("analyze", str(cap))["totals"]
    assert totals["wire_bytes"] == sum(want[k] for k in p2p)


def test_a_hole_in_a_capture_of_one_direction_is_counted(tshark, tmp_path):
    """A capture of the Bitcoin sender's direction only (no acknowledgements to show a hole)
    and a segment dropped early: with out-of-order reassembly TCP keeps everything after the
    hole; once 1 MiB is captured past it, the hole counts as confirmed (p2pc.hole, once) and
    every byte is in a record, in one pass and two."""
    src = CAPTURES / "bitcoin" / "btc-compressed.pcapng"
    big = tshark.fields(src, ["frame.number", "ip.src"], dfilter="tcp.len > 1000")
    sender = big[19][1]
    one_way = tmp_path / "one-way.pcapng"
    subprocess.run(["tshark", "-r", str(src), "-Y", f"ip.src == {sender}", "-w", str(one_way)],
                   check=True, capture_output=True)
    kept = [n for n, in tshark.fields(one_way, ["frame.number"], dfilter="tcp.len > 1000")]
    cap = tmp_path / "hole.pcapng"
    subprocess.run(["editcap", str(one_way), str(cap), kept[19]], check=True, capture_output=True)
    want = tcp_payload_by_direction(tshark, cap)
    assert len(want) == 1 and sum(want.values()) > 1024 * 1024 + sum(
        int(n) for n, in tshark.fields(cap, ["tcp.len"], dfilter=f"tcp.len > 0 && frame.number < {kept[19]}"))
    for two_pass in (False, True):
        recs = tshark.records(cap, two_pass=two_pass, extra=OOO)
        got = wire_by_direction(recs)
        assert {k: got[k] for k in want} == dict(want), two_pass
        assert len(tshark.fields(cap, ["frame.number"], dfilter="p2pc.hole", two_pass=two_pass, extra=OOO)) == 1


def one_direction_with_a_late_hole(tshark, tmp_path):
    """The Bitcoin sender's direction of btc-compressed, its third-last full segment dropped:
    far less than 1 MiB is captured past the hole, and nothing acknowledges it."""
    src = CAPTURES / "bitcoin" / "btc-compressed.pcapng"
    sender = tshark.fields(src, ["ip.src"], dfilter="tcp.len > 1000")[0][0]
    one_way = tmp_path / "one-way.pcapng"
    subprocess.run(["tshark", "-r", str(src), "-Y", f"ip.src == {sender}", "-w", str(one_way)],
                   check=True, capture_output=True)
    full = [n for n, in tshark.fields(one_way, ["frame.number"], dfilter="tcp.len > 1000")]
    cap = tmp_path / "late-hole.pcapng"
    subprocess.run(["editcap", str(one_way), str(cap), full[-3]], check=True, capture_output=True)
    return cap


def cut_inside_a_message(name: str, proto: str):
    """The capture up to a segment in the middle of a message (one that ends none: the
    protocol's filter does not match it): it ends with the message cut short."""
    def make(tshark, tmp_path):
        src = CAPTURES / f"{name}.pcapng"
        inside = [n for n, in tshark.fields(src, ["frame.number"], dfilter=f"tcp.len > 1000 && !{proto}")]
        cap = tmp_path / "cut.pcapng"
        subprocess.run(["editcap", "-r", str(src), str(cap), f"1-{inside[len(inside) // 2]}"],
                       check=True, capture_output=True)
        return cap
    return make


ENDS = {
    "bitcoin-cut-inside-a-message": cut_inside_a_message("bitcoin/btc-compressed", "bitcoin"),
    "fisco-cut-inside-a-message": cut_inside_a_message("fisco/fisco-sync-on", "fisco"),
    "fisco3-cut-inside-a-message": cut_inside_a_message("fisco/fisco3-on", "fisco3"),
    "bitcoin-one-direction-late-hole": one_direction_with_a_late_hole,
}


@pytest.mark.parametrize("case", ENDS)
def test_records_add_up_to_the_tcp_payload_at_the_end(tshark, tmp_path, case):
    """What the capture holds at its end and TCP never hands over (a message cut short, the
    segments behind a hole nothing confirmed) is one undecoded record per direction, printed
    once the capture is read and named after the direction's last frame: per direction the
    records add up to the TCP payload, in one pass and two, with out-of-order reassembly and
    without, and `p2pc analyze` counts every byte.  A filter prints no tail."""
    cap = ENDS[case](tshark, tmp_path)
    want = tcp_payload_by_direction(tshark, cap)
    last = {(src, port): n for n, src, port in tshark.fields(cap, ["frame.number", "ip.src", "tcp.srcport"],
                                                             dfilter="tcp.len > 0")}
    for extra in ([], OOO):
        for two_pass in (False, True):
            recs = tshark.records(cap, two_pass=two_pass, extra=extra)
            got = wire_by_direction(recs)
            assert {k: got[k] for k in want} == dict(want), (extra, two_pass)
    recs = tshark.records(cap, extra=OOO)
    tails = [r for r in recs if r["msg_type"] == "undecoded" and r["frame"] == last[(r["src"], r["srcport"])]]
    assert tails and recs[-len(tails):] == tails
    # A filter matching every record's frame: all records but the tails.
    args = ["-n", "-q", "-r", tshark.ws.readable(cap), "-z", "p2pc,records,p2pc.proto", *OOO]
    filtered = [l for l in tshark.run(args).stdout.splitlines() if l.startswith("M\t")]
    assert len(filtered) == len(recs) - len(tails)
    assert p2pc_report("analyze", str(cap))["totals"]["wire_bytes"] == sum(want.values())


# ---- wave 3, finding 1: what p2pc writes stays private ----
def _readable_by(user: str, path: str, extra_group: str | None = None) -> bool:
    """Whether `user` (with `extra_group` as its only supplementary group) can open `path`."""
    groups = [f"--groups={extra_group}"] if extra_group else ["--clear-groups"]
    res = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={pwd.getpwnam(user).pw_gid}", *groups,
                          "head", "-c", "1", path], capture_output=True, text=True)
    assert "setpriv" not in res.stderr, res.stderr
    return res.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: runs as other users with setpriv")
def test_nothing_p2pc_writes_is_readable_by_another_user_and_a_killed_runs_files_go(tmp_path):
    """As root, a private capture (0600) and a key log with Noise private keys: while tshark runs
    (a stand-in that waits), no other user, nobody without p2pc's private group included, can
    read anything p2pc wrote; after a SIGKILL, the next run removes what was left."""
    # A temporary folder like /tmp: anyone may enter it (so modes alone must protect the files).
    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="hostile-tmp-"))
    tools = Path(tempfile.mkdtemp(dir="/tmp", prefix="hostile-bin-"))
    try:
        os.chmod(tmp, 0o1777)
        os.chmod(tools, 0o755)
        name = "eth2-noise-yamux"
        cap, keys = tmp_path / f"{name}.pcapng", tmp_path / "node.keys"
        shutil.copyfile(CAPTURES / "eth2" / f"{name}.pcapng", cap)
        shutil.copyfile(CAPTURES / "eth2" / f"{name}.keys", keys)
        os.chmod(cap, 0o600)
        os.chmod(keys, 0o600)
        real = shutil.which("tshark")
        stand_in = tools / "tshark"
        stand_in.write_text(f'#!/bin/sh\ncase " $* " in *" -r "*) exec sleep 600;; esac\nexec {real} "$@"\n')
        os.chmod(stand_in, 0o755)
        env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()),
                   TMPDIR=str(tmp), PATH=f"{tools}:{os.environ['PATH']}", XDG_CACHE_HOME=str(tmp_path))
        env.pop("P2PC_RUNNER_GID", None)
        run = subprocess.Popen([sys.executable, "-m", "p2pc", "analyze", "--keylog", str(keys), str(cap)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                written = [p for p in tmp.rglob("*") if p.is_file()]
                names = {p.name for p in written}
                if {"noise.keys", cap.name, "p2pc.so"} <= names:
                    break
                assert run.poll() is None, run.stderr.read()
                time.sleep(0.05)
            else:
                pytest.fail(f"p2pc never wrote its key parts and capture copy: {sorted(names)}")
            assert _readable_by("daemon", str(stand_in))      # the check itself works
            for p in written:
                assert p.stat().st_mode & 0o007 == 0, f"{p} is world-accessible"
                for user in ("daemon", "nobody"):
                    assert not _readable_by(user, str(p)), f"{user} can read {p}"
            # ...but the tshark p2pc runs (nobody in the run's private group) can.
            gid = (tmp / next(p for p in os.listdir(tmp) if p.startswith("p2pc-"))).stat().st_gid
            assert _readable_by("nobody", str(next(p for p in written if p.name == "noise.keys")), str(gid))
        finally:
            run.kill()
            run.wait()
            subprocess.run(["pkill", "-f", f"sleep 600"], check=False)
        left = [p for p in os.listdir(tmp) if p.startswith("p2pc-")]
        assert left, "a SIGKILLed run leaves its folders (the next run is what must remove them)"
        res = subprocess.run([sys.executable, "-m", "p2pc", "analyze", "--keylog", str(keys), str(cap)],
                             env=dict(env, PATH=os.environ["PATH"]), capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert [p for p in os.listdir(tmp) if p.startswith("p2pc-")] == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(tools, ignore_errors=True)


def test_libp2p_layers_nest_only_as_deep_as_p2pc_decodes(tshark):
    """yamux inside yamux, 2,000 deep: p2pc stops at its own bound (libp2p.depth), before
    Wireshark's depth check calls it a dissector bug, and counts the deeper bytes as undecoded."""
    cap = REPRO / "nest-yamux-2000.pcap.gz"
    res = subprocess.run(tshark.ws.command("tshark", ["-n", "-q", "-r", tshark.ws.readable(cap), "-z", "p2pc,records"]),
                         capture_output=True, text=True, env=dict(os.environ, WIRESHARK_ABORT_ON_DISSECTOR_BUG="1"))
    assert res.returncode == 0 and "Dissector bug" not in res.stderr, res.stderr
    rows = tshark.fields(cap, ["frame.number"], dfilter="libp2p.depth")
    assert len(rows) == 1
    undecoded = [l.split("\t") for l in res.stdout.splitlines() if l.startswith("M\t") and "\tundecoded\t" in l]
    payload = sum(int(n) for r in tshark.fields(cap, ["tcp.len"], dfilter="tcp.len > 0") for n in r[0].split("|"))
    assert len(undecoded) == 1 and 0.9 * payload < int(undecoded[0][11]) < payload


# ---- saved reports and captures the CLI is handed ----
@pytest.mark.parametrize("name, words", [
    ("merge-nofields.json", "the aggregate has no fields"),
    ("merge-extra-field.json", "the aggregate's by_dir: a Sums record has the unknown field bogus_field"),
    ("merge-sums-str.json", "the aggregate's by_dir: a Sums record lacks wire, header, payload, raw, "
                            "items, batched_headers, batched_items"),
    ("merge-neg.json", "the aggregate's by_dir: a Sums record's messages is "
                       "-1000000000000000000000000000000, not a non-negative int"),
])
def test_merge_refuses_an_aggregate_it_did_not_write_in_one_line(name, words):
    """A report whose sums are missing, unknown, not numbers or negative is refused (exit 5,
    as any report merge cannot read), never summed."""
    res = p2pc("merge", str(REPRO / name))
    assert res.returncode == 5, res.stderr
    assert res.stderr.splitlines() == [f"p2pc: {REPRO / name}: {words}"]
    assert not res.stdout


def test_merge_refuses_a_string_among_all_of_a_records_sums(tmp_path):
    """Every field present, one a string: refused as not a number (merge-sums-str.json lacks the
    other fields, so it is refused for that first)."""
    rep = json.loads((REPRO / "merge-neg.json").read_text())
    sums = rep["aggregate"]["fields"]["by_dir"]["map"][0][1]["map"][0][1]["fields"]
    sums["messages"] = "7"
    bad = tmp_path / "str.json"
    bad.write_text(json.dumps(rep))
    res = p2pc("merge", str(bad))
    assert res.returncode == 5 and res.stderr.splitlines() == [
        f'p2pc: {bad}: the aggregate\'s by_dir: a Sums record\'s messages is "7", not a non-negative int'], res.stderr


def _set(path: list, value):
    """An edit of a saved report: the aggregate field at `path` (map entries by index) set."""
    def edit(fields: dict) -> None:
        *where, last = path
        node = fields
        for p in where:
            node = node[p]
        node[last] = value
    return edit


# Each edit of a good report, and the field merge names: every one ended in a traceback, or
# (warnings, the 1e300 second) was merged as if p2pc had written it.
MERGE_EDITS = {
    "a count of 10^400": (_set(["sizes", "map", 0, 1, 0], 10**400), "sizes"),
    "bandwidth_bin a string": (_set(["bandwidth_bin"], "1"), "bandwidth_bin"),
    "a bandwidth key not a second": (_set(["bandwidth", "map", 0, 0, 0], "noon"), "bandwidth"),
    "a bandwidth second of 1e300": (_set(["bandwidth", "map", 0, 0, 0], 1e300), "bandwidth"),
    "a conformance value not [failures, frame]": (_set(["conformance"], {"map": [[["f", "p2pc.spec.x"], "7"]]}),
                                                  "conformance"),
    "a gossip value not [count, message IDs, bytes]": (_set(["gossip"], {"map": [[["192.0.2.1", "ihave", "t"], [1, 2]]]}),
                                                       "gossip"),
    "files a number": (_set(["files"], 3), "files"),
    "a size key past the ranges": (_set(["sizes", "map", 0, 0, 2], 99), "sizes"),
    "a short size list": (_set(["sizes", "map", 0, 1], [1, 2]), "sizes"),
    "a count where a record belongs": (_set(["by_dir", "map", 0, 1, "map", 0, 1], 5), "by_dir"),
    "warnings a string": (_set(["warnings"], "abc"), "warnings"),
}


@pytest.mark.once
@pytest.mark.parametrize("edit", list(MERGE_EDITS))
def test_merge_validates_every_field_of_a_report(tmp_path, edit):
    """A report p2pc did not write, in any field, is one line and exit 5: huge numbers, wrong
    types, malformed keys, short lists, a count for a record, text for a list of texts."""
    rep = json.loads((REPRO / "merge-neg.json").read_text())
    fields = rep["aggregate"]["fields"]
    fields["by_dir"]["map"][0][1]["map"][0][1]["fields"]["messages"] = 2
    good = tmp_path / "good.json"
    good.write_text(json.dumps(rep))
    assert p2pc("merge", str(good)).returncode == 0
    change, field = MERGE_EDITS[edit]
    change(fields)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rep))
    res = p2pc("merge", str(good), str(bad))
    assert res.returncode == 5 and not res.stdout, res.stderr
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith(f"p2pc: {bad}: the aggregate's {field}: ")


def test_whatif_of_a_missing_capture_is_one_line():
    res = p2pc("whatif", "/nonexistent")
    assert res.returncode == 5 and res.stderr.splitlines() == ["p2pc: /nonexistent: no such file"], res.stderr


def test_whatif_of_a_truncated_capture_warns_and_exits_as_analyze_does(tmp_path):
    """A capture cut short: whatif recompresses what could be read, warns on stderr and in the
    report, and exits 8 as analyze does on the same file."""
    src = (CAPTURES / "bitcoin/btc-baseline.pcapng").read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(src[: len(src) // 2])
    res = p2pc("whatif", "--format", "json", "--codecs", "zlib-1", str(cut))
    warning = f"{cut}: the capture is cut short; the report covers what could be read"
    assert res.returncode == 8 == p2pc("analyze", "--format", "json", str(cut)).returncode, res.stderr
    assert res.stderr.splitlines() == [f"p2pc: warning: {warning}"]
    rep = json.loads(res.stdout)
    assert rep["warnings"] == [warning] and rep["sections"][0]["rows"]


# ---- wave 3: the Noise key log and the libp2p TLS certificate extension ----
def test_bad_key_log_lines_are_skipped_and_counted_not_the_end_of_the_file(tshark, tmp_path):
    """A key log with a NUL byte in one line and a Noise key that is not 32 bytes in another,
    before the connection's keys: those still decrypt it (every frame the clean key log
    decrypts), and the handshake messages that looked the keys up say that 2 bad lines were
    skipped, the first on line 4.  A comment and an NSS TLS line are no bad lines."""
    eth = CAPTURES / "eth2"
    cap = eth / "eth2-noise-yamux.pcapng"
    keys = tmp_path / "node.keys"
    keys.write_bytes(b"# a node's keys\n" + (eth / "eth2-noise-mplex.keys").read_bytes()
                     + b"LOCAL_EPHEMERAL_PRIVATE_KEY = \x00" + b"A" * 43 + b"=\n"
                     + b"CLIENT_RANDOM " + b"ab" * 32 + b" " + b"cd" * 48 + b"\n"
                     + b"LOCAL_STATIC_PRIVATE_KEY = AAAA\n" + (eth / "eth2-noise-yamux.keys").read_bytes())
    fields = ["frame.number", "libp2p_noise.decrypted"]
    clean = tshark.fields(cap, fields, dfilter="libp2p_noise.decrypted",
                          extra=["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(eth / 'eth2-noise-yamux.keys')}"])
    extra = ["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(keys)}"]
    assert clean and tshark.fields(cap, fields, dfilter="libp2p_noise.decrypted", extra=extra) == clean
    notes = tshark.fields(cap, ["libp2p_noise.handshake", "_ws.expert.message"],
                          dfilter="libp2p_noise.keylog_skipped", extra=extra)
    assert [r[0] for r in notes] == ["2", "3"]
    assert all("libp2p_noise.keylog_file: 2 bad lines skipped (the first: line 4)" in r[1] for r in notes)


@pytest.fixture
def special_files():
    """/dev/zero (a device without end) and a FIFO no one writes to, in a folder tshark's user
    (nobody, as root) can reach: the two key logs that must not be read."""
    folder = Path(tempfile.mkdtemp(prefix="p2pc-fifo-"))
    try:
        folder.chmod(0o755)
        fifo = folder / "keys.fifo"
        os.mkfifo(fifo, 0o666)
        fifo.chmod(0o666)
        yield {"/dev/zero": Path("/dev/zero"), "FIFO": fifo}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("kind", ["/dev/zero", "FIFO"])
def test_a_noise_key_log_that_is_no_regular_file_is_not_read(tshark, special_files, kind):
    """A Noise key log that is a device or a FIFO is refused before it is opened: the handshake
    messages that look keys up say it was not read, and the rest decodes as without a key log
    (the timeout only guards against a hang)."""
    cap = CAPTURES / "eth2" / "eth2-noise-yamux.pcapng"
    args = ["-n", "-r", tshark.ws.readable(cap), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
            "-e", "frame.number", "-e", "libp2p_noise.handshake", "-e", "_ws.expert.message", "-e", "_ws.col.Info"]
    plain = tshark.ws.run("tshark", args, timeout=120)
    res = tshark.ws.run("tshark", args + ["-o", f"libp2p_noise.keylog_file:{special_files[kind]}"], timeout=120)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    unread = "libp2p_noise.keylog_file is not a regular file (a FIFO, a device or a folder): not read"
    said = [r.split("\t") for r in res.stdout.splitlines() if unread in r]
    assert [r[1] for r in said] == ["2", "3"], said
    assert res.stdout.replace(unread + "|", "") == plain.stdout


@pytest.mark.parametrize("kind", ["/dev/zero", "FIFO"])
def test_analyze_refuses_a_key_log_that_is_no_regular_file_in_one_line(special_files, kind):
    path = special_files[kind]
    res = p2pc("analyze", "--keylog", str(path), str(CAPTURES / "eth2" / "eth2-noise-yamux.pcapng"), timeout=120)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"p2pc: error: --keylog: {path} is not a regular file "
                                       "(a FIFO, a device or a folder): not read (see p2pc --help)"]


def test_a_signed_key_whose_lengths_overrun_is_malformed_without_undefined_behaviour(tmp_path, monkeypatch):
    """tls-signedkey-neg34: a certificate's libp2p extension whose SignedKey lengths run past its
    end.  The ASan/UBSan build of the fuzz gate (tools/fuzz.py, build-asan/) reads it with no
    sanitizer report, the extension marked libp2p_tls.signed_key_malformed."""
    sys.path.insert(0, str(REPO / "tools"))
    import fuzz     # noqa: E402  (tools/fuzz.py: its sanitizer build and tshark wrapper)
    monkeypatch.setenv("PATH", os.environ["PATH"])      # fuzz.Env puts its wrapper first on PATH
    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="signedkey-"))
    try:
        env = fuzz.Env(tmp, build=True)
        logs = tmp / "logs"
        logs.mkdir(mode=0o777)
        os.chmod(logs, 0o777)
        cap = tmp / "tls-signedkey-neg34.pcap.gz"
        shutil.copyfile(REPRO / cap.name, cap)
        os.chmod(cap, 0o644)
        res = subprocess.run(env.tshark(["-n", "-r", str(cap), "-T", "fields", "-e", "frame.number", "-Y",
                                         "libp2p_tls.signed_key_malformed"]),
                             env=env.env(logs), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and "runtime error" not in res.stderr, res.stderr[:2000]
        assert list(logs.iterdir()) == []
        assert res.stdout.split() == ["6"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# A one-pass run as the analyzer makes it: p2pc.keep_replay off keeps nothing for re-dissection
# from the first frame on (tshark's one pass finds that itself by the fourth frame).
ONE_PASS = ["-o", "p2pc.keep_replay:FALSE", "-z", "p2pc,records"]


def peak(ws_, args: list[str]) -> tuple[float, float]:
    """Peak RSS (MiB) and CPU seconds (user + system) of one tshark run, by /usr/bin/time -v."""
    res = subprocess.run(["/usr/bin/time", "-v", *unremembered(ws_.command("tshark", args))],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    num = lambda label: float(re.search(label + r": ([\d.]+)", res.stderr).group(1))  # noqa: E731
    return (num(r"Maximum resident set size \(kbytes\)") / 1024,
            num(r"User time \(seconds\)") + num(r"System time \(seconds\)"))


def test_a_brotli_bomb_stops_at_the_ratio_bound(tshark):
    """bomb-comp-brotli: 5.2 KB of /compression/cbrotli whose 1 GiB of output is empty yamux
    frames.  The direction stops once its output passes 256x its input (past the first MiB):
    p2pc.bound.ratio says so, tshark stays near stock (before: +989 MiB and 17 s of CPU against
    stock's 0.13 s), and the analyzer counts the bytes as undecoded, nothing saved."""
    cap = REPRO / "bomb-comp-brotli.pcap"
    args = ["-n", "-q", "-r", tshark.ws.readable(cap)]
    with Wireshark() as stock_ws:
        stock = peak(stock_ws, args)
    ours = peak(tshark.ws, args + ONE_PASS)   # what the analyzer runs
    assert ours[0] < stock[0] + 64 and ours[1] < stock[1] + 2, (stock, ours)
    rows = tshark.fields(cap, ["libp2p_compression.out_total", "libp2p_compression.in_total"],
                         dfilter="libp2p_compression.out_total")
    assert max(int(o) for o, _ in rows) <= 2**20 + 256 * max(int(i) for _, i in rows)
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.bound.ratio")
    totals = p2pc_report("analyze", str(cap))["totals"]
    assert totals["payload_saved"] <= 0, totals


def test_a_gzip_stream_of_zeros_stops_at_the_ratio_bound(tshark):
    """bomb-comp-gzip-zeros: 256 MiB of zero bytes in a 275 KB gzip transport stream (976x,
    near deflate's ceiling): the direction stops past 256x its input, with p2pc.bound.ratio;
    the later frames' bytes are undecoded, reason bound."""
    cap = REPRO / "bomb-comp-gzip-zeros.pcap.gz"
    rows = tshark.fields(cap, ["libp2p_compression.out_total", "libp2p_compression.in_total"],
                         dfilter="libp2p_compression.out_total")
    assert max(int(o) for o, _ in rows) <= 2**20 + 256 * max(int(i) for _, i in rows)
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.bound.ratio")
    assert tshark.fields(cap, ["p2pc.undecoded_reason"], dfilter='p2pc.undecoded_reason == "bound"')
    # A budget of 1 MiB for the whole capture stops it there instead.
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.bound.capture",
                         extra=["-o", "p2pc.max_capture_decompressed_mib:1"])


def test_a_million_muxer_frames_in_one_segment_keep_nothing_each(tshark, tmp_path):
    """bomb-comp-frames (tools/craft.py): gzip segments of ~60 KB that each inflate to 1,000,000
    yamux frames (12 MB, under the ratio bound), the first with 250,000 one-byte data frames on
    a ping stream.  The PDUs past the frame's drawing bound keep no tvb and no list entry each
    until the frame ends (before: +228 MiB over stock tshark), and all 7,812 pings of that one
    frame are counted (before: Wireshark's tap queue, 5,000 items a frame, dropped the rest).
    Keeping replay state (tshark's default) costs no more than a few seconds of CPU: each call's
    slot is looked up where it was made (before: a scan of the frame's slots per call, 7 min 54 s
    of CPU for this 112 KB capture)."""
    import craft
    case = next(c for c in craft.cases() if c.name == "bomb-comp-frames")
    cap = tmp_path / "bomb-comp-frames.pcap"
    craft.tcp_pcap(cap, case.build(), case.ports, syn="a", mss=case.mss)
    args = ["-n", "-q", "-r", tshark.ws.readable(cap)]
    with Wireshark() as stock_ws:
        stock = peak(stock_ws, args)
    ours = peak(tshark.ws, args + ONE_PASS)
    assert ours[0] < stock[0] + 64, (stock, ours)
    kept = peak(tshark.ws, args + ["-z", "p2pc,records"])
    assert kept[1] < stock[1] + 5, (stock, kept)
    recs = tshark.records(cap)
    pings = [r for r in recs if r["msg_type"] == "/ipfs/ping/1.0.0"]
    assert len(pings) == 250_000 // 32 and len({r["frame"] for r in pings}) == 1
    # Each ping's own bytes (raw_len is its share of the stream's output): the payloads tap
    # copies them out of tvbs freed since.
    assert [p for _, m, p in tshark.payloads(cap) if m == "/ipfs/ping/1.0.0"] == [b"\0" * 32] * (250_000 // 32)
    # Every compressed byte is in a record: after the outer negotiation (the first segment),
    # the pings', and the second segment's empty frames, which no message follows, as the tail.
    sent = [data for side, data in case.build() if side == "a"]
    assert sum(int(r["wire_len"]) for r in recs) == sum(map(len, sent[1:]))
    assert [r["frame"] for r in recs if r["msg_type"] == "undecoded"] == [str(max(int(r["frame"]) for r in recs))]


@pytest.mark.parametrize("command", [["shard", "--out", "OUT"], ["analyze"], ["whatif"]])
def test_a_folder_given_as_the_capture_is_one_line_exit_5(tmp_path, command):
    """`p2pc shard DIR` ended in a traceback: a folder is no capture, for every command."""
    args = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    res = p2pc(*args, str(CAPTURES))
    assert res.returncode == 5 and "Traceback" not in res.stderr
    assert res.stderr.strip() == f"p2pc: {CAPTURES}: a folder, not a capture file"


# ---- muxed streams: freed when they end, at most L2P_MAX_STREAMS open per connection ----
from craft import ms, yamux  # noqa: E402

L2P_MAX_STREAMS = int(re.search(r"#define L2P_MAX_STREAMS (\d+)",
                                (REPO / "plugin" / "libp2p" / "engine.h").read_text()).group(1))


def test_a_flood_of_streams_never_closed_stops_at_the_bound(tshark):
    """flood-yamux: 200,000 yamux streams opened (a SYN window update each) and never used nor
    closed.  The connection keeps L2P_MAX_STREAMS of them; every later opening is counted as
    undecoded (its 12 bytes, a record each) with libp2p.streams, and tshark stays near stock
    (before: +98 MiB, the ~500 bytes of every stream kept to the end)."""
    cap = REPRO / "flood-yamux.pcap.gz"
    args = ["-n", "-q", "-r", tshark.ws.readable(cap)]
    with Wireshark() as stock_ws:
        stock = peak(stock_ws, args)
    ours = peak(tshark.ws, args + ONE_PASS)
    assert ours[0] < stock[0] + 32, (stock, ours)
    recs = tshark.records(cap)
    assert {(r["msg_type"], r["wire_len"]) for r in recs} == {("undecoded", "12")}
    assert len(recs) == 200000 - L2P_MAX_STREAMS
    assert tshark.fields(cap, ["frame.number"], dfilter="libp2p.streams")


def mplex_frame(stream: int, flag: int, data: bytes = b"") -> bytes:
    """uvarint(stream << 3 | flag), uvarint(length), data (stream ids here stay below 2^18)."""
    def uvarint(n: int) -> bytes:
        out = b""
        while n >= 0x80:
            out += bytes([n & 0x7F | 0x80])
            n >>= 7
        return out + bytes([n])
    return uvarint(stream << 3 | flag) + uvarint(len(data)) + data


# How each muxer opens a stream (A) and ends it: (A's frames, B's frames), per stream id; the
# yamux frames are window updates (type 1), flags SYN 1, ACK 2, FIN 4, RST 8.
ENDINGS = {
    "yamux FIN both ways": ("/yamux/1.0.0", lambda i: (yamux(1, i, type_=1) + yamux(4, i, type_=1),
                                                       yamux(2 | 4, i, type_=1))),
    "yamux RST": ("/yamux/1.0.0", lambda i: (yamux(1, i, type_=1), yamux(2 | 8, i, type_=1))),
    "mplex Close both ways": ("/mplex/6.7.0", lambda i: (mplex_frame(i, 0, b"s") + mplex_frame(i, 4),
                                                         mplex_frame(i, 3))),
    "mplex Reset": ("/mplex/6.7.0", lambda i: (mplex_frame(i, 0, b"s"), mplex_frame(i, 5))),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_streams_that_end_are_freed(tshark, tmp_path, ending):
    """200,000 streams on one connection, each opened by A and ended (both directions closed,
    or reset) at once: an ended stream leaves its connection's table, so the bound is never
    reached, and its state is freed (before: ~500 bytes kept per stream, +98 MiB).  One pass
    and two give the same records."""
    muxer, frames = ENDINGS[ending]
    segs = [("a", ms("/multistream/1.0.0") + ms(muxer)), ("b", ms("/multistream/1.0.0") + ms(muxer))]
    for first in range(1, 400001, 200):     # odd ids: the dialer's (yamux)
        batch = [frames(i) for i in range(first, first + 200, 2)]
        segs += [("a", b"".join(a for a, _ in batch)), ("b", b"".join(b for _, b in batch))]
    cap = tmp_path / "streams.pcap"
    tcp_pcap(cap, segs, syn="a")
    args = ["-n", "-q", "-r", tshark.ws.readable(cap)]
    with Wireshark() as stock_ws:
        stock = peak(stock_ws, args)
    ours = peak(tshark.ws, args + ONE_PASS)
    assert ours[0] < stock[0] + 32, (stock, ours)
    assert tshark.fields(cap, ["frame.number"], dfilter="libp2p.streams || multistream.undecoded") == []
    assert tshark.records(cap) == tshark.records(cap, two_pass=True)


def test_a_frame_of_a_million_muxer_frames_is_drawn_in_part_and_counted_whole(tshark, tmp_path):
    """The hostile generator's gzip bomb: one segment decompresses to ~100,000 yamux frames.
    Wireshark calls more than 1,000,000 tree items a dissector bug; p2pc draws the first
    10,000 PDUs (libp2p.not_drawn says so) and decodes and counts every one: the records are the
    same with a tree (-V) as without."""
    import craft
    case = next(c for c in craft.cases() if c.name == "bomb-comp-gzip")
    path = tmp_path / "bomb-comp-gzip.pcap"
    craft.tcp_pcap(path, case.build(), case.ports, syn="a", mss=case.mss)
    res = tshark.run(["-n", "-2", "-V", "-r", tshark.ws.readable(path)])
    assert "Dissector bug" not in res.stdout + res.stderr
    assert tshark.fields(path, ["frame.number"], dfilter="libp2p.not_drawn")
    tree = tshark.records(path, extra=["-V"])
    assert tree == tshark.records(path) and len(tree) > 0


def test_a_peer_id_longer_than_any_is_flagged_not_encoded(tshark, tmp_path):
    """A /plaintext/2.0.0 Exchange whose peer ID is 65,000 bytes: base58 is quadratic, so it is never
    fed a length no peer ID has (44 bytes at most): the field is flagged and the stream goes on
    (the next connection's 38-byte Ed25519 peer ID is encoded, to the base58 of its bytes)."""
    from craft import MS, ms, pb_field, uvarint
    from test_reports import b58decode

    def exchange(peer_id: bytes) -> bytes:
        pb = pb_field(1, 2, peer_id) + pb_field(2, 2, pb_field(1, 0, 1) + pb_field(2, 2, bytes(32)))
        return uvarint(len(pb)) + pb

    good = bytes([0x00, 0x24, 0x08, 0x01, 0x12, 0x20]) + bytes(range(32))
    hello = [("a", MS + ms("/plaintext/2.0.0")), ("b", MS + ms("/plaintext/2.0.0"))]
    long_cap, good_cap = tmp_path / "long.pcap", tmp_path / "good.pcap"
    tcp_pcap(long_cap, [*hello, ("a", exchange(b"\x00\x80" + bytes(65000)))], syn="a", mss=1448)
    tcp_pcap(good_cap, [*hello, ("a", exchange(good))], syn="a")
    assert "a libp2p peer ID has at most 44" in "\n".join(tshark.expert(long_cap))
    assert tshark.fields(long_cap, ["frame.number"], dfilter="libp2p_plaintext.peer_id_b58") == []
    shown = tshark.fields(good_cap, ["libp2p_plaintext.peer_id_b58"], dfilter="libp2p_plaintext.peer_id_b58")
    assert len(shown) == 1 and b58decode(shown[0][0]) == good


# ---- one message with more tree items than gui.max_tree_items keeps its record ----
# Wireshark throws past gui.max_tree_items (1,000,000) items in a frame's tree, which the records
# tap always builds; the messages below draw a few times ITEMS items, so a small ITEMS takes the
# same path as the million-entry messages in a capture a test can make.
ITEMS = ["-o", "gui.max_tree_items:10000"]


def cut_and_counted(tshark, cap) -> list[dict]:
    """The frame's tree is cut with p2pc.tree_cut, no "Dissector bug" anywhere, and the records
    are those of the same capture dissected with Wireshark's default limit.  The records."""
    res = tshark.run(["-n", "-V", "-r", tshark.ws.readable(cap), *ITEMS])
    assert "Dissector bug" not in res.stdout + res.stderr
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.tree_cut", extra=ITEMS)
    recs = tshark.records(cap, extra=ITEMS)
    assert recs == tshark.records(cap)
    return recs


def test_a_wantlist_too_big_to_draw_is_counted_and_the_stream_goes_on(tshark, tmp_path):
    """A Bitswap message of 5,000 wantlist entries (15,000 items), then 200 of one entry, on an
    mplex stream: the big one is one record of 5,000 items with its bytes, and every later
    message is decoded and counted (before: no record at all, the pipe kept the message and
    threw again in every later frame)."""
    from craft import MS, ms, mplex, pb_field, uvarint
    cid = b"\x12\x20" + bytes(32)
    entry = pb_field(1, 2, pb_field(1, 2, cid) + pb_field(2, 0, 1))
    msgs = [pb_field(1, 2, entry * n) for n in [5000] + [1] * 200]
    data = MS + ms("/ipfs/bitswap/1.2.0") + b"".join(uvarint(len(m)) + m for m in msgs)
    a = mplex(1, 0, b"s") + b"".join(mplex(1, 2, data[i:i + 60000]) for i in range(0, len(data), 60000))
    cap = tmp_path / "bitswap-wantlist.pcap"
    tcp_pcap(cap, [("a", MS + ms("/mplex/6.7.0")), ("b", MS + ms("/mplex/6.7.0")), ("a", a)], syn="a", mss=16000)
    recs = [r for r in cut_and_counted(tshark, cap) if r["proto"] == "bitswap"]
    assert [(r["msg_type"], int(r["batch_count"]), int(r["payload_len"])) for r in recs] == \
        [("wantlist", 5000, len(msgs[0]))] + [("wantlist", 1, len(msgs[1]))] * 200


def test_an_rpc_of_subscriptions_too_many_to_draw_lets_the_attestations_after_it_count(tshark, tmp_path):
    """A gossipsub RPC of 10,000 subscriptions (20,000 items), then 50 RPCs of one attestation
    each: all 50 are counted with their bytes (before: none; `p2pc analyze` counted the one of
    a later frame at most, with no warning)."""
    from craft import MESHSUB, MS, TOPIC, gossip_rpc, mplex, ms, pb_field, snappy_block, uvarint
    subs = pb_field(1, 2, pb_field(1, 0, 1) + pb_field(2, 2, TOPIC.encode())) * 10000
    blocks = [snappy_block(bytes([i]) * 200) for i in range(50)]
    att = "/eth2/6a95a1a9/beacon_attestation_1/ssz_snappy"
    data = MS + ms(MESHSUB) + uvarint(len(subs)) + subs + b"".join(gossip_rpc(att, b) for b in blocks)
    a = mplex(1, 0, b"s") + b"".join(mplex(1, 2, data[i:i + 60000]) for i in range(0, len(data), 60000))
    cap = tmp_path / "gossip-subscriptions.pcap"
    tcp_pcap(cap, [("a", MS + ms("/mplex/6.7.0")), ("b", MS + ms("/mplex/6.7.0")), ("a", a)], syn="a", mss=16000)
    recs = cut_and_counted(tshark, cap)
    assert [(r["msg_type"], int(r["payload_len"]), int(r["raw_len"])) for r in recs if r["proto"] == "eth2"] == \
        [("gossip beacon_attestation", len(b), 200) for b in blocks]


def test_a_cblock_of_transactions_too_many_to_draw_is_one_whole_record(tshark, tmp_path):
    """A BUIP017 cblock of 2,000 minimal transactions (the stock block parser draws some 30,000
    items), then 100 pings: the cblock is one record with its compressed and decompressed sizes,
    and every ping counts (before: the block was one `undecoded` record, the pings lost)."""
    import craft
    btc = craft._btc()
    tx = (struct.pack("<I", 1) + b"\x01" + bytes(36) + b"\x00" + b"\xff" * 4 +
          b"\x01" + struct.pack("<Q", 0) + b"\x00" + bytes(4))
    block = bytes(80) + btc.varint(2000) + tx * 2000
    packed = btc.lzo1x_999(block)
    pings = [btc.message("ping", struct.pack("<Q", i)) for i in range(100)]
    cap = tmp_path / "cblock.pcap"
    tcp_pcap(cap, craft.btc_session(btc.NODE_COMPRESS, [btc.message("cblock", packed)] + pings),
             (40001, 8333), syn="a", mss=16000)
    recs = cut_and_counted(tshark, cap)
    assert [(r["msg_type"], r["codec"], int(r["payload_len"]), int(r["raw_len"])) for r in recs
            if r["msg_type"] == "cblock"] == [("cblock", "lzo1x", len(packed), len(block))]
    assert sum(r["msg_type"] == "ping" for r in recs) == 100


@pytest.mark.parametrize("family", ["fisco", "fisco3"])
def test_a_frame_of_thousands_of_fisco_messages_draws_what_fits_and_counts_them_all(tshark, tmp_path, family):
    """2,000 small FISCO messages (2.x PBFT of one byte, 3.x heartbeats) written at once, in
    16,000-byte segments: each frame hands TCP's reassembly some 900 messages of 20-odd items
    each.  The tree is cut and every message is a record (before: the item past the limit threw
    inside the frame's messages, and the rest of them were lost; libFuzzer's dissect_items found
    it at 400)."""
    import craft
    if family == "fisco":
        segments = [("a", b"".join(craft.fisco2(craft.PBFT2, b"x", i + 2) for i in range(2000)))]
    else:
        segments = craft.f3_session([craft.f3(craft.F3_HEARTBEAT, b"", i + 2, version=0) for i in range(2000)])
    cap = tmp_path / f"{family}-many.pcap"
    tcp_pcap(cap, segments, craft.FISCO_PORTS, syn="a", mss=16000)
    sent = [r for r in cut_and_counted(tshark, cap) if r["srcport"] == str(craft.FISCO_PORTS[0])]
    # FISCO 3.x's side a also sent its handshake first.
    assert len(sent) == 2000 + (family == "fisco3")
    assert {r["proto"] for r in sent} == {family} and "undecoded" not in {r["msg_type"] for r in sent}


def test_the_short_fuzz_profile_leaves_out_only_listed_captures_and_each_folder_keeps_one():
    """The fuzz gate's short profile (CI) mutates every capture fuzz/short-skip.txt does not list
    (tools/fuzz-cover.py: those left reach no plugin line the kept ones do not reach twice): a
    listed path that is no capture would be a stale list, a folder left with none a family CI
    no longer fuzzes.  The long profile mutates them all."""
    sys.path.insert(0, str(REPO / "tools"))
    import fuzz     # noqa: E402  (tools/fuzz.py)
    every = fuzz.gate_captures()
    short = fuzz.gate_captures(fuzz.PROFILES["short"]["skip"])
    listed = {REPO / l for l in fuzz.PROFILES["short"]["skip"].read_text().splitlines() if l and l[0] != "#"}
    assert listed <= set(every)
    assert set(short) == set(every) - listed
    assert {c.parent for c in short} == {c.parent for c in every}
    assert fuzz.PROFILES["long"]["skip"] is None
