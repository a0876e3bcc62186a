"""analyze's gossip section (docs/analyzer.md): the gossipsub streams' bytes by sender, part kind
and topic, counted as go-libp2p-pubsub's tracer counts them.

The expected rows come from the RPCs themselves, decoded by Google's protobuf library from the
bytes of each RPC (`tshark -T json -x`: the gossipsub item covers the RPC with its length prefix)
with the message types of the pubsub spec's rpc.proto, never from p2pc's own counts."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, unknown_fields

from conftest import CAPTURES, p2pc_report, parse_record, per_capture_kind, run_p2pc

ANALYZE_GOSSIP_COLUMNS = ["src", "kind", "topic", "count", "message_ids", "bytes", "duplicates", "duplicate_bytes",
                          "after_idontwant", "after_idontwant_bytes", "idontwant_saved", "idontwant_saved_bytes"]

# libp2p/specs pubsub/README.md and gossipsub-v1.1/v1.2 (rpc.proto), gossipsub-v1.3
# extensions.proto, go-libp2p-pubsub pb/rpc.proto (RPC.partial): proto2, field numbers as there.
# Stream wraps the stream's RPCs: each is uvarint(len) || RPC, which is what a repeated
# length-delimited field 1 is once its tag byte 0x0a is put before it.
_B, _S, _BOOL, _U64, _MSG = (descriptor_pb2.FieldDescriptorProto.TYPE_BYTES, descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                             descriptor_pb2.FieldDescriptorProto.TYPE_BOOL, descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
                             descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE)
_MESSAGES = {
    "Stream": [("rpc", 1, _MSG, "RPC", True)],
    "RPC": [("subscriptions", 1, _MSG, "SubOpts", True), ("publish", 2, _MSG, "Message", True),
            ("control", 3, _MSG, "ControlMessage", False), ("partial", 10, _MSG, "PartialMessagesExtension", False),
            ("testExtension", 6492434, _MSG, "TestExtension", False)],
    "SubOpts": [("subscribe", 1, _BOOL, None, False), ("topicid", 2, _S, None, False),
                ("requestsPartial", 3, _BOOL, None, False), ("supportsSendingPartial", 4, _BOOL, None, False)],
    "Message": [("from", 1, _B, None, False), ("data", 2, _B, None, False), ("seqno", 3, _B, None, False),
                ("topic", 4, _S, None, False), ("signature", 5, _B, None, False), ("key", 6, _B, None, False)],
    "ControlMessage": [("ihave", 1, _MSG, "ControlIHave", True), ("iwant", 2, _MSG, "ControlIWant", True),
                       ("graft", 3, _MSG, "ControlGraft", True), ("prune", 4, _MSG, "ControlPrune", True),
                       ("idontwant", 5, _MSG, "ControlIDontWant", True),
                       ("extensions", 6, _MSG, "ControlExtensions", False)],
    "ControlIHave": [("topicID", 1, _S, None, False), ("messageIDs", 2, _B, None, True)],
    "ControlIWant": [("messageIDs", 1, _B, None, True)],
    "ControlGraft": [("topicID", 1, _S, None, False)],
    "ControlPrune": [("topicID", 1, _S, None, False), ("peers", 2, _MSG, "PeerInfo", True),
                     ("backoff", 3, _U64, None, False)],
    "PeerInfo": [("peerID", 1, _B, None, False), ("signedPeerRecord", 2, _B, None, False)],
    "ControlIDontWant": [("messageIDs", 1, _B, None, True)],
    "ControlExtensions": [("partialMessages", 10, _BOOL, None, False), ("testExtension", 6492434, _BOOL, None, False)],
    "PartialMessagesExtension": [("topicID", 1, _S, None, False), ("groupID", 2, _B, None, False),
                                 ("partialMessage", 3, _B, None, False), ("partsMetadata", 4, _B, None, False)],
    "TestExtension": [],
}


def _classes() -> dict:
    f = descriptor_pb2.FileDescriptorProto(name="p2pc_test_pubsub_rpc.proto", package="pubsub.pb", syntax="proto2")
    for name, fields in _MESSAGES.items():
        m = f.message_type.add(name=name)
        for fname, number, ftype, tname, repeated in fields:
            fd = m.field.add(name=fname, number=number, type=ftype,
                             label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if repeated
                             else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
            if tname:
                fd.type_name = f".pubsub.pb.{tname}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"pubsub.pb.{name}"))
            for name in _MESSAGES}


PB = _classes()


def field_bytes(parent: str, **one) -> int:
    """The bytes one field takes in its parent message (its tag, length and body), as the
    library encodes it."""
    return PB[parent](**one).ByteSize()


def expected_parts(rpc_with_prefix: bytes) -> list[tuple[str, str, int, int, int]]:
    """(kind, topic, count, message IDs, bytes) of one RPC as its length prefix and protobuf say."""
    stream = PB["Stream"]()
    stream.ParseFromString(b"\x0a" + rpc_with_prefix)
    assert len(stream.rpc) == 1
    rpc = stream.rpc[0]
    body = rpc.SerializeToString()
    # The peers' encoding is the library's (one control field, fields in order): so each
    # part's encoded size below is its size on the wire.
    assert rpc_with_prefix.endswith(body), "not the canonical encoding"
    out = [("rpc_framing", "", 1, 0, len(rpc_with_prefix) - len(body))]
    for s in rpc.subscriptions:
        out.append(("subscribe" if s.subscribe else "unsubscribe", s.topicid, 1, 0,
                    field_bytes("RPC", subscriptions=[s])))
    for m in rpc.publish:
        out.append(("publish", m.topic, 1, 0, field_bytes("RPC", publish=[m])))
    if rpc.HasField("control"):
        c = rpc.control
        out.append(("rpc_framing", "", 0, 0, field_bytes("RPC", control=c) - c.ByteSize()))
        for e in c.ihave:
            out.append(("ihave", e.topicID, 1, len(e.messageIDs), field_bytes("ControlMessage", ihave=[e])))
        for e in c.iwant:
            out.append(("iwant", "", 1, len(e.messageIDs), field_bytes("ControlMessage", iwant=[e])))
        for e in c.graft:
            out.append(("graft", e.topicID, 1, 0, field_bytes("ControlMessage", graft=[e])))
        for e in c.prune:
            out.append(("prune", e.topicID, 1, 0, field_bytes("ControlMessage", prune=[e])))
        for e in c.idontwant:
            out.append(("idontwant", "", 1, len(e.messageIDs), field_bytes("ControlMessage", idontwant=[e])))
        if c.HasField("extensions"):
            out.append(("extensions", "", 1, 0, field_bytes("ControlMessage", extensions=c.extensions)))
    # Fields no spec names (py-libp2p's RPC.senderRecord, field 4), in the RPC or its
    # ControlMessage: the RPC re-encoded with its known fields only is that much shorter.
    unknown = len(unknown_fields.UnknownFieldSet(rpc))
    known = PB["RPC"](subscriptions=rpc.subscriptions, publish=rpc.publish)
    if rpc.HasField("control"):
        c = rpc.control
        unknown += len(unknown_fields.UnknownFieldSet(c))
        known.control.CopyFrom(PB["ControlMessage"](ihave=c.ihave, iwant=c.iwant, graft=c.graft, prune=c.prune,
                                                    idontwant=c.idontwant))
        if c.HasField("extensions"):
            known.control.extensions.CopyFrom(c.extensions)
    for name in ("partial", "testExtension"):
        if rpc.HasField(name):
            getattr(known, name).CopyFrom(getattr(rpc, name))
    if unknown:
        out.append(("other", "", unknown, 0, len(body) - known.ByteSize()))
    if rpc.HasField("partial"):
        out.append(("partial", rpc.partial.topicID, 1, 0, field_bytes("RPC", partial=rpc.partial)))
    if rpc.HasField("testExtension"):
        out.append(("extensions", "", 1, 0, field_bytes("RPC", testExtension=rpc.testExtension)))
    return out


def split_keylog(tshark, path: Path, folder: Path) -> list[str]:
    """tshark options for a generator's key log: its Noise lines (LOCAL_*_PRIVATE_KEY, p2pc's
    libp2p_noise format) and its TLS lines (NSS format), each to its own file."""
    noise, tls = [], []
    for line in path.read_text().splitlines():
        (noise if line.startswith("LOCAL_") else tls).append(line)
    opts = []
    for pref, lines, name in (("libp2p_noise.keylog_file", noise, "noise.keys"), ("tls.keylog_file", tls, "tls.keys")):
        if lines:
            (folder / name).write_text("\n".join(lines) + "\n")
            opts += ["-o", f"{pref}:{tshark.ws.readable(folder / name)}"]
    return opts


def gossipsub_rpcs(tshark, capture: Path, opts: list[str]) -> list[tuple[int, str, bytes | None, int]]:
    """(frame, sender address, the RPC with its length prefix, its length) of every gossipsub
    RPC, from what the gossipsub item covers (tshark -T json -x).  The bytes are None where
    tshark's JSON gives none: an RPC whose bytes are no data source of the frame (reassembled
    in a PDU the frame does not keep, plugin/libp2p/engine.c); its length is always given."""
    out = tshark.read(["-n", "-r", tshark.ws.readable(capture), *opts, "-T", "json", "-x",
                       "-J", "frame ip ipv6 gossipsub", "-Y", "gossipsub"]).stdout
    rpcs = []
    for pkt in json.loads(out, object_pairs_hook=lambda kv: kv):    # keys repeat: a pair list each
        layers = dict(dict(pkt)["_source"])["layers"]
        frame = int(dict(dict(layers)["frame"])["frame.number"])
        ip = dict(layers).get("ip") or dict(layers)["ipv6"]
        src = dict(ip).get("ip.src") or dict(ip)["ipv6.src"]
        rpcs += [(frame, src, bytes.fromhex(raw[0]) if raw[0] else None, raw[2])
                 for key, raw in layers if key == "gossipsub_raw" and raw[2]]
    return rpcs


def gossip_lines(tshark, capture: Path, opts: list[str]) -> list:
    """The dump's G lines (-z p2pc,records), read by the analyzer's parser."""
    out = tshark.read(["-n", "-q", "-r", tshark.ws.readable(capture), *opts, "-z", "p2pc,records"]).stdout
    return [parse_record(line) for line in out.splitlines() if line.startswith("G\t")]


def key_log(capture: Path) -> Path | None:
    """The capture's key log (its generator's truth names it: the dialer's, or the go-libp2p
    peer's in an interop capture), if any."""
    truth = capture.with_name(capture.stem + ".truth.json")
    keys = json.loads(truth.read_text()).get("keys") if truth.exists() else None
    if isinstance(keys, dict):
        keys = keys.get("dialer") or keys.get("go")
    return capture.parent / keys if keys else None


