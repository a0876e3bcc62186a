"""FISCO BCOS 3.x (plugin/fisco/packet-fisco3.c) against the generator's truth
(captures/gen/make_fisco3.py): real TCP, payloads encoded as v3.16.4 encodes them, zstd on/off,
a session negotiated at each protocol version (V0, V1, V2, V3); a four-node layout on 30300-30303
decoded by the port range, the heuristic and Decode As (issue #39)."""
from __future__ import annotations

import hashlib
import json
import random
import subprocess

import struct

import pytest

from conftest import CAPTURES, Tshark, configured_tshark, p2pc_report, per_capture_kind, ports_rewritten, tcp_pcap
from p2pc.wsenv import Wireshark

CAPS = ["fisco3-on", "fisco3-off", "fisco3-v0", "fisco3-v1", "fisco3-v3"]
# The capture of each negotiated version (fisco3-on is V2).
BY_VERSION = {0: "fisco3-v0", 1: "fisco3-v1", 2: "fisco3-on", 3: "fisco3-v3"}
RECORD_FIELDS = ("msg_type", "codec", "wire_len", "header_len", "payload_len", "raw_len", "batch_count")


def truth(name: str) -> dict:
    return json.loads((CAPTURES / "fisco" / f"{name}.truth.json").read_text())


def cap(name: str):
    return CAPTURES / "fisco" / f"{name}.pcapng"


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_records_are_the_generator_s_messages(tshark, name):
    t = truth(name)
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    recs = tshark.records(cap(name))
    assert len(recs) == len(t["messages"])
    for rec, m in zip(recs, t["messages"]):
        assert rec["proto"] == "fisco3" and side[rec["src"]] == m["side"]
        assert {k: rec[k] for k in RECORD_FIELDS} == {k: str(m[k]) for k in RECORD_FIELDS}, m["index"]


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_decompressed_payloads_are_the_generator_s(tshark, name):
    got = tshark.payloads(cap(name))
    msgs = truth(name)["messages"]
    assert [(mt, hashlib.sha256(raw).hexdigest()) for _, mt, raw in got] == \
        [(m["msg_type"], m["raw_sha256"]) for m in msgs]


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_compression_follows_fisco_s_rule(name):
    """With compression on, exactly the payloads over 1024 bytes of messages at V2 or later are
    zstd (so none on a V0 or V1 session, nor in the V0 PBFT broadcasts); off: none."""
    t = truth(name)
    msgs = t["messages"]
    assert [m["compressed"] for m in msgs] == [t["compress"] and m["raw_len"] > 1024 and m["version"] >= 2
                                               for m in msgs]
    assert any(m["compressed"] for m in msgs) == (t["compress"] and t["negotiated_version"] >= 2)


def test_every_version_has_its_capture():
    """Each capture is negotiated at the version it stands for, and carries every message kind:
    options with and without destination node IDs, V0 messages (handshakes, heartbeats, and on
    the V0/V1/V3 captures PBFT broadcasts) next to the negotiated version's."""
    for v, name in BY_VERSION.items():
        t = truth(name)
        assert t["negotiated_version"] == v == min(t["max_version"].values())
        msgs = t["messages"]
        assert {m["version"] for m in msgs} == {0, v}
        assert {m["dst_count"] for m in msgs if m["module"]} == {0, 1}
    assert {m["msg_type"] for m in truth("fisco3-v1")["messages"] if m["version"] == 0} == \
        {"Handshake", "Heartbeat", "PBFT"}


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_one_pass_equals_two(tshark, name):
    """The negotiation is per connection state: tshark's one pass and -2's second agree."""
    fields = ["fisco3.version", "fisco3.negotiated_version", "fisco3.src_p2p_id", "fisco3.src_p2p_id_short",
              "fisco3.dst_p2p_id", "fisco3.dst_p2p_id_short", "_ws.expert.message"]
    assert tshark.records(cap(name)) == tshark.records(cap(name), two_pass=True)
    assert tshark.fields(cap(name), fields, dfilter="fisco3") == \
        tshark.fields(cap(name), fields, dfilter="fisco3", two_pass=True)


