"""The interop matrix (captures/interop/, issue #25): two different real libp2p implementations
talking, each peer writing down what it sent and received.  Every message p2pc decodes must be
one a peer says it sent, from that peer, in its order, with its lengths and the sha256 of its SSZ;
requests are the dialer's whoever speaks first; nothing is left undecoded or without a role."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import CAPTURES, dialer_listener

INTEROP = CAPTURES / "interop"
NAMES = sorted(p.name.removesuffix(".truth.json") for p in INTEROP.glob("*.truth.json"))


def truth(name: str) -> dict:
    return json.loads((INTEROP / f"{name}.truth.json").read_text())


def keys(tshark, name: str) -> list[str]:
    """The key log option for a Noise cell (the go peer's keys) or a QUIC cell (the rust peer's
    TLS secrets, written by rust-libp2p itself), else nothing."""
    t = truth(name)
    if "keys" not in t:
        return []
    if t["security"] == "/quic-v1":
        return ["-o", f"tls.keylog_file:{tshark.ws.readable(INTEROP / t['keys']['rust'])}"]
    return ["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(INTEROP / t['keys']['go'])}"]


def sent(peer: dict) -> list[tuple]:
    """(msg_type, raw_len, payload_len, sha256 of the SSZ) of what a peer says it sent, in order."""
    out = []
    for m in peer["messages"]:
        if m["dir"] != "sent":
            continue
        mtype = m["protocol"] if m["kind"] == "gossip" else f"{m['protocol']} {m['kind']}"
        out.append((mtype, m["ssz_len"], m["framed_len"] if m["kind"] != "gossip" else m["data_len"], m["ssz_sha256"]))
    return out


def received(peer: dict) -> list[tuple]:
    return [(m["protocol"], m["kind"], m["ssz_sha256"]) for m in peer["messages"] if m["dir"] == "received"]


@pytest.mark.parametrize("name", NAMES)
def test_the_peers_agree(name):
    """What one peer says it sent, the other says it received (the truth is the stacks' own)."""
    t = truth(name)
    for a, b in (("dialer", "listener"), ("listener", "dialer")):
        got = received(t["peers"][b])
        assert [(m["protocol"], m["kind"], m["ssz_sha256"]) for m in t["peers"][a]["messages"]
                if m["dir"] == "sent"] == got
    assert t["dialer"]["stack"] != t["listener"]["stack"]
    block = hashlib.sha256((CAPTURES / "data" / "ethereum" / t["block"]["file"]).read_bytes()).hexdigest()
    shas = [m["ssz_sha256"] for m in t["peers"]["listener"]["messages"]
            if m["protocol"] == "beacon_blocks_by_range/2" and m["kind"] == "response" and m["result"] == 0]
    assert shas == [block]


@pytest.mark.parametrize("name", NAMES)
def test_every_message_decodes_to_its_truth(tshark, name):
    """Each eth2 message p2pc reports is one its sender says it sent, in the sender's order, with
    its SSZ length, its Snappy bytes and the sha256 of its SSZ: requests from the dialer,
    responses from the listener."""
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
    assert all(m.endswith(" response") for m, *_ in got[listener])


@pytest.mark.parametrize("name", NAMES)
def test_one_pass_equals_two(tshark, name):
    extra = keys(tshark, name)
    cap = INTEROP / f"{name}.pcapng"
    assert tshark.records(cap, extra=extra) == tshark.records(cap, two_pass=True, extra=extra)


@pytest.mark.parametrize("name", NAMES)
def test_no_role_unknown_nor_undecoded(tshark, name):
    rows = tshark.fields(INTEROP / f"{name}.pcapng", ["frame.number"],
                         dfilter="libp2p.role.unknown || libp2p.role.conflict || multistream.undecoded",
                         extra=keys(tshark, name))
    assert rows == []


@pytest.mark.parametrize("name", NAMES)
def test_the_first_payload_is_the_captured_sides(tshark, name):
    """Captured at the listener, the listener's bytes may come first; at the dialer, the dialer's:
    the matrix has both (the roles above come from facts, not from this)."""
    t = truth(name)
    dialer, listener = dialer_listener(t)
    first = tshark.fields(INTEROP / f"{name}.pcapng", ["ip.src"], dfilter="tcp.len > 0 || quic")[0][0]
    assert first in (dialer, listener)