# Every committed capture whose gossipsub RPCs p2pc reads (keys included where encrypted): go-libp2p
# pairs over each transport and security, Lodestar, Prysm, and go-libp2p with js-, rust- and
# py-libp2p peers.
GOSSIP_CAPTURES = [
    "eth2/eth2-yamux", "eth2/eth2-mplex", "eth2/eth2-broken", "eth2/eth2-yamux-lf", "eth2/eth2-yamux-gap",
    "eth2/eth2-noise-yamux", "eth2/eth2-noise-mplex", "eth2/eth2-noise-secp256k1", "eth2/eth2-tls-yamux",
    "eth2/eth2-tls-embedded", "eth2/eth2-quic", "eth2/eth2-tcp-quic", "eth2/eth2-pubsub-trace", "eth2/eth2-gossip-mesh",
    "eth2/eth2-gossip-lazy",
    "lodestar/lodestar", "prysm/prysm-tcp", "prysm/prysm-quic",
    "interop/interop-go-js-plaintext-yamux", "interop/interop-js-go-noise-yamux", "interop/interop-go-rust-quic", "interop/interop-py-go-plaintext-yamux",
]


def summed(parts) -> dict:
    out: dict = defaultdict(lambda: [0, 0, 0])
    for key, n, ids, b in parts:
        row = out[key]
        row[0] += n
        row[1] += ids
        row[2] += b
    return dict(out)


