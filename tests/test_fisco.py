"""FISCO BCOS 2.x P2P with Snappy compression, decoded by the real tshark with the built plugin.

Expected values come from the generator's truth files (captures/gen/make_fisco.py writes them from
its own inputs: every message's header fields and the sha256 of its uncompressed payload), never
from the plugin's output."""
from __future__ import annotations

import hashlib
import json

import struct

import pytest

from conftest import CAPTURES, per_capture_kind, ports_rewritten, tcp_pcap

FISCO = CAPTURES / "fisco"
WORKLOADS = ["serial", "parallel", "sync", "topic"]
TWINS = [f"fisco-{w}-{s}" for w in WORKLOADS for s in ("on", "off")]
GOOD = TWINS + ["fisco-mixed-on", "fisco-tls", "fisco-rc1"]
PBFT_IDS = {"Prepare": 0, "Sign": 1, "Commit": 2, "ViewChange": 3}


def truth(name: str) -> dict:
    return json.loads((FISCO / f"{name}.truth.json").read_text())


def cap(name: str):
    return FISCO / f"{name}.pcapng"


def fisco_records(tshark, name: str, two_pass: bool = False, extra: list[str] | None = None) -> list[dict]:
    return [r for r in tshark.records(cap(name), two_pass=two_pass, extra=extra) if r["proto"] == "fisco"]


def per_message(tshark, name: str, fields: list[str], extra: list[str] | None = None,
                two_pass: bool = False) -> list[tuple[str, ...]]:
    """One tuple per FISCO message, for fields every message carries exactly once."""
    rows = tshark.fields(cap(name), fields, dfilter="fisco", extra=extra, two_pass=two_pass)
    out: list[tuple[str, ...]] = []
    for row in rows:
        cols = [c.split("|") for c in row]
        assert len({len(c) for c in cols}) == 1, (name, row)
        out += list(zip(*cols))
    return out


def flat(tshark, name: str, field: str, extra: list[str] | None = None) -> list[str]:
    """Every occurrence of a field, in frame order."""
    rows = tshark.fields(cap(name), [field], dfilter=field, extra=extra)
    return [v for r in rows for v in r[0].split("|") if v]


# ---- every message, as sent ----

@pytest.mark.parametrize("name", per_capture_kind(GOOD))
def test_every_message_decodes_as_sent(tshark, name):
    t = truth(name)
    recs = fisco_records(tshark, name)
    msgs = t["messages"]
    assert len(recs) == len(msgs)
    for r, m in zip(recs, msgs):
        sender = t["link"]["addr_a"] if m["side"] == "a" else t["link"]["addr_b"]
        assert r["src"] == sender, m
        assert r["msg_type"] == m["msg_type"], m
        assert int(r["wire_len"]) == m["length"], m
        assert int(r["header_len"]) == (12 if t["rc1"] else 16)
        assert int(r["payload_len"]) == m["payload_len"], m
        assert int(r["raw_len"]) == m["raw_len"], m
        assert r["codec"] == ("snappy" if m["compressed"] else "none"), m
        assert int(r["batch_count"]) == m["batch_count"], m


@pytest.mark.parametrize("name", per_capture_kind(GOOD))
def test_decompressed_bytes_equal_what_was_sent(tshark, name):
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in tshark.payloads(cap(name))
           if "." in mtype]
    assert got == [m["raw_sha256"] for m in truth(name)["messages"]]


@pytest.mark.parametrize("name", ["fisco-topic-off", "fisco-serial-off", "fisco-rc1"])
def test_uncompressed_data_field_is_the_payload(tshark, name):
    # An independent path to the bytes: the as-sent fisco.data field, not the p2pc tap.
    want = [m["raw_sha256"] for m in truth(name)["messages"] if m["raw_len"]]
    got = [hashlib.sha256(bytes.fromhex(v)).hexdigest() for v in flat(tshark, name, "fisco.data")]
    assert got == want


