"""Bitswap 1.0.0, 1.1.0 and 1.2.0 (plugin/ipfs/packet-bitswap.c).  The captures are real: two
go-libp2p hosts running boxo's Bitswap (captures/gen/make_bitswap.py), and the truth is what each
peer's Bitswap decoded from the other.  The 1.2.0 exchange is also over /noise with yamux and
over /quic-v1, decrypted with the key logs the peers wrote.  CIDs are computed here from the block data and the
files (hashlib, base64.b32encode, the base58 helper), never taken from p2pc's output; what the
real exchange never sends (dont-have, CIDv1 dag-pb, a full wantlist, every part in one
message, the unversioned ID) is in a crafted capture written from message.proto."""
from __future__ import annotations

import base64
import hashlib
import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from conftest import CAPTURES, REPO, p2pc_report, run_p2pc, tcp_pcap
from craft import ms, yamux
from test_libp2p import base58btc

BS = CAPTURES / "bitswap"
VERSIONS = ["1.2.0", "1.1.0", "1.0.0"]
# The 1.2.0 exchange over encrypted transports: capture name -> the pref its key log goes to
# (Noise keys in the WireGuard format, QUIC's TLS secrets in the NSS format).
ENCRYPTED = {"1.2.0-noise": "libp2p_noise.keylog_file", "1.2.0-quic": "tls.keylog_file"}
# go-bitswap v0.2.20 over adlrocha's go-libp2p fork, the compression transport off and on
# (captures/gen/make_compression.py): comp-bitswap-<transport>
COMP = CAPTURES / "libp2p-compression"
TRANSPORTS = ["off", "gzip", "cbrotli"]
CHUNK = 16384   # the generator's chunker


def truth(version: str) -> dict:
    return json.loads((BS / f"bitswap-{version}.truth.json").read_text())


def cap(version: str) -> str:
    return str(BS / f"bitswap-{version}.pcapng")


def keys(tshark, version: str, side: str = "fetcher") -> list[str]:
    """The tshark options that decrypt `version`'s capture with one peer's key log (none for
    the plaintext ones)."""
    if version not in ENCRYPTED:
        return []
    path = BS / truth(version)["keys"][side]
    return ["-o", f"{ENCRYPTED[version]}:{tshark.ws.readable(path)}"]


# ---- CIDs from their definition (multiformats/cid, multibase, multihash) ----
def uvarint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def cid_string(version: int, codec: int, data: bytes) -> str:
    """The CID of `data` hashed with sha2-256: CIDv0 base58btc, CIDv1 "b" + RFC 4648 base32."""
    mh = b"\x12\x20" + hashlib.sha256(data).digest()
    if version == 0:
        return base58btc(mh)
    return "b" + base64.b32encode(uvarint(1) + uvarint(codec) + mh).decode().lower().rstrip("=")


def test_cid_helper_matches_known_vectors():
    # The empty raw block and the empty UnixFS directory, as every IPFS implementation names them.
    assert cid_string(1, 0x55, b"") == "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
    assert cid_string(0, 0x70, bytes.fromhex("0a020801")) == "QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn"


# ---- the capture's messages, one dict per Bitswap message (PDML keeps them apart) ----
def field(el, name):
    return next((f for f in el.iter("field") if f.get("name") == name), None)


def value(el, name, default):
    f = field(el, name)
    if f is None:
        return default
    show = f.get("show")
    # Booleans show as 1/0 up to 4.0 and as True/False from 4.2.
    return show in ("1", "True") if isinstance(default, bool) else type(default)(show)


def raw(el, name) -> bytes:
    f = field(el, name)
    return b"" if f is None else bytes.fromhex(f.get("value"))