@pytest.mark.parametrize("name", per_capture_kind(GOSSIP_CAPTURES))
def test_gossip_rows_are_what_the_rpcs_carry_and_add_up_to_the_streams(tshark, tmp_path, name):
    """Each frame's gossip parts (sender, kind, topic) have the entries, message IDs and protobuf
    bytes the RPCs' own decoding gives; analyze's gossip section sums them; and its rows add up
    to the gossipsub streams' bytes exactly."""
    cap = CAPTURES / f"{name}.pcapng"
    keys = key_log(cap)
    opts = split_keylog(tshark, keys, tmp_path) if keys else []
    rpcs = gossipsub_rpcs(tshark, cap, opts)
    assert rpcs, "no gossipsub RPC in the capture"
    # Frames whose every RPC tshark's JSON gives the bytes of: most of them.
    unknown = {frame for frame, _, rpc, _ in rpcs if rpc is None}
    known = [(frame, src, rpc) for frame, src, rpc, _ in rpcs if frame not in unknown]
    assert len(known) >= len(rpcs) * 3 // 4, (len(known), len(rpcs))
    want = summed(((frame, src, kind, topic), n, ids, b) for frame, src, rpc in known
                  for kind, topic, n, ids, b in expected_parts(rpc))
    lines = gossip_lines(tshark, cap, opts)
    got = summed(((g.frame, g.src, g.kind, g.topic), g.count, g.message_ids, g.bytes) for g in lines
                 if g.frame not in unknown)
    assert got == want

    rep = p2pc_report("analyze", *(["--keylog", str(keys)] if keys else []), str(cap))
    section = next(s for s in rep["sections"] if s["name"] == "gossip")
    assert section["columns"] == ANALYZE_GOSSIP_COLUMNS
    assert {(r["src"], r["kind"], r["topic"]): [r["count"], r["message_ids"], r["bytes"]] for r in section["rows"]} \
        == summed(((g.src, g.kind, g.topic), g.count, g.message_ids, g.bytes) for g in lines)
    assert sum(r["bytes"] for r in section["rows"]) == sum(n for _, _, _, n in rpcs)
    assert [r["bytes"] for r in section["rows"]] == sorted((r["bytes"] for r in section["rows"]), reverse=True)


def gossip_section(rep: dict) -> list[dict]:
    return next(s["rows"] for s in rep["sections"] if s["name"] == "gossip")


@pytest.mark.once
def test_merged_reports_give_the_gossip_rows_of_both_captures(tmp_path):
    """The section's sums merge exactly: p2pc merge of two captures' reports gives the rows of
    analyzing both together."""
    caps = [str(CAPTURES / "eth2/eth2-yamux.pcapng"), str(CAPTURES / "eth2/eth2-broken.pcapng")]
    paths = []
    for i, c in enumerate(caps):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(p2pc_report("analyze", c)))
    both = gossip_section(p2pc_report("analyze", *caps))
    assert gossip_section(p2pc_report("merge", *map(str, paths))) == both
    one = {(r["src"], r["kind"], r["topic"]): r["bytes"] for r in gossip_section(json.loads(paths[0].read_text()))}
    assert both and all(r["bytes"] >= one.get((r["src"], r["kind"], r["topic"]), 0) for r in both)
    assert sum(r["bytes"] for r in both) > sum(one.values())


@pytest.mark.once
def test_the_terminal_shows_the_top_ten_rows_and_says_how_many_more():
    """The whole report's table shows the gossip rows with the most bytes; --section gossip all."""
    cap = str(CAPTURES / "lodestar/lodestar.pcapng")
    keys = ["--keylog", str(CAPTURES / "lodestar/lodestar.keys")]
    rows = gossip_section(p2pc_report("analyze", *keys, cap))
    assert len(rows) > 10
    out = run_p2pc("analyze", *keys, cap, env_extra={"COLUMNS": "400"}).stdout
    table = out[out.index("Gossipsub bytes by sender, kind and topic"):]
    assert f"({len(rows) - 10:,} more rows: --section gossip shows them all)" in table
    shown = [l.split() for l in table.splitlines()[3:13]]
    assert [(l[0], l[1], int(l[-7].replace(",", ""))) for l in shown] == \
        [(r["src"], r["kind"], r["bytes"]) for r in rows[:10]]
    whole = run_p2pc("analyze", *keys, cap, "--section", "gossip", env_extra={"COLUMNS": "400"}).stdout
    assert len([l for l in whole.splitlines() if l.startswith("192.0.2.")]) == len(rows)


def _truth_gossip_captures() -> list[str]:
    """The captures whose generators recorded each gossip message a peer published (truth.go
    and its twins: `peers.{dialer,listener}.messages`, kind gossip, dir sent)."""
    out = []
    for truth in sorted(CAPTURES.glob("*/*.truth.json")):
        doc = json.loads(truth.read_text())
        peers = doc.get("peers") if "link" in doc else None     # two peers, dialer and listener
        if isinstance(peers, dict) and any(m.get("kind") == "gossip" for p in peers.values() if isinstance(p, dict)
                                           for m in p.get("messages", [])):
            out.append(f"{truth.parent.name}/{truth.name.removesuffix('.truth.json')}")
    return out


