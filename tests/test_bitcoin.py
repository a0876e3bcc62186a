"""Bitcoin BUIP017 datastream compression, decoded by the real tshark with the built plugin.

Expected values come from the source data in captures/data/bitcoin (block hashes, sizes and
txids computed here by tests/btcdata.py) and from the generator's truth files (what it sent),
never from the plugin's own output.
"""
from __future__ import annotations

import bz2
import hashlib
import json
import struct
from collections import Counter

import pytest

from btcdata import block_hash, block_txs
from conftest import CAPTURES, DATA, REPO, per_capture_kind, tcp_pcap

BTC = CAPTURES / "bitcoin"
ALL = sorted(p.name for p in BTC.glob("*.pcapng"))


def truth(name: str) -> dict:
    return json.loads((BTC / name.replace(".pcapng", ".truth.json")).read_text())


def source_block(source: str) -> bytes:
    if source.startswith("blocks1-255_framed.bz2#"):
        height = int(source.split("#")[1])
        d = bz2.decompress((DATA / "bitcoin" / "blocks1-255_framed.bz2").read_bytes())
        o, h = 0, 1
        while True:
            n = struct.unpack_from("<I", d, o + 4)[0]
            if h == height:
                return d[o + 8:o + 8 + n]
            o, h = o + 8 + n, h + 1
    return (DATA / "bitcoin" / source).read_bytes()


def prefs(name: str) -> list[str]:
    # The 2015 test builds announced compression with service bit 28.
    return ["-o", "btcc.service_bit:28"] if "zlib2015" in name else []


def sent_records(tshark, name: str) -> list[dict]:
    """p2pc records of what peer A sent after the handshake (the truth file's messages)."""
    t = truth(name)
    recs = [r for r in tshark.records(BTC / name) if r["src"] == t["link"]["addr_a"]]
    skip = {"version", "verack", "inv"}
    return [r for r in recs if r["msg_type"] not in skip]


def test_captures_present():
    assert {"btc-compressed.pcapng", "btc-baseline.pcapng", "btc-oneside.pcapng",
            "btc-zlib2015.pcapng", "btc-malformed.pcapng", "btc-not-negotiated.pcapng"} <= set(ALL)


@pytest.mark.parametrize("name", ["btc-compressed.pcapng", "btc-baseline.pcapng",
                                  "btc-zlib2015.pcapng", "btc-oneside.pcapng"])
def test_records_match_what_was_sent(tshark, name):
    recs = sent_records(tshark, name)
    msgs = truth(name)["messages"]
    assert [r["msg_type"] for r in recs] == [m["command"] for m in msgs]
    for r, m in zip(recs, msgs):
        assert int(r["payload_len"]) == m["payload_len"], m
        assert int(r["wire_len"]) == m["payload_len"] + 24
        assert int(r["header_len"]) == 24
        assert r["codec"] == m["codec"], m
        if "source" in m:   # a block: raw_len is the source file's size
            assert int(r["raw_len"]) == len(source_block(m["source"])), m
        elif "txs" in m:    # a batch or tx: the sum of the source transactions' sizes
            src = {s: block_txs(source_block(s)) for s in {t["source"] for t in m["txs"]}}
            assert int(r["raw_len"]) == sum(len(src[t["source"]][t["index"]].raw) for t in m["txs"])
            assert int(r["batch_count"]) == (len(m["txs"]) if m["command"] in ("txcat", "ctxcat") else 1)


@pytest.mark.parametrize("name", ["btc-compressed.pcapng", "btc-baseline.pcapng", "btc-zlib2015.pcapng"])
def test_blocks_decompress_to_the_source_blocks(tshark, name):
    """Each cblock/block decodes to the exact source block: its header's SHA256d is the source
    block's hash, and the decoded length is the file's size."""
    expected = [source_block(m["source"]) for m in truth(name)["messages"] if "source" in m]
    rows = tshark.fields(BTC / name, ["btcc.block.hash", "btcc.decompressed_len", "bitcoin.command"],
                         dfilter="btcc.block.hash", extra=prefs(name))
    hashes = [h for row in rows for h in row[0].split("|")]
    assert hashes == [block_hash(b) for b in expected]
    raw_lens = [int(r["raw_len"]) for r in sent_records(tshark, name)
                if r["msg_type"] in ("block", "cblock")]
    assert raw_lens == [len(b) for b in expected]