def _occurrences(rows, i):
    return [v for r in rows for v in r[i].split("|") if v]


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_negotiated_version(tshark, name):
    """Both handshakes' ProtocolInfo, and every message after them knows the session's version
    (the lower maxVersion); no message is flagged."""
    t = truth(name)
    rows = tshark.fields(cap(name), ["fisco3.handshake.module", "fisco3.handshake.min_version",
                                     "fisco3.handshake.max_version", "fisco3.negotiated_version"], dfilter="fisco3")
    hs = [m for m in t["messages"] if m["msg_type"] == "Handshake"]
    assert _occurrences(rows, 0) == ["1"] * len(hs) and _occurrences(rows, 1) == ["0"] * len(hs)
    assert _occurrences(rows, 2) == [str(m["max_version"]) for m in hs] == \
        [str(t["max_version"][m["side"]]) for m in hs]
    # Every message after the two handshakes, and none before.
    assert _occurrences(rows, 3) == [str(t["negotiated_version"])] * (len(t["messages"]) - len(hs))
    bad = [x for x in tshark.expert(cap(name)) if "negotiated" in x or "handshake" in x.lower()]
    assert bad == []


def _p2p_ids(tshark, capture):
    """Per message at V1 or later: (source, destination) as (form, hex of the bytes)."""
    rows = tshark.fields(capture, ["fisco3.src_p2p_id", "fisco3.dst_p2p_id", "fisco3.src_p2p_id_short",
                                   "fisco3.dst_p2p_id_short", "fisco3.version"], dfilter="fisco3.ttl")
    out = {"raw": [], "short": []}
    for r in rows:
        raw = list(zip(*(c.split("|") for c in r[0:2]))) if r[0] else []
        short = list(zip(*(c.split("|") for c in r[2:4]))) if r[2] else []
        out["raw"] += [(s.encode().hex(), d.encode().hex()) for s, d in raw]
        out["short"] += [(s.replace(":", ""), d.replace(":", "")) for s, d in short]
    return out


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_p2p_ids(tshark, name):
    """Below V3 the V1 fields carry raw P2P IDs (128 hex characters of the public key), from V3
    the 32-byte short ones: each message's, as the generator wrote them."""
    t = truth(name)
    want = [(m["src_p2p_id"], m["dst_p2p_id"]) for m in t["messages"] if m["version"] >= 1]
    got = _p2p_ids(tshark, cap(name))
    form = "short" if t["negotiated_version"] >= 3 else "raw"
    assert got[form] == want and not got["raw" if form == "short" else "short"]
    assert all(len(bytes.fromhex(s)) == (32 if form == "short" else 128) for s, _ in want)
    assert len(want) == (0 if t["negotiated_version"] == 0 else
                         sum(1 for m in t["messages"] if m["version"] >= 1))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_without_the_handshakes(tshark, tmp_path, version):
    """A capture that starts after the handshakes: every later message still decodes to its
    truth, the ID forms read from their lengths, and each V1+ message says the negotiation is
    not in the capture."""
    name = BY_VERSION[version]
    frames = [int(r[0]) for r in tshark.fields(cap(name), ["frame.number"], dfilter="fisco3.packet_type == 2")]
    assert len(frames) == 2
    last = len(tshark.fields(cap(name), ["frame.number"]))
    cut = tmp_path / f"{name}-cut.pcapng"
    subprocess.run(["editcap", "-r", str(cap(name)), str(cut), f"{max(frames) + 1}-{last}"], check=True,
                   capture_output=True)
    t = truth(name)
    later = t["messages"][2:]
    recs = tshark.records(cut)
    assert [{k: rec[k] for k in RECORD_FIELDS} for rec in recs] == \
        [{k: str(m[k]) for k in RECORD_FIELDS} for m in later]
    got = _p2p_ids(tshark, cut)
    assert got["short" if version >= 3 else "raw"] == [(m["src_p2p_id"], m["dst_p2p_id"]) for m in later
                                                      if m["version"] >= 1]
    notes = [x for x in tshark.expert(cut) if x.startswith("No negotiation seen")]
    assert len(notes) == sum(1 for m in later if m["version"] >= 1)
    assert tshark.records(cut) == tshark.records(cut, two_pass=True)


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
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


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
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
    notes = [x for x in tshark.expert(cap("fisco3-on")) if "made the payload larger" in x]
    assert notes == [f"zstd made the payload larger: {m['payload_len']} bytes sent for {m['raw_len']} "
                     "uncompressed" for m in larger]


def test_analyze_savings_match_truth():
    rows = {r["msg_type"]: r for r in p2pc_report("analyze", str(cap("fisco3-on")))["rows"]}
    for mt in {m["msg_type"] for m in truth("fisco3-on")["messages"]}:
        ms = [m for m in truth("fisco3-on")["messages"] if m["msg_type"] == mt]
        assert rows[mt]["payload_saved"] == sum(m["raw_len"] - m["payload_len"] for m in ms), mt
        assert rows[mt]["wire_bytes"] == sum(m["wire_len"] for m in ms), mt