@pytest.mark.parametrize("name", per_capture_kind(_truth_gossip_captures()))
def test_publish_rows_are_what_each_peer_says_it_published(tshark, tmp_path, name):
    """Per sender and topic, the publish count is the gossip messages that peer's own truth says
    it sent, each with the message ID the peer gave it (two peers: each message crosses the one
    link once, so no delivery is a duplicate)."""
    cap = CAPTURES / f"{name}.pcapng"
    truth = json.loads(cap.with_name(cap.stem + ".truth.json").read_text())
    keys = key_log(cap)
    rows = gossip_section(p2pc_report("analyze", *(["--keylog", str(keys)] if keys else []), str(cap)))
    got = {(r["src"], r["topic"]): r["count"] for r in rows if r["kind"] == "publish"}
    want: dict = defaultdict(int)
    ids: dict = defaultdict(list)
    for role in ("dialer", "listener"):
        for m in truth["peers"][role]["messages"]:
            if m["kind"] == "gossip" and m["dir"] == "sent":
                want[(truth["link"][role], m["topic"])] += 1
                ids[truth["link"][role]].append(m["msg_id"])
    assert got == dict(want)
    # Each message's ID is the one its sender computed (eth2's rule), and none crossed twice.
    lines = gossip_lines(tshark, cap, split_keylog(tshark, keys, tmp_path) if keys else [])
    sent: dict = defaultdict(list)
    for g in lines:
        if g.kind == "publish":
            sent[g.src].append(g.message_id)
    assert {k: sorted(v) for k, v in sent.items()} == {k: sorted(v) for k, v in ids.items()}
    assert all(r["duplicates"] == r["duplicate_bytes"] == 0 for r in rows)


def _traced_captures() -> list[str]:
    """The captures whose peers' truth holds what go-libp2p-pubsub's tracer saw them send
    (captures/gen/libp2p/truth.go, pubsubTrace: `peers.*.pubsub_sent`)."""
    return [f"{t.parent.name}/{t.name.removesuffix('.truth.json')}" for t in sorted(CAPTURES.glob("*/*.truth.json"))
            if all("pubsub_sent" in p for p in (json.loads(t.read_text()).get("peers") or {"": {}}).values())]


def peer_addrs(truth: dict) -> dict[str, str]:
    """Each peer of a generator's truth (its key in `peers`) and its address: a pair's dialer
    and listener (`link`), or a mesh's peers (`addrs`, make_gossip_mesh.py)."""
    return {role: truth["link"][role] for role in ("dialer", "listener")} if "link" in truth else truth["addrs"]


@pytest.mark.parametrize("name", _traced_captures())
def test_rows_are_what_the_peers_tracer_saw_them_send(name):
    """Per sender, kind and topic, the entries and message IDs are what go-libp2p-pubsub's own
    tracer (a RawTracer's SendRPC) counted for that peer, but for the hello: the RPC of the
    peer's subscriptions it writes first on each new pubsub stream (one per other peer), which
    pubsub.go (handleNewPeer: q.Push(helloPacket)) queues past the tracer, one SubOpts per topic
    it joined (the generator joins the truth's gossip topic).  On eth2-gossip-mesh, three peers
    in a triangle, that is every publish each peer forwarded and every IDONTWANT it sent; on
    eth2-gossip-lazy, five in meshes of two or three, also every IHAVE, IWANT and PRUNE, and the
    unsubscribes of leaving the topic."""
    cap = CAPTURES / f"{name}.pcapng"
    truth = json.loads(cap.with_name(cap.stem + ".truth.json").read_text())
    rows = gossip_section(p2pc_report("analyze", str(cap)))
    got = {(r["src"], r["kind"], r["topic"]): (r["count"], r["message_ids"])
           for r in rows if r["kind"] not in ("rpc_framing", "other")}
    want = {}
    addrs = peer_addrs(truth)
    for role, src in addrs.items():
        for c in truth["peers"][role]["pubsub_sent"]:
            want[(src, c["kind"], c["topic"])] = (c["count"], c["message_ids"])
        hello = want.get((src, "subscribe", truth["gossip"]["topic"]), (0, 0))
        want[(src, "subscribe", truth["gossip"]["topic"])] = (hello[0] + len(addrs) - 1, 0)
    assert got == want
    assert any(k[1] in ("graft", "idontwant") for k in want)


def _id_traced_captures() -> list[str]:
    """The traced captures whose tracer also kept the message IDs each kind carried
    (`pubsub_sent[].ids`, truth.go: on the captures made since)."""
    return [n for n in _traced_captures()
            if any("ids" in c for p in json.loads((CAPTURES / f"{n}.truth.json").read_text())["peers"].values()
                   for c in p["pubsub_sent"])]


ID_KINDS = ("publish", "ihave", "iwant", "idontwant")


def sent_ids(lines) -> dict:
    """Per sender and kind, the message IDs the dump's G lines give (publish: each Message's,
    by its topic's rule; ihave, iwant, idontwant: the IDs their entries carry), as a multiset."""
    out: dict = defaultdict(Counter)
    for g in lines:
        if g.kind in ID_KINDS:
            out[(g.src, g.kind)].update(filter(None, g.message_id.split(",")))
    return dict(out)


