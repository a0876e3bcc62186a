"""A real Ethereum client (issue #25): two Lodestar 1.5.1 beacon nodes on a dev chain, over Noise
(captures/lodestar/, captures/gen/make_lodestar.py), their keys written by p2pc's Node preload
(keylog/node/noise-keylog.cjs) with no change to the client.  The truth is the nodes' own: every
block's SSZ from their REST API, and their req/resp and gossip counters from their metrics."""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

import pytest

from conftest import CAPTURES

DIR = CAPTURES / "lodestar"
CAP = DIR / "lodestar.pcapng"
TRUTH = json.loads((DIR / "lodestar.truth.json").read_text())
NODES = TRUTH["nodes"]
ADDR = {"a": TRUTH["link"]["addr_a"], "b": TRUTH["link"]["addr_b"]}
OTHER = {"a": "b", "b": "a"}
BLOCK_TYPES = ("gossip beacon_block", "beacon_blocks_by_range/1 response", "beacon_blocks_by_range/2 response",
               "beacon_blocks_by_root/1 response", "beacon_blocks_by_root/2 response")


def keys(tshark) -> list[str]:
    return ["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(DIR / TRUTH['keys'])}"]


def metric(side: str, name: str) -> dict[str, int]:
    """A node's counter by its first label's value (`name{label="v",...} n` lines as it printed them)."""
    out = {}
    for line in NODES[side]["metrics"]:
        m = re.fullmatch(rf'{name}\{{\w+="([^"]+)"[^}}]*\}} (\d+)', line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(2))
    return out


def total(side: str, name: str) -> int:
    return next(int(line.split()[1]) for line in NODES[side]["metrics"] if line.split()[0] == name)


@pytest.fixture(scope="module")
def decoded(tshark):
    """(record, uncompressed payload) of every record p2pc makes of the capture."""
    extra = keys(tshark)
    recs = tshark.records(CAP, extra=extra)
    pays = tshark.payloads(CAP, extra=extra)
    assert len(recs) == len(pays)
    for rec, (frame, mtype, _) in zip(recs, pays):
        assert (int(rec["frame"]), rec["msg_type"]) == (frame, mtype)
    return [(rec, raw) for rec, (_, _, raw) in zip(recs, pays)]


def test_every_decoded_block_is_one_the_nodes_serve(decoded):
    """Each block p2pc decodes (gossip, by range, by root) hashes to the SSZ of a block the nodes'
    REST API serves (genesis included: by range serves it), and every block of the chain but
    genesis, which each node makes itself, crossed the link at least once."""
    rest = {b["ssz_sha256"]: b for side in "ab" for b in NODES[side]["blocks"]}
    got = [hashlib.sha256(raw).hexdigest() for rec, raw in decoded if rec["msg_type"] in BLOCK_TYPES]
    assert got and all(sha in rest for sha in got)
    for rec, raw in decoded:
        if rec["msg_type"] in BLOCK_TYPES:
            assert int(rec["raw_len"]) == len(raw) == rest[hashlib.sha256(raw).hexdigest()]["ssz_len"]
    chain = {b["ssz_sha256"] for side in "ab" for b in NODES[side]["blocks"] if b["slot"] > 0}
    assert chain <= set(got)


def test_the_run_has_the_workload(decoded):
    """Status, ping, metadata, blocks by range, and gossip blocks, attestations, aggregates and
    sync committee messages each way; phase0 blocks and Altair ones.  Blocks by root only when B
    hears a gossip block whose parent it lacks before its range sync ends, a race (2 of the
    generator's first 6 runs): whether it happened, the nodes' counters say, and
    test_req_resp_counts_are_the_nodes holds p2pc to them."""
    versions = {b["version"] for side in "ab" for b in NODES[side]["blocks"]}
    assert versions == {"phase0", "altair"}
    kinds = {(rec["src"], rec["msg_type"]) for rec, _ in decoded}
    for mtype in ("status/1 request", "status/1 response", "ping/1 request", "ping/1 response"):
        assert any(m == mtype for _, m in kinds), mtype
    for prefix in ("metadata/", "beacon_blocks_by_range/"):
        assert any(m.startswith(prefix) for _, m in kinds), prefix
    for topic in ("beacon_block", "beacon_attestation", "beacon_aggregate_and_proof", "sync_committee",
                  "sync_committee_contribution_and_proof"):
        assert {src for src, m in kinds if m == f"gossip {topic}"} == set(ADDR.values()), topic


