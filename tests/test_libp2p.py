"""The libp2p layers as separate dissectors chained through multistream-select: negotiation,
the plaintext Exchange, Noise, yamux and mplex stream keying, per-stream reassembly, and
user mapping of protocol IDs.  Captures are of real go-libp2p hosts (captures/eth2/); expected
values come from the generator's truth files and inputs, not from the dissector's output."""
from __future__ import annotations

import json
import os
import subprocess

import struct

import pytest

from conftest import CAPTURES, tcp_pcap
from craft import ms, yamux

ETH = CAPTURES / "eth2"
MUXED = ["eth2-yamux", "eth2-mplex"]
ALL = MUXED + ["eth2-broken", "eth2-noise", "eth2-badcrc", "eth2-truncated"]
OURS = "multistream,libp2p_plaintext,libp2p_noise,yamux,mplex,libp2p_app,eth2,gossipsub,p2pc"


def truth(name: str) -> dict:
    return json.loads((ETH / f"{name}.truth.json").read_text())


def cap(name: str) -> str:
    return str(ETH / f"{name}.pcapng")


def split(cell: str) -> list[str]:
    return [c for c in cell.split("|") if c] if cell else []


def ed25519_public(seed: int) -> bytes:
    """The generator's identity: crypto.GenerateEd25519Key over a reader of repeated `seed`
    bytes, i.e. the Ed25519 key whose 32-byte seed is that byte repeated."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    key = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def peer_id(pub: bytes) -> bytes:
    """libp2p peer-id of an Ed25519 key: identity multihash of the protobuf PublicKey."""
    pb = b"\x08\x01\x12\x20" + pub
    return b"\x00" + bytes([len(pb)]) + pb


def base58btc(data: bytes) -> str:
    """base58btc (Bitcoin alphabet), written from the definition: leading zero bytes become
    '1's, the rest is a big-endian number written in base 58."""
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n, digits = int.from_bytes(data, "big"), ""
    while n:
        n, r = divmod(n, 58)
        digits = alphabet[r] + digits
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + digits


@pytest.mark.parametrize("name", MUXED + ["eth2-noise"])
def test_connection_upgrades_in_order(tshark, name):
    """Each direction: header, security, header, muxer (Noise: its muxer is encrypted)."""
    t = truth(name)
    rows = tshark.fields(cap(name), ["ip.src", "multistream.message", "multistream.stream"],
                         dfilter="multistream.message && !multistream.stream")
    for side in (t["link"]["addr_a"], t["link"]["addr_b"]):
        msgs = [m for src, m, _ in rows if src == side for m in split(m)]
        want = ["/multistream/1.0.0", t["security"]]
        if t["security"] != "/noise":
            want += ["/multistream/1.0.0", "/yamux/1.0.0" if t["muxer"] == "yamux" else "/mplex/6.7.0"]
        assert msgs == want


@pytest.mark.parametrize("name", MUXED)
def test_plaintext_exchange_names_both_peers(tshark, name):
    t = truth(name)
    rows = tshark.fields(cap(name), ["ip.src", "libp2p_plaintext.peer_id", "libp2p_plaintext.key_type",
                                     "libp2p_plaintext.key"], dfilter="libp2p_plaintext")
    got = {src: (bytes.fromhex(pid), kt, bytes.fromhex(key)) for src, pid, kt, key in rows}
    for side, addr in (("a", t["link"]["addr_a"]), ("b", t["link"]["addr_b"])):
        pub = ed25519_public(t["seeds"][side])
        assert got[addr] == (peer_id(pub), "1", pub)


def test_noise_is_recognised_and_labelled_encrypted(tshark):
    rows = tshark.fields(cap("eth2-noise"), ["libp2p_noise.length", "libp2p_noise.handshake", "_ws.expert.message"],
                         dfilter="libp2p_noise")
    assert len(rows) > 10
    # Message 1 is in clear; every later message says no key matched.
    assert [r[1] for r in rows[:3]] == ["1", "2", "3"]
    assert all("no key in libp2p_noise.keylog_file matches" in r[2] for r in rows[1:])
    # Nothing above Noise is visible.
    assert not tshark.fields(cap("eth2-noise"), ["frame.number"], dfilter="yamux || eth2 || multistream.stream")


def test_yamux_stream_ids_say_who_opened_them(tshark):
    """The dialer opens odd yamux stream ids, the listener even ones."""
    t = truth("eth2-yamux")
    rows = tshark.fields(cap("eth2-yamux"), ["ip.src", "multistream.message", "multistream.stream"],
                         dfilter="multistream.stream")
    proposals = {}
    for src, msgs, streams in rows:
        for m, s in zip(split(msgs), split(streams)):
            if m != "/multistream/1.0.0":
                proposals.setdefault(int(s), []).append((src, m))
    eth2 = {s: v for s, v in proposals.items() if v[0][1].startswith("/eth2/")}
    assert sorted(v[0][1].split("/")[4] + "/" + v[0][1].split("/")[5] for v in eth2.values()) == \
        sorted(t["requests"])
    for s, v in eth2.items():
        assert s % 2 == 1 and v[0][0] == t["link"]["addr_a"]     # dialer's streams
        assert v[1] == (t["link"]["addr_b"], v[0][1])            # echoed by the listener
    listener_opened = [s for s, v in proposals.items() if v[0][0] == t["link"]["addr_b"]]
    assert listener_opened and all(s % 2 == 0 for s in listener_opened)


def test_mplex_streams_are_keyed_by_id_and_opener(tshark):
    """go-mplex numbers each side's streams from 0: both peers open stream 0 for identify.
    Keyed by (id, opener) they are two streams, each negotiated and decoded on its own."""
    t = truth("eth2-mplex")
    a, b = t["link"]["addr_a"], t["link"]["addr_b"]
    recs = [r for r in tshark.records(cap("eth2-mplex")) if r["msg_type"] == "/ipfs/id/1.0.0"]
    # One identify message from each side, each answering the other's stream 0.
    assert sorted(r["src"] for r in recs) == sorted([a, b])
    rows = tshark.fields(cap("eth2-mplex"), ["ip.src", "mplex.stream", "mplex.flag", "libp2p_app.protocol"],
                         dfilter="libp2p_app.protocol == \"/ipfs/id/1.0.0\"")
    assert len(rows) == 2
    for src, streams, flags, _ in rows:
        # The identify message goes from the receiver of the stream (MessageReceiver, 1).
        assert "0" in split(streams) and "1" in split(flags)


@pytest.mark.parametrize("name", MUXED)
def test_a_block_spans_many_muxer_frames_and_segments(tshark, name):
    t = truth(name)
    mux = t["muxer"]
    stream_rows = tshark.fields(cap(name), [f"{mux}.stream", "eth2.ssz_length"],
                                dfilter='eth2.method == "beacon_blocks_by_range/2" && eth2.direction == "response"')
    stream = split(stream_rows[0][0])[-1]
    b = t["link"]["addr_b"]
    frames = tshark.fields(cap(name), ["frame.number", f"{mux}.length"],
                           dfilter=f"{mux}.stream == {stream} && ip.src == {b} && {mux}.length > 0")
    data_frames = sum(len(split(r[1])) for r in frames)
    first, last = int(frames[0][0]), int(frames[-1][0])
    segments = tshark.fields(cap(name), ["frame.number"],
                             dfilter=f"ip.src == {b} && tcp.len > 0 && frame.number >= {first} && frame.number <= {last}")
    completed = [r for r in tshark.records(cap(name)) if r["msg_type"] == "beacon_blocks_by_range/2 response"]
    # ~1.3 MB of Snappy in four chunks, through muxer frames of at most 64 KiB (go-yamux) or
    # 4 KiB (go-mplex) and TCP segments of at most 1448 bytes.
    assert len(completed) == 4
    assert len(segments) > 900
    assert data_frames > (15 if mux == "yamux" else 300)


@pytest.mark.parametrize("name", MUXED)
def test_one_muxer_frame_holds_the_end_of_one_message_and_the_next(tshark, name):
    """The listener wrote the last block's final 100 bytes and the error chunk in one write:
    one muxer frame completes both."""
    t = truth(name)
    mux = t["muxer"]
    recs = [r for r in tshark.records(cap(name)) if r["msg_type"] == "beacon_blocks_by_range/2 response"]
    err = recs[-1]
    assert int(err["raw_len"]) == len(t["error_chunk"]["message"])
    assert recs[-2]["frame"] == err["frame"]
    # result byte + 1-byte uvarint + the framed Snappy bytes of the error message
    err_wire = 2 + int(err["payload_len"])
    rows = tshark.fields(cap(name), [f"{mux}.length"], dfilter=f"frame.number == {err['frame']}")
    assert str(t["shared_write"]["tail_bytes"] + err_wire) in split(rows[0][0])


def test_na_refusal_is_shown(tshark):
    t = truth("eth2-broken")
    rows = tshark.fields(cap("eth2-broken"), ["ip.src", "multistream.message", "multistream.stream"],
                         dfilter="multistream.stream")
    by_stream = {}
    for src, msgs, streams in rows:
        for m, s in zip(split(msgs), split(streams)):
            by_stream.setdefault(s, []).append((src, m))
    refused = [v for v in by_stream.values() if (t["link"]["addr_a"], t["refused"]) in v]
    assert len(refused) == 1
    assert (t["link"]["addr_b"], "na") in refused[0]
    assert "Protocol refused (na)" in tshark.expert(cap("eth2-broken"))


def test_identify_is_named_with_its_bytes(tshark):
    rows = tshark.fields(cap("eth2-yamux"), ["libp2p_app.protocol", "libp2p_app.data",
                                             "libp2p_app.identify.agent_version", "libp2p_app.identify.protocol"],
                         dfilter="libp2p_app")
    assert rows
    for proto, data, agent, protos in rows:
        assert proto == "/ipfs/id/1.0.0" and data
        assert agent.startswith("github.com/p2pc/captures/libp2p")
        assert "/eth2/beacon_chain/req/status/1/ssz_snappy" in split(protos) or "/meshsub/1.1.0" in split(protos)


PING = "/eth2/beacon_chain/req/ping/1/ssz_snappy"


def test_decode_as_on_the_protocol_table(tshark):
    """Decode As on the string table: the ping streams go to the generic dissector instead."""
    base = tshark.fields(cap("eth2-yamux"), ["eth2.method"], dfilter='eth2.method == "ping/1"')
    assert len(base) == 2
    rows = tshark.fields(cap("eth2-yamux"), ["libp2p_app.protocol", "eth2.method"], dfilter="libp2p_app.protocol",
                         extra=["-d", f"multistream.protocol=={PING},libp2p_app"])
    assert [r[0] for r in rows if r[0] == PING] == [PING, PING]
    assert not tshark.fields(cap("eth2-yamux"), ["eth2.method"], dfilter='eth2.method == "ping/1"',
                             extra=["-d", f"multistream.protocol=={PING},libp2p_app"])


def test_decode_as_names_a_protocol_id_and_protocol_map_is_obsolete(tshark):
    """Decode As on multistream.protocol is how a protocol ID of the user's reaches a dissector
    (either way round); the "ID=dissector" preference that duplicated it is obsolete, and
    tshark says so as it does for its own."""
    status = "/eth2/beacon_chain/req/status/1/ssz_snappy"
    rows = tshark.fields(cap("eth2-yamux"), ["libp2p_app.protocol"], dfilter="libp2p_app.protocol",
                         extra=["-d", f"multistream.protocol=={status},libp2p_app"])
    assert [r[0] for r in rows].count(status) == 2
    # and the other way: an unknown ID read as Ethereum req/resp
    rows = tshark.fields(cap("eth2-yamux"), ["eth2.method"], dfilter="eth2.method",
                         extra=["-d", "multistream.protocol==/ipfs/id/1.0.0,eth2"])
    assert rows
    res = tshark.run(["-n", "-r", tshark.ws.readable(cap("eth2-yamux")), "-c", "1",
                      "-o", f"multistream.protocol_map:{status}=libp2p_app"], check=False)
    assert res.returncode != 0 and "obsolete preference" in res.stderr, res.stderr


def test_a_lua_dissector_receives_its_protocol(tshark, tmp_path):
    """Users can add their own protocol IDs to the table from Lua."""
    script = tmp_path / "myproto.lua"
    script.write_text(
        'local p = Proto("myid", "my identify")\n'
        'local f = ProtoField.uint32("myid.len", "bytes")\n'
        'p.fields = { f }\n'
        'function p.dissector(tvb, pinfo, tree) tree:add(p, tvb()):add(f, tvb:len()) return tvb:len() end\n'
        'DissectorTable.get("multistream.protocol"):add("/ipfs/id/1.0.0", p)\n')
    rows = tshark.fields(cap("eth2-yamux"), ["myid.len"], dfilter="myid",
                         extra=["-X", f"lua_script:{tshark.ws.readable(script)}"])
    assert sum(int(x) for r in rows for x in split(r[0])) == sum(
        int(r["wire_len"]) - int(r["header_len"]) for r in tshark.records(cap("eth2-yamux"))
        if r["msg_type"] == "/ipfs/id/1.0.0")


@pytest.mark.parametrize("name", ALL)
def test_one_pass_equals_two_pass_full_trees(tshark, name):
    """Every layer's tree, every reassembled tab: the same in one pass and in two."""
    args = ["-n", "-r", tshark.ws.readable(cap(name)), "-O", OURS, "-V", "-x",
            "-Y", "multistream || yamux || mplex || eth2 || gossipsub || libp2p_app || libp2p_plaintext || libp2p_noise"]
    one = tshark.run(args).stdout
    two = tshark.run(args + ["-2"]).stdout
    strip = lambda s: [l for l in s.splitlines() if not l.lstrip().startswith(("Transmission Control", "Internet Protocol",
                                                                               "Ethernet II", "Frame "))]
    assert one and strip(one) == strip(two)