@pytest.mark.parametrize("name", _id_traced_captures())
def test_message_ids_are_the_ones_each_peers_tracer_saw_it_send(tshark, name):
    """Per sender and kind, the message IDs are the ones go-libp2p-pubsub's tracer saw that peer
    send (SendRPC; publish: each Message's ID by eth2's rule, ihave, iwant and idontwant: the IDs
    their entries carry), each as many times: the IHAVE a peer sent at each heartbeat, the IWANTs
    it asked with, the IDONTWANTs and every Message it published or forwarded."""
    cap = CAPTURES / f"{name}.pcapng"
    truth = json.loads(cap.with_name(cap.stem + ".truth.json").read_text())
    want = {}
    for role, src in peer_addrs(truth).items():
        for c in truth["peers"][role]["pubsub_sent"]:
            if c["kind"] in ID_KINDS:
                want.setdefault((src, c["kind"]), Counter()).update(c["ids"])
    got = sent_ids(gossip_lines(tshark, cap, []))
    assert got == want
    assert any(k == "publish" for _, k in want)


def test_lazy_gossip_is_ihave_answered_by_iwant_and_the_message(tshark):
    """eth2-gossip-lazy: five go-libp2p-pubsub v0.15 peers, all connected, with a mesh of D = 2
    (Dhi = 3) and a 100 ms heartbeat, each taking 300 ms to validate.  Every peer's tracer saw
    it send IHAVE, IWANT and PRUNE (the PRUNEs of a mesh above Dhi, and of leaving the topic)
    and p2pc counts each as the tracer does (test_rows_are_what_the_peers_tracer_saw_them_send).
    On the wire, as gossipsub v1.1 has it: each ID a peer asks for with IWANT was in an IHAVE the
    asked peer had sent it before, and the asked peer then sends the asker that message (from
    its message cache: go-libp2p-pubsub's handleIWant), once per IWANT."""
    cap = CAPTURES / "eth2/eth2-gossip-lazy.pcapng"
    truth = json.loads(cap.with_name(cap.stem + ".truth.json").read_text())
    traced, traced_ids = Counter(), Counter()
    for p in truth["peers"].values():
        for c in p["pubsub_sent"]:
            traced[c["kind"]] += c["count"]
            traced_ids[c["kind"]] += c["message_ids"]
    assert all(traced[k] for k in ("ihave", "iwant", "prune", "graft", "idontwant", "unsubscribe"))
    assert all(traced_ids[k] for k in ("ihave", "iwant", "idontwant"))
    # A mesh of D = 2 among five: fewer publishes than a flood's (each message from each of the
    # five peers to the four others, and from each of those to the three left), IWANT answers
    # included.
    published = sum(m["dir"] == "sent" for p in truth["peers"].values() for m in p["messages"])
    assert traced["publish"] < published * (4 + 4 * 3)
    advertised, asked = set(), Counter()
    answered = Counter()
    for g in gossip_lines(tshark, cap, []):
        ids = filter(None, g.message_id.split(","))
        if g.kind == "ihave":
            advertised.update((g.src, g.dst, m) for m in ids)
        elif g.kind == "iwant":
            for m in ids:
                assert (g.dst, g.src, m) in advertised
                asked[(g.dst, g.src, m)] += 1
        elif g.kind == "publish" and asked[(g.src, g.dst, g.message_id)] > answered[(g.src, g.dst, g.message_id)]:
            answered[(g.src, g.dst, g.message_id)] += 1
    assert sum(asked.values()) == traced_ids["iwant"]
    assert answered == asked


def _message_bytes(topic: str, data_len: int) -> int:
    """The bytes of RPC.publish holding one Message of data_len bytes of data on topic (no from,
    seqno or signature: the eth2 peers sign nothing), as the protobuf library encodes it."""
    return field_bytes("RPC", publish=[PB["Message"](data=b"\0" * data_len, topic=topic)])


@pytest.mark.parametrize("name", ["eth2/eth2-gossip-mesh", "eth2/eth2-gossip-lazy"])
def test_duplicates_are_the_copies_each_peers_tracer_called_duplicate(tshark, name):
    """eth2-gossip-mesh: three go-libp2p-pubsub v0.15 peers in a triangle, each message reaching
    each peer over two paths; eth2-gossip-lazy: five, in meshes of two or three, a message
    also coming by IWANT.  What each peer's tracer called a DuplicateMessage (pubsub.go,
    validation.go: a message whose ID it had already marked seen) is what p2pc counts: per
    receiving peer and message ID the same copies, in all the same number and bytes.  Which of
    two copies is the duplicate, p2pc says by the order on the wire; the node by the order its
    validation workers reached them (markSeen runs in the worker, validation.go), which for
    copies that came within a millisecond of each other is not always the wire's: per sender the
    two agree wherever the duplicate came a millisecond or more after the first copy."""
    cap = CAPTURES / f"{name}.pcapng"
    truth = json.loads(cap.with_name(cap.stem + ".truth.json").read_text())
    addrs = peer_addrs(truth)
    of_id = {p["peer_id"]: addrs[role] for role, p in truth["peers"].items()}
    data_len = {m["msg_id"]: m["data_len"] for p in truth["peers"].values() for m in p["messages"]}
    topic = truth["gossip"]["topic"]
    traced = [(addrs[role], d["msg_id"], of_id[d["from"]]) for role, p in truth["peers"].items()
              for d in p["pubsub_duplicates"]]
    rows = [r for r in gossip_section(p2pc_report("analyze", str(cap))) if r["kind"] == "publish"]
    assert sum(r["duplicates"] for r in rows) == len(traced) > 0
    assert sum(r["duplicate_bytes"] for r in rows) == sum(_message_bytes(topic, data_len[m]) for _, m, _ in traced)
    # Per receiving peer and message ID: the copies that came, on the wire, after the peer had
    # sent or received one.
    lines = [g for g in gossip_lines(tshark, cap, []) if g.kind == "publish"]
    times = {int(n): float(t) for n, t in tshark.fields(cap, ["frame.number", "frame.time_epoch"])}
    had: dict = {}
    again = []      # (receiver, message ID, sender, seconds since the receiver had it)
    for g in lines:
        if g.message_id in had.get(g.dst, {}):
            again.append((g.dst, g.message_id, g.src, times[g.frame] - had[g.dst][g.message_id]))
        for node in (g.dst, g.src):
            had.setdefault(node, {}).setdefault(g.message_id, times[g.frame])
    assert Counter((r, m) for r, m, _, _ in again) == Counter((r, m) for r, m, _ in traced)
    # Per sender: p2pc's are those copies' senders; where the copy came a millisecond or more
    # after the peer had the message (8 of the 16), the tracer names the same sender.
    assert {r["src"]: r["duplicates"] for r in rows} == {a: sum(s == a for _, _, s, _ in again) for a in addrs.values()}
    apart = [(r, m, s) for r, m, s, gap in again if gap >= 0.001]
    assert apart
    assert not Counter(apart) - Counter(traced)


