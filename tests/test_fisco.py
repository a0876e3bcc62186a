"""FISCO BCOS 2.x P2P with Snappy compression, decoded by the real tshark with the built plugin.
Expected values come from the generator's truth files (written from its own inputs)."""
from __future__ import annotations

import hashlib
import json

import pytest

from conftest import CAPTURES

FISCO = CAPTURES / "fisco"
GOOD = ["fisco-compressed", "fisco-plain", "fisco-tls", "fisco-rc1"]


def truth(name: str) -> dict:
    return json.loads((FISCO / f"{name}.truth.json").read_text())


def prefs(name: str) -> list[str]:
    return ["-o", "fisco.rc1:TRUE"] if name.endswith("rc1") else []


def fisco_records(tshark, name: str, two_pass: bool = False) -> list[dict]:
    return [r for r in tshark.records(FISCO / f"{name}.pcapng", two_pass=two_pass, extra=prefs(name))
            if r["proto"] == "fisco"]


@pytest.mark.parametrize("name", GOOD)
def test_every_message_decodes_as_sent(tshark, name):
    t = truth(name)
    recs = fisco_records(tshark, name)
    msgs = t["messages"]
    assert len(recs) == len(msgs)
    for r, m in zip(recs, msgs):
        sender = t["link"]["addr_a"] if m["side"] == "a" else t["link"]["addr_b"]
        assert r["src"] == sender
        assert r["msg_type"] == m["msg_type"]
        assert int(r["wire_len"]) == m["length"]
        assert int(r["header_len"]) == (12 if t["rc1"] else 16)
        assert int(r["payload_len"]) == m["payload_len"]
        assert int(r["raw_len"]) == m["raw_len"]
        assert r["codec"] == ("snappy" if m["compressed"] else "none")
        assert int(r["batch_count"]) == m["batch_count"]


@pytest.mark.parametrize("name", GOOD)
def test_decompressed_bytes_equal_what_was_sent(tshark, name):
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in
           tshark.payloads(FISCO / f"{name}.pcapng", extra=prefs(name)) if "." in mtype]
    assert got == [m["raw_sha256"] for m in truth(name)["messages"]]


def test_compression_follows_the_1024_byte_rule():
    for m in truth("fisco-compressed")["messages"]:
        assert m["compressed"] == (m["raw_len"] > 1024)
    assert not any(m["compressed"] for m in truth("fisco-plain")["messages"])


def test_header_fields(tshark):
    name = "fisco-compressed"
    msgs = truth(name)["messages"]
    rows = tshark.fields(FISCO / f"{name}.pcapng",
                         ["fisco.module", "fisco.packet_type", "fisco.seq", "fisco.protocol_id",
                          "fisco.response", "fisco.compressed", "fisco.length"], dfilter="fisco")
    flat = []
    for row in rows:
        cols = [c.split("|") for c in row]
        flat += list(zip(*cols))
    assert len(flat) == len(msgs)
    for (module, ptype, seq, pid, resp, comp, length), m in zip(flat, msgs):
        assert int(ptype) == m["packet_type"] and int(seq) == m["seq"] and int(length) == m["length"]
        if m["response"]:
            assert int(pid) == -m["module"] and resp == "1"
        else:
            assert int(module) == m["module"] and int(pid) == (m["group"] << 16 | m["module"]) and resp == "0"
        assert comp == ("1" if m["compressed"] else "0")


def test_tls_capture_decodes_like_its_plaintext_twin(tshark):
    tls = [(r["msg_type"], r["payload_len"], r["raw_len"]) for r in fisco_records(tshark, "fisco-tls")]
    plain = [(r["msg_type"], r["payload_len"], r["raw_len"]) for r in fisco_records(tshark, "fisco-compressed")]
    assert tls == plain and len(tls) == len(truth("fisco-tls")["messages"])


def test_request_response_links(tshark):
    name = "fisco-compressed"
    rows = tshark.fields(FISCO / f"{name}.pcapng", ["frame.number", "fisco.msg_type", "fisco.response_in",
                                                     "fisco.response_to"],
                         dfilter='fisco.msg_type contains "Topics"', two_pass=True)
    req = next(r for r in rows if r[1] == "Topic.RequestTopics")
    resp = next(r for r in rows if r[1] == "Topic.SendTopics.Response")
    assert req[2] == resp[0] and resp[3] == req[0]


@pytest.mark.parametrize("name", GOOD + ["fisco-malformed"])
def test_one_pass_equals_two_pass(tshark, name):
    # fisco.response_in points forward, so only a second pass can fill it in: left out here.
    fields = ["frame.number", "fisco.msg_type", "fisco.seq", "fisco.uncompressed_len", "fisco.sync.items",
              "fisco.pbft.packet_id", "p2pc.raw_len", "p2pc.batch_count", "fisco.response_to",
              "_ws.expert.message"]
    one = tshark.fields(FISCO / f"{name}.pcapng", fields, dfilter="fisco", extra=prefs(name))
    two = tshark.fields(FISCO / f"{name}.pcapng", fields, dfilter="fisco", two_pass=True, extra=prefs(name))
    assert one and one == two


def test_malformed_capture_yields_its_expert_items(tshark):
    name = "fisco-malformed"
    res = tshark.run(["-n", "-r", tshark.ws.readable(FISCO / f"{name}.pcapng")])
    assert res.returncode == 0
    for m in truth(name)["messages"]:
        if "expert" in m:
            assert tshark.fields(FISCO / f"{name}.pcapng", ["frame.number"], dfilter=m["expert"]), m


def test_truncated_capture_decodes_what_is_there(tshark):
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(FISCO / "fisco-truncated.pcapng"),
                      "-z", "p2pc,records"], check=False)
    assert "cut short" in res.stderr
    got = [l.split("\t")[9] for l in res.stdout.splitlines() if l.startswith("M\t")]
    want = [m["msg_type"] for m in truth("fisco-compressed")["messages"]]
    assert got and got == want[:len(got)]