@pytest.mark.parametrize("name", per_capture_kind(GOOD))
def test_header_fields(tshark, name):
    t = truth(name)
    msgs = t["messages"]
    fields = ["fisco.length", "fisco.module", "fisco.packet_type", "fisco.seq", "fisco.protocol_id",
              "fisco.response", "fisco.rc1"]
    rows = per_message(tshark, name, fields)
    assert len(rows) == len(msgs)
    for (length, module, ptype, seq, pid, resp, rc1), m in zip(rows, msgs):
        assert int(length) == m["length"] and int(module) == m["module"], m
        assert int(ptype) == m["packet_type"] and int(seq) == m["seq"], m
        assert resp == ("1" if m["response"] else "0") and rc1 == ("1" if t["rc1"] else "0"), m
        if m["response"]:
            assert int(pid) == -m["module"], m
        else:
            shift = 8 if t["rc1"] else 16
            assert int(pid) == (m["group"] << shift | m["module"]), m
    groups = [int(g) for g in flat(tshark, name, "fisco.group")]
    assert groups == [m["group"] for m in msgs if not m["response"]]
    if not t["rc1"]:
        comp = per_message(tshark, name, ["fisco.compressed"])
        assert [c == "1" for (c,) in comp] == [m["compressed"] for m in msgs]


@pytest.mark.parametrize("name", ["fisco-mixed-on", "fisco-serial-off", "fisco-parallel-on", "fisco-sync-on"])
def test_payload_fields(tshark, name):
    msgs = truth(name)["messages"]
    # PBFT: the packet id from the RLP nesting.
    want = [PBFT_IDS[m["msg_type"].split(".")[1]] for m in msgs if m["module"] == 8]
    assert [int(v) for v in flat(tshark, name, "fisco.pbft.packet_id")] == want
    # BlockSync: the type byte, and the transactions of each Transactions batch.
    names = ["", "Status", "Transactions", "Blocks", "ReqBlocks", "TxsStatus", "TxsRequest"]
    want = [m["msg_type"].split(".")[1] for m in msgs if m["module"] == 9]
    assert [names[int(v)] for v in flat(tshark, name, "fisco.sync.type")] == want
    want = [m["batch_count"] for m in msgs if m["msg_type"] == "BlockSync.Transactions"]
    assert [int(v) for v in flat(tshark, name, "fisco.sync.txs")] == want
    assert len(flat(tshark, name, "fisco.sync.tx")) == sum(want)


def test_topic_and_amop_fields(tshark):
    name = "fisco-topic-on"
    assert flat(tshark, name, "fisco.topic.name") == ["fisco.amop.demo", "price-feed", "settlement", "price-feed"]
    amop = [m for m in truth(name)["messages"] if m["module"] == 1]
    lengths = [int(v) for v in flat(tshark, name, "fisco.amop.length")]
    assert lengths == [m["raw_len"] for m in amop]       # the channel message is the whole payload
    assert all(len(s) == 32 for s in flat(tshark, name, "fisco.amop.seq"))
    assert [int(v) for v in flat(tshark, name, "fisco.raft.type")] == [2, 3]


# ---- compression as FISCO does it ----

def test_compression_follows_the_1024_byte_rule():
    for name in TWINS + ["fisco-mixed-on"]:
        t = truth(name)
        for m in t["messages"]:
            assert m["compressed"] == (t["compress"] and m["raw_len"] > 1024), (name, m)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_twins_carry_the_same_messages(tshark, workload):
    on, off = (fisco_records(tshark, f"fisco-{workload}-{s}") for s in ("on", "off"))
    assert [(r["msg_type"], r["raw_len"], r["batch_count"]) for r in on] == \
           [(r["msg_type"], r["raw_len"], r["batch_count"]) for r in off]
    assert sum(int(r["wire_len"]) for r in on) <= sum(int(r["wire_len"]) for r in off)


def test_parallel_batches_compress_better_than_serial_transfers(tshark):
    # The seed's finding: parallel precompiled transfers save about two thirds, serial Solidity
    # transfers about a third (messages only, here; TCP/IP headers come on top).
    def ratio(workload):
        on, off = (fisco_records(tshark, f"fisco-{workload}-{s}") for s in ("on", "off"))
        return sum(int(r["wire_len"]) for r in on) / sum(int(r["wire_len"]) for r in off)
    serial, parallel = ratio("serial"), ratio("parallel")
    assert parallel < 0.5 < serial < 1.0