@pytest.mark.parametrize("name", ["btc-compressed.pcapng", "btc-zlib2015.pcapng"])
def test_batches_carry_the_source_transactions(tshark, name):
    """txcat/ctxcat: the batch count and every txid equal the transactions the generator put in,
    computed here from the source blocks."""
    batches = [m for m in truth(name)["messages"] if m["command"] in ("txcat", "ctxcat")]
    assert batches
    expected_counts, expected_txids = [], []
    for m in batches:
        expected_counts.append(len(m["txs"]))
        for t in m["txs"]:
            expected_txids.append(block_txs(source_block(t["source"]))[t["index"]].txid)
    rows = tshark.fields(BTC / name, ["btcc.batch.count", "btcc.tx.txid", "btcc.block.hash"],
                         dfilter="btcc.batch.count", extra=prefs(name))
    assert all(not row[2] for row in rows), "a block shares a frame with a batch"
    assert [int(c) for row in rows for c in row[0].split("|")] == expected_counts
    assert [t for row in rows for t in row[1].split("|")] == expected_txids


def test_single_tx_txids(tshark):
    name = "btc-compressed.pcapng"
    expected = [block_txs(source_block(t["source"]))[t["index"]].txid
                for m in truth(name)["messages"] if m["command"] == "tx" for t in m["txs"]]
    rows = tshark.fields(BTC / name, ["btcc.tx.txid"], dfilter='bitcoin.command == "tx"')
    assert [t for row in rows for t in row[0].split("|")] == expected


def test_segwit_and_old_blocks_both_present(tshark):
    name = "btc-compressed.pcapng"
    rows = tshark.fields(BTC / name, ["btcc.tx.segwit"], dfilter="btcc.block.hash")
    flags = [f for row in rows for f in row[0].split("|")]
    assert "1" in flags and "0" in flags


def test_baseline_is_the_same_workload(tshark):
    """The baseline sends the same blocks and transactions, uncompressed and unbatched."""
    comp, base = truth("btc-compressed.pcapng")["messages"], truth("btc-baseline.pcapng")["messages"]
    assert [m["source"] for m in comp if "source" in m] == [m["source"] for m in base if "source" in m]
    txs = lambda ms: [(t["source"], t["index"]) for m in ms if "txs" in m for t in m["txs"]]
    assert txs(comp) == txs(base)
    recs = sent_records(tshark, "btc-baseline.pcapng")
    assert {r["codec"] for r in recs} == {"none"}
    assert {r["msg_type"] for r in recs} == {"block", "tx", "ping"}


def test_checksums_verified(tshark):
    for name in ("btc-compressed.pcapng", "btc-baseline.pcapng"):
        rows = tshark.fields(BTC / name, ["btcc.checksum.status"], dfilter="bitcoin")
        statuses = {s for row in rows for s in row[0].split("|")}
        assert statuses == {"1"}, (name, statuses)   # 1 = Good


@pytest.mark.parametrize("name,negotiated", [("btc-compressed.pcapng", "1"), ("btc-oneside.pcapng", "0"),
                                             ("btc-not-negotiated.pcapng", "0")])
def test_negotiation(tshark, name, negotiated):
    t = truth(name)
    rows = tshark.fields(BTC / name, ["btcc.negotiated", "btcc.services.sender", "btcc.services.receiver"],
                         dfilter='bitcoin.command == "ping"')
    assert rows
    first = [col.split("|")[0] for col in rows[0]]
    assert first[0] == negotiated
    assert int(first[1], 16) == t["services_a"]
    assert int(first[2], 16) == t["services_b"]