def decoded(tshark, capture, two_pass: bool = False, extra: list[str] | None = None) -> list[dict]:
    args = (["-n", "-r", tshark.ws.readable(capture), "-Y", "bitswap", "-T", "pdml"] + (["-2"] if two_pass else [])
            + (extra or []))
    root = ET.fromstring(tshark.run(args).stdout)
    out = []
    for pkt in root.iter("packet"):
        src = value(pkt, "ip.src", "")
        for p in pkt.iter("proto"):
            if p.get("name") != "bitswap":
                continue
            kids = lambda n: [f for f in p.iter("field") if f.get("name") == n]  # noqa: E731
            wl = field(p, "bitswap.wantlist")
            out.append({
                "src": src,
                "size": value(p, "bitswap.length", 0),
                "full": value(p, "bitswap.wantlist.full", False),
                "wantlist_field": wl is not None,
                "wantlist": sorted((value(e, "bitswap.wantlist.entry.cid", ""),
                                    value(e, "bitswap.wantlist.entry.priority", 0),
                                    value(e, "bitswap.wantlist.entry.cancel", False),
                                    ["block", "have"][value(e, "bitswap.wantlist.entry.want_type", 0)],
                                    value(e, "bitswap.wantlist.entry.send_dont_have", False))
                                   for e in kids("bitswap.wantlist.entry")),
                "blocks": sorted((value(b, "bitswap.block.cid", ""), value(b, "bitswap.block.size", 0))
                                 for b in kids("bitswap.block")),
                "block_data": [(raw(b, "bitswap.block.prefix"), raw(b, "bitswap.block.data"),
                                value(b, "bitswap.block.cid", "")) for b in kids("bitswap.block")],
                "presences": sorted((value(x, "bitswap.presence.cid", ""),
                                     ["have", "dont_have"][value(x, "bitswap.presence.type", 0)])
                                    for x in kids("bitswap.presence")),
                "pending_bytes": value(p, "bitswap.pending_bytes", 0),
            })
    return out


def canonical(m: dict) -> tuple:
    return (m["size"], m["full"], tuple(sorted(tuple(e) if isinstance(e, (list, tuple)) else
                                               (e["cid"], e["priority"], e["cancel"], e["want_type"], e["send_dont_have"])
                                               for e in m["wantlist"])),
            tuple(sorted(tuple(b) if isinstance(b, (list, tuple)) else (b["cid"], b["size"]) for b in m["blocks"])),
            tuple(sorted(tuple(x) if isinstance(x, (list, tuple)) else (x["cid"], x["type"]) for x in m["presences"])),
            m["pending_bytes"])


def msg_type(m: dict) -> str:
    parts = [n for n, k in (("blocks", "blocks"), ("wantlist", "wantlist"), ("presences", "presences")) if m[k]]
    return "+".join(parts) or "empty"


@pytest.mark.parametrize("two_pass", [False, True])
@pytest.mark.parametrize("version", VERSIONS + list(ENCRYPTED))
def test_every_message_is_what_the_peer_received(tshark, version, two_pass):
    """Each direction's messages, field by field (CIDs, priorities, cancels, want types,
    sendDontHave, full, blocks and their sizes, presences, pendingBytes, the protobuf length),
    are the messages the other peer's Bitswap decoded: the same multiset, in one pass or two;
    over Noise and QUIC too, decrypted with the fetcher's key log."""
    t = truth(version)
    got = decoded(tshark, cap(version), two_pass, keys(tshark, version))
    for sender, receiver in (("addr_b", "received_by_a"), ("addr_a", "received_by_b")):
        mine = Counter(canonical(m) for m in got if m["src"] == t["link"][sender])
        want = Counter(canonical(m) for m in t[receiver])
        assert mine == want, (sender, mine - want, want - mine)


def test_the_real_exchange_uses_what_each_version_has():
    """So that the comparison above covers them: 1.2.0 sends want-have, sendDontHave, cancels,
    a presence and pendingBytes; 1.1.0 and 1.0.0 only want-block and no presence (boxo's 1.1.0
    serializer still sends pendingBytes, 1.0.0's does not); 1.0.0 only CIDv0 blocks."""
    for version in ("1.2.0", *ENCRYPTED):
        t = truth(version)
        entries = [e for m in t["received_by_b"] for e in m["wantlist"]]
        assert {e["want_type"] for e in entries} == {"block", "have"}
        assert any(e["cancel"] for e in entries) and any(e["send_dont_have"] for e in entries)
        assert any(m["presences"] for m in t["received_by_a"])
        assert any(m["pending_bytes"] for m in t["received_by_a"])
    for version in ("1.1.0", "1.0.0"):
        t = truth(version)
        assert {e["want_type"] for m in t["received_by_b"] for e in m["wantlist"]} == {"block"}
        assert not any(m["presences"] for m in t["received_by_a"])
        assert any(m["pending_bytes"] for m in t["received_by_a"]) == (version == "1.1.0")
    assert all(b["cid"].startswith("Qm") for r in truth("1.0.0")["files"] for b in r["blocks"])


@pytest.mark.parametrize("version", list(ENCRYPTED))
def test_the_providers_key_log_decrypts_the_same_messages(tshark, version):
    """Either peer's key log decrypts the connection: the provider's gives the messages the
    fetcher's does."""
    fetcher = decoded(tshark, cap(version), extra=keys(tshark, version))
    provider = decoded(tshark, cap(version), extra=keys(tshark, version, "provider"))
    assert fetcher and [canonical(m) for m in provider] == [canonical(m) for m in fetcher]