def test_corrupted_bytes_never_break_tshark(tshark, tmp_path):
    """editcap -E flips random bytes in every frame: headers, options, zstd frames, protobuf
    and tars all go through the dissector's bounds checks without an error."""
    for seed in (1, 2, 3):
        out = tmp_path / f"fisco3-{seed}.pcapng"
        subprocess.run(["editcap", "-E", "0.02", "--seed", str(seed), str(cap("fisco3-on")), str(out)],
                       check=True, capture_output=True)
        res = tshark.run(["-n", "-r", tshark.ws.readable(out), "-V", "-o", "tcp.check_checksum:FALSE"], check=False)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Dissector bug" not in res.stdout + res.stderr


def _patched(tmp_path, name: str, index: int, at: int, new: bytes):
    """The capture with bytes `at` bytes into message `index` (found by its 14-byte header, the
    messages in capture order) replaced: what a broken peer could have sent, TCP left as it was."""
    def header(m):
        return struct.pack(">IHHIH", m["wire_len"], m["version"], m["packet_type"], m["seq"],
                           (0x10 if m["compressed"] else 0) | (1 if m["response"] else 0))
    msgs = truth(name)["messages"]
    data = bytearray(cap(name).read_bytes())
    pos = -1
    for m in msgs[:index + 1]:
        if header(m) == header(msgs[index]):
            pos = data.find(header(m), pos + 1)
    assert pos >= 0 and data.count(header(msgs[index])) == sum(header(m) == header(msgs[index]) for m in msgs)
    data[pos + at:pos + at + len(new)] = new
    out = tmp_path / f"{name}-{index}-{at}.pcapng"
    out.write_bytes(bytes(data))
    return out


def test_unexpected_version_is_flagged(tshark, tmp_path):
    """A message at neither V0 nor the negotiated version still decodes by its own Version (as
    P2PMessageV2::decodeHeader does) and says so."""
    msgs = truth("fisco3-v1")["messages"]
    assert msgs[3]["version"] == 1 and msgs[3]["msg_type"] == "RouterTableSyncSeq"
    bad = _patched(tmp_path, "fisco3-v1", 3, 4, b"\x00\x02")
    assert [x for x in tshark.expert(bad) if "negotiated at" in x] == \
        ["Version V2 on a session negotiated at V1: FISCO sends only V0 and the negotiated version"]
    assert [{k: r[k] for k in RECORD_FIELDS} for r in tshark.records(bad)] == \
        [{k: str(m[k]) for k in RECORD_FIELDS} for m in msgs]


def test_bad_handshake_is_flagged(tshark, tmp_path):
    """A handshake payload that is no tars ProtocolInfo (a head of type 14) is malformed, and
    with it the connection has no negotiation: each V1+ message notes it."""
    msgs = truth("fisco3-v1")["messages"]
    bad = _patched(tmp_path, "fisco3-v1", 0, 14, b"\x1e")
    expert = tshark.expert(bad)
    assert expert.count("Handshake payload is no tars ProtocolInfo") == 1
    assert sum(x.startswith("No negotiation seen") for x in expert) == sum(m["version"] >= 1 for m in msgs)


def test_fields_past_length_are_counted(tshark, tmp_path):
    """A source P2P ID claiming more bytes than its message holds: that message is one undecoded
    record of its Length (never dropped), and every other message decodes as before."""
    msgs = truth("fisco3-v1")["messages"]
    bad = _patched(tmp_path, "fisco3-v1", 3, 16, b"\x0f\xff")
    recs = tshark.records(bad)
    assert len(recs) == len(msgs)
    assert (recs[3]["msg_type"], recs[3]["wire_len"]) == ("undecoded", str(msgs[3]["wire_len"]))
    assert [{k: r[k] for k in RECORD_FIELDS} for i, r in enumerate(recs) if i != 3] == \
        [{k: str(m[k]) for k in RECORD_FIELDS} for i, m in enumerate(msgs) if i != 3]
    assert "Header fields run past the message's Length" in tshark.expert(bad)



def test_a_packet_type_fisco_does_not_define_is_counted_as_unknown(tshark, tmp_path):
    """Heartbeat is its own msg_type; packet type 0x77 is `unknown` (it was Type119, one label
    per number a peer sends), with the note, its number in fisco3.packet_type."""
    cap = tmp_path / "fisco3-types.pcap"
    msg = lambda ptype: struct.pack(">IHHIH", 14, 0, ptype, 2, 0)  # noqa: E731
    tcp_pcap(cap, [("a", msg(1)), ("a", msg(0x77))], (40000, 30300))
    assert [r["msg_type"] for r in tshark.records(cap)] == ["Heartbeat", "unknown"]
    assert "Packet type 119 is not a message type of the protocol: counted as unknown" in tshark.expert(cap)