def test_zlib_2015_variant(tshark):
    name = "btc-zlib2015.pcapng"
    rows = tshark.fields(BTC / name, ["btcc.codec", "btcc.negotiated"], dfilter="btcc.codec",
                         extra=prefs(name))
    assert {c for r in rows for c in r[0].split("|")} == {"zlib"}
    assert {n for r in rows for n in r[1].split("|")} == {"1"}
    # With the default bit (5) the same capture is a compressed command without negotiation.
    assert tshark.fields(BTC / name, ["frame.number"], dfilter="p2pc.spec.buip017.not_negotiated")


def test_malformed_captures_yield_their_expert_items(tshark):
    for name in ("btc-malformed.pcapng", "btc-not-negotiated.pcapng"):
        tshark.read_whole(BTC / name, "Bitcoin")
        for m in truth(name)["messages"]:
            if "expert" not in m:
                continue
            dfilter = " || ".join(m["expert"].split("|"))
            rows = tshark.fields(BTC / name, ["frame.number"],
                                 dfilter=f'({dfilter}) && bitcoin.command == "{m["command"]}"')
            assert rows, f"{name}: no {m['expert']} for {m['malformed']}"


def test_malformed_trailing_batches_keep_their_transactions(tshark):
    name = "btc-malformed.pcapng"
    batches = [m for m in truth(name)["messages"] if m.get("expert") == "btcc.trailing"]
    src = block_txs(source_block("block702861_segwit.raw"))
    expected = [[src[t["index"]].txid for t in m["txs"]] for m in batches]
    rows = tshark.fields(BTC / name, ["btcc.tx.txid", "btcc.trailing_bytes"], dfilter="btcc.trailing")
    got = []
    for row in rows:
        got.append(row[0].split("|"))
    assert got == expected
    trailing = [len(row[1]) // 2 for row in rows]
    assert trailing == [m["garbage_len"] for m in batches]


def test_stock_framing_still_gives_records(tshark):
    """Decode As Bitcoin (the stock framing) goes through the wrapped command handlers."""
    name = "btc-compressed.pcapng"
    ours = tshark.records(BTC / name)
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(BTC / name), "-d", "tcp.port==8333,bitcoin",
                      "-z", "p2pc,records"])
    stock = [l.split("\t") for l in res.stdout.splitlines() if l.startswith("M\t")]
    assert [(r["msg_type"], r["raw_len"]) for r in ours] == [(s[9], s[14]) for s in stock]


@pytest.mark.parametrize("name", per_capture_kind(ALL))
def test_one_pass_equals_two_pass(tshark, name):
    fields = ["frame.number", "bitcoin.command", "p2pc.msg_type", "p2pc.codec", "p2pc.raw_len",
              "p2pc.batch_count", "btcc.negotiated", "btcc.block.hash", "btcc.tx.txid",
              "btcc.checksum.status", "bip324.ellswift", "_ws.expert.message"]
    one = tshark.fields(BTC / name, fields, dfilter="bitcoin || bip324", extra=prefs(name))
    two = tshark.fields(BTC / name, fields, dfilter="bitcoin || bip324", two_pass=True, extra=prefs(name))
    assert one == two
    assert one


# ---- BUIP010 Xtreme Thinblocks under BUIP017: cxthinblock and get_cxthin ----

def test_xthin_records_match_what_was_sent(tshark):
    """get_cxthin comes from B (the requester), cxthinblock from A; both LZO1X."""
    t = truth("btc-xthin.pcapng")
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    recs = [r for r in tshark.records(BTC / "btc-xthin.pcapng") if r["msg_type"] in ("get_cxthin", "cxthinblock")]
    msgs = [m for m in t["messages"] if m["command"] in ("get_cxthin", "cxthinblock")]
    assert [(side[r["src"]], r["msg_type"], r["codec"], int(r["payload_len"]), int(r["raw_len"]), r["batch_count"])
            for r in recs] == [(m.get("side", "a"), m["command"], m["codec"], m["payload_len"], m["raw_len"], "1")
                               for m in msgs]