def test_idontwant_saved_the_sends_each_peers_tracer_did_not_make(tshark):
    """eth2-gossip-mesh: in a triangle every peer is in every other's mesh (D = 6 > 2), so a
    flood sends each message (peers - 1)^2 times, and each peer (peers - 1) times each message
    it published and (peers - 2) times each it got; a peer sends fewer only where an IDONTWANT
    kept it from forwarding (gossipsub v1.2: go-libp2p-pubsub checks its peers' IDONTWANTs
    before each forward).  So per sender the sends IDONTWANT saved are that flood less what the
    peer's tracer saw it send (SendRPC, `pubsub_sent`), all of them messages above the 1024-byte
    threshold (every smaller one is flooded), each of its publish bytes; and no peer sent a
    message after the receiver's IDONTWANT for it (the peers check before sending).  Per
    message, every one below the threshold was flooded, its copies crossing; those above were
    sent fewer times."""
    cap = CAPTURES / "eth2/eth2-gossip-mesh.pcapng"
    truth = json.loads(cap.with_name(cap.stem + ".truth.json").read_text())
    addrs = peer_addrs(truth)
    topic = truth["gossip"]["topic"]
    published = {role: [m for m in p["messages"] if m["dir"] == "sent"] for role, p in truth["peers"].items()}
    total = sum(map(len, published.values()))
    large = {m["data_len"] for ms in published.values() for m in ms
             if m["data_len"] >= truth["gossip"]["idontwant_threshold"]}
    assert len(large) == 1          # one size of large message: its bytes are each saved send's
    want = {}
    for role, p in truth["peers"].items():
        sent = sum(c["count"] for c in p["pubsub_sent"] if c["kind"] == "publish")
        mine = len(published[role])
        flood = (len(addrs) - 1) * mine + (len(addrs) - 2) * (total - mine)
        want[addrs[role]] = (0, 0, flood - sent, (flood - sent) * _message_bytes(topic, *large))
    rows = {r["src"]: r for r in gossip_section(p2pc_report("analyze", str(cap))) if r["kind"] == "publish"}
    idw = ("after_idontwant", "after_idontwant_bytes", "idontwant_saved", "idontwant_saved_bytes")
    assert {a: tuple(r[k] for k in idw) for a, r in rows.items()} == want
    assert sum(w[2] for w in want.values()) > 0
    # Per message: below the IDONTWANT threshold every message is flooded, (peers - 1)^2 sends
    # (the publisher to each other peer, each of them to the rest); above it the IDONTWANTs kept
    # copies off the wire.
    sends = Counter(g.message_id for g in gossip_lines(tshark, cap, []) if g.kind == "publish")
    flood = (len(addrs) - 1) ** 2
    threshold = truth["gossip"]["idontwant_threshold"]
    below = [m["msg_id"] for ms in published.values() for m in ms if m["data_len"] < threshold]
    above = [m["msg_id"] for ms in published.values() for m in ms if m["data_len"] >= threshold]
    assert below and all(sends[m] == flood for m in below)
    assert sum(sends[m] for m in above) < flood * len(above)


def _uvarint(n: int) -> bytes:
    """uvarint(n), n > 0, as the protobuf library encodes a length: a string field of n bytes
    without its tag and body."""
    return PB["ControlGraft"](topicID="x" * n).SerializeToString()[1:-n]


def test_bytes_no_spec_names_and_an_rpc_cut_short_are_other(tshark, tmp_path):
    """Crafted: an RPC with a field no spec names, one whose ControlMessage ends in bytes that
    do not parse, and one the stream closes inside.  Each known entry is counted as the library
    encodes it, the rest is `other`, and the rows still add up to the stream's bytes."""
    from craft import ACK, FIN, MESHSUB, MS, SYN, YAMUX_ID, ms, tcp_pcap, yamux

    ihave = PB["ControlIHave"](topicID="t", messageIDs=[b"a" * 20, b"b" * 20])
    iwant = PB["ControlIWant"](messageIDs=[b"c" * 20])
    idontwant = PB["ControlIDontWant"](messageIDs=[b"d" * 20, b"e" * 20, b"f" * 20])
    control = PB["ControlMessage"](ihave=[ihave], iwant=[iwant], idontwant=[idontwant])
    unknown = b"\x22\x05hello"                    # RPC field 4, 5 bytes (py-libp2p's senderRecord)
    body1 = PB["RPC"](control=control).SerializeToString() + unknown
    graft = PB["ControlGraft"](topicID="g")
    broken = b"\x0a\xff"                          # an IHAVE claiming 255 bytes of the 1 left
    inner = PB["ControlMessage"](graft=[graft]).SerializeToString() + broken
    body2 = b"\x1a" + _uvarint(len(inner)) + inner   # RPC.control = 3
    rpc1, rpc2 = _uvarint(len(body1)) + body1, _uvarint(len(body2)) + body2
    cut = _uvarint(50) + b"x" * 10                  # the stream closes 40 bytes short
    stream = MS + ms(MESHSUB)
    segs = [("a", MS + ms(YAMUX_ID)), ("b", MS + ms(YAMUX_ID)),
            ("a", yamux(SYN, 1, stream)), ("b", yamux(ACK, 1, stream)),
            ("a", yamux(0, 1, rpc1)), ("a", yamux(0, 1, rpc2)), ("a", yamux(FIN, 1, cut))]
    cap = tmp_path / "gossip-other.pcap"
    tcp_pcap(cap, segs, syn="a")
    got = summed(((g.kind, g.topic), g.count, g.message_ids, g.bytes)
                 for g in gossip_lines(tshark, cap, []) if g.src == "192.0.2.1")
    framing = (len(rpc1) - len(body1) + field_bytes("RPC", control=control) - control.ByteSize()
               + len(rpc2) - len(body2) + 1 + len(_uvarint(len(inner))))
    assert got == {
        ("rpc_framing", ""): [2, 0, framing],
        ("ihave", "t"): [1, 2, field_bytes("ControlMessage", ihave=[ihave])],
        ("iwant", ""): [1, 1, field_bytes("ControlMessage", iwant=[iwant])],
        ("idontwant", ""): [1, 3, field_bytes("ControlMessage", idontwant=[idontwant])],
        ("graft", "g"): [1, 0, field_bytes("ControlMessage", graft=[graft])],
        ("other", ""): [3, 0, len(unknown) + len(broken) + len(cut)],
    }
    assert sum(b for _, _, b in got.values()) == len(rpc1) + len(rpc2) + len(cut)