@pytest.mark.parametrize("name", MUXED)
def test_optimistic_negotiation_shares_one_muxer_frame(tshark, name):
    """go-libp2p's lazy multistream: header, proposal and the request go out in one write, so
    one muxer data frame carries all three, before the listener's echo."""
    t = truth(name)
    mux = t["muxer"]
    reqs = {r["frame"]: r for r in tshark.records(cap(name)) if r["msg_type"].startswith("ping/1 request")}
    assert len(reqs) == 1
    frame, rec = next(iter(reqs.items()))
    rows = tshark.fields(cap(name), ["multistream.message", f"{mux}.length"], dfilter=f"frame.number == {frame}")
    msgs, lengths = split(rows[0][0]), [int(x) for x in split(rows[0][1])]
    assert msgs == ["/multistream/1.0.0", PING]
    header = 1 + len("/multistream/1.0.0\n")
    proposal = 1 + len(PING + "\n")
    request = 1 + int(rec["payload_len"])     # uvarint(8) + the framed Snappy bytes
    assert lengths == [header + proposal + request]


def test_base58_helper_matches_known_vectors():
    """The test's own encoder against draft-msporny-base58's examples."""
    assert base58btc(b"Hello World!") == "2NEpo7TZRRrLZSi2U"
    assert base58btc(b"The quick brown fox jumps over the lazy dog.") == \
        "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z"
    assert base58btc(bytes.fromhex("0000287fb4cd")) == "11233QC4"