# ---- ports: the range preference, the heuristic, Decode As (issue #39) ----
# captures/fisco/fisco3-layout: four nodes on one host, on the ports build_chain.sh gives them
# (30300 + i), six sessions at once, dialled both ways, negotiated at V1, V2 and V3.
LAYOUT = "fisco3-layout"
# Outside fisco.tcp.port's 30300-30399 and on no stock dissector's port (checked below).
OFF_RANGE = {30300 + i: 40300 + i for i in range(4)}
NO_HEURISTIC = ["--disable-heuristic", "fisco_tcp"]


@pytest.fixture(scope="module")
def cleared(tmp_path_factory):
    """tshark whose profile `no-fisco-ports` takes fisco.tcp.port's whole range from FISCO, as
    Wireshark saves Decode As set to (none).  `-o fisco.tcp.port:` cannot: on 4.0 a range
    preference given with -o adds its ports to the table but leaves the default ones there
    (stock's http.tcp.port does the same)."""
    entries = "".join(f"decode_as_entry: tcp.port,{p},FISCO,(none)\n" for p in range(30300, 30400))
    yield from configured_tshark(tmp_path_factory.mktemp("xdg"), "no-fisco-ports", {"decode_as_entries": entries})


@pytest.fixture(scope="module")
def off_range(tmp_path_factory):
    return ports_rewritten(cap(LAYOUT), tmp_path_factory.mktemp("layout") / f"{LAYOUT}-40300.pcap", OFF_RANGE)


def _layout_want() -> dict[str, list[tuple]]:
    """Per session of the layout's truth, per message: sender, proto, record fields, Version."""
    return {s["name"]: [(m["side"], "fisco3", *(str(m[k]) for k in RECORD_FIELDS), str(m["version"]))
                        for m in s["messages"]] for s in truth(LAYOUT)["sessions"]}


def _layout_got(tshark, capture, portmap: dict[int, int] | None = None, extra: list[str] | None = None):
    """What tshark decodes of the layout capture, in _layout_want()'s form, each record put to its
    session by its TCP ports (the truth's, mapped by `portmap`), its Version read from the frame's
    fisco3.version occurrences in order; and each session's negotiated-version occurrences."""
    sessions = truth(LAYOUT)["sessions"]
    conn = {(s["client_port"], (portmap or {}).get(s["server_port"], s["server_port"])): s["name"]
            for s in sessions}

    def where(sport: str, dport: str) -> tuple[str, str]:
        a, b = int(sport), int(dport)
        return (conn[(a, b)], "a") if (a, b) in conn else (conn[(b, a)], "b")

    versions = {s["name"]: [] for s in sessions}
    negotiated = {s["name"]: [] for s in sessions}
    for sport, dport, v, nv in tshark.fields(capture, ["tcp.srcport", "tcp.dstport", "fisco3.version",
                                                       "fisco3.negotiated_version"], dfilter="fisco3", extra=extra):
        name, _ = where(sport, dport)
        versions[name] += v.split("|")
        negotiated[name] += [x for x in nv.split("|") if x]
    got = {s["name"]: [] for s in sessions}
    for r in tshark.records(capture, extra=extra):
        name, side = where(r["srcport"], r["dstport"])
        got[name].append((side, r["proto"], *(r[k] for k in RECORD_FIELDS)))
    for name, recs in got.items():
        got[name] = [(*rec, versions[name][i] if i < len(versions[name]) else None) for i, rec in enumerate(recs)]
    return got, negotiated


def _assert_layout_decodes(tshark, capture, portmap=None, extra=None):
    got, negotiated = _layout_got(tshark, capture, portmap, extra)
    assert got == _layout_want()
    # Every message after the two handshakes knows its own session's version: six sessions at
    # once, none taking another's negotiation.
    assert negotiated == {s["name"]: [str(s["negotiated_version"])] * (len(s["messages"]) - 2)
                          for s in truth(LAYOUT)["sessions"]}