@pytest.mark.parametrize("name", ["eth2/eth2-yamux", "eth2/eth2-noise-yamux"])
def test_two_passes_print_the_gossip_lines_of_one(tshark, tmp_path, name):
    """tshark -2 (what the GUI and sharkd do: every frame dissected again) gives the same G
    lines as one pass: the parts come from the RPCs each frame completes, whichever pass."""
    cap = CAPTURES / f"{name}.pcapng"
    keys = key_log(cap)
    opts = split_keylog(tshark, keys, tmp_path) if keys else []
    one = gossip_lines(tshark, cap, opts)
    assert one
    assert gossip_lines(tshark, cap, [*opts, "-2"]) == one


def test_live_reads_the_gossip_lines_of_the_stream_tap():
    """What `p2pc live` does with the streaming tap's G lines, without a capture interface: its
    report's gossip section is analyze's of the same capture."""
    from p2pc.live import LiveTotals
    from p2pc.report import analyze_report
    from p2pc.wsenv import Wireshark, built_plugin
    cap = CAPTURES / "eth2/eth2-yamux.pcapng"
    live = LiveTotals()
    ws = Wireshark(plugin=built_plugin())
    try:
        res = ws.run("tshark", ["-n", "-q", "-r", str(cap), "-o", "p2pc.keep_replay:FALSE", "-z", "p2pc,records,stream"])
    finally:
        ws.cleanup()
    assert res.returncode == 0, res.stderr
    for line in res.stdout.splitlines():
        live.line(line)
    rows = gossip_section(analyze_report(live.agg, "capture", False, False))
    assert rows and rows == gossip_section(p2pc_report("analyze", str(cap)))


def test_a_message_a_node_already_had_is_a_duplicate_on_any_connection(tshark, tmp_path):
    """Crafted: A publishes one message to B on two connections, then B sends it back to A and a
    message of its own: B's second copy and A's copy back are duplicates (a node given a
    message ID it already received, or sent), each counted with its bytes; the message ID is
    go-libp2p's default, from || seqno."""
    import subprocess
    from craft import ACK, MESHSUB, MS, SYN, YAMUX_ID, ms, tcp_pcap, yamux

    m = PB["Message"](**{"from": b"peer-a", "seqno": b"\x00\x01", "topic": "t", "data": b"x" * 100})
    other = PB["Message"](**{"from": b"peer-b", "seqno": b"\x00\x01", "topic": "t", "data": b"y" * 30})

    def rpc(*msgs) -> bytes:
        body = PB["RPC"](publish=list(msgs)).SerializeToString()
        return _uvarint(len(body)) + body

    stream = MS + ms(MESHSUB)
    opening = [("a", MS + ms(YAMUX_ID)), ("b", MS + ms(YAMUX_ID)),
               ("a", yamux(SYN, 1, stream)), ("b", yamux(ACK, 1, stream))]
    parts = []
    for port, side, payload in ((40001, "a", rpc(m)), (40003, "a", rpc(m)), (40005, "b", rpc(m, other))):
        parts.append(tmp_path / f"{port}.pcap")
        tcp_pcap(parts[-1], [*opening, (side, yamux(0, 1, payload))], ports=(port, 9000), syn="a")
    cap = tmp_path / "dup.pcap"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(cap), *map(str, parts)], check=True)
    rows = {(r["src"], r["kind"]): r for r in gossip_section(p2pc_report("analyze", str(cap)))}
    mb, ob = field_bytes("RPC", publish=[m]), field_bytes("RPC", publish=[other])
    a, b = rows[("192.0.2.1", "publish")], rows[("192.0.2.2", "publish")]
    assert (a["count"], a["bytes"], a["duplicates"], a["duplicate_bytes"]) == (2, 2 * mb, 1, mb)
    assert (b["count"], b["bytes"], b["duplicates"], b["duplicate_bytes"]) == (2, mb + ob, 1, mb)
    ids = [g.message_id for g in gossip_lines(tshark, cap, []) if g.kind == "publish"]
    assert ids == [(b"peer-a" + b"\x00\x01").hex()] * 3 + [(b"peer-b" + b"\x00\x01").hex()]


