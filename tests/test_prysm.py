"""A real Ethereum client (issue #25): two Prysm v7 beacon nodes on a local phase0/Altair chain,
over TCP (Noise, yamux) and over QUIC, each node listening on and dialing from the same port
(captures/prysm/, captures/gen/make_prysm.py), their keys written by go-libp2p as Prysm pins it,
patched with captures/gen/libp2p/keylog/.  The truth is the nodes' own: every block's SSZ from
their REST API, the req/resp requests each node was sent and the gossip messages each sent,
from their metrics."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from beacon import assert_blocks_served, assert_workload, counted, decode, metric
from conftest import CAPTURES

DIR = CAPTURES / "prysm"
TRANSPORTS = ("tcp", "quic")
TRUTHS = {t: json.loads((DIR / f"prysm-{t}.truth.json").read_text()) for t in TRANSPORTS}
OTHER = {"a": "b", "b": "a"}


def cap(t: str):
    return DIR / TRUTHS[t]["capture"]


def keys(tshark, t: str) -> list[str]:
    pref = "tls.keylog_file" if t == "quic" else "libp2p_noise.keylog_file"
    return ["-o", f"{pref}:{tshark.ws.readable(DIR / TRUTHS[t]['keys'])}"]


def addr(t: str) -> dict[str, str]:
    return {"a": TRUTHS[t]["link"]["addr_a"], "b": TRUTHS[t]["link"]["addr_b"]}


def topic_name(topic: str) -> str:
    """The message type p2pc gives a gossip topic: /eth2/<fork digest>/<name>[_<subnet>]/ssz_snappy
    -> name, subnets merged (beacon_attestation_3 -> beacon_attestation, sync_committee_1 ->
    sync_committee)."""
    name = re.fullmatch(r"/eth2/[0-9a-f]{8}/(\w+)/ssz_snappy", topic).group(1)
    return re.sub(r"^(beacon_attestation|sync_committee)_\d+$", r"\1", name)


@pytest.fixture(scope="module", params=TRANSPORTS)
def run(request, tshark):
    """(transport, [(record, uncompressed payload)] of every record p2pc makes of the capture)."""
    t = request.param
    return t, decode(tshark, cap(t), keys(tshark, t))


def test_every_decoded_block_is_one_the_nodes_serve(run):
    """Each block p2pc decodes (gossip, by range, by root) hashes to the SSZ of a block the nodes'
    REST API serves, with its length, and every block of the chain but genesis, which each node
    makes itself, crossed the link at least once."""
    t, decoded = run
    assert_blocks_served(decoded, TRUTHS[t]["nodes"])


def test_the_run_has_the_workload(run):
    """Status, ping, metadata, blocks by range, and gossip blocks, attestations, aggregates and
    sync committee messages each way; phase0 blocks and Altair ones; the transport asked for."""
    t, decoded = run
    assert_workload(decoded, TRUTHS[t]["nodes"], addr(t))


def test_one_address_pair_on_the_transport_asked_for(tshark, run):
    """Every message goes between the two nodes' port 9000 (each node dials from the port it
    listens on), over QUIC in prysm-quic, over TCP alone in prysm-tcp (QUIC disabled)."""
    t, decoded = run
    port = str(TRUTHS[t]["link"]["port"])
    assert {(rec["srcport"], rec["dstport"]) for rec, _ in decoded} == {(port, port)}
    udp = tshark.fields(cap(t), ["frame.number"], dfilter="udp")
    tcp = tshark.fields(cap(t), ["frame.number"], dfilter="tcp.len > 0")
    assert (bool(udp), bool(tcp)) == ((True, False) if t == "quic" else (False, True))


def test_nothing_undecoded_nor_without_a_role(tshark, run):
    t, decoded = run
    assert not [rec for rec, _ in decoded if rec["msg_type"] == "undecoded" or "encrypted" in rec["msg_type"]]
    bad = ("libp2p.role.unknown || libp2p.role.conflict || multistream.undecoded"
           " || libp2p_noise.no_key || libp2p_noise.bad_tag || p2pc.tls_no_keys || libp2p_quic.gap")
    assert tshark.fields(cap(t), ["frame.number"], extra=keys(tshark, t), dfilter=bad) == []


def test_the_peer_ids_are_the_nodes(tshark, run):
    """The peer IDs p2pc reads from the handshakes (Noise's payload; the TLS certificate inside
    QUIC) are the ones the nodes' REST API gives, each from its own address."""
    t, _ = run
    field = "libp2p_tls.peer_id" if t == "quic" else "libp2p_noise.peer_id"
    rows = tshark.fields(cap(t), ["ip.src", field], dfilter=field, extra=keys(tshark, t))
    nodes = TRUTHS[t]["nodes"]
    want = {addr(t)[s]: nodes[s]["peer_id"] for s in "ab"}
    assert rows and all(pid in want.values() for _, pids in rows for pid in pids.split("|"))
    assert {pid for _, pids in rows for pid in pids.split("|")} == set(want.values())


@pytest.mark.parametrize("side", "ab")
def test_req_resp_counts_are_the_nodes(run, side):
    """Each request a node says it was sent (p2p_message_received_total, by protocol
    /eth2/beacon_chain/req/<method>/<version>/ssz_snappy) is one p2pc decodes from its peer, by
    method and version.  A metadata request has no body, so nothing to decode: it is counted by
    the one response it gets."""
    t, decoded = run
    node = TRUTHS[t]["nodes"][side]
    reqresp, _ = counted(decoded, addr(t), node["metrics_time"], versions=True)
    other = OTHER[side]
    want = {}
    for topic, n in metric(node["metrics"], "p2p_message_received_total").items():
        m = re.fullmatch(r"/eth2/beacon_chain/req/(\w+)/(\d+)/ssz_snappy", topic)
        if m and n:
            want[f"{m.group(1)}/{m.group(2)}"] = n
    got = {m: n for (s, m, k), n in reqresp.items() if s == other and k == "request"}
    for m in [m for m in want if m.startswith("metadata/")]:
        got[m] = reqresp[side, m, "response"]
    assert got == want


@pytest.mark.parametrize("side", "ab")
def test_gossip_counts_are_the_nodes(run, side):
    """Per topic, the messages a node says it sent its one peer (p2p_pubsub_rpc_sent_pub_total:
    its own, and those its peer asked for with IWANT) are what p2pc decodes from it."""
    t, decoded = run
    node = TRUTHS[t]["nodes"][side]
    _, gossip = counted(decoded, addr(t), node["metrics_time"], versions=True)
    want = Counter()
    for topic, n in metric(node["metrics"], "p2p_pubsub_rpc_sent_pub_total").items():
        want[topic_name(topic)] += n
    assert {tp: n for (s, tp), n in gossip.items() if s == side} == {tp: n for tp, n in want.items() if n}


def test_one_pass_equals_two(tshark, run):
    t, _ = run
    assert tshark.records(cap(t), extra=keys(tshark, t)) == \
        tshark.records(cap(t), two_pass=True, extra=keys(tshark, t))