def test_layout_is_build_chain_s(tshark):
    """The capture is the layout it stands for: node i on 30300 + i, every listening port a
    session's server port, low ports dialling high ones and high ports low ones, each session at
    the lower of its nodes' maxVersions (V1, V2 and V3, with V0 handshakes, heartbeats and PBFT
    broadcasts in each), all six under way at the same time."""
    t = truth(LAYOUT)
    assert [n["p2p_port"] for n in t["nodes"]] == [30300, 30301, 30302, 30303]
    sessions = t["sessions"]
    assert len(sessions) == 6 and len({frozenset((s["dialer"], s["listener"])) for s in sessions}) == 6
    assert {s["server_port"] for s in sessions} == {30300, 30301, 30302, 30303}
    assert all(s["server_port"] == t["nodes"][s["listener"]]["p2p_port"] for s in sessions)
    assert {s["dialer"] < s["listener"] for s in sessions} == {True, False}
    assert all(s["negotiated_version"] == min(t["nodes"][s["dialer"]]["max_version"],
                                              t["nodes"][s["listener"]]["max_version"]) for s in sessions)
    assert {s["negotiated_version"] for s in sessions} == {1, 2, 3}
    for s in sessions:
        assert {m["version"] for m in s["messages"]} == {0, s["negotiated_version"]}
        assert {m["msg_type"] for m in s["messages"] if m["version"] == 0} == {"Handshake", "Heartbeat", "PBFT"}
    # At the same time: each connection's first frame comes before any connection's last.
    spans = {}
    for number, stream in tshark.fields(cap(LAYOUT), ["frame.number", "tcp.stream"], dfilter="tcp"):
        spans.setdefault(stream, []).append(int(number))
    assert len(spans) == 6 and max(min(f) for f in spans.values()) < min(max(f) for f in spans.values())


def test_analyze_counts_every_layout_session():
    """p2pc analyze of the layout: per message type, the wire bytes and payload saved of all six
    sessions, as the generator sent them."""
    msgs = [m for s in truth(LAYOUT)["sessions"] for m in s["messages"]]
    rows = {r["msg_type"]: r for r in p2pc_report("analyze", str(cap(LAYOUT)))["rows"] if r["proto"] == "fisco3"}
    assert set(rows) == {m["msg_type"] for m in msgs}
    for mt, row in rows.items():
        ms = [m for m in msgs if m["msg_type"] == mt]
        assert (row["messages"], row["wire_bytes"], row["payload_saved"]) == \
            (len(ms), sum(m["wire_len"] for m in ms), sum(m["raw_len"] - m["payload_len"] for m in ms)), mt


def test_the_port_range_covers_build_chain_s_ports(tshark):
    """fisco.tcp.port's default is 30300-30399: build_chain.sh's 30300 + i for up to 100 nodes
    on a host."""
    ports = {int(l.split("\t")[1]) for l in tshark.run(["-G", "decodes"]).stdout.splitlines()
             if l.startswith("tcp.port\t") and l.endswith("\tfisco")}
    assert ports == set(range(30300, 30400))


def test_layout_decodes_on_build_chain_s_ports(tshark):
    """Default preferences: every message of every session, on each of 30300-30303, is the
    truth's (3.x, never a 2.x `fisco` record), at its own Version."""
    _assert_layout_decodes(tshark, cap(LAYOUT))


def test_layout_decodes_by_the_heuristic_on_other_ports(tshark, off_range):
    """The same sessions on 40300-40303 (outside the range, no stock port): fisco_tcp claims
    each from its first segment (a whole V0 handshake) and every message decodes the same."""
    stock = {int(l.split("\t")[1]) for l in tshark.run(["-G", "decodes"]).stdout.splitlines()
             if l.startswith("tcp.port\t")}
    ports = set(OFF_RANGE.values()) | {s["client_port"] for s in truth(LAYOUT)["sessions"]}
    assert not ports & stock and not ports & set(range(30300, 30400))
    _assert_layout_decodes(tshark, off_range, OFF_RANGE)
    # And only through the heuristic.
    assert tshark.records(off_range, extra=NO_HEURISTIC) == []


def test_the_range_preference_takes_other_ports(tshark, off_range):
    """A chain built with another start port (build_chain.sh -p 40300): fisco.tcp.port set to
    it decodes every session, the heuristic off."""
    _assert_layout_decodes(tshark, off_range, OFF_RANGE, NO_HEURISTIC + ["-o", "fisco.tcp.port:40300-40303"])


def _decode_as(portmap, dissector):
    return [a for p in sorted({s["server_port"] for s in truth(LAYOUT)["sessions"]})
            for a in ("-d", f"tcp.port=={(portmap or {}).get(p, p)},{dissector}")]