def test_cxthinblock_parsed(tshark):
    """Header (block hash), every short ID (the first 8 bytes of each txid of the source block,
    little-endian) and every missing transaction, from the source block itself."""
    msgs = [m for m in truth("btc-xthin.pcapng")["messages"] if m["command"] == "cxthinblock"]
    rows = tshark.fields(BTC / "btc-xthin.pcapng", ["btcc.block.hash", "btcc.xthin.short_id_count",
                                                     "btcc.xthin.short_id", "btcc.xthin.missing_count",
                                                     "btcc.tx.txid"],
                         dfilter='bitcoin.command == "cxthinblock"')
    assert len(rows) == len(msgs)
    for row, m in zip(rows, msgs):
        block = source_block(m["source"])
        txs = block_txs(block)
        assert row[0] == block_hash(block)
        assert int(row[1]) == len(txs)
        assert [int(v, 16) for v in row[2].split("|")] == \
            [int.from_bytes(bytes.fromhex(tx.txid)[::-1][:8], "little") for tx in txs]
        assert int(row[3]) == len(m["missing"])
        assert row[4].split("|") == [txs[x["index"]].txid for x in m["missing"]]
        assert m["missing"][0]["index"] == 0    # the coinbase is never in a mempool


def test_get_cxthin_parsed(tshark):
    msgs = [m for m in truth("btc-xthin.pcapng")["messages"] if m["command"] == "get_cxthin"]
    blocks = [m for m in truth("btc-xthin.pcapng")["messages"] if m["command"] == "cxthinblock"]
    rows = tshark.fields(BTC / "btc-xthin.pcapng", ["btcc.get_xthin.inv_type", "btcc.get_xthin.hash",
                                                     "btcc.get_xthin.filter", "btcc.get_xthin.hash_funcs",
                                                     "btcc.get_xthin.tweak", "btcc.get_xthin.flags"],
                         dfilter='bitcoin.command == "get_cxthin"')
    assert len(rows) == len(msgs)
    for row, m, b in zip(rows, msgs, blocks):
        assert row[0] == "5" and m["inv_type"] == 5                       # MSG_XTHINBLOCK
        assert row[1] == block_hash(source_block(b["source"]))
        assert len(bytes.fromhex(row[2].replace(":", ""))) == m["filter_bytes"]
        assert (int(row[3]), int(row[4]), int(row[5], 16)) == (m["hash_funcs"], m["tweak"], m["flags"])


def test_xthin_saves_against_the_block():
    """An xthinblock is smaller than its block, and LZO1X shrinks it further."""
    for m in (m for m in truth("btc-xthin.pcapng")["messages"] if m["command"] == "cxthinblock"):
        assert m["payload_len"] < m["raw_len"] < len(source_block(m["source"]))


def test_corrupted_xthin_never_breaks_tshark(tshark, tmp_path):
    """Random bytes flipped in every frame of the xthin session: LZO1X, short ID lists, missing
    transactions and bloom filters all stay within their bounds."""
    import subprocess
    for seed in (1, 2, 3):
        out = tmp_path / f"xthin-{seed}.pcapng"
        subprocess.run(["editcap", "-E", "0.01", "--seed", str(seed), str(BTC / "btc-xthin.pcapng"), str(out)],
                       check=True, capture_output=True)
        res = tshark.run(["-n", "-r", tshark.ws.readable(out), "-V", "-o", "tcp.check_checksum:FALSE",
                          "-o", "btcc.verify_checksum:FALSE"], check=False)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Dissector bug" not in res.stdout + res.stderr


@pytest.mark.parametrize("cut", [700, 1000, 1731])
def test_a_stream_joined_mid_message_resumes_at_the_next_header(tshark, tmp_path, cut):
    """A capture that starts inside the connections (as tshark's session reset leaves `p2pc
    live`): each direction resumes at its next message header, the bytes before it are
    continuation bytes with their expert item and an undecoded record, and every later message
    decodes exactly as in the whole capture. Lost: at most the message each direction was inside at the cut."""
    import subprocess
    name = "btc-baseline.pcapng"
    tail = tmp_path / f"from-{cut}.pcapng"
    subprocess.run(["editcap", str(BTC / name), str(tail), f"1-{cut}"], check=True,
                   capture_output=True)
    key = ("src", "srcport", "msg_type", "wire_len", "payload_len", "raw_len")
    whole = [r for r in tshark.records(BTC / name) if int(r["frame"]) > cut]
    records = tshark.records(tail)
    joined = [r for r in records if r["msg_type"] != "undecoded"]
    resync = [row[0] for row in tshark.fields(tail, ["frame.number"], dfilter="btcc.resync")]
    assert resync
    # The continuation bytes are counted: an undecoded record where each direction resumes.
    assert [r["frame"] for r in records if r["msg_type"] == "undecoded"] == resync
    want = Counter((int(r["frame"]) - cut, *(r[k] for k in key)) for r in whole)
    got = Counter((int(r["frame"]), *(r[k] for k in key)) for r in joined)
    assert not got - want
    directions = {(r["src"], r["srcport"]) for r in whole}
    assert sum(got.values()) >= sum(want.values()) - len(directions)


