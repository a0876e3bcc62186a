"""libp2p (multistream, plaintext, yamux, mplex) and Ethereum ssz_snappy req/resp and gossip,
decoded by the real tshark from captures of real go-libp2p hosts.  Expected values come from
the source block files and the generator's truth files."""
from __future__ import annotations

import hashlib
import json
import struct

import pytest

from conftest import CAPTURES, DATA, dialer_listener

ETH = CAPTURES / "eth2"
# eth2-yamux-lf: captured where the listener's multistream header is the first payload.
MUXED = ["eth2-yamux", "eth2-mplex", "eth2-yamux-lf"]
ANY = "multistream || yamux || mplex || eth2 || gossipsub || libp2p_app"


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


def test_a_phase0_topics_message_id_has_no_topic(tshark, tmp_path):
    """specs/phase0/p2p-interface.md: message-id = SHA256(0x01000000 || ssz)[:20], no topic in
    it (Altair added it).  eth2-yamux's topic rewritten in place to phase0's mainnet digest
    b5303f2a; the expected ID computed here with hashlib from the source block."""
    t = truth("eth2-yamux")
    topic = t["gossip"]["topic"].encode()
    phase0 = topic.replace(b"/bba4da96/", b"/b5303f2a/")
    cap = tmp_path / "eth2-phase0.pcapng"
    cap.write_bytes((ETH / "eth2-yamux.pcapng").read_bytes().replace(topic, phase0))
    want = [hashlib.sha256(b"\x01\x00\x00\x00" + source(f)).hexdigest()[:40] for f in t["gossip"]["blocks"]]
    rows = tshark.fields(cap, ["eth2.gossip.message_id"], dfilter="eth2.gossip.message_id")
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
    # One record per block the generator sent, each as long as its source SSZ.
    sizes = sorted((DATA / "ethereum" / b["file"]).stat().st_size for b in truth("eth2-yamux")["blocks_by_range"])
    assert sorted(int(r["raw_len"]) for r in blocks) == sizes
    for r in blocks:
        assert r["codec"] == "snappy-framed"
        assert int(r["wire_len"]) == int(r["header_len"]) + int(r["payload_len"])
        assert int(r["payload_len"]) < int(r["raw_len"])
    assert {r["msg_type"] for r in recs} >= {"status/1 request", "status/1 response", "ping/1 request",
                                              "metadata/2 response", "goodbye/1 request", "gossip beacon_block"}


@pytest.mark.parametrize("name", MUXED + ["eth2-badcrc", "eth2-truncated", "eth2-broken"])
def test_one_pass_equals_two_pass(tshark, name):
    fields = ["frame.number", "multistream.message", "yamux.stream", "mplex.stream", "eth2.method",
              "eth2.ssz_length", "eth2.block.slot", "eth2.gossip.message_id", "p2pc.raw_len", "_ws.expert.message"]
    one = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter=ANY)
    two = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter=ANY, two_pass=True)
    assert one and one == two


def test_corrupted_crc_is_flagged(tshark):
    tshark.read_whole(ETH / "eth2-badcrc.pcapng", "eth2")
    rows = tshark.fields(ETH / "eth2-badcrc.pcapng", ["eth2.method", "eth2.direction"], dfilter="p2pc.spec.snappy.crc")
    assert rows == [["ping/1", "response"]]


def test_truncated_capture_keeps_what_completed(tshark):
    res = tshark.run(["-n", "-q", "-r", tshark.ws.readable(ETH / "eth2-truncated.pcapng"), "-z", "p2pc,records"])
    types = [l.split("\t")[9] for l in res.stdout.splitlines() if l.startswith("M\t") and l.split("\t")[8] == "eth2"]
    assert types[:2] == ["status/1 request", "status/1 response"]
    assert "gossip beacon_block" not in types


