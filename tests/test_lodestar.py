"""A real Ethereum client (issue #25): two Lodestar 1.5.1 beacon nodes on a dev chain, over Noise
(captures/lodestar/, captures/gen/make_lodestar.py), their keys written by p2pc's Node preload
(keys/node/noise-keylog.cjs) with no change to the client.  The truth is the nodes' own: every
block's SSZ from their REST API, and their req/resp and gossip counters from their metrics."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from beacon import assert_blocks_served, assert_workload, counted, decode, metric, total
from conftest import CAPTURES

DIR = CAPTURES / "lodestar"
CAP = DIR / "lodestar.pcapng"
TRUTH = json.loads((DIR / "lodestar.truth.json").read_text())
NODES = TRUTH["nodes"]
ADDR = {"a": TRUTH["link"]["addr_a"], "b": TRUTH["link"]["addr_b"]}
OTHER = {"a": "b", "b": "a"}


def keys(tshark) -> list[str]:
    return ["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(DIR / TRUTH['keys'])}"]


@pytest.fixture(scope="module")
def decoded(tshark):
    """(record, uncompressed payload) of every record p2pc makes of the capture."""
    return decode(tshark, CAP, keys(tshark))


def asked_by_root(side: str) -> int:
    """The beacon_blocks_by_root requests a node says it sent."""
    return metric(NODES[side]["metrics"], "beacon_reqresp_outgoing_requests_total").get("beacon_blocks_by_root", 0)


def test_every_decoded_block_is_one_the_nodes_serve(decoded):
    """Each block p2pc decodes (gossip, by range, by root) hashes to the SSZ of a block the nodes'
    REST API serves (genesis included: by range serves it), and every block of the chain but
    genesis, which each node makes itself, crossed the link at least once; blocks by root among
    them."""
    types = assert_blocks_served(decoded, NODES)
    assert sum(n for t, n in types.items() if t.startswith("beacon_blocks_by_root/"))


def test_the_run_has_the_workload(decoded):
    """Status, ping, metadata, blocks by range, and gossip blocks, attestations, aggregates and
    sync committee messages each way; phase0 blocks and Altair ones.  And blocks by root: the
    generator reruns the whole run until the nodes' counters show a request (the race it needs
    is in its docstring); its requests come from the node that says it sent them, its responses
    from the other."""
    kinds = assert_workload(decoded, NODES, ADDR)
    askers = {s for s in "ab" if asked_by_root(s)}
    assert askers
    by_root = lambda kind: {src for src, m in kinds if re.fullmatch(rf"beacon_blocks_by_root/\d+ {kind}", m)}  # noqa: E731
    assert by_root("request") == {ADDR[s] for s in askers}
    assert by_root("response") == {ADDR[OTHER[s]] for s in askers}


def test_nothing_undecoded_nor_without_a_role(tshark, decoded):
    assert not [rec for rec, _ in decoded if rec["msg_type"] == "undecoded" or "encrypted" in rec["msg_type"]]
    rows = tshark.fields(CAP, ["frame.number"], extra=keys(tshark),
                         dfilter="libp2p.role.unknown || libp2p.role.conflict || multistream.undecoded"
                                 " || libp2p_noise.no_key || libp2p_noise.bad_tag")
    assert rows == []


def test_the_noise_peer_ids_are_the_nodes(tshark):
    rows = tshark.fields(CAP, ["libp2p_noise.peer_id"], dfilter="libp2p_noise.peer_id", extra=keys(tshark))
    assert {r[0] for r in rows} == {NODES["a"]["peer_id"], NODES["b"]["peer_id"]}


@pytest.mark.parametrize("side", "ab")
def test_req_resp_counts_are_the_nodes(decoded, side):
    """Each request a node says it received (beacon_reqresp_incoming_requests_total) or sent
    (outgoing) is one p2pc decodes, by method.  A metadata request has no body, so nothing to
    decode: it is counted by the one response it gets."""
    reqresp, _ = counted(decoded, ADDR, NODES[side]["metrics_time"], versions=False)
    other = OTHER[side]
    for name, asker, answerer in (("beacon_reqresp_incoming_requests_total", other, side),
                                  ("beacon_reqresp_outgoing_requests_total", side, other)):
        want = metric(NODES[side]["metrics"], name)
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
    _, gossip = counted(decoded, ADDR, NODES[side]["metrics_time"], versions=False)
    other = OTHER[side]
    lines = NODES[side]["metrics"]
    topics = lambda src: {t: n for (s, t), n in gossip.items() if s == src}  # noqa: E731
    assert topics(other) == metric(lines, "gossipsub_msg_received_prevalidation_total")
    sent = Counter(metric(lines, "gossipsub_msg_publish_peers_total"))
    sent.update(metric(lines, "gossipsub_iwant_rcv_msgids_total"))
    assert topics(side) == {t: n for t, n in sent.items() if n}
    assert sum(topics(other).values()) == total(lines, "gossipsub_rpc_recv_message_total")
    assert sum(topics(side).values()) == total(lines, "gossipsub_rpc_sent_message_total")


def test_one_pass_equals_two(tshark):
    assert tshark.records(CAP, extra=keys(tshark)) == tshark.records(CAP, two_pass=True, extra=keys(tshark))