def test_the_encrypted_captures_are_what_they_say():
    """The Noise capture is TCP with /noise and yamux, the QUIC one /quic-v1 with no muxer, both
    the 1.2.0 exchange of the same two files as the plaintext capture, on the pinned versions."""
    plain = truth("1.2.0")
    for version, (transport, security, muxer) in {"1.2.0-noise": ("tcp", "/noise", "/yamux/1.0.0"),
                                                  "1.2.0-quic": ("udp", "/quic-v1", None)}.items():
        t = truth(version)
        assert (t["transport"], t["security"], t["muxer"], t["protocol"]) == \
            (transport, security, muxer, "/ipfs/bitswap/1.2.0")
        assert t["versions"] == {"boxo": "v0.39.0", "go-libp2p": "v0.48.0", "quic-go": "v0.59.0"}
        assert t["files"] == plain["files"]
        assert all((BS / k).stat().st_size for k in t["keys"].values())


@pytest.mark.parametrize("version", list(ENCRYPTED))
def test_without_keys_no_bitswap_is_decoded(tshark, version):
    """Without the key log the encrypted exchange yields no Bitswap message and no record, and
    tshark reads the whole capture cleanly, saying what key it lacks."""
    assert not tshark.fields(cap(version), ["frame.number"], dfilter="bitswap")
    assert not [r for r in tshark.records(cap(version)) if r["proto"] == "bitswap"]
    tshark.read_whole(cap(version), {"1.2.0-noise": "libp2p", "1.2.0-quic": "QUIC"}[version])
    pref = ENCRYPTED[version]
    assert any(pref in m for m in tshark.expert(cap(version))), pref


def test_the_docs_table_is_the_truths():
    """docs/bitswap.md's table of the captures (messages, entries, blocks each way) is the
    truth files', row by row."""
    doc = (REPO / "docs" / "bitswap.md").read_text().split("| capture | fetcher → provider | provider → fetcher |\n", 1)[1]
    rows = [[c.strip() for c in l.strip("|").split("|")] for l in doc.split("\n\n", 1)[0].splitlines()[1:]]
    want = []
    for version in VERSIONS + list(ENCRYPTED):
        t = truth(version)
        entries = [e for m in t["received_by_b"] for e in m["wantlist"]]
        have, cancels = sum(e["want_type"] == "have" for e in entries), sum(e["cancel"] for e in entries)
        blocks = [b for m in t["received_by_a"] for b in m["blocks"]]
        presences = sum(len(m["presences"]) for m in t["received_by_a"])
        want.append([f"bitswap-{version}",
                     f"{len(t['received_by_b'])} messages, {len(entries)} entries ("
                     + (f"{have} want-have, " if have else "") + f"{cancels} cancels)",
                     f"{len(t['received_by_a'])} messages, {len(blocks)} blocks ({sum(b['size'] for b in blocks):,} bytes"
                     + (": dag-pb leaves" if version == "1.0.0" else "") + ")"
                     + (f", {presences} presence" + ("s" if presences > 1 else "") if presences else "")])
    assert rows == want


@pytest.mark.parametrize("version", VERSIONS + list(ENCRYPTED))
def test_block_cids_are_their_data_hashed(tshark, version):
    """Every block's CID is its prefix's version and codec with the sha2-256 of the data shown
    (1.0.0: CIDv0); the provider's blocks all arrive, and the raw leaves are the files' 16 KiB
    chunks in order, over Noise and QUIC as over plaintext."""
    t = truth(version)
    blocks = [b for m in decoded(tshark, cap(version), extra=keys(tshark, version)) for b in m["block_data"]]
    for prefix, data, cid in blocks:
        if version == "1.0.0":
            assert prefix == b"" and cid == cid_string(0, 0x70, data)
        else:
            p = prefix
            assert p[0] in (0, 1) and p[-2:] == b"\x12\x20"
            assert cid == cid_string(p[0], p[1], data)
    assert sorted({c for _, _, c in blocks}) == sorted(b["cid"] for f in t["files"] for b in f["blocks"])
    if version != "1.0.0":
        by_cid = {c: d for _, d, c in blocks}
        for f in t["files"]:
            text = (REPO / f["file"]).read_bytes()
            chunks = [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)]
            leaves = [b["cid"] for b in f["blocks"] if b["cid"].startswith("bafk")]
            assert leaves == [cid_string(1, 0x55, c) for c in chunks]
            assert b"".join(by_cid[c] for c in leaves) == text


