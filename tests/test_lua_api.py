"""The p2pc Lua API (docs/lua-api.md): lua/p2pc.lua over plugin/core/lua-bridge.c, held by the
Lumen example (lua/examples/lumen.lua) on its real-TCP capture and by a script that misuses
the API on purpose (tests/lua/p2pc_api_misuse.lua).  Expected values come from the generator's
truth file (captures/gen/make_lumen.py), never from the dissector's own output."""
from __future__ import annotations

import hashlib
import json
import subprocess
from collections import defaultdict

import pytest

from conftest import CAPTURES, REPO, run_p2pc

CAP = CAPTURES / "lumen" / "lumen.pcapng"
TRUTH = json.loads((CAPTURES / "lumen" / "lumen.truth.json").read_text())
LUMEN = REPO / "lua" / "examples" / "lumen.lua"
MISUSE = REPO / "tests" / "lua" / "p2pc_api_misuse.lua"
SIDE = {TRUTH["link"]["addr_a"]: "a", TRUTH["link"]["addr_b"]: "b"}
RECORD_FIELDS = ("msg_type", "codec", "wire_len", "header_len", "payload_len", "raw_len", "batch_count")


@pytest.fixture(scope="module")
def lumen_args(ws):
    return ["-X", f"lua_script:{ws.readable(LUMEN)}"]


@pytest.fixture(scope="module")
def records(tshark, lumen_args):
    return tshark.records(CAP, extra=lumen_args)


def test_every_message_is_one_record_as_the_generator_sent_it(records):
    msgs = TRUTH["messages"]
    assert len(records) == len(msgs)
    for rec, m in zip(records, msgs):
        assert rec["proto"] == "lumen"
        assert SIDE[rec["src"]] == m["side"], m["index"]
        assert {k: rec[k] for k in RECORD_FIELDS} == {k: str(m[k]) for k in RECORD_FIELDS}, m["index"]


def test_decompressed_payloads_are_the_generator_s(tshark, lumen_args):
    """Every codec the example uses, the deflate stream in both directions included: the
    payload the record carries (-z p2pc,payloads) hashes to the generator's input."""
    got = tshark.payloads(CAP, extra=lumen_args)
    ok = [m for m in TRUTH["messages"] if m["expect"] == "ok"]
    assert len(got) == len(ok)
    for (_, mtype, raw), m in zip(got, ok):
        assert mtype == m["msg_type"]
        assert hashlib.sha256(raw).hexdigest() == m["raw_sha256"], m["index"]
    streams = {(m["side"], m["codec"]) for m in ok}
    assert {("a", "deflate-stream"), ("b", "deflate-stream"), ("a", "zstd"), ("b", "snappy")} <= streams


def test_decompressed_tab(tshark, lumen_args):
    """The "Decompressed <codec>" data source of a Snappy block, as long as the truth's raw payload."""
    block = next(m for m in TRUTH["messages"] if m["codec"] == "snappy" and m["expect"] == "ok")
    out = tshark.run(["-n", "-r", tshark.ws.readable(CAP), *lumen_args, "-x", "-Y",
                      f"p2pc.msg_type == \"block\" && p2pc.raw_len == {block['raw_len']}"]).stdout
    assert f"Decompressed snappy ({block['raw_len']} bytes):" in out


def test_re_dissection_shows_the_same(tshark, lumen_args, records):
    """Stream output is kept per frame: a second pass (-2) sees what the first decoded."""
    assert tshark.records(CAP, two_pass=True, extra=lumen_args) == records


def test_failures_are_expert_items_and_bounded(tshark, lumen_args):
    experts = tshark.fields(CAP, ["_ws.expert.message"], dfilter="_ws.expert", extra=lumen_args)
    msgs = [x for row in experts for x in row[0].split("|") if x]
    lua_errors = [x for x in msgs if x.startswith("Lua Error")]
    assert not lua_errors
    assert msgs.count("snappy decompression failed (corrupt input): Snappy block is corrupt") == 1
    assert msgs.count("zstd decompression failed (output bound exceeded): zstd output exceeds the bound") == 1


def test_analyze_reports_the_example_s_savings():
    """`p2pc analyze`, unchanged, reads Lumen's records: the example reaches it through
    $P2PC_LUA (lua/p2pc.lua loads the scripts it names)."""
    res = run_p2pc("analyze", str(CAP), "--format", "json", env_extra={"P2PC_LUA": str(LUMEN)})
    assert res.returncode == 0, res.stderr
    rows = {r["msg_type"]: r for r in json.loads(res.stdout)["rows"] if r["proto"] == "lumen"}
    want = defaultdict(lambda: defaultdict(int))
    for m in TRUTH["messages"]:
        w = want[m["msg_type"]]
        w["messages"] += 1
        w["payload_bytes"] += m["payload_len"]
        w["raw_bytes"] += m["raw_len"]
        w["payload_saved"] += m["raw_len"] - m["payload_len"]
    assert set(rows) == set(want)
    for mtype, w in want.items():
        assert {k: rows[mtype][k] for k in w} == dict(w), mtype
    assert rows["txbatch"]["payload_saved"] > 0 and rows["block"]["payload_saved"] > 0