# What each of the broken session's ping answers must raise (main.go brokenPings).
BROKEN_EXPERT = {
    "bad_crc": {"p2pc.spec.snappy.crc"},
    "unskippable": {"p2pc.spec.snappy.unskippable"},
    "length_mismatch": {"p2pc.spec.eth2.length"},
    "too_long": {"p2pc.spec.eth2.too_long", "eth2.truncated", "p2pc.spec.eth2.length"},
    "compressed_too_long": {"p2pc.spec.eth2.compressed_length"},
    "decompress_failed": {"eth2.decompress_failed"},
    "trailing": {"eth2.trailing"},
    "truncated": {"eth2.truncated", "eth2.decompress_failed"},
}


def test_broken_chunks_raise_their_expert_items(tshark):
    """Real go-libp2p streams carrying malformed ssz_snappy: each answer its own expert item,
    the good answer around them none, and tshark exits 0."""
    t = truth("eth2-broken")
    cap = ETH / "eth2-broken.pcapng"
    tshark.read_whole(cap, "eth2")
    # Ping responses in stream order: one stream per ping.
    rows = tshark.fields(cap, ["frame.number", "yamux.stream", "eth2.method", "eth2.direction"],
                         dfilter='eth2.method == "ping/1"')
    streams = []
    for frame, ys, methods, dirs in rows:
        for m, d in zip(methods.split("|"), dirs.split("|")):
            if d == "response":
                s = [x for x in ys.split("|") if x][-1]
                if s not in streams:
                    streams.append(s)
    assert len(streams) == len(t["broken_pings"])
    got = {s: set() for s in streams}
    for abbrev in set().union(*BROKEN_EXPERT.values()):
        for frame, ys in tshark.fields(cap, ["frame.number", "yamux.stream"],
                                       dfilter=f'{abbrev} && eth2.method == "ping/1"'):
            got[[x for x in ys.split("|") if x][-1]].add(abbrev)
    assert [got[s] for s in streams] == [BROKEN_EXPERT[n] for n in t["broken_pings"]]
    assert not tshark.fields(cap, ["frame.number"], dfilter='_ws.expert && eth2.method == "status/1"')


def test_gossip_that_is_not_snappy(tshark):
    """Decompression fails: expert item, and the message-id falls back to domain 0x00000000
    over the raw data (consensus-specs altair p2p-interface.md)."""
    t = truth("eth2-broken")
    topic = t["gossip"]["topic"].encode()
    raw = t["gossip"]["invalid_data"].encode()
    want = hashlib.sha256(b"\x00\x00\x00\x00" + struct.pack("<Q", len(topic)) + topic + raw).hexdigest()[:40]
    rows = tshark.fields(ETH / "eth2-broken.pcapng", ["eth2.gossip.message_id", "gossipsub.data"],
                         dfilter="eth2.decompress_failed && gossipsub")
    assert rows == [[want, raw.hex()]]


def block_header(raw: bytes) -> tuple[int, int, str, str]:
    """slot, proposer_index, parent_root, state_root of a SignedBeaconBlock, read here from
    the SSZ: offset u32 to the message, then slot u64, proposer u64, two 32-byte roots."""
    off = struct.unpack_from("<I", raw, 0)[0]
    slot, proposer = struct.unpack_from("<QQ", raw, off)
    return slot, proposer, raw[off + 16:off + 48].hex(), raw[off + 48:off + 80].hex()


@pytest.mark.parametrize("name", MUXED)
def test_signed_beacon_block_fields(tshark, name):
    t = truth(name)
    fields = ["eth2.block.slot", "eth2.block.proposer_index", "eth2.block.parent_root", "eth2.block.state_root"]
    rows = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter="eth2.block.slot")
    got = [(int(r[0]), int(r[1]), r[2], r[3]) for r in rows]
    want = [block_header(source(b["file"])) for b in t["blocks_by_range"]] + \
           [block_header(source(f)) for f in t["gossip"]["blocks"]]
    assert got == want