def test_idontwant_is_paired_with_the_publishes_it_names(tshark, tmp_path):
    """Crafted, three nodes: A publishes m to B and to C; on B-C, C sends B an IDONTWANT for m
    and for an ID no node has, B one for m to C, then C sends m to B anyway; on a second A-B
    connection, B sends A an IDONTWANT for m after A sent it on the first.  By docs/savings-model.md: B's IDONTWANT from C saved m
    (B has it from A, neither C nor its first sender, and never sent it to C); C's send is after
    B's IDONTWANT (not saved); A's IDONTWANT from B came after A sent m (not saved); the unknown
    ID saved nothing.  Each IDONTWANT line carries its IDs in hex, as the entries hold them."""
    import subprocess
    from craft import ACK, MESHSUB, MS, SYN, YAMUX_ID, ms, tcp_pcap, yamux

    m = PB["Message"](**{"from": b"peer-a", "seqno": b"\x00\x01", "topic": "t", "data": b"x" * 100})
    mid, nobody = b"peer-a\x00\x01", b"z" * 20

    def rpc(*msgs, dont=()) -> bytes:
        control = PB["ControlMessage"](idontwant=[PB["ControlIDontWant"](messageIDs=list(dont))]) if dont else None
        body = PB["RPC"](publish=list(msgs), control=control).SerializeToString()
        return _uvarint(len(body)) + body

    stream = MS + ms(MESHSUB)
    opening = [("a", MS + ms(YAMUX_ID)), ("b", MS + ms(YAMUX_ID)),
               ("a", yamux(SYN, 1, stream)), ("b", yamux(ACK, 1, stream))]
    conns = [((1, 2), 40001, [("a", rpc(m))]),                      # A -> B: m
             ((1, 3), 40003, [("a", rpc(m))]),                      # A -> C: m
             ((2, 3), 40005, [("b", rpc(dont=[mid, nobody])),       # C -> B: IDONTWANT m, unknown
                              ("a", rpc(dont=[mid])),               # B -> C: IDONTWANT m
                              ("b", rpc(m))]),                      # C -> B: m, after B's IDONTWANT
             ((1, 2), 40007, [("b", rpc(dont=[mid]))])]             # B -> A: IDONTWANT m, A sent it
    parts = []
    for hosts, port, segments in conns:
        parts.append(tmp_path / f"{port}.pcap")
        tcp_pcap(parts[-1], [*opening, *((side, yamux(0, 1, p)) for side, p in segments)],
                 ports=(port, 9000), syn="a", hosts=hosts)
    cap = tmp_path / "idontwant.pcap"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(cap), *map(str, parts)], check=True)
    lines = [(g.src, g.message_id) for g in gossip_lines(tshark, cap, []) if g.kind == "idontwant"]
    assert lines == [("192.0.2.3", f"{mid.hex()},{nobody.hex()}"), ("192.0.2.2", mid.hex()),
                     ("192.0.2.2", mid.hex())]
    mb = field_bytes("RPC", publish=[m])
    rows = {r["src"]: r for r in gossip_section(p2pc_report("analyze", str(cap))) if r["kind"] == "publish"}
    idw = ("after_idontwant", "after_idontwant_bytes", "idontwant_saved", "idontwant_saved_bytes")
    assert {a: tuple(r[k] for k in idw) for a, r in rows.items()} == {
        "192.0.2.1": (0, 0, 0, 0), "192.0.2.2": (0, 0, 1, mb), "192.0.2.3": (1, mb, 0, 0)}


def test_a_dump_whose_idontwants_carry_no_ids_says_it_counts_no_pairing():
    """A dump of a plugin before the IDONTWANT IDs: its idontwant line counts its entries and
    IDs, pairs nothing, and a warning says after_idontwant and idontwant_saved are not counted."""
    from p2pc.model import Aggregate, gossip_rows
    agg = Aggregate()
    for line in ("G\t5\t0\t192.0.2.2\t9000\t192.0.2.1\t40001\tidontwant\t\t1\t1\t24\t",
                 "G\t6\t0\t192.0.2.1\t40001\t192.0.2.2\t9000\tpublish\tt\t1\t0\t119\t" + "ab" * 20):
        agg.add_gossip(parse_record(line))
    assert [(r["kind"], r["count"], r["message_ids"], r["after_idontwant"], r["idontwant_saved"])
            for r in gossip_rows(agg)] == [("publish", 1, 0, 0, 0), ("idontwant", 1, 1, 0, 0)]
    assert [w for w in agg.warnings if "IDONTWANTs carry no message IDs" in w]


def test_a_topic_with_control_characters_keeps_its_line_whole(tmp_path):
    """A topic a peer made up, holding TAB and LF: its G line keeps its columns (the dump's
    escapes) and the row names the topic as sent; the terminal table shows it escaped."""
    from craft import ACK, MESHSUB, MS, SYN, YAMUX_ID, ms, tcp_pcap, yamux
    topic = "a\tb\nc\x1b[2J"
    sub = PB["SubOpts"](subscribe=True, topicid=topic)
    body = PB["RPC"](subscriptions=[sub]).SerializeToString()
    stream = MS + ms(MESHSUB)
    cap = tmp_path / "topic.pcap"
    tcp_pcap(cap, [("a", MS + ms(YAMUX_ID)), ("b", MS + ms(YAMUX_ID)), ("a", yamux(SYN, 1, stream)),
                   ("b", yamux(ACK, 1, stream)), ("a", yamux(0, 1, _uvarint(len(body)) + body))], syn="a")
    rows = gossip_section(p2pc_report("analyze", str(cap)))
    assert [(r["kind"], r["topic"], r["bytes"]) for r in rows if r["kind"] == "subscribe"] == \
        [("subscribe", topic, field_bytes("RPC", subscriptions=[sub]))]
    out = run_p2pc("analyze", str(cap), "--section", "gossip").stdout
    assert "\x1b" not in out and r"a\tb\nc\x1b[2J" in out