@pytest.mark.parametrize("name", ["fisco-topic-on", "fisco-sync-on"])
def test_compressed_output_larger_than_input_is_flagged(tshark, name):
    # FISCO sends the Snappy output even when it grew (an encrypted AMOP payload, a list of hashes).
    want = [m["msg_type"] for m in truth(name)["messages"] if m["compressed"] and m["payload_len"] > m["raw_len"]]
    assert want
    rows = tshark.fields(cap(name), ["fisco.msg_type"], dfilter="p2pc.compressed_larger")
    assert [v for r in rows for v in r[0].split("|")] == want


def test_compressed_messages_carry_ratio_and_uncompressed_length(tshark):
    name = "fisco-parallel-on"
    msgs = [m for m in truth(name)["messages"] if m["compressed"]]
    lengths = [int(v) for v in flat(tshark, name, "fisco.uncompressed_len")]
    ratios = [float(v) for v in flat(tshark, name, "fisco.ratio")]
    assert lengths == [m["raw_len"] for m in msgs]
    assert ratios == pytest.approx([m["payload_len"] / m["raw_len"] for m in msgs], rel=1e-6)


# ---- transports and framing variants ----

def test_tls_capture_decodes_like_its_plaintext_twin(tshark):
    key = ("msg_type", "wire_len", "payload_len", "raw_len", "codec", "batch_count", "src")
    tls = [tuple(r[k] for k in key) for r in fisco_records(tshark, "fisco-tls")]
    plain = [tuple(r[k] for k in key) for r in fisco_records(tshark, "fisco-mixed-on")]
    assert tls == plain and len(tls) == len(truth("fisco-tls")["messages"])
    sha = lambda n: [hashlib.sha256(raw).hexdigest() for _, t, raw in tshark.payloads(cap(n)) if "." in t]  # noqa: E731
    assert sha("fisco-tls") == sha("fisco-mixed-on")
    # The key log is inside the capture: nothing is configured here.
    assert tshark.fields(cap("fisco-tls"), ["frame.number"], dfilter="tls.app_data && fisco")


def test_rc1_header_is_detected_and_the_preference_agrees(tshark):
    auto = fisco_records(tshark, "fisco-rc1")
    forced = fisco_records(tshark, "fisco-rc1", extra=["-o", "fisco.rc1:TRUE"])
    assert auto == forced and all(r["header_len"] == "12" for r in auto)


@pytest.mark.parametrize("how", [
    [],                                                                   # the TCP heuristic
    ["--disable-heuristic", "fisco_tcp", "-d", "tcp.port==40002,fisco"],  # Decode As
])
def test_other_ports_heuristic_and_decode_as(tshark, tmp_path, how):
    """On a port FISCO does not own (30300 moved to 40002), the heuristic finds the connection
    from its start, and Decode As gives it with the heuristic off."""
    moved = ports_rewritten(cap("fisco-topic-on"), tmp_path / "moved.pcap", {30300: 40002})
    want = [r["msg_type"] for r in fisco_records(tshark, "fisco-topic-on")]
    assert [r["msg_type"] for r in tshark.records(moved, extra=how)] == want
    assert tshark.records(moved, extra=["--disable-heuristic", "fisco_tcp"]) == []


def tls_without_secrets(tmp_path):
    """fisco-tls without the TLS secrets embedded in it, and those secrets as a key log of their
    own (test_live.pcapng_secrets)."""
    from test_live import pcapng_secrets
    bare, keys = tmp_path / "fisco-tls-bare.pcapng", tmp_path / "fisco-tls.keys"
    keys.write_bytes(pcapng_secrets(cap("fisco-tls"), bare))
    assert "\nCLIENT_RANDOM " in keys.read_text()
    return bare, keys