@pytest.mark.parametrize("dissector", ["fisco", "fisco3"])
def test_decode_as_on_build_chain_s_ports(cleared, dissector):
    """The range taken away and the heuristic off, nothing in the layout is FISCO; Decode As of
    each server port decodes every session again, to the truth.  (The range alone taken away,
    the heuristic claims them.)"""
    how = ["-C", "no-fisco-ports"]
    assert cleared.records(cap(LAYOUT), extra=how + NO_HEURISTIC) == []
    assert cleared.fields(cap(LAYOUT), ["frame.number"], dfilter="fisco || fisco3", extra=how + NO_HEURISTIC) == []
    _assert_layout_decodes(cleared, cap(LAYOUT), None, how + NO_HEURISTIC + _decode_as(None, dissector))
    _assert_layout_decodes(cleared, cap(LAYOUT), None, how)


@pytest.mark.parametrize("dissector", ["fisco", "fisco3"])
def test_decode_as_on_other_ports(tshark, off_range, dissector):
    """Off the range with the heuristic off nothing is FISCO (above); Decode As decodes it."""
    _assert_layout_decodes(tshark, off_range, OFF_RANGE, NO_HEURISTIC + _decode_as(OFF_RANGE, dissector))


@pytest.mark.parametrize("name", per_capture_kind(CAPS))
def test_a_session_on_30301_decodes_as_on_30300(tshark, tmp_path, name):
    """Issue #39: a 3.x session on 30301 (node 1 of a host) was read as 2.x (31 of fisco3-v1's
    36 messages right).  Each 3.x capture moved to 30301 gives the records and fields it gives
    on 30300, the port aside, and they are its truth's."""
    moved = ports_rewritten(cap(name), tmp_path / f"{name}-30301.pcap", {30300: 30301})
    fields = ["fisco3.version", "fisco3.packet_type", "fisco3.negotiated_version", "fisco3.src_p2p_id",
              "fisco3.src_p2p_id_short", "fisco3.module", "fisco3.uncompressed_len", "_ws.expert.message"]

    def port_aside(recs):
        """tcprewrite writes a pcap: times to the microsecond."""
        return [{k: ("PORT" if v in ("30300", "30301") and k.endswith("port") else v[:-3] if k == "time" else v)
                 for k, v in r.items()} for r in recs]
    recs = tshark.records(moved)
    assert {r["proto"] for r in recs} == {"fisco3"}
    assert {"30301"} <= {r["srcport"] for r in recs} | {r["dstport"] for r in recs}
    assert port_aside(recs) == port_aside(tshark.records(cap(name)))
    assert [{k: r[k] for k in RECORD_FIELDS} for r in recs] == \
        [{k: str(m[k]) for k in RECORD_FIELDS} for m in truth(name)["messages"]]
    # (On the frames that hold FISCO: tcprewrite gives IPv6 multicast frames a group source MAC.)
    assert tshark.fields(moved, fields, dfilter="fisco3") == tshark.fields(cap(name), fields, dfilter="fisco3")
    assert tshark.payloads(moved) == tshark.payloads(cap(name))


@pytest.mark.parametrize("port", [30303, 30399])
def test_a_range_port_is_fisco_s_only_when_it_starts_like_fisco(tshark, tmp_path, port):
    """The range holds ports other programs use (Ethereum's devp2p listens on 30303): a
    connection there whose first bytes start no TLS record, 2.x header or 3.x header (an RLPx
    auth message: 2 length bytes, then ECIES ciphertext) is shown as stock shows it, and a 3.x
    handshake on the same port is FISCO's."""
    rng = random.Random(port)
    auth = rng.randbytes(307)
    rlpx = tmp_path / f"rlpx-{port}.pcap"
    tcp_pcap(rlpx, [("a", struct.pack(">H", len(auth)) + auth), ("b", rng.randbytes(210)), ("a", rng.randbytes(64))],
             (41000, port), syn="a")
    layers = ["frame.number", "frame.protocols", "_ws.col.Protocol"]
    with Wireshark() as stock_ws:
        stock = Tshark(stock_ws).fields(rlpx, layers)
    assert tshark.fields(rlpx, layers) == stock and tshark.records(rlpx) == []
    handshake = tmp_path / f"hs-{port}.pcap"
    hs = struct.pack(">IHHIH", 19, 0, 2, 1, 0) + bytes([0x10, 0x01, 0x2c, 0x30, 0x03])   # ProtocolInfo{1, 0, 3}
    tcp_pcap(handshake, [("a", hs), ("b", hs)], (41000, port), syn="a")
    assert [r["msg_type"] for r in tshark.records(handshake)] == ["Handshake", "Handshake"]


