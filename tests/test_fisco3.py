"""FISCO BCOS 3.x (plugin/fisco/packet-fisco3.c) against the generator's truth
(captures/gen/make_fisco3.py): real TCP, payloads encoded as v3.16.4 encodes them, zstd on/off."""
from __future__ import annotations

import hashlib
import json

import struct

import pytest

from conftest import CAPTURES, p2pc_report, tcp_pcap

CAPS = ["fisco3-on", "fisco3-off"]
RECORD_FIELDS = ("msg_type", "codec", "wire_len", "header_len", "payload_len", "raw_len", "batch_count")


def truth(name: str) -> dict:
    return json.loads((CAPTURES / "fisco" / f"{name}.truth.json").read_text())


def cap(name: str):
    return CAPTURES / "fisco" / f"{name}.pcapng"


@pytest.mark.parametrize("name", CAPS)
def test_records_are_the_generator_s_messages(tshark, name):
    t = truth(name)
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    recs = tshark.records(cap(name))
    assert len(recs) == len(t["messages"])
    for rec, m in zip(recs, t["messages"]):
        assert rec["proto"] == "fisco3" and side[rec["src"]] == m["side"]
        assert {k: rec[k] for k in RECORD_FIELDS} == {k: str(m[k]) for k in RECORD_FIELDS}, m["index"]


@pytest.mark.parametrize("name", CAPS)
def test_decompressed_payloads_are_the_generator_s(tshark, name):
    got = tshark.payloads(cap(name))
    msgs = truth(name)["messages"]
    assert [(mt, hashlib.sha256(raw).hexdigest()) for _, mt, raw in got] == \
        [(m["msg_type"], m["raw_sha256"]) for m in msgs]


def test_compression_follows_fisco_s_rule():
    """On: exactly the payloads over 1024 bytes of V2 messages are zstd; off: none."""
    on = truth("fisco3-on")["messages"]
    assert [m["compressed"] for m in on] == [m["raw_len"] > 1024 and m["version"] >= 2 for m in on]
    assert any(m["compressed"] for m in on)
    assert not any(m["compressed"] for m in truth("fisco3-off")["messages"])


@pytest.mark.parametrize("name", CAPS)
def test_header_fields(tshark, name):
    """Packet type, Ext flags, module IDs and the front message's response flag, per message."""
    rows = tshark.fields(cap(name), ["fisco3.version", "fisco3.packet_type", "fisco3.seq", "fisco3.ext.compress",
                                     "fisco3.ext.response", "fisco3.module", "fisco3.front.response"],
                         dfilter="fisco3")
    got = [tuple(zip(*(c.split("|") for c in r))) for r in rows]
    flat = [g for frame in got for g in frame]
    want = [(str(m["version"]), "0x%04x" % m["packet_type"], str(m["seq"]), str(int(m["compressed"])),
             str(int(m["response"])), *((str(m["module"]), str(int(m["response"]))) if m["module"] else ()))
            for m in truth(name)["messages"]]
    assert [tuple(x for x in g if x != "") for g in flat] == want


@pytest.mark.parametrize("name", CAPS)
def test_module_payloads(tshark, name):
    """TxsSync: the transactions in txsData's tars Block, the hashes of a status packet;
    BlockSync: the blocks of a response."""
    rows = tshark.fields(cap(name), ["fisco3.txs.count", "fisco3.txs.hashes", "fisco3.blocksync.blocks"],
                         dfilter="fisco3.module")
    got = [g for r in rows for g in zip(*(c.split("|") for c in r))]
    want = [(str(m["batch_count"]) if m["msg_type"] == "TxsSync.TxsPacket" else "",
             "60" if m["msg_type"] == "TxsSync.TxsStatusPacket" else "",
             "1" if m["msg_type"] == "BlockSync.BlockResponsePacket" else
             "0" if m["msg_type"] == "BlockSync.BlockStatusPacket" else "")
            for m in truth(name)["messages"] if m["module"]]
    assert got == want


def test_zstd_larger_than_input_is_a_note(tshark):
    """FISCO sends zstd output even when it grew (random hashes): each such message says so."""
    larger = [m for m in truth("fisco3-on")["messages"] if m["compressed"] and m["payload_len"] > m["raw_len"]]
    assert larger
    notes = [x for x in tshark.expert(cap("fisco3-on")) if "is larger than the payload" in x]
    assert notes == [f"zstd output ({m['payload_len']} bytes) is larger than the payload ({m['raw_len']} bytes); "
                     "FISCO sends it anyway" for m in larger]


def test_analyze_savings_match_truth():
    rows = {r["msg_type"]: r for r in p2pc_report("analyze", str(cap("fisco3-on")))["rows"]}
    for mt in {m["msg_type"] for m in truth("fisco3-on")["messages"]}:
        ms = [m for m in truth("fisco3-on")["messages"] if m["msg_type"] == mt]
        assert rows[mt]["payload_saved"] == sum(m["raw_len"] - m["payload_len"] for m in ms), mt
        assert rows[mt]["wire_bytes"] == sum(m["wire_len"] for m in ms), mt


def test_corrupted_bytes_never_break_tshark(tshark, tmp_path):
    """editcap -E flips random bytes in every frame: headers, options, zstd frames, protobuf
    and tars all go through the dissector's bounds checks without an error."""
    import subprocess
    for seed in (1, 2, 3):
        out = tmp_path / f"fisco3-{seed}.pcapng"
        subprocess.run(["editcap", "-E", "0.02", "--seed", str(seed), str(cap("fisco3-on")), str(out)],
                       check=True, capture_output=True)
        res = tshark.run(["-n", "-r", tshark.ws.readable(out), "-V", "-o", "tcp.check_checksum:FALSE"], check=False)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Dissector bug" not in res.stdout + res.stderr


def test_a_packet_type_fisco_does_not_define_is_counted_as_unknown(tshark, tmp_path):
    """Heartbeat is its own msg_type; packet type 0x77 is `unknown` (it was Type119, one label
    per number a peer sends), with the note, its number in fisco3.packet_type."""
    cap = tmp_path / "fisco3-types.pcap"
    msg = lambda ptype: struct.pack(">IHHIH", 14, 0, ptype, 2, 0)  # noqa: E731
    tcp_pcap(cap, [msg(1), msg(0x77)], 30300)
    assert [r["msg_type"] for r in tshark.records(cap)] == ["Heartbeat", "unknown"]
    assert "Packet type 119 is not a message type of the protocol: counted as unknown" in tshark.expert(cap)