MISUSE_RESULTS = [
    "unknown codec: error",
    "garbage zlib: corrupt input",
    "unknown payload key: ok 3",
    "over bound: output bound exceeded",
    "no msg_type: false",
    "header past wire: false",
    "long name: false",
    "bad number: error",
    "bad bound: error",
    "good after bad: true",
    "callback error: ok",
    "raw: abc",
    "after callback error: ok",
]
MISUSE_EXPERTS = [
    'Unknown p2pc codec "nosuch"',
    "zlib decompression failed (corrupt input): incorrect header check",
    'No dissector in "p2pc.payload" for "no-such-key"',
    "zlib decompression failed (output bound exceeded): inflated output exceeds the bound",
    'p2pc record without pinfo.private["p2pc.record.msg_type"]',
    "p2pc record: header_len 9 exceeds wire_len 8",
    'p2pc record: pinfo.private["p2pc.record.proto"] must be 1 to 64 bytes',
    'pinfo.private["p2pc.record.wire_len"] = "12x" is not a non-negative integer',
    'pinfo.private["p2pc.dc.bound"] = "-1" is not a non-negative integer',
]


def test_misuse_gives_expert_items_never_a_crash_or_a_record(tshark, ws):
    args = ["-X", f"lua_script:{ws.readable(MISUSE)}"]
    rows = tshark.fields(CAP, ["p2pc_misuse.result", "_ws.expert.message"], dfilter="frame.number == 1",
                         extra=args)
    assert len(rows) == 1
    assert rows[0][0].split("|") == MISUSE_RESULTS
    experts = rows[0][1].split("|")
    assert experts[:len(MISUSE_EXPERTS)] == MISUSE_EXPERTS
    # The callback's error is the Lua error item every Lua dissector error gets.
    assert len(experts) == len(MISUSE_EXPERTS) + 1 and "callback failed" in experts[-1]
    # Only the one good record counts; nothing of the bad ones leaked into it.
    recs = tshark.records(CAP, extra=args)
    assert [(r["frame"], r["proto"], r["msg_type"], r["wire_len"], r["header_len"]) for r in recs] == \
        [("1", "misuse", "ok", "8", "0")]


def test_the_module_alone_changes_nothing(tshark):
    """lua/p2pc.lua is installed as a plugin: alone it adds no record and no error."""
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(CAP), "-z", "p2pc,records"])
    assert "\nM\t" not in res.stdout and "Lua" not in res.stderr


def test_corrupted_bytes_never_break_tshark(tshark, lumen_args, tmp_path):
    """Random bytes flipped in every frame reach the C decoders through Lua: expert items and
    Lua's own errors at most, never a crash or a dissector bug."""
    for seed in (1, 2, 3):
        out = tmp_path / f"lumen-{seed}.pcapng"
        subprocess.run(["editcap", "-E", "0.02", "--seed", str(seed), str(CAP), str(out)],
                       check=True, capture_output=True)
        res = tshark.run(["-n", "-r", tshark.ws.readable(out), *lumen_args, "-V", "-o", "tcp.check_checksum:FALSE"],
                         check=False)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Dissector bug" not in res.stdout + res.stderr


def test_stream_output_not_kept_is_a_note(tshark, lumen_args):
    """With p2pc.keep_replay off a second pass cannot re-run a stream decoder: each deflate-stream
    message then says so (a note), and the one-shot codecs decode as before."""
    rows = tshark.fields(CAP, ["_ws.expert.message"], dfilter="_ws.expert", two_pass=True,
                         extra=[*lumen_args, "-o", "p2pc.keep_replay:FALSE"])
    notes = [x for row in rows for x in row[0].split("|") if x.startswith("This stream output was decoded")]
    assert len(notes) == sum(m["codec"] == "deflate-stream" for m in TRUTH["messages"])


def test_stream_output_past_the_replay_budget_says_where_it_ran_out(tshark, lumen_args, tmp_path):
    """Sixty copies of the capture (each on its own addresses: 25 KB of deflate-stream output a
    copy, from the truth file), with p2pc.max_replay_mib at its 1 MiB minimum: the output counts
    against it, and once it is used up a second
    pass's stream messages say why they are not kept (the p2pc.replay_not_kept warning, from the
    frame #END names on) instead of the per-direction note."""
    parts = []
    assert sum(m["raw_len"] for m in TRUTH["messages"] if m["codec"] == "deflate-stream") * 60 > 2**20
    for k in range(60):
        part = tmp_path / f"{k}.pcap"
        subprocess.run(["tcprewrite", f"--pnat=192.0.2.0/24:10.9.{k}.0/24", f"--infile={CAP}",
                        f"--outfile={part}"], check=True, capture_output=True)
        parts.append(str(part))
    copies = tmp_path / "lumen-x60.pcapng"
    subprocess.run(["mergecap", "-F", "pcapng", "-w", str(copies), *parts], check=True, capture_output=True)
    budget = [*lumen_args, "-o", "p2pc.max_replay_mib:1"]
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(copies), "-2", "-z", "p2pc,records", *budget]).stdout
    end = dict(kv.split("=", 1) for kv in out.splitlines()[-1].split("\t")[1:])
    cut = int(end["not_kept_from"])
    rows = tshark.fields(copies, ["frame.number", "_ws.expert.message"], dfilter="p2pc.replay_not_kept",
                         two_pass=True, extra=budget)
    assert rows and all(int(f) >= cut for f, _ in rows)
    assert not any("This stream output was decoded" in msg for _, msg in rows)