# ---- a ProtocolInfo out of its type's range (issue #40) ----
def _protocol_info(max_head: bytes) -> bytes:
    """A V0 handshake whose ProtocolInfo is {moduleID 1, minVersion 0, maxVersion: `max_head`, a
    tars field of tag 3 written whole}."""
    body = bytes([0x10, 0x01, 0x2c]) + max_head
    return struct.pack(">IHHIH", 14 + len(body), 0, 2, 1, 0) + body


V3_HANDSHAKE = _protocol_info(bytes([0x30, 0x03]))      # GatewayService's V0..V3 (GlobalConfig.h)


@pytest.mark.parametrize("value", [2**32 + 2, 2**31])
def test_a_max_version_past_int32_is_flagged_and_negotiates_nothing(tshark, tmp_path, value):
    """ProtocolInfo.tars's maxVersion is an int: one written as a tars int64 (2^32+2, 2^31) makes
    FISCO's decoder throw, and onReceiveProtocol negotiates nothing.  It is flagged with its whole
    value and gives no negotiated version (never its low bits: V2, or a negative one)."""
    capture = tmp_path / "fisco3-wide.pcap"
    heartbeat = struct.pack(">IHHIH", 14, 0, 1, 2, 0)
    tcp_pcap(capture, [("a", _protocol_info(bytes([0x33]) + struct.pack(">q", value))), ("b", V3_HANDSHAKE),
                       ("a", heartbeat)], (40000, 30300), syn="a")
    rows = tshark.fields(capture, ["fisco3.handshake.max_version", "fisco3.negotiated_version"], dfilter="fisco3")
    assert rows == [[str(value), ""], ["3", ""], ["", ""]]
    assert [x for x in tshark.expert(capture) if "ProtocolInfo" in x] == \
        [f"ProtocolInfo maxVersion {value} is written as a tars int64, where FISCO reads an int32: "
         "FISCO refuses this handshake and negotiates nothing"]


@pytest.mark.parametrize("head, shown, kept", [(bytes([0x30, 0x07]), "7", 7), (bytes([0x30, 0xff]), "-1", 2**32 - 1)])
def test_a_max_version_fisco_does_not_know_is_flagged_and_negotiates_the_lower(tshark, tmp_path, head, shown, kept):
    """An int32 maxVersion past V3 (7, or -1, which FISCO keeps as the uint32 2^32-1): Service::
    onReceiveProtocol takes the lower of it and its own maxVersion, so the session runs at the
    other side's V3; the unknown version is flagged."""
    capture = tmp_path / "fisco3-unknown.pcap"
    heartbeat = struct.pack(">IHHIH", 14, 0, 1, 2, 0)
    tcp_pcap(capture, [("a", _protocol_info(head)), ("b", V3_HANDSHAKE), ("a", heartbeat)], (40000, 30300), syn="a")
    rows = tshark.fields(capture, ["fisco3.handshake.max_version", "fisco3.negotiated_version"], dfilter="fisco3")
    assert rows == [[shown, ""], ["3", ""], ["", "3"]]
    assert [x for x in tshark.expert(capture) if "ProtocolInfo" in x] == \
        [f"ProtocolInfo maxVersion {shown} is no version FISCO knows (V0 to V3; it keeps it as the uint32 {kept}): "
         "a FISCO node negotiates the lower of it and its own maxVersion"]


# ---- over TLS (fisco3-tls: fisco3-v3's session inside TLS 1.2, node a's key log beside it) ----

TLS = "fisco3-tls"
GCM_OVERHEAD = 8 + 16   # TLS 1.2 AES-GCM: the explicit nonce and the tag (RFC 5288)
MAX_RECORD = 16384      # TLS plaintext per record (RFC 5246 6.2.1): OpenSSL cuts longer writes


def _keyed(tshark) -> list[str]:
    return ["-o", f"tls.keylog_file:{tshark.ws.readable(CAPTURES / 'fisco' / truth(TLS)['keys'])}"]


def _app_records(tshark, capture, extra=None) -> list[tuple[str, int]]:
    """(sender's side, plaintext bytes) of each TLS application_data record, as tshark's TLS reads them."""
    t = truth(TLS)
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    out = []
    for src, types, lengths in tshark.fields(capture, ["ip.src", "tls.record.content_type", "tls.record.length"],
                                             dfilter="tls", extra=extra):
        out += [(side[src], int(n) - GCM_OVERHEAD) for ty, n in zip(types.split("|"), lengths.split("|"))
                if ty == "23"]
    return out