def test_tls_without_keys_counts_every_encrypted_record(tshark, tmp_path):
    """No keys: every TLS 1.2 record of type application_data on the FISCO connection is a
    `fisco` `tls (encrypted)` record of its size (5-byte header + its length, tshark's own TLS
    fields), its header the 5 bytes, with the note naming the key log that would open it, the
    same in one pass and in two.  With the key log, the records are those the embedded secrets
    give, and nothing is left encrypted."""
    bare, keys = tls_without_secrets(tmp_path)
    sizes = []
    for types, lengths in tshark.fields(bare, ["tls.record.content_type", "tls.record.length"], dfilter="tls"):
        pairs = list(zip(types.split("|"), lengths.split("|")))
        assert len(pairs) == len(types.split("|")) == len(lengths.split("|"))
        sizes += [5 + int(n) for t, n in pairs if t == "23"]
    for two_pass in (False, True):
        recs = tshark.records(bare, two_pass=two_pass)
        assert {(r["proto"], r["msg_type"]) for r in recs} == {("fisco", "tls (encrypted)")}
        assert sorted(int(r["wire_len"]) for r in recs) == sorted(sizes) and len(sizes) > 50
        assert all(r["header_len"] == "5" and int(r["payload_len"]) == int(r["wire_len"]) - 5 for r in recs)
    notes = [m for row in tshark.fields(bare, ["_ws.expert.message"], dfilter="p2pc.tls_no_keys")
             for m in row[0].split("|") if "tls.keylog_file" in m]
    assert len(notes) == len(sizes)
    keyed = ["-o", f"tls.keylog_file:{tshark.ws.readable(keys)}"]
    assert tshark.records(bare, extra=keyed) == fisco_records(tshark, "fisco-tls")
    assert not tshark.fields(bare, ["frame.number"], dfilter="p2pc.tls_no_keys", extra=keyed)


def test_tls_on_another_port_through_the_tls_heuristic(tshark, tmp_path):
    """TLS on a port FISCO does not own (Decode As TLS): the decrypted data finds FISCO through
    the `fisco_tls` heuristic, and not with it off."""
    want = [r["msg_type"] for r in fisco_records(tshark, "fisco-tls")]
    bare, keys = tls_without_secrets(tmp_path)
    moved = ports_rewritten(bare, tmp_path / "moved.pcap", {30300: 40002})
    how = ["-o", f"tls.keylog_file:{tshark.ws.readable(keys)}", "-d", "tcp.port==40002,tls"]
    assert [r["msg_type"] for r in tshark.records(moved, extra=how)] == want
    assert tshark.records(moved, extra=[*how, "--disable-heuristic", "fisco_tls"]) == []


# ---- requests and responses ----

@pytest.mark.parametrize("name", ["fisco-topic-on", "fisco-mixed-on", "fisco-tls"])
def test_request_response_links(tshark, name):
    msgs = truth(name)["messages"]
    recs = fisco_records(tshark, name)
    frame = [int(r["frame"]) for r in recs]
    pairs = [(m["response_to"], m["index"]) for m in msgs if m["response_to"] is not None]
    assert pairs
    rows = tshark.fields(cap(name), ["frame.number", "fisco.response_in", "fisco.response_to"],
                         dfilter="fisco.response_in || fisco.response_to", two_pass=True)
    resp_in = {(int(f), int(v)) for f, a, _ in rows for v in a.split("|") if v}
    resp_to = {(int(f), int(v)) for f, _, b in rows for v in b.split("|") if v}
    # Both peers number from 2, so the same seq is in flight both ways: the links must still
    # pair each response with the request from the other side.
    assert resp_in == {(frame[q], frame[r]) for q, r in pairs}
    assert resp_to == {(frame[r], frame[q]) for q, r in pairs}


# ---- stateless across passes ----

@pytest.mark.parametrize("name", per_capture_kind(GOOD + ["fisco-malformed"]))
def test_one_pass_equals_two_pass(tshark, name):
    # fisco.response_in points forward, so only a second pass can fill it in: left out here.
    fields = ["frame.number", "fisco.msg_type", "fisco.seq", "fisco.uncompressed_len", "fisco.sync.items",
              "fisco.sync.txs", "fisco.pbft.packet_id", "fisco.rc1", "p2pc.raw_len", "p2pc.batch_count",
              "fisco.response_to", "_ws.expert.message"]
    one = tshark.fields(cap(name), fields, dfilter="fisco")
    two = tshark.fields(cap(name), fields, dfilter="fisco", two_pass=True)
    assert one and one == two


# ---- bad input ----