def test_a_command_not_bitcoins_is_counted_as_unknown(tshark, tmp_path):
    """A command of Bitcoin's is its own msg_type; one a peer made up is `unknown`, with the
    note, and stays in bitcoin.command as sent."""
    cap = tmp_path / "btc-commands.pcap"
    msg = lambda cmd: struct.pack("<I12sI", 0xD9B4BEF9, cmd, 0) + bytes.fromhex("5df6e0e2")  # noqa: E731
    tcp_pcap(cap, [("a", msg(c)) for c in (b"verack", b"sendtxrcncl", b"cblocks")], (40000, 8333))
    assert [r["msg_type"] for r in tshark.records(cap)] == ["verack", "sendtxrcncl", "unknown"]
    assert [r[0] for r in tshark.fields(cap, ["bitcoin.command"])] == ["verack", "sendtxrcncl", "cblocks"]
    assert tshark.expert(cap) == ['"cblocks" is not a message type of the protocol: counted as unknown']


def test_lzo1x_that_passes_the_zlib_header_test_falls_back(tshark, tmp_path):
    """A payload whose first two bytes pass RFC 1950's header check is tried as zlib first, then
    as LZO1X (core/payload.h's fallback): an LZO1X literal run of 103 bytes starts 0x78 (17 +
    103), and its first literal 0x9c completes a valid zlib header; the next, 0x07, is a
    deflate block of the reserved type 3, so zlib fails.  Bytes that are neither report zlib's
    error.  The LZO1X payload, 107 bytes for 103, breaks BUIP017's rule once: the spec check,
    not also the generic p2pc.compressed_larger note."""
    literals = bytes([0x9c, 0x07]) + bytes(range(101))
    lzo = bytes([0x11 + len(literals)]) + literals + b"\x11\x00\x00"     # literals, end of stream

    def msg(cmd: bytes, payload: bytes) -> bytes:
        check = hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
        return struct.pack("<I12sI", 0xD9B4BEF9, cmd, len(payload)) + check + payload

    cap = tmp_path / "btc-zlib-header-lzo.pcap"
    tcp_pcap(cap, [("a", msg(b"ctxcat", lzo)), ("a", msg(b"cblock", lzo[:-3]))], (40000, 8333))
    assert [(r["msg_type"], r["codec"], r["payload_len"], r["raw_len"]) for r in tshark.records(cap)] == \
        [("ctxcat", "lzo1x", "107", "103"), ("cblock", "zlib", "104", "104")]
    rows = tshark.fields(cap, ["btcc.codec", "btcc.decompressed_len"], dfilter="bitcoin")
    assert rows == [["lzo1x", "103"], ["zlib", ""]]
    assert tshark.fields(cap, ["frame.number"], dfilter="p2pc.spec.buip017.not_smaller") == [["1"]]
    assert not tshark.fields(cap, ["frame.number"], dfilter="p2pc.compressed_larger")
    failed = tshark.fields(cap, ["_ws.expert.message"], dfilter="btcc.decompress_failed")
    assert len(failed) == 1 and "zlib decompression failed" in failed[0][0]


# ---- BIP324 v2 transport (captures/gen/make_bip324.py: the rust-bitcoin bip324 crate) ----

V2, V1_FALLBACK = "btc-bip324-v2.pcapng", "btc-bip324-v1fallback.pcapng"