def test_tls_session_is_the_v3_one():
    """fisco3-tls is fisco3-v3's session (every message the same), node a listening on 30300."""
    t = truth(TLS)
    assert t["messages"] == truth("fisco3-v3")["messages"]
    assert t["link"]["port_a"] == 30300 and t["negotiated_version"] == 3


def test_tls_records_are_the_writes(tshark):
    """Each application_data record is a write of the generator's plan (cut at 16 KiB by OpenSSL):
    several messages in one record, a header cut across records, a message over several."""
    t = truth(TLS)
    plan = {s: [n for w in t["tls"]["writes"][s] for size in w["sizes"]
                for n in [MAX_RECORD] * (size // MAX_RECORD) + ([size % MAX_RECORD] if size % MAX_RECORD else [])]
            for s in "ab"}
    got = _app_records(tshark, cap(TLS))
    assert {s: [n for who, n in got if who == s] for s in "ab"} == plan
    assert 7 in plan["a"] and MAX_RECORD in plan["a"]
    assert any(len(w["sizes"]) == 1 and w["sizes"][0] > 20000 for w in t["tls"]["writes"]["a"])


@pytest.mark.parametrize("two_pass", [False, True])
def test_tls_with_the_key_log_decodes_every_message(tshark, two_pass):
    """With node a's key log (`tls.keylog_file`, nothing embedded): every 3.x message is the
    generator's, payloads byte-exact, the negotiation read from the decrypted handshakes, and
    nothing left encrypted, in one pass and in two."""
    t = truth(TLS)
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    recs = tshark.records(cap(TLS), two_pass=two_pass, extra=_keyed(tshark))
    assert len(recs) == len(t["messages"])
    for rec, m in zip(recs, t["messages"]):
        assert rec["proto"] == "fisco3" and side[rec["src"]] == m["side"]
        assert {k: rec[k] for k in RECORD_FIELDS} == {k: str(m[k]) for k in RECORD_FIELDS}, m["index"]
    got = tshark.payloads(cap(TLS), extra=_keyed(tshark))
    assert [(mt, hashlib.sha256(raw).hexdigest()) for _, mt, raw in got] == \
        [(m["msg_type"], m["raw_sha256"]) for m in t["messages"]]
    rows = tshark.fields(cap(TLS), ["fisco3.negotiated_version", "fisco3.src_p2p_id_short", "p2pc.tls_no_keys"],
                         dfilter="fisco3", two_pass=two_pass, extra=_keyed(tshark))
    assert _occurrences(rows, 0) == ["3"] * (len(t["messages"]) - 2)
    assert [s.replace(":", "") for s in _occurrences(rows, 1)] == \
        [m["src_p2p_id"] for m in t["messages"] if m["version"] >= 1]
    assert not tshark.fields(cap(TLS), ["frame.number"], dfilter="p2pc.tls_no_keys || fisco", extra=_keyed(tshark))


def test_tls_without_the_key_log_every_record_is_encrypted(tshark):
    """No key log: each application_data record is one `fisco` `tls (encrypted)` record of its
    size, with the note naming `tls.keylog_file`; no 3.x message is guessed."""
    records = [(s, n + GCM_OVERHEAD + 5) for s, n in _app_records(tshark, cap(TLS))]
    t = truth(TLS)
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    recs = tshark.records(cap(TLS))
    assert {(r["proto"], r["msg_type"], r["header_len"]) for r in recs} == {("fisco", "tls (encrypted)", "5")}
    assert [(side[r["src"]], int(r["wire_len"])) for r in recs] == records
    notes = [m for row in tshark.fields(cap(TLS), ["_ws.expert.message"], dfilter="p2pc.tls_no_keys")
             for m in row[0].split("|") if "tls.keylog_file" in m]
    assert len(notes) == len(records) > 40


def test_tls_on_another_port_through_the_tls_heuristic(tshark, tmp_path):
    """TLS on a port FISCO does not own (Decode As TLS): the decrypted 3.x handshake is found by
    the `fisco_tls` heuristic and every message decodes; with the heuristic off, none."""
    moved = ports_rewritten(cap(TLS), tmp_path / "moved.pcap", {30300: 40002})
    how = [*_keyed(tshark), "-d", "tcp.port==40002,tls"]
    assert [r["msg_type"] for r in tshark.records(moved, extra=how)] == [m["msg_type"] for m in truth(TLS)["messages"]]
    assert tshark.records(moved, extra=[*how, "--disable-heuristic", "fisco_tls"]) == []