@pytest.mark.parametrize("name", MUXED)
def test_plaintext_peer_ids_print_in_base58(tshark, name):
    """libp2p_plaintext.peer_id_b58 is how libp2p prints the peer ID of the generator's keys:
    base58btc of the identity multihash, 12D3KooW... for Ed25519."""
    t = truth(name)
    rows = tshark.fields(cap(name), ["ip.src", "libp2p_plaintext.peer_id_b58"], dfilter="libp2p_plaintext")
    got = dict(rows)
    for side, addr in (("a", t["link"]["addr_a"]), ("b", t["link"]["addr_b"])):
        want = base58btc(peer_id(ed25519_public(t["seeds"][side])))
        assert want.startswith("12D3KooW")
        assert got[addr] == want


# ---- which side dialed: facts, never who spoke first (engine.h, l2p_role_t) ----
def simopen_capture(path, initiator: str, opener: str) -> None:
    """Both sides propose /libp2p/simultaneous-connect (a first), `initiator` wins the select,
    then yamux; `opener` opens stream 1 (odd: the yamux client's) with an eth2 ping request and
    the other answers."""
    import snappy
    responder = "b" if initiator == "a" else "a"
    other = "b" if opener == "a" else "a"
    body = struct.pack("<Q", 7)
    req = bytes([len(body)]) + snappy.StreamCompressor().add_chunk(body)
    resp = b"\x00" + req
    tcp_pcap(path, [
        ("a", ms("/multistream/1.0.0") + ms("/libp2p/simultaneous-connect")),
        ("b", ms("/multistream/1.0.0") + ms("/libp2p/simultaneous-connect")),
        ("a", ms("select:12")), ("b", ms("select:99")),
        (initiator, ms("initiator")), (responder, ms("responder")),
        (initiator, ms("/yamux/1.0.0")), (responder, ms("/yamux/1.0.0")),
        (opener, yamux(1, 1, ms("/multistream/1.0.0") + ms(PING) + req)),
        (other, yamux(2, 1, ms("/multistream/1.0.0") + ms(PING) + resp)),
    ])