def peer_addr(t: dict, role: str) -> str:
    """The address of the truth file's dialer (A, where the capture ran) or listener (B)."""
    return t["link"]["addr_a"] if role == "dialer" else t["link"]["addr_b"]


@pytest.mark.parametrize("two_pass", [False, True])
def test_bip324_v2_connection_is_encrypted_records(tshark, two_pass):
    """Every byte each peer wrote (its key, garbage, terminator, decoy and version packets, its
    messages: the peer's own count) is in `bip324 (encrypted)` records of its direction, and
    nothing of the connection is BUIP017 framing or continuation bytes."""
    t = truth(V2)
    assert t["dialer"]["transport"] == t["listener"]["transport"] == "v2"
    recs = tshark.records(BTC / V2, two_pass=two_pass)
    assert {(r["proto"], r["msg_type"], r["codec"], r["header_len"]) for r in recs} == \
        {("bitcoin", "bip324 (encrypted)", "none", "0")}
    for role in ("dialer", "listener"):
        mine = [r for r in recs if r["src"] == peer_addr(t, role)]
        assert sum(int(r["wire_len"]) for r in mine) == t[role]["bytes_sent"] == \
            sum(u["wire_len"] for u in t[role]["sent"])
        assert all(r["payload_len"] == r["raw_len"] == r["wire_len"] for r in mine)
    for dfilter in ("btcc", "bitcoin", "btcc.continuation", "btcc.resync"):
        assert not tshark.fields(BTC / V2, ["frame.number"], dfilter=dfilter), dfilter
    # Each TCP segment with payload is one record; each direction's first shows its 64-byte key.
    segments = tshark.fields(BTC / V2, ["frame.number"], dfilter="tcp.len > 0")
    assert [r[0] for r in tshark.fields(BTC / V2, ["frame.number"], dfilter="bip324")] == [s[0] for s in segments]
    assert len(recs) == len(segments)
    keys = tshark.fields(BTC / V2, ["ip.src", "bip324.ellswift"], dfilter="bip324.ellswift")
    assert sorted(k[0] for k in keys) == sorted(peer_addr(t, r) for r in ("dialer", "listener"))
    assert all(len(bytes.fromhex(k[1].replace(":", ""))) == 64 for k in keys)


def test_bip324_v1_fallback_decodes_as_v1(tshark):
    """The dialer speaks v1 to the BIP324 responder, which saw the v1 prefix and fell back:
    each peer's messages decode as v1 Bitcoin messages, exactly those it says it sent, each
    checksum good, nothing BIP324."""
    t = truth(V1_FALLBACK)
    assert t["dialer"]["transport"] == t["listener"]["transport"] == "v1"
    recs = tshark.records(BTC / V1_FALLBACK)
    for role in ("dialer", "listener"):
        got = [(r["msg_type"], int(r["payload_len"]), int(r["wire_len"]), r["header_len"])
               for r in recs if r["src"] == peer_addr(t, role)]
        assert got == [(u["command"], u["payload_len"], u["wire_len"], "24") for u in t[role]["sent"]]
    assert not tshark.fields(BTC / V1_FALLBACK, ["frame.number"], dfilter="bip324 || btcc.continuation")
    status = {row[0] for row in tshark.fields(BTC / V1_FALLBACK, ["btcc.checksum.status"], dfilter="bitcoin")}
    assert status == {"1"}      # PROTO_CHECKSUM_E_GOOD


def v2_segments(tshark) -> list[tuple[str, bytes]]:
    """The v2 capture's TCP payloads, in order, as (sender "a" dialer / "b" listener, bytes)."""
    t = truth(V2)
    rows = tshark.fields(BTC / V2, ["ip.src", "tcp.payload"], dfilter="tcp.len > 0")
    return [("a" if src == t["link"]["addr_a"] else "b", bytes.fromhex(p.replace(":", ""))) for src, p in rows]