@pytest.mark.parametrize("name", MUXED)
def test_small_messages_ssz(tshark, name):
    """Status, Ping, Goodbye, MetaData and the BlocksByRange request, against what the
    generator sent."""
    ssz = truth(name)["ssz"]
    cap = ETH / f"{name}.pcapng"

    def one(dfilter, fields):
        rows = tshark.fields(cap, fields, dfilter=dfilter)
        return [r for r in rows]

    st = one('eth2.method == "status/1"', ["eth2.status.fork_digest", "eth2.status.finalized_epoch", "eth2.status.head_slot"])
    assert st == [[ssz["status"]["fork_digest"], str(ssz["status"]["finalized_epoch"]), str(ssz["status"]["head_slot"])]] * 2
    pings = one('eth2.method == "ping/1"', ["eth2.direction", "eth2.seq_number"])
    assert pings == [["request", str(ssz["ping_request"])], ["response", str(ssz["ping_response"])]]
    assert one('eth2.method == "goodbye/1"', ["eth2.goodbye_reason"]) == [[str(ssz["goodbye_reason"])]]
    md = ssz["metadata"]
    assert one('eth2.method == "metadata/2"', ["eth2.seq_number", "eth2.metadata.attnets", "eth2.metadata.syncnets"]) == \
        [[str(md["seq_number"]), md["attnets"], md["syncnets"]]]
    br = ssz["by_range"]
    assert one('eth2.range.start_slot', ["eth2.range.start_slot", "eth2.range.count", "eth2.range.step"]) == \
        [[str(br["start_slot"]), str(br["count"]), str(br["step"])]]


@pytest.mark.parametrize("name", MUXED)
def test_gossipsub_subscriptions_and_control(tshark, name):
    t = truth(name)
    cap = ETH / f"{name}.pcapng"
    subs = tshark.fields(cap, ["ip.src", "gossipsub.subscribe", "gossipsub.topic"], dfilter="gossipsub.subscribe")
    assert sorted(r[0] for r in subs) == sorted([t["link"]["addr_a"], t["link"]["addr_b"]])
    assert all(r[1] == "1" and t["gossip"]["topic"] in r[2].split("|") for r in subs)
    grafts = tshark.fields(cap, ["ip.src"], dfilter="gossipsub.control.graft > 0")
    assert sorted(r[0] for r in grafts) == sorted([t["link"]["addr_a"], t["link"]["addr_b"]])
    # go-libp2p-pubsub announces IDONTWANT for large messages it publishes (gossipsub 1.2)
    assert tshark.fields(cap, ["ip.src"], dfilter="gossipsub.control.idontwant > 0")


@pytest.mark.parametrize("name", MUXED)
def test_one_pass_without_replay_state_decodes_the_same(tshark, name):
    """p2pc analyze runs tshark once with p2pc.keep_replay off (flat memory): the records are
    those of a two-pass run, which keeps and replays every frame's state."""
    off = ["-o", "p2pc.keep_replay:FALSE"]
    assert tshark.records(ETH / f"{name}.pcapng", extra=off) == tshark.records(ETH / f"{name}.pcapng", two_pass=True)