def test_nothing_undecoded_nor_without_a_role(tshark, decoded):
    assert not [rec for rec, _ in decoded if rec["msg_type"] == "undecoded" or "encrypted" in rec["msg_type"]]
    rows = tshark.fields(CAP, ["frame.number"], extra=keys(tshark),
                         dfilter="libp2p.role.unknown || libp2p.role.conflict || multistream.undecoded"
                                 " || libp2p_noise.no_key || libp2p_noise.bad_tag")
    assert rows == []


def test_the_noise_peer_ids_are_the_nodes(tshark):
    rows = tshark.fields(CAP, ["libp2p_noise.peer_id"], dfilter="libp2p_noise.peer_id", extra=keys(tshark))
    assert {r[0] for r in rows} == {NODES["a"]["peer_id"], NODES["b"]["peer_id"]}


def counted(decoded, side: str) -> tuple[Counter, Counter]:
    """What p2pc recorded before `side` printed its metrics: (req/resp method -> records,
    (sender, gossip topic) -> messages)."""
    until = NODES[side]["metrics_time"]
    reqresp, gossip = Counter(), Counter()
    for rec, _ in decoded:
        if float(rec["time"]) > until or rec["proto"] != "eth2":
            continue
        src = "a" if rec["src"] == ADDR["a"] else "b"
        mtype = rec["msg_type"]
        if mtype.startswith("gossip "):
            gossip[src, mtype.removeprefix("gossip ")] += 1
        else:
            method, kind = re.fullmatch(r"(\w+)/\d+ (request|response)", mtype).groups()
            reqresp[src, method, kind] += 1
    return reqresp, gossip


@pytest.mark.parametrize("side", "ab")
def test_req_resp_counts_are_the_nodes(decoded, side):
    """Each request a node says it received (beacon_reqresp_incoming_requests_total) or sent
    (outgoing) is one p2pc decodes, by method.  A metadata request has no body, so nothing to
    decode: it is counted by the one response it gets."""
    reqresp, _ = counted(decoded, side)
    other = OTHER[side]
    for name, asker, answerer in (("beacon_reqresp_incoming_requests_total", other, side),
                                  ("beacon_reqresp_outgoing_requests_total", side, other)):
        want = metric(side, name)
        got = {m: reqresp[asker, m, "request"] for (s, m, k) in reqresp if s == asker and k == "request"}
        if want.get("metadata"):
            got["metadata"] = reqresp[answerer, "metadata", "response"]
        assert got == want, name


@pytest.mark.parametrize("side", "ab")
def test_gossip_counts_are_the_nodes(decoded, side):
    """Per topic, what a node received (gossipsub_msg_received_prevalidation_total) is what p2pc
    decodes from its peer; what it sent to its one peer is what p2pc decodes from it: its own
    messages (gossipsub_msg_publish_peers_total; with one peer it forwards none) and those its
    peer asked for with IWANT (gossipsub_iwant_rcv_msgids_total).  In all, the messages of its
    RPCs each way (gossipsub_rpc_recv/sent_message_total)."""
    _, gossip = counted(decoded, side)
    other = OTHER[side]
    topics = lambda src: {t: n for (s, t), n in gossip.items() if s == src}  # noqa: E731
    assert topics(other) == metric(side, "gossipsub_msg_received_prevalidation_total")
    sent = Counter(metric(side, "gossipsub_msg_publish_peers_total"))
    sent.update(metric(side, "gossipsub_iwant_rcv_msgids_total"))
    assert topics(side) == {t: n for t, n in sent.items() if n}
    assert sum(topics(other).values()) == total(side, "gossipsub_rpc_recv_message_total")
    assert sum(topics(side).values()) == total(side, "gossipsub_rpc_sent_message_total")


def test_one_pass_equals_two(tshark):
    assert tshark.records(CAP, extra=keys(tshark)) == tshark.records(CAP, two_pass=True, extra=keys(tshark))