@pytest.mark.parametrize("ports,syn,decode_as,bip324", [
    ((40001, 8333), "a", [], True),     # a Bitcoin port, the connection seen from its start
    ((40001, 18444), "a", [], True),    # regtest's port
    ((40001, 40002), "a", [], False),   # not a Bitcoin port: no claim on 64 random bytes
    ((40001, 40002), "a", ["-d", "tcp.port==40002,btcc"], True),    # the user's Decode As
    ((40001, 8333), None, [], False),   # joined mid-connection: nothing says where a direction starts
])
def test_bip324_is_recognised_only_where_it_can_be_told(tshark, tmp_path, ports, syn, decode_as, bip324):
    """The same bytes (the v2 capture's) over another TCP connection: BIP324 on a Bitcoin port
    (or one Decode As gives the Bitcoin framing) when the capture holds the connection's start,
    never on another port, and never on the guess that bytes in the middle of a stream start it."""
    cap = tmp_path / "v2.pcap"
    tcp_pcap(cap, v2_segments(tshark), ports, syn=syn)
    recs = tshark.records(cap, extra=decode_as)
    named = tshark.fields(cap, ["frame.number"], dfilter="bip324", extra=decode_as)
    if bip324:
        assert recs and {r["msg_type"] for r in recs} == {"bip324 (encrypted)"}
        assert not tshark.fields(cap, ["frame.number"], dfilter="btcc || bitcoin", extra=decode_as)
    else:
        assert not named
        assert not [r for r in recs if r["msg_type"] == "bip324 (encrypted)"]


# ---- headers without the checksum field (Bitcoin 0.3.x, before 20 Feb 2012) ----

def v03_address(ip: str, port: int, services: int = 1) -> bytes:
    """CAddress at stream version 0 (0.3.x net.h): services, IPv4-mapped IPv6, port big-endian."""
    return struct.pack("<Q", services) + b"\0" * 10 + b"\xff\xff" + bytes(map(int, ip.split("."))) + \
        struct.pack(">H", port)


def v03_version(n_version: int, services: int = 1) -> bytes:
    """A version payload as 0.3.x PushVersion writes it: nVersion, nLocalServices, nTime,
    addrYou, addrMe, nLocalHostNonce, strSubVer (empty then), nBestHeight (from 209)."""
    p = struct.pack("<iQq", n_version, services, 1294000000) + v03_address("192.0.2.2", 8333) + \
        v03_address("192.0.2.1", 8333) + struct.pack("<Q", 0x1122334455667788) + b"\x00"
    return p + (struct.pack("<i", 100000) if n_version >= 209 else b"")


def v03_msg(cmd: bytes, payload: bytes, checksum: bool) -> bytes:
    """0.3.x CMessageHeader: magic, command, size and, at stream version >= 209, the checksum."""
    head = struct.pack("<I12sI", 0xD9B4BEF9, cmd, len(payload))
    return head + (hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] if checksum else b"") + payload


GETBLOCKS = struct.pack("<i", 32400) + b"\x01" + bytes(range(32)) + b"\0" * 32
INV = b"\x01" + struct.pack("<I", 2) + bytes(range(32, 64))


@pytest.mark.parametrize("version_a,version_b", [(32400, 31900), (32400, 200)])
def test_headers_without_checksum_as_0_3_sends_them(tshark, tmp_path, version_a, version_b):
    """Two 0.3.x peers before 20 Feb 2012 (main.cpp and net.h of 0.3.x): each sends `version`
    at stream version 0, so without the checksum field; on the peer's version, a peer whose
    peer speaks 209 or later pushes `verack`, still without it, then sets its send stream to
    min(peer's nVersion, its own), so later messages carry a checksum iff that is >= 209.
    With a pre-209 peer (0.2, nVersion 200) there is no verack and no checksum at all.  Each
    message decodes as sent, no checksum error, no continuation bytes."""
    both_209 = min(version_a, version_b) >= 209
    sent = [("a", b"version", v03_version(version_a), False), ("b", b"version", v03_version(version_b), False)]
    if both_209:
        sent += [("a", b"verack", b"", False), ("b", b"verack", b"", False)]
    sent += [("a", b"getblocks", GETBLOCKS, both_209), ("b", b"inv", INV, both_209), ("a", b"ping", b"", both_209)]
    cap = tmp_path / "btc-v03.pcap"
    tcp_pcap(cap, [(side, v03_msg(cmd, p, c)) for side, cmd, p, c in sent], (40001, 8333), syn="a")
    recs = tshark.records(cap)
    assert [(r["src"], r["msg_type"], int(r["header_len"]), int(r["payload_len"])) for r in recs] == \
        [("192.0.2.1" if side == "a" else "192.0.2.2", cmd.decode(), 24 if c else 20, len(p))
         for side, cmd, p, c in sent]
    assert not tshark.fields(cap, ["frame.number"], dfilter="btcc.bad_checksum || btcc.continuation")
    status = [row[0] for row in tshark.fields(cap, ["btcc.checksum.status"], dfilter="bitcoin")]
    assert status == [("1" if c else "3") for _, _, _, c in sent]   # Good / Not present
    assert [row[0] for row in tshark.fields(cap, ["bitcoin.version.version"], dfilter="bitcoin.command == \"version\"")] == \
        [str(version_a), str(version_b)]