def test_malformed_capture_yields_its_expert_items(tshark):
    name = "fisco-malformed"
    tshark.read_whole(cap(name), "FISCO")
    want: dict[str, int] = {}
    for m in truth(name)["messages"]:
        if m.get("expert"):
            want[m["expert"]] = want.get(m["expert"], 0) + 1
    assert len(want) >= 6
    for expert, n in want.items():
        rows = tshark.fields(cap(name), ["_ws.expert"], dfilter=expert)
        assert rows, expert
    # Both Length cases (below the header, over 100 MiB) are flagged.
    texts = [t for t in tshark.expert(cap(name)) if t.startswith("Length ")]
    assert len(texts) == want["fisco.length.invalid"] == 2
    # The good message before them still decodes.
    assert [r["msg_type"] for r in fisco_records(tshark, name)][0] == "Topic.SendTopicSeq"


def test_truncated_capture_decodes_what_is_there(tshark):
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(cap("fisco-truncated")),
                      "-z", "p2pc,records"], check=False)
    assert "cut short" in res.stderr
    got = [line.split("\t")[9] for line in res.stdout.splitlines() if line.startswith("M\t")]
    want = [m["msg_type"] for m in truth("fisco-mixed-on")["messages"]]
    # The message the file cut short is the tail: undecoded, printed last.
    assert got[-1] == "undecoded"
    assert got[:-1] and got[:-1] == want[:len(got) - 1]


@pytest.mark.parametrize("name", ["fisco-parallel-on", "fisco-sync-on"])
def test_corrupted_bytes_never_break_tshark(tshark, name, tmp_path):
    # editcap -E flips random bytes in every frame; the dissector must survive all of it.
    import subprocess
    for seed in (1, 2, 3):
        out = tmp_path / f"{name}-{seed}.pcapng"
        subprocess.run(["editcap", "-E", "0.02", "--seed", str(seed), str(cap(name)), str(out)],
                       check=True, capture_output=True)
        res = tshark.run(["-n", "-r", tshark.ws.readable(out), "-V", "-o", "tcp.check_checksum:FALSE"],
                         check=False)
        assert res.returncode == 0, res.stderr[-2000:]


def test_a_module_fisco_does_not_define_is_counted_as_unknown(tshark, tmp_path):
    """Topic.SendTopicSeq is its own msg_type; module 77 is `unknown`, with the note, its number
    in fisco.module."""
    cap = tmp_path / "fisco-modules.pcap"
    msg = lambda module, ptype, body: struct.pack(">IHhHHI", 16 + len(body), 0, 1, module, ptype, 2) + body  # noqa: E731
    tcp_pcap(cap, [("a", msg(2, 1, b"7")), ("a", msg(77, 1, b"7"))], (40000, 30300))
    assert [r["msg_type"] for r in tshark.records(cap)] == ["Topic.SendTopicSeq", "unknown"]
    assert [r[0] for r in tshark.fields(cap, ["fisco.module"])] == ["2", "77"]
    assert "Module 77 is not a message type of the protocol: counted as unknown" in tshark.expert(cap)


def test_the_heuristic_guesses_only_connections_it_sees_start(tshark, tmp_path):
    """Off port 30300, the TCP heuristic decodes a connection whose SYN is in the capture; the
    same bytes joined after the connection's start (as a capture or a live session reset in
    its middle joins it) are not guessed at, and Decode As on its port decodes them all."""
    src = cap("fisco-serial-on")
    rows = tshark.fields(src, ["ip.src", "tcp.payload"], dfilter="tcp.len > 0")
    segments = [("a" if sender == rows[0][0] else "b", bytes.fromhex(payload)) for sender, payload in rows]
    seen, joined = tmp_path / "seen.pcap", tmp_path / "joined.pcap"
    tcp_pcap(seen, segments, syn="a")
    tcp_pcap(joined, segments)
    key = lambda recs: [(r["msg_type"], r["wire_len"]) for r in recs]  # noqa: E731
    want = key(tshark.records(src))
    assert len(want) > 100
    assert key(tshark.records(seen)) == want
    assert tshark.records(joined) == []
    assert key(tshark.records(joined, extra=["-d", "tcp.port==40002,fisco"])) == want