@pytest.mark.parametrize("version", VERSIONS + list(ENCRYPTED))
def test_each_message_is_a_batch_of_its_items(tshark, version):
    """One record per message: msg_type says what it carries (an empty wantlist field is no
    wantlist), batch_count its entries + blocks + presences, payload its protobuf bytes."""
    t = truth(version)
    recs = [r for r in tshark.records(cap(version), extra=keys(tshark, version)) if r["proto"] == "bitswap"]
    for sender, receiver in (("addr_b", "received_by_a"), ("addr_a", "received_by_b")):
        mine = Counter((r["msg_type"], int(r["batch_count"]), int(r["payload_len"]), int(r["raw_len"]))
                       for r in recs if r["src"] == t["link"][sender])
        want = Counter((msg_type(m), max(1, len(m["wantlist"]) + len(m["blocks"]) + len(m["presences"])),
                        m["size"], m["size"]) for m in t[receiver])
        assert mine == want
    for r in recs:
        size = int(r["payload_len"])
        assert int(r["wire_len"]) == int(r["header_len"]) + size and int(r["header_len"]) >= len(uvarint(size))
    blocks_only = [m for m in decoded(tshark, cap(version), extra=keys(tshark, version))
                   if m["blocks"] and not m["wantlist"]]
    assert blocks_only and all(m["wantlist_field"] for m in blocks_only)   # boxo always sends the field


# ---- the seed's exchange: go-bitswap over the compression transport ----
def comp_truth(transport: str) -> dict:
    return json.loads((COMP / f"comp-bitswap-{transport}.truth.json").read_text())


def comp_cap(transport: str) -> str:
    return str(COMP / f"comp-bitswap-{transport}.pcapng")


@pytest.mark.parametrize("two_pass", [False, True])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_message_inside_the_compression_transport_is_what_the_peer_received(tshark, transport, two_pass):
    """Off, gzip and cbrotli: each direction's Bitswap messages, field by field (CIDs, wants,
    cancels, blocks and sizes, presences, pendingBytes, protobuf length), are those the other
    peer's go-bitswap decoded, in one pass or two; every block the provider serves arrives, each
    CID its data hashed, the leaves the files' chunks."""
    t = comp_truth(transport)
    got = decoded(tshark, comp_cap(transport), two_pass)
    for sender, receiver in (("addr_b", "received_by_a"), ("addr_a", "received_by_b")):
        mine = Counter(canonical(m) for m in got if m["src"] == t["link"][sender])
        want = Counter(canonical(m) for m in t[receiver])
        assert mine == want, (sender, mine - want, want - mine)
    blocks = [b for m in got for b in m["block_data"]]
    for prefix, data, cid in blocks:
        assert cid == cid_string(prefix[0], prefix[1], data)
    assert sorted(c for _, _, c in blocks) == sorted(b["cid"] for f in t["files"] for b in f["blocks"])
    by_cid = {c: d for _, d, c in blocks}
    for f in t["files"]:
        text = (REPO / f["file"]).read_bytes()
        leaves = [b["cid"] for b in f["blocks"] if b["cid"].startswith("bafk")]
        assert b"".join(by_cid[c] for c in leaves) == text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_messages_inside_the_compression_transport_are_batches_with_its_codec(tshark, transport):
    """One record per message, its msg_type and batch_count from the truth, its codec the
    transport's stream."""
    t = comp_truth(transport)
    recs = [r for r in tshark.records(comp_cap(transport)) if r["proto"] == "bitswap"]
    assert {r["codec"] for r in recs} == {t["codec"]}
    for sender, receiver in (("addr_b", "received_by_a"), ("addr_a", "received_by_b")):
        mine = Counter((r["msg_type"], int(r["batch_count"])) for r in recs if r["src"] == t["link"][sender])
        want = Counter((msg_type(m), max(1, len(m["wantlist"]) + len(m["blocks"]) + len(m["presences"])))
                       for m in t[receiver])
        assert mine == want


def tcp_payload(tshark, capture: str, src: str | None = None) -> int:
    """The capture's TCP payload bytes (tcp.len), of one sender or all."""
    rows = tshark.fields(capture, ["ip.src", "tcp.len"], dfilter="tcp.len > 0")
    return sum(int(n) for s, n in rows if src in (None, s))