def test_bip324_records_add_up_to_the_captured_bytes_around_a_hole(tshark, tmp_path):
    """Without the listener's largest segment (editcap): the hole is shown where the dialer
    acknowledges past it, and each direction's records still add up to the TCP payload the
    capture holds, every byte of it BIP324's."""
    import subprocess
    t = truth(V2)
    rows = tshark.fields(BTC / V2, ["frame.number", "ip.src", "tcp.len"], dfilter="tcp.len > 0")
    drop = max((r for r in rows if r[1] == t["link"]["addr_b"]), key=lambda r: int(r[2]))[0]
    gap = tmp_path / "v2-gap.pcapng"
    subprocess.run(["editcap", str(BTC / V2), str(gap), drop], check=True, capture_output=True)
    recs = tshark.records(gap)
    held = tshark.fields(gap, ["ip.src", "tcp.len"], dfilter="tcp.len > 0")
    for role in ("dialer", "listener"):
        addr = peer_addr(t, role)
        assert sum(int(r["wire_len"]) for r in recs if r["src"] == addr) == \
            sum(int(n) for src, n in held if src == addr)
    assert {r["msg_type"] for r in recs} <= {"bip324 (encrypted)", "undecoded"}
    assert tshark.fields(gap, ["frame.number"], dfilter="p2pc.hole")
    assert not tshark.fields(gap, ["frame.number"], dfilter="btcc || bitcoin")


def test_a_2011_node_s_version_without_checksum(tshark):
    """nDPI's capture of a real 2011 mainnet connection (captures/noharm): each side's `version`
    has the 20-byte header of 0.3.x (no checksum field: the bytes after the length are the
    payload, not its double SHA-256), and the `verack`s after them are framed as verack."""
    cap = REPO / "captures" / "noharm" / "ndpi-bitcoin.pcap"
    segs = [bytes.fromhex(p) for (p,) in tshark.fields(cap, ["tcp.payload"], dfilter="tcp.len > 0")[:4]]
    length = lambda seg, at: struct.unpack_from("<I", seg, at + 16)[0]  # noqa: E731
    for seg in segs[:2]:
        assert seg[:4] == bytes.fromhex("f9beb4d9") and seg[4:16].rstrip(b"\0") == b"version"
        assert len(seg) == 20 + length(seg, 0)
        body = seg[20:]
        assert hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4] != body[:4]
    # The dialer's next segment: a verack (20 bytes, length 0), then getaddr and getblocks with
    # the checksum field the version both sides now speak has.
    third = segs[2]
    assert third[4:16].rstrip(b"\0") == b"verack" and length(third, 0) == 0
    assert third[24:36].rstrip(b"\0") == b"getaddr" and third[48:60].rstrip(b"\0") == b"getblocks"
    want = [("version", len(segs[0]), 20), ("version", len(segs[1]), 20), ("verack", 20, 20),
            ("getaddr", 24 + length(third, 20), 24), ("getblocks", 24 + length(third, 44), 24),
            ("verack", len(segs[3]), 20)]
    recs = tshark.records(cap)[:6]
    assert [(r["msg_type"], int(r["wire_len"]), int(r["header_len"])) for r in recs] == want
    assert not [e for e in tshark.expert(cap) if "hecksum" in e]