@pytest.mark.parametrize("two_pass", [False, True])
def test_simultaneous_open_makes_the_initiator_the_dialer(tshark, tmp_path, two_pass):
    """The side that says "initiator" (here the second to send) dials from then on: its stream
    1 carries the request, and no fact contradicts it."""
    path = tmp_path / "simopen.pcap"
    simopen_capture(path, initiator="b", opener="b")
    msgs = [m for r in tshark.fields(path, ["multistream.message"], dfilter="multistream") for m in split(r[0])]
    assert ["select:12", "select:99", "initiator", "responder"] == [m for m in msgs if not m.startswith("/")]
    recs = [r for r in tshark.records(path, two_pass=two_pass) if r["proto"] == "eth2"]
    assert [(r["src"], r["msg_type"], r["raw_len"]) for r in recs] == \
        [("192.0.2.2", "ping/1 request", "8"), ("192.0.2.1", "ping/1 response", "8")]
    assert tshark.fields(path, ["frame.number"],
                         dfilter="libp2p.role.conflict || libp2p.role.unknown || multistream.undecoded") == []


def test_a_fact_that_contradicts_a_stronger_one_is_flagged(tshark, tmp_path):
    """"initiator" names A, but B opens odd stream 1 (the yamux client's): the simultaneous
    open's word is kept, and the frame says the two disagree."""
    path = tmp_path / "simopen-conflict.pcap"
    simopen_capture(path, initiator="a", opener="b")
    rows = tshark.fields(path, ["frame.number"], dfilter="libp2p.role.conflict")
    assert [r[0] for r in rows] == ["9"]


