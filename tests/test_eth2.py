"""libp2p (multistream, plaintext, yamux, mplex) and Ethereum ssz_snappy req/resp and gossip,
decoded by the real tshark from captures of real go-libp2p hosts.  Expected values come from
the source block files and the generator's truth files."""
from __future__ import annotations

import hashlib
import json
import struct

import pytest

from conftest import CAPTURES, DATA

ETH = CAPTURES / "eth2"
MUXED = ["eth2-yamux", "eth2-mplex"]


def truth(name: str) -> dict:
    return json.loads((ETH / f"{name}.truth.json").read_text())


def source(name: str) -> bytes:
    return (DATA / "ethereum" / name).read_bytes()


@pytest.mark.parametrize("name", MUXED)
def test_layers_negotiate_as_sent(tshark, name):
    t = truth(name)
    rows = tshark.fields(ETH / f"{name}.pcapng", ["multistream.message"], dfilter="multistream")
    msgs = [m for r in rows for m in r[0].split("|")]
    assert "/plaintext/2.0.0" in msgs
    assert f"/{t['muxer']}/{'1.0.0' if t['muxer'] == 'yamux' else '6.7.0'}" in msgs
    for req in t["requests"]:
        assert f"/eth2/beacon_chain/req/{req}/ssz_snappy" in msgs
    assert tshark.fields(ETH / f"{name}.pcapng", ["frame.number"], dfilter=t["muxer"])


@pytest.mark.parametrize("name", MUXED)
def test_blocks_by_range_decompress_to_the_source_blocks(tshark, name):
    t = truth(name)
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in tshark.payloads(ETH / f"{name}.pcapng")
           if mtype == "beacon_blocks_by_range/2 response" and len(raw) > 1000]
    want = [hashlib.sha256(source(b["file"])).hexdigest() for b in t["blocks_by_range"]]
    assert want == [b["sha256"] for b in t["blocks_by_range"]]
    assert got == want


@pytest.mark.parametrize("name", MUXED)
def test_gossip_decompresses_to_the_source_blocks(tshark, name):
    t = truth(name)
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in tshark.payloads(ETH / f"{name}.pcapng")
           if mtype == "gossip beacon_block"]
    assert got == [hashlib.sha256(source(f)).hexdigest() for f in t["gossip"]["blocks"]]


@pytest.mark.parametrize("name", MUXED)
def test_gossip_message_id_matches_the_spec(tshark, name):
    """message-id = SHA256(0x01000000 || uint64_le(len(topic)) || topic || ssz)[:20], computed
    here with hashlib from the source block and the topic."""
    t = truth(name)
    topic = t["gossip"]["topic"].encode()
    want = [hashlib.sha256(b"\x01\x00\x00\x00" + struct.pack("<Q", len(topic)) + topic + source(f)).hexdigest()[:40]
            for f in t["gossip"]["blocks"]]
    rows = tshark.fields(ETH / f"{name}.pcapng", ["eth2.gossip.message_id"], dfilter="eth2.gossip.message_id")
    assert [m for r in rows for m in r[0].split("|")] == want


def test_block_fields_and_forks(tshark):
    t = truth("eth2-yamux")
    rows = tshark.fields(ETH / "eth2-yamux.pcapng", ["eth2.block.slot", "eth2.fork"],
                         dfilter='eth2.method == "beacon_blocks_by_range/2" && eth2.block.slot')
    slots = [int(r[0]) for r in rows]
    assert slots == [int(b["file"].rsplit("slot", 1)[1].split(".")[0]) for b in t["blocks_by_range"]]
    assert [r[1] for r in rows] == [b["fork"] for b in t["blocks_by_range"]]


def test_error_chunk(tshark):
    rows = tshark.fields(ETH / "eth2-yamux.pcapng", ["eth2.result", "eth2.error_message"], dfilter="eth2.result_error")
    assert rows
    assert rows[0][1].split("|")[-1] == truth("eth2-yamux")["error_chunk"]["message"]


def test_status_and_ping_ssz(tshark):
    rows = tshark.fields(ETH / "eth2-yamux.pcapng", ["eth2.status.head_slot", "eth2.status.fork_digest"],
                         dfilter="eth2.status.head_slot")
    assert rows and rows[0][0] == "6507058" and rows[0][1] == "bba4da96"


def test_records_account_for_the_snappy_framing(tshark):
    recs = [r for r in tshark.records(ETH / "eth2-yamux.pcapng") if r["proto"] == "eth2"]
    blocks = [r for r in recs if r["msg_type"] == "beacon_blocks_by_range/2 response" and int(r["raw_len"]) > 1000]
    for r in blocks:
        assert r["codec"] == "snappy-framed"
        assert int(r["wire_len"]) == int(r["header_len"]) + int(r["payload_len"])
        assert int(r["payload_len"]) < int(r["raw_len"])
    assert {r["msg_type"] for r in recs} >= {"status/1 request", "status/1 response", "ping/1 request",
                                              "metadata/2 response", "goodbye/1 request", "gossip beacon_block"}


@pytest.mark.parametrize("name", MUXED + ["eth2-badcrc", "eth2-truncated"])
def test_one_pass_equals_two_pass(tshark, name):
    fields = ["frame.number", "multistream.message", "yamux.stream", "mplex.stream", "eth2.method",
              "eth2.ssz_length", "eth2.block.slot", "eth2.gossip.message_id", "p2pc.raw_len", "_ws.expert.message"]
    one = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter="libp2p")
    two = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter="libp2p", two_pass=True)
    assert one and one == two


def test_corrupted_crc_is_flagged(tshark):
    res = tshark.run(["-n", "-r", tshark.ws.readable(ETH / "eth2-badcrc.pcapng")])
    assert res.returncode == 0
    rows = tshark.fields(ETH / "eth2-badcrc.pcapng", ["eth2.method", "eth2.direction"], dfilter="eth2.snappy.crc_bad")
    assert rows == [["ping/1", "response"]]


def test_truncated_capture_keeps_what_completed(tshark):
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(ETH / "eth2-truncated.pcapng"), "-z", "p2pc,records"])
    types = [l.split("\t")[9] for l in res.stdout.splitlines() if l.startswith("M\t") and l.split("\t")[8] == "eth2"]
    assert types[:2] == ["status/1 request", "status/1 response"]
    assert "gossip beacon_block" not in types