@pytest.mark.once
@pytest.mark.parametrize("transport", ["gzip", "cbrotli"])
def test_compare_gives_the_seeds_bandwidth_table_with_the_model_within_half_a_percent(tshark, transport):
    """`p2pc compare` of the exchange without the transport and with it: the bytes without and
    with compression per message type and for all, as the seed's table.  Measured savings are
    the captures' own TCP payload bytes (tcp.len) off less on; the model's (from the compressed
    capture alone) are within 0.5 % of them for all and for each message type's own savings
    (both runs' bytes outside messages counted by the compression layer's rule, the runs made
    to send the same messages).  The figures are docs/bitswap.md's."""
    off, on = comp_cap("off"), comp_cap(transport)
    rep = p2pc_report("compare", off, on)
    table = next(s for s in rep["sections"] if s["name"] == "bandwidth")["rows"]
    rows = {r["family"]: r for r in table}
    measured = tcp_payload(tshark, off) - tcp_payload(tshark, on)
    total = rows["ALL"]
    assert (total["baseline_bytes"], total["compressed_bytes"]) == (tcp_payload(tshark, off), tcp_payload(tshark, on))
    assert abs(total["modelled_saved"] - measured) <= 0.005 * measured, total
    # The blocks travel from the provider: its direction's bytes bound the row from above, the
    # blocks' own protobuf messages (the truth) from below.
    t = comp_truth(transport)
    b = t["link"]["addr_b"]
    block_msgs = sum(m["size"] + len(uvarint(m["size"])) for m in comp_truth("off")["received_by_a"] if m["blocks"])
    blocks = rows["blocks"]
    assert block_msgs < blocks["baseline_bytes"] <= tcp_payload(tshark, off, b)
    assert blocks["compressed_bytes"] <= tcp_payload(tshark, on, b)
    assert abs(blocks["modelled_saved"] - blocks["measured_saved"]) <= 0.005 * blocks["measured_saved"], blocks
    # Every row that is a message type, and connection setup, within 0.5 % of its own savings
    # (both runs' bytes given by the unit that completed each message, not by TCP segment:
    # docs/bitswap.md); undecoded is no message (closing frames, the gzip trailer), no model.
    for r in table:
        if r["family"] == "undecoded":
            continue
        assert abs(r["modelled_saved"] - r["measured_saved"]) <= 0.005 * abs(r["measured_saved"]), r
    assert sum(r["measured_saved"] for r in table if r["family"] != "ALL") == pytest.approx(measured, abs=len(table))
    assert 0.55 < measured / tcp_payload(tshark, off) < 0.7     # a text dataset: more than half saved
    # docs/bitswap.md's table for this transport is this one, figure by figure.
    doc = (REPO / "docs" / "bitswap.md").read_text().split(f"(comp-bitswap-{transport}):\n\n", 1)[1]
    lines = doc.split("\n\n", 1)[0].splitlines()[2:]
    cols = ["baseline_bytes", "compressed_bytes", "measured_saved", "measured_saved_pct", "modelled_saved",
            "model_error_pct"]
    assert [[c.strip() for c in l.strip("|").split("|")] for l in lines] == [
        [r["proto"], r["family"], *(f"{r[c]:,}" if isinstance(r[c], int) else f"{r[c]:.2f}" for c in cols)]
        for r in table]


def in_wire_order(tshark, capture: str) -> Counter:
    """The capture's Bitswap messages, each as its msg_type and its parts in the order they
    are on the wire (two messages with the same parts in the same order are the same protobuf
    bytes), from the dissector's fields."""
    root = ET.fromstring(tshark.run(["-n", "-r", tshark.ws.readable(capture), "-Y", "bitswap", "-T", "pdml"]).stdout)
    out = Counter()
    for p in (p for p in root.iter("proto") if p.get("name") == "bitswap"):
        parts = tuple(tuple(f.get("show") for f in el.iter("field") if f.get("name", "").count(".") >= 2)
                      for el in p.iter("field") if el.get("name") in
                      ("bitswap.wantlist.entry", "bitswap.block", "bitswap.presence"))
        m = {k: [f for f in p.iter("field") if f.get("name") == n] for k, n in
             (("wantlist", "bitswap.wantlist.entry"), ("blocks", "bitswap.block"), ("presences", "bitswap.presence"))}
        out[(msg_type(m), value(p, "bitswap.length", 0), value(p, "bitswap.pending_bytes", 0), parts)] += 1
    return out