@pytest.mark.parametrize("ports", [(13000, 13000), (40001, 9000)])
def test_the_syn_says_who_dialed_even_from_the_listening_port(tshark, tmp_path, ports):
    """A sends the SYN, B speaks first and then proposes too, breaking the rule that the listener
    only answers: the SYN's word is kept and the proposal is flagged.  With both ports alike, as
    when Prysm dials from the port it listens on, the SYN still says who dialed."""
    path = tmp_path / "syn.pcap"
    tcp_pcap(path, [("b", ms("/multistream/1.0.0")),
                       ("a", ms("/multistream/1.0.0")),
                       ("b", ms("/yamux/1.0.0"))], syn="a", ports=ports)
    rows = tshark.fields(path, ["frame.number"], dfilter="libp2p.role.conflict")
    assert [r[0] for r in rows] == ["6"]


def test_non_canonical_varints_are_flagged_and_decoded(tshark, tmp_path):
    """A multistream length and an eth2 SSZ length each sent in two bytes where one does (the
    top byte 0x00): each is flagged (p2pc.spec.varint) and the messages decode all the same."""
    import snappy
    body = struct.pack("<Q", 7)
    req = bytes([len(body) | 0x80, 0x00]) + snappy.StreamCompressor().add_chunk(body)
    proposal = b"/yamux/1.0.0\n"
    path = tmp_path / "varint.pcap"
    tcp_pcap(path, [
        ("a", ms("/multistream/1.0.0") + bytes([len(proposal) | 0x80, 0x00]) + proposal),
        ("b", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
        ("a", yamux(1, 1, ms("/multistream/1.0.0") + ms(PING) + req)),
    ], syn="a")
    rows = tshark.fields(path, ["frame.number", "_ws.expert.message"], dfilter="p2pc.spec.varint")
    assert [r[0] for r in rows] == ["4", "6"]
    recs = [r for r in tshark.records(path) if r["proto"] == "eth2"]
    assert [(r["msg_type"], r["raw_len"]) for r in recs] == [("ping/1 request", "8")]



def test_a_protocol_id_nobody_named_is_counted_as_unknown(tshark, tmp_path):
    """identify is libp2p's own protocol: its msg_type is its ID. The same streams under an ID
    nobody defines (rewritten in place) are `unknown`, with the note, the ID as negotiated in
    libp2p_app.protocol; named by the user (Decode As on multistream.protocol), it is its own
    again."""
    src = CAPTURES / "eth2" / "eth2-yamux.pcapng"
    made_up = tmp_path / "eth2-made-up-id.pcapng"
    made_up.write_bytes(src.read_bytes().replace(b"/ipfs/id/1.0.0", b"/made/up/1.0.0"))
    libp2p = lambda c, extra=None: [r["msg_type"] for r in tshark.records(c, extra=extra)  # noqa: E731
                                    if r["proto"] == "libp2p"]
    assert libp2p(src) == ["/ipfs/id/1.0.0"] * 2
    assert libp2p(made_up) == ["unknown"] * 2
    assert [r[0] for r in tshark.fields(made_up, ["libp2p_app.protocol"], dfilter="libp2p_app")] == \
        ["/made/up/1.0.0"] * 2
    assert tshark.expert(made_up).count(
        '"/made/up/1.0.0" is not a message type of the protocol: counted as unknown') == 2
    named = ["-d", "multistream.protocol==/made/up/1.0.0,libp2p_app"]
    assert libp2p(made_up, named) == ["/made/up/1.0.0"] * 2


def test_hundreds_of_muxed_streams_in_one_segment_all_decode(tshark, tmp_path):
    """One segment carries 300 yamux streams, each a ping: every pipe call adds protocol layers,
    and Wireshark calls more than gui.max_tree_depth of them in a frame a dissector bug; p2pc
    lists the first ones and decodes every stream."""
    streams = b"".join(yamux(1, 2 * i + 1, ms("/multistream/1.0.0") + ms("/ipfs/ping/1.0.0") + bytes(32))
                       for i in range(300))
    path = tmp_path / "many-streams.pcap"
    tcp_pcap(path, [("a", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
                    ("b", ms("/multistream/1.0.0") + ms("/yamux/1.0.0")),
                    ("a", streams)], syn="a")
    res = subprocess.run(tshark.ws.command("tshark", ["-n", "-V", "-r", tshark.ws.readable(path)]),
                         capture_output=True, text=True, env=dict(os.environ, WIRESHARK_ABORT_ON_DISSECTOR_BUG="1"))
    assert res.returncode == 0 and "Dissector bug" not in res.stdout + res.stderr, res.stderr[-300:]
    recs = [r for r in tshark.records(path) if r["proto"] == "libp2p"]
    assert [r["msg_type"] for r in recs] == ["/ipfs/ping/1.0.0"] * 300


def test_a_header_whose_length_byte_came_alone_is_recognised(tshark, tmp_path):
    """js-libp2p writes each multistream message's length byte in a segment of its own: the
    connection is still recognised from its first byte, and its negotiation decodes."""
    hdr, prop = ms("/multistream/1.0.0"), ms("/yamux/1.0.0")
    path = tmp_path / "split-header.pcap"
    tcp_pcap(path, [("a", hdr[:1]), ("a", hdr[1:]), ("a", prop[:1]), ("a", prop[1:]),
                    ("b", hdr + prop), ("a", yamux(1, 1, ms("/multistream/1.0.0") + ms("/ipfs/ping/1.0.0") + bytes(32)))],
             syn="a")
    msgs = [m for r in tshark.fields(path, ["multistream.message"], dfilter="multistream") for m in split(r[0])]
    assert msgs[:4] == ["/multistream/1.0.0", "/yamux/1.0.0", "/multistream/1.0.0", "/yamux/1.0.0"]
    assert [r["msg_type"] for r in tshark.records(path) if r["proto"] == "libp2p"] == ["/ipfs/ping/1.0.0"]


def test_a_side_that_proposes_then_refuses_does_not_break_the_negotiation(tshark, tmp_path):
    """A proposes, then says "na" itself; B then proposes: found by the fuzz gate (a null
    protocol compared, UBSan in the sanitizer build, a crash in a release one)."""
    path = tmp_path / "na-after-proposal.pcap"
    tcp_pcap(path, [("a", ms("/multistream/1.0.0") + ms("/a/1.0.0")), ("a", ms("na")),
                    ("b", ms("/multistream/1.0.0") + ms("/b/1.0.0"))], syn="a")
    res = tshark.run(["-n", "-V", "-r", tshark.ws.readable(path)])
    assert "/b/1.0.0" in res.stdout