@pytest.mark.parametrize("name", ["eth2-yamux-gap", "eth2-noise-yamux-gap"])
def test_a_hole_shows_where_the_receiver_first_acknowledges_past_it(tshark, name):
    """The TCP ledger reads every frame's acknowledgement, a bare ACK's too: the hole shows
    (p2pc.hole, once) in the first frame where the receiver acknowledges bytes past the segment
    the capture lost, as the source capture's own sequence numbers give it, and the sender's
    direction goes on there, not at the receiver's next data or 1 MiB later."""
    gap = truth(name)
    made = ETH / gap["made_from"]
    lost = int(gap["removed_frame"])
    (seq, src, dst, sport, dport), = tshark.fields(made, ["tcp.seq", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport"],
                                                   dfilter=f"frame.number == {lost}")
    c = ETH / gap["capture"]
    # editcap renumbers: frames from the removed one on are one lower.
    acks = tshark.fields(c, ["frame.number"], dfilter=f"ip.src == {dst} && tcp.srcport == {dport} && tcp.ack > {seq} "
                                                       f"&& frame.number >= {lost}")
    extra = (["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(ETH / gap['keys']['dialer'])}"]
             if "keys" in gap else None)
    assert tshark.fields(c, ["frame.number", "ip.src"], dfilter="p2pc.hole", extra=extra) == [[acks[0][0], dst]]
    fed = tshark.fields(c, ["frame.number"], dfilter=f"frame.number == {acks[0][0]} && p2pc.msg_type", extra=extra)
    assert fed, "the sender's held bytes are fed where the hole is confirmed"


def test_yamux_resynchronises_after_a_hole(tshark):
    """A segment of A's gossip block is missing from the capture: the gossip stream it cut
    gives up (its bytes counted as undecoded), yamux finds the next frame header, and the
    goodbye/1 request A sends on a new stream after the hole decodes to its source SSZ; B's
    direction decodes exactly as in the whole capture."""
    gap, whole = truth("eth2-yamux-gap"), truth("eth2-yamux")
    a, b = whole["link"]["addr_a"], whole["link"]["addr_b"]
    c = ETH / "eth2-yamux-gap.pcapng"
    # editcap renumbers: frames from the removed one on are one lower.
    after = gap["removed_frame"]
    assert tshark.fields(c, ["ip.src"], dfilter="p2pc.hole") == [[b]]
    recs = tshark.records(c)
    later = [r for r in recs if r["src"] == a and int(r["frame"]) >= after]
    assert [r["msg_type"] for r in later if r["msg_type"] != "undecoded"] == ["goodbye/1 request"]
    assert sum(int(r["wire_len"]) for r in later if r["msg_type"] == "undecoded") > 2 * 400_000
    bye = tshark.fields(c, ["eth2.goodbye_reason"], dfilter='eth2.method == "goodbye/1"')
    assert bye == [[str(whole["ssz"]["goodbye_reason"])]]
    assert not tshark.fields(c, ["frame.number"], dfilter=f"eth2.gossip.message_id && ip.src == {a} && frame.number >= {after}")
    key = lambda r: (r["msg_type"], r["codec"], r["wire_len"], r["raw_len"])  # noqa: E731
    full = tshark.records(ETH / "eth2-yamux.pcapng")
    assert [key(r) for r in recs if r["src"] == b] == [key(r) for r in full if r["src"] == b]
    assert tshark.records(c) == tshark.records(c, two_pass=True)


ROLE_CASES = [("eth2-yamux", None), ("eth2-mplex", None), ("eth2-yamux-lf", None),
              ("eth2-noise-yamux", "dialer"), ("eth2-noise-yamux-lf", "dialer"), ("eth2-noise-yamux-lf", "listener"),
              ("eth2-tls-yamux", "dialer")]


@pytest.mark.parametrize("two_pass", [False, True])
@pytest.mark.parametrize("name,keys", ROLE_CASES)
def test_requests_are_the_dialers_whoever_speaks_first(tshark, name, keys, two_pass):
    """Roles come from facts (the TCP SYN, the multistream proposal, the Noise initiator), never
    from the first side to send: every request is the dialer's, every response the listener's,
    each block response decompresses to its source block, and no role is left unknown."""
    t = truth(name)
    cap = ETH / f"{name}.pcapng"
    dialer, listener = dialer_listener(t)
    first = tshark.fields(cap, ["ip.src"], dfilter="tcp.len > 0")[0][0]
    assert first == (listener if t["link"].get("captured_at") == "listener" else dialer)
    extra = []
    if keys:
        path = ETH / t["keys"][keys]
        extra = ["-o", f"{'tls' if 'tls' in name else 'libp2p_noise'}.keylog_file:{tshark.ws.readable(path)}"]
    recs = [r for r in tshark.records(cap, two_pass=two_pass, extra=extra) if r["proto"] == "eth2"]
    reqs = [r for r in recs if r["msg_type"].endswith(" request")]
    resps = [r for r in recs if r["msg_type"].endswith(" response")]
    assert {r["msg_type"].split()[0] for r in reqs} == set(t["requests"]) - {"metadata/2"}   # no body
    assert reqs and all(r["src"] == dialer for r in reqs)
    assert resps and all(r["src"] == listener for r in resps)
    blocks = [int(r["raw_len"]) for r in resps if r["msg_type"] == "beacon_blocks_by_range/2 response"]
    if "blocks_by_range" in t:
        assert blocks[:3] == [len(source(b["file"])) for b in t["blocks_by_range"]]
    rows = tshark.fields(cap, ["frame.number"], dfilter="libp2p.role.unknown || libp2p.role.conflict", extra=extra)
    assert rows == []



GOSSIP_TOPIC = b"/eth2/bba4da96/beacon_block/ssz_snappy"


@pytest.mark.parametrize("topic,msg_type", [
    (b"/eth2/00000000/beacon_block/ssz_snappy", "gossip beacon_block"),      # another fork digest
    (b"/eth2/bba4da96/beacon_attestation_7/ss", "gossip beacon_attestation"),  # a subnet
    (b"/eth2/bba4da96/beacon_bl_ck/ssz_snappy", "unknown"),                  # no topic of eth2's
    # specs/gloas/p2p-interface.md, specs/heze/p2p-interface.md: new topics, named at a Fulu digest too
    (b"/eth2/cc2c5cdb/execution_payload_bid/s", "gossip execution_payload_bid"),
    (b"/eth2/cc2c5cdb/proposer_preferences/ss", "gossip proposer_preferences"),
    (b"/eth2/cc2c5cdb/inclusion_list/ssz_snap", "gossip inclusion_list"),
])
def test_a_gossip_topic_is_counted_by_its_name(tshark, tmp_path, topic, msg_type):
    """A topic is counted under its name, whatever its fork digest and subnet; a name eth2 does
    not define is `unknown`, with the note, and stays in gossipsub.topic as sent.  (The topic is
    rewritten in place, at the same length, in eth2-yamux's gossip messages.)"""
    src = CAPTURES / "eth2" / "eth2-yamux.pcapng"
    data = src.read_bytes()
    assert len(topic) == len(GOSSIP_TOPIC) and GOSSIP_TOPIC in data
    cap = tmp_path / "eth2-topic.pcapng"
    cap.write_bytes(data.replace(GOSSIP_TOPIC, topic))
    want = [r["msg_type"] for r in tshark.records(src)]
    got = [r["msg_type"] for r in tshark.records(cap)]
    assert got == [msg_type if t == "gossip beacon_block" else t for t in want]
    assert "gossip beacon_block" in want
    sent = {t for r in tshark.fields(cap, ["gossipsub.topic"], dfilter="gossipsub.topic") for t in r[0].split("|")}
    assert topic.decode() in sent
    noted = [t for t in tshark.expert(cap) if "counted as unknown" in t]
    assert noted == ([f'Topic "{topic.decode()}" is not a message type of the protocol: counted as unknown']
                     * want.count("gossip beacon_block") if msg_type == "unknown" else [])



# ---- the current consensus specs, checked against them (#25) ----
# Crafted captures: one TCP connection, multistream-select, yamux, one stream per message.
from conftest import tcp_pcap  # noqa: E402
from craft import ms, yamux  # noqa: E402

# Every req/resp protocol ID, as the spec file writes it (the encoding `ssz_snappy` follows).
SPEC_METHODS = {
    "specs/phase0/p2p-interface.md": [
        "/eth2/beacon_chain/req/status/1/", "/eth2/beacon_chain/req/goodbye/1/",
        "/eth2/beacon_chain/req/beacon_blocks_by_range/1/", "/eth2/beacon_chain/req/beacon_blocks_by_root/1/",
        "/eth2/beacon_chain/req/ping/1/", "/eth2/beacon_chain/req/metadata/1/"],
    "specs/altair/p2p-interface.md": [
        "/eth2/beacon_chain/req/beacon_blocks_by_range/2/", "/eth2/beacon_chain/req/beacon_blocks_by_root/2/",
        "/eth2/beacon_chain/req/metadata/2/"],
    "specs/altair/light-client/p2p-interface.md": [
        "/eth2/beacon_chain/req/light_client_bootstrap/1/", "/eth2/beacon_chain/req/light_client_updates_by_range/1/",
        "/eth2/beacon_chain/req/light_client_finality_update/1/",
        "/eth2/beacon_chain/req/light_client_optimistic_update/1/"],
    "specs/deneb/p2p-interface.md": [
        "/eth2/beacon_chain/req/blob_sidecars_by_range/1/", "/eth2/beacon_chain/req/blob_sidecars_by_root/1/"],
    "specs/fulu/p2p-interface.md": [
        "/eth2/beacon_chain/req/status/2/", "/eth2/beacon_chain/req/data_column_sidecars_by_range/1/",
        "/eth2/beacon_chain/req/data_column_sidecars_by_root/1/", "/eth2/beacon_chain/req/metadata/3/",
        "/eth2/beacon_chain/req/beacon_blocks_by_head/1/"],
    "specs/gloas/p2p-interface.md": [
        "/eth2/beacon_chain/req/execution_payload_envelopes_by_range/1/",
        "/eth2/beacon_chain/req/execution_payload_envelopes_by_root/1/"],
    "specs/heze/p2p-interface.md": ["/eth2/beacon_chain/req/inclusion_lists_by_indices/1/"],
}
FULU = "cc2c5cdb"       # mainnet Fulu fork digest (the plugin's table)
DENEB = "6a95a1a9"


def uvarint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def chunk(ssz: bytes) -> bytes:
    """uvarint(len(ssz)) || framed-snappy(ssz)."""
    import snappy
    return uvarint(len(ssz)) + snappy.StreamCompressor().add_chunk(ssz)


def streams_pcap(path, messages: list[tuple[str, str, bytes]]) -> None:
    """Each (side, protocol ID, bytes) on a yamux stream of its own that the dialer A opens
    (proposing the protocol): A's bytes are a request, B's (after its echo) a response."""
    segs = [("a", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
            ("b", ms("/multistream/1.0.0") + ms("/yamux/1.0.0"))]
    for i, (side, proto, data) in enumerate(messages):
        opening = ms("/multistream/1.0.0") + ms(proto)
        if side == "a":
            segs.append(("a", yamux(1, 2 * i + 1, opening + data)))
        else:
            segs += [("a", yamux(1, 2 * i + 1, opening)), ("b", yamux(2, 2 * i + 1, opening + data))]
    tcp_pcap(path, segs, syn="a")


def test_every_req_resp_method_of_the_specs_is_named(tshark, tmp_path):
    """Each protocol ID of the spec files, answered (an error chunk, which every method may
    send), is counted under its method: none is `unknown`."""
    ids = [i for ids in SPEC_METHODS.values() for i in ids]
    err = b"\x01" + chunk(b"no")
    path = tmp_path / "methods.pcap"
    streams_pcap(path, [("b", pid + "ssz_snappy", err) for pid in ids])
    got = [r["msg_type"] for r in tshark.records(path) if r["proto"] == "eth2"]
    want = [pid[len("/eth2/beacon_chain/req/"):-1] + " response" for pid in ids]
    assert got == want


# (protocol ID, request or success chunk, context fork digest, SSZ length, expert item or None):
# bounds computed from the spec's types, the file in the comment.
BOUNDS = [
    # specs/fulu/p2p-interface.md: (start_slot, count, columns: List[ColumnIndex, NUMBER_OF_COLUMNS
    # = 128]) is 8 + 8 + 4 offset, plus 8 per column
    ("data_column_sidecars_by_range/1", None, 19, "p2pc.spec.eth2.too_short"),
    ("data_column_sidecars_by_range/1", None, 20, None),
    ("data_column_sidecars_by_range/1", None, 20 + 128 * 8, None),
    ("data_column_sidecars_by_range/1", None, 20 + 128 * 8 + 1, "p2pc.spec.eth2.too_long"),
    # specs/fulu/p2p-interface.md: BeaconBlocksByHead (beacon_root: Root, count: Uint64)
    ("beacon_blocks_by_head/1", None, 32 + 8 + 1, "p2pc.spec.eth2.too_long"),
    # specs/fulu/p2p-interface.md: Status v2, 84 + earliest_available_slot
    ("status/2", None, 91, "p2pc.spec.eth2.too_short"),
    # specs/electra/p2p-interface.md: BlobIdentifiers, 128 * MAX_BLOBS_PER_BLOCK_ELECTRA (9)
    # BlobIdentifier (block_root 32, index 8)
    ("blob_sidecars_by_root/1", None, 128 * 9 * 40, None),
    ("blob_sidecars_by_root/1", None, 128 * 9 * 40 + 1, "p2pc.spec.eth2.too_long"),
    # specs/gloas/p2p-interface.md: ExecutionPayloadEnvelopeRoots List[Root, MAX_REQUEST_PAYLOADS = 128]
    ("execution_payload_envelopes_by_root/1", None, 128 * 32 + 1, "p2pc.spec.eth2.too_long"),
    # specs/heze/p2p-interface.md: (slot, dependent_root, indices: Bitvector[16])
    ("inclusion_lists_by_indices/1", None, 8 + 32 + 2, None),
    # specs/deneb/p2p-interface.md: BlobSidecar, index 8 + blob 4096 * 32 + commitment 48 +
    # proof 48 + SignedBeaconBlockHeader 208 + inclusion proof 17 * 32
    ("blob_sidecars_by_range/1", DENEB, 8 + 4096 * 32 + 48 + 48 + 208 + 17 * 32 - 1, "p2pc.spec.eth2.too_short"),
    # specs/fulu/das-core.md: DataColumnSidecar's fixed part, index 8 + 3 offsets +
    # SignedBeaconBlockHeader 208 + KZGCommitmentsInclusionProof 4 * 32
    ("data_column_sidecars_by_root/1", FULU, 8 + 3 * 4 + 208 + 4 * 32 - 1, "p2pc.spec.eth2.too_short"),
    ("data_column_sidecars_by_root/1", FULU, 8 + 3 * 4 + 208 + 4 * 32, None),
]


def test_ssz_bounds_come_from_the_specs_types(tshark, tmp_path):
    """A request (which names no fork) is held to its type's bounds, a success chunk to those of
    the fork its context names: one message a stream, one frame each."""
    msgs = []
    for method, digest, n, _ in BOUNDS:
        pid = f"/eth2/beacon_chain/req/{method}/ssz_snappy"
        if digest is None:
            msgs.append(("a", pid, chunk(b"\x00" * n)))
        else:
            msgs.append(("b", pid, b"\x00" + bytes.fromhex(digest) + chunk(b"\x00" * n)))
    path = tmp_path / "bounds.pcap"
    streams_pcap(path, msgs)
    rows = tshark.fields(path, ["eth2.method", "eth2.ssz_length", "p2pc.spec.eth2.too_long", "p2pc.spec.eth2.too_short"],
                         dfilter="eth2")
    got = [(m, int(n), "p2pc.spec.eth2.too_long" if long_ else "p2pc.spec.eth2.too_short" if short else None)
           for m, n, long_, short in rows]
    assert got == [(m, n, e) for m, _, n, e in BOUNDS]


def test_a_data_column_sidecars_by_range_request(tshark, tmp_path):
    """specs/fulu/p2p-interface.md: (start_slot, count, columns) is named and its fields shown."""
    columns = [3, 64, 127]
    ssz = struct.pack("<QQI", 9000, 32, 20) + b"".join(struct.pack("<Q", c) for c in columns)
    path = tmp_path / "columns.pcap"
    streams_pcap(path, [("a", "/eth2/beacon_chain/req/data_column_sidecars_by_range/1/ssz_snappy", chunk(ssz))])
    rows = tshark.fields(path, ["eth2.method", "eth2.range.start_slot", "eth2.range.count", "eth2.range.column"],
                         dfilter="eth2")
    assert rows == [["data_column_sidecars_by_range/1", "9000", "32", "3|64|127"]]
    recs = [r["msg_type"] for r in tshark.records(path) if r["proto"] == "eth2"]
    assert recs == ["data_column_sidecars_by_range/1 request"]


def pb(number: int, value: bytes | int) -> bytes:
    """One protobuf field: a varint (int) or length-delimited (bytes)."""
    if isinstance(value, int):
        return uvarint(number << 3) + uvarint(value)
    return uvarint(number << 3 | 2) + uvarint(len(value)) + value


def rpc(*fields: bytes) -> bytes:
    """A gossipsub RPC as sent: uvarint(len) || protobuf."""
    body = b"".join(fields)
    return uvarint(len(body)) + body


COLUMN_TOPIC = f"/eth2/{FULU}/data_column_sidecar_3/ssz_snappy"


def test_gossipsub_v1_3_extensions_are_shown(tshark, tmp_path):
    """libp2p/specs pubsub/gossipsub/gossipsub-v1.3.md: ControlMessage.extensions (field 6),
    ControlExtensions per go-libp2p-pubsub pb/rpc.proto (partialMessages = 10, testExtension =
    6492434); an unknown extension field is shown by number.  RPC.partial (10) carries a Fulu
    partial column (specs/fulu/partial-columns/p2p-interface.md), its topic named with its fork;
    RPC.testExtension (6492434) is shown."""
    group = b"\x00" + bytes(range(32))          # version 0x00 || PartialDataColumnGroupID
    extensions = pb(10, 1) + pb(6492434, 1) + pb(99, 1)
    first = rpc(pb(3, pb(6, extensions)),
                pb(10, pb(1, COLUMN_TOPIC.encode()) + pb(2, group) + pb(3, b"\xaa" * 5) + pb(4, b"\x01\x02")),
                pb(6492434, b""))
    path = tmp_path / "extensions.pcap"
    streams_pcap(path, [("a", "/meshsub/1.3.0", first)])
    rows = tshark.fields(path, [
        "gossipsub.control.extensions.partial_messages", "gossipsub.control.extensions.test_extension",
        "gossipsub.control.extensions.unknown", "gossipsub.partial.topic", "gossipsub.topic_name", "eth2.fork",
        "gossipsub.partial.group_id", "gossipsub.partial.message", "gossipsub.partial.parts_metadata",
        "gossipsub.test_extension", "_ws.col.Info"], dfilter="gossipsub")
    assert len(rows) == 1
    assert rows[0][:9] == ["1", "1", "99", COLUMN_TOPIC, "data_column_sidecar_3", "fulu", group.hex(),
                           "aa" * 5, "0102"]
    assert rows[0][10].endswith("gossipsub extensions, partial message data_column_sidecar_3, test extension")


def test_control_only_rpcs_say_what_they_carry(tshark, tmp_path):
    """An RPC with no published message is named in the Info column by what it carries, not
    '[part of a libp2p message]'."""
    ihave = pb(1, pb(1, COLUMN_TOPIC.encode()) + pb(2, b"id-1") + pb(2, b"id-2"))
    control = rpc(pb(3, ihave + pb(1, pb(1, b"t")) + pb(3, pb(1, COLUMN_TOPIC.encode())) + pb(5, pb(1, b"x"))))
    subs = rpc(pb(1, pb(1, 1) + pb(2, COLUMN_TOPIC.encode())), pb(1, pb(1, 0) + pb(2, b"t")))
    path = tmp_path / "control.pcap"
    streams_pcap(path, [("a", "/meshsub/1.2.0", control), ("b", "/meshsub/1.2.0", subs)])
    rows = tshark.fields(path, ["gossipsub.control.ihave", "_ws.col.Info"], dfilter="gossipsub")
    assert [r[1].split(", gossipsub ")[1:] for r in rows] == [["IHAVE 2, GRAFT 1, IDONTWANT 1"],
                                                              ["subscribe 1, unsubscribe 1"]]