@pytest.mark.once
@pytest.mark.parametrize("transport", ["gzip", "cbrotli"])
def test_diff_matches_the_messages_the_runs_without_and_with_the_transport_share(tshark, transport):
    """`p2pc diff` of the exchange without the transport and with it pairs each Bitswap message
    the two runs both sent (the same parts in the same order: the same protobuf bytes) and no
    other, though a record's raw_len on the compressed stream is its share of the decompressed
    stream, not its payload's length.  The runs share every Bitswap message (the generator
    fetches one block at a time: the truth)."""
    off, on = comp_cap("off"), comp_cap(transport)
    common = in_wire_order(tshark, off) & in_wire_order(tshark, on)
    want = Counter()
    for (mtype, *_), n in common.items():
        want[mtype] += n
    res = run_p2pc("diff", off, on, "--format", "json")
    assert res.returncode == 15, res.stderr          # the sides differ (docs/analyzer.md)
    rep = json.loads(res.stdout)
    got = {r["msg_type"]: r["matched"] for r in rep["rows"] if r["proto"] == "bitswap"}
    assert got == {t: want[t] for t in got}
    sent_off = Counter()
    for (mtype, *_), n in in_wire_order(tshark, off).items():
        sent_off[mtype] += n
    assert want["presences"] == 1 and want == sent_off, (want, sent_off)
    assert (f"- {transport}: {want['blocks']} of the {sent_off['blocks']} block messages and {want['wantlist']} "
            f"of the {sent_off['wantlist']} wantlists, and the presence\n") in (REPO / "docs" / "bitswap.md").read_text()
    # Each matched pair's content is one both peers' truths hold (canonical: parts sorted).
    t_off, t_on = comp_truth("off"), comp_truth(transport)
    both = {canonical(m) for r in ("received_by_a", "received_by_b") for m in t_off[r]} & \
        {canonical(m) for r in ("received_by_a", "received_by_b") for m in t_on[r]}
    assert sum(got.values()) <= sum(1 for m in t_off["received_by_a"] + t_off["received_by_b"] if canonical(m) in both)


# ---- a crafted exchange: what the real one lacks ----
def pb_field(number: int, value) -> bytes:
    if isinstance(value, bytes):
        return uvarint(number << 3 | 2) + uvarint(len(value)) + value
    return uvarint(number << 3) + uvarint(value & (2**64 - 1))


def entry(cid: bytes, priority: int, cancel=False, want_have=False, send_dont_have=False) -> bytes:
    return (pb_field(1, cid) + pb_field(2, priority) + (pb_field(3, 1) if cancel else b"") +
            (pb_field(4, 1) if want_have else b"") + (pb_field(5, 1) if send_dont_have else b""))


def framed(msg: bytes) -> bytes:
    return uvarint(len(msg)) + msg


def test_crafted_messages_cover_every_part(tshark, tmp_path):
    """A CIDv1 dag-pb want (bafy...) with a negative priority, a full wantlist, dont-have, a
    1.1.0 payload with all three parts in one message, 1.0.0 bare blocks on the unversioned ID,
    and a message of nothing but an empty wantlist and pendingBytes."""
    node, leaf = b"\x0a\x02\x08\x01", b"hello bitswap\n"
    cid_pb = uvarint(1) + uvarint(0x70) + b"\x12\x20" + hashlib.sha256(node).digest()
    cid_raw = uvarint(1) + uvarint(0x55) + b"\x12\x20" + hashlib.sha256(leaf).digest()
    cid_v0 = b"\x12\x20" + hashlib.sha256(node).digest()
    want = pb_field(1, pb_field(1, entry(cid_pb, -5, want_have=True, send_dont_have=True)) +
                    pb_field(1, entry(cid_v0, 7, cancel=True)) + pb_field(2, 1))
    reply = (pb_field(1, pb_field(1, entry(cid_raw, 1))) +
             pb_field(3, pb_field(1, bytes([1, 0x55, 0x12, 0x20])) + pb_field(2, leaf)) +
             pb_field(4, pb_field(1, cid_pb) + pb_field(2, 1)) + pb_field(5, 300))
    empty = pb_field(1, b"") + pb_field(5, 2)
    v0 = pb_field(1, b"") + pb_field(2, node)
    path = tmp_path / "bitswap-crafted.pcap"
    tcp_pcap(path, [("a", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
                    ("b", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
                    ("a", yamux(1, 1, ms("/multistream/1.0.0") + ms("/ipfs/bitswap/1.2.0") + framed(want))),
                    ("b", yamux(1, 2, ms("/multistream/1.0.0") + ms("/ipfs/bitswap/1.2.0") + framed(reply) + framed(empty))),
                    ("b", yamux(1, 4, ms("/multistream/1.0.0") + ms("/ipfs/bitswap") + framed(v0)))], syn="a")
    got = decoded(tshark, path)
    s_pb, s_raw, s_v0 = (cid_string(1, 0x70, node), cid_string(1, 0x55, leaf), cid_string(0, 0x70, node))
    assert s_pb.startswith("bafy") and s_raw.startswith("bafk") and s_v0.startswith("Qm")
    assert [canonical(m) for m in got] == [
        (len(want), True, ((s_v0, 7, True, "block", False), (s_pb, -5, False, "have", True)), (), (), 0),
        (len(reply), False, ((s_raw, 1, False, "block", False),), ((s_raw, len(leaf)),), ((s_pb, "dont_have"),), 300),
        (len(empty), False, (), (), (), 2),
        (len(v0), False, (), ((s_v0, len(node)),), (), 0),
    ]
    recs = [(r["msg_type"], r["batch_count"]) for r in tshark.records(path) if r["proto"] == "bitswap"]
    assert recs == [("wantlist", "2"), ("blocks+wantlist+presences", "3"), ("empty", "1"), ("blocks", "1")]
    assert not tshark.fields(path, ["frame.number"], dfilter="bitswap.malformed or bitswap.bad_cid or "
                             "bitswap.hash_unsupported or bitswap.truncated")


def test_what_does_not_decode_is_flagged(tshark, tmp_path):
    """A sha2-512 block gets the note and no CID, a presence whose CID is no CID bad_cid, a
    field running past its message malformed, a stream closed inside a message truncated."""
    sha512 = pb_field(3, pb_field(1, bytes([1, 0x55, 0x13, 0x40])) + pb_field(2, b"x"))
    bad_cid = pb_field(4, pb_field(1, b"\x02\x55\x12\x01\x00"))
    past_end = pb_field(1, b"") + b"\x1a\x7f\x00"
    path = tmp_path / "bitswap-flagged.pcap"
    tcp_pcap(path, [("a", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
                    ("b", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
                    ("a", yamux(1, 1, ms("/multistream/1.0.0") + ms("/ipfs/bitswap/1.2.0"))),
                    ("b", yamux(1, 2, ms("/multistream/1.0.0") + ms("/ipfs/bitswap/1.2.0") + framed(sha512) +
                                framed(bad_cid) + framed(past_end))),
                    ("b", yamux(4, 2, b"\x20" + pb_field(1, b"")))], syn="a")
    rows = tshark.fields(path, ["bitswap.block.cid", "bitswap.hash_unsupported", "bitswap.bad_cid",
                                "bitswap.malformed", "bitswap.truncated"], dfilter="bitswap")
    flagged = [[bool(c) for c in r] for r in rows]
    # Three messages end in the first frame, the truncated one at the FIN.
    assert flagged == [[False, True, True, True, False], [False, False, False, False, True]]
    assert [r["msg_type"] for r in tshark.records(path) if r["proto"] == "bitswap"] == \
        ["blocks", "presences", "empty", "empty"]


def payload_streams(capture: str) -> dict:
    """Each TCP direction's payload bytes in sequence order and where its segments end, from the
    capture itself (dpkt): {(src, sport): (bytes, [segment ends])}."""
    import dpkt
    segs: dict = {}
    with open(capture, "rb") as f:
        for _, buf in dpkt.pcapng.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data if isinstance(ip, dpkt.ip.IP) else None
            if tcp is None or not isinstance(tcp, dpkt.tcp.TCP):
                continue
            key = (socket_ntoa(ip.src), tcp.sport)
            if tcp.flags & dpkt.tcp.TH_SYN:
                segs[key] = {"isn": tcp.seq + 1, "data": {}}
            elif tcp.data:
                segs[key]["data"].setdefault(tcp.seq - segs[key]["isn"], bytes(tcp.data))
    out = {}
    for key, d in segs.items():
        data, ends = b"", []
        for off in sorted(d["data"]):
            assert off == len(data)         # no hole nor overlap in these captures
            data += d["data"][off]
            ends.append(len(data))
        out[key] = (data, ends)
    return out


def socket_ntoa(a: bytes) -> str:
    import socket
    return socket.inet_ntoa(a)


def test_a_close_in_a_messages_segment_goes_to_the_next_message(tshark):
    """In comp-bitswap-gzip the kernel sent the identify stream's yamux close (its own flush unit)
    in the same TCP segment as the flush unit that completed the identify message; in
    comp-bitswap-off it sent it in a segment of its own.  A message's bytes end where the unit
    that completed it ends, not its TCP segment: the record's unit_end is the end of the
    identify's flush unit (a sync-flush marker, from the capture's bytes), the close's unit
    (decompressed here with zlib: a 12-byte yamux header, FIN, the identify's stream) lies
    between it and the segment's end, and the next message of the direction takes it.  A rule
    by TCP frame would end the identify at the segment's end."""
    import zlib
    cap = comp_cap("gzip")
    streams = payload_streams(cap)
    recs = tshark.records(cap)
    shared = 0
    for i, r in enumerate(recs):
        if r["msg_type"] != "/ipfs/id/1.0.0":
            continue
        data, ends = streams[(r["src"], int(r["srcport"]))]
        end = int(r["unit_end"])
        seg_end = next(e for e in ends if e >= end)
        if seg_end == end:
            continue                        # the close came in a segment of its own
        shared += 1
        assert data[end - 4:end] == b"\0\0\xff\xff"     # the identify's unit ends at a sync flush
        unit = data[end:seg_end]
        assert unit.endswith(b"\0\0\xff\xff") and b"\0\0\xff\xff" not in unit[:-4]
        d = zlib.decompressobj(31)
        d.decompress(data[data.index(b"\x1f\x8b\x08"):end])
        close = d.decompress(unit)
        assert len(close) == 12 and close[0] == 0 and close[1] in (0, 1)
        assert int.from_bytes(close[2:4], "big") & 0x4                      # FIN
        assert int.from_bytes(close[4:8], "big") == int(r["mux_stream"])     # the identify's stream
        assert int.from_bytes(close[8:12], "big") == 0
        nxt = next(n for n in recs[i + 1:] if (n["src"], n["srcport"]) == (r["src"], r["srcport"]))
        assert int(nxt["unit_end"]) >= seg_end
        # The identify's compressed bytes stop at its unit; the next group of messages (those
        # its unit completed) has every byte from there to its unit's end, the close's included.
        group = [n for n in recs[i + 1:] if (n["src"], n["srcport"]) == (r["src"], r["srcport"])
                 and n["unit_end"] == nxt["unit_end"]]
        assert sum(int(n["wire_len"]) for n in group) == int(nxt["unit_end"]) - end
    assert shared >= 1, "no identify message whose close shares its TCP segment"


def test_a_repeated_segment_goes_to_the_message_its_bytes_belong_to(tshark, tmp_path):
    """A segment TCP sent twice (a retransmission) costs its message twice on the wire: a
    message's bytes end where its unit ends in the direction's TCP payload as the T lines count
    it, repeats included, so the copy of a segment in the middle of a block message (one that
    completes none) goes to the blocks row, not to the direction's tail."""
    import subprocess
    off = comp_cap("off")
    recs = tshark.records(off)
    completing = {int(r["frame"]) for r in recs}
    rows = [(int(f), s, int(n)) for f, s, n in
            tshark.fields(off, ["frame.number", "ip.src", "tcp.len"], dfilter="tcp.len > 0")]
    # A full segment of the provider's that completes nothing, right before one of its frames
    # that completes a block message and nothing else.
    only_blocks = {int(r["frame"]) for r in recs if "blocks" in r["msg_type"]} - \
        {int(r["frame"]) for r in recs if "blocks" not in r["msg_type"]}
    frame, length = next((f, n) for (f, s, n), (f2, s2, _) in zip(rows, rows[1:])
                         if f not in completing and f2 in only_blocks and s == s2 and n >= 1000)
    one, dup = tmp_path / "one.pcapng", tmp_path / "dup.pcapng"
    subprocess.run(["editcap", "-r", off, str(one), str(frame)], check=True, capture_output=True)
    subprocess.run(["mergecap", "-w", str(dup), off, str(one)], check=True, capture_output=True)
    assert tshark.fields(dup, ["frame.number"], dfilter="tcp.analysis.retransmission")
    def baseline(cap):
        rep = p2pc_report("compare", cap, comp_cap("gzip"))
        return {r["family"]: r["baseline_bytes"] for r in next(s for s in rep["sections"] if s["name"] == "bandwidth")["rows"]}
    before, after = baseline(off), baseline(str(dup))
    assert {f: after[f] - before[f] for f in before} == {**{f: 0 for f in before}, "blocks": length, "ALL": length}
