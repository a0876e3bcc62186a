"""A real Ethereum client (issues #25, #44): two Prysm v7 beacon nodes on a local phase0/Altair
chain, over TCP (Noise, yamux) and over QUIC, each node listening on and dialing from the same
port (captures/prysm/, captures/gen/make_prysm.py).  In prysm-<transport> their keys are written
by go-libp2p as Prysm pins it, patched with captures/gen/libp2p/keylog/; in
prysm-unpatched-<transport> go-libp2p is as Prysm pins it, unchanged, and each node's keys are
what `p2pc keys --pid` read from it while it ran: every check below runs with the listener's
keys alone and with the dialer's alone.  The truth is the nodes' own: every block's SSZ from
their REST API, the req/resp requests each node was sent and the gossip messages each sent,
from their metrics."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from beacon import assert_blocks_served, assert_workload, counted, decode, metric
from conftest import CAPTURES, parse_record

DIR = CAPTURES / "prysm"
TRANSPORTS = ("tcp", "quic")
UNPATCHED = tuple(f"unpatched-{t}" for t in TRANSPORTS)
TRUTHS = {c: json.loads((DIR / f"prysm-{c}.truth.json").read_text()) for c in TRANSPORTS + UNPATCHED}
# (capture, whose keys): the patched builds' one key log, or one node's p2pc keys log alone.
CASES = [(t, None) for t in TRANSPORTS] + [(c, side) for c in UNPATCHED for side in ("listener", "dialer")]
OTHER = {"a": "b", "b": "a"}
CONTROL_KINDS = ("ihave", "iwant", "graft", "prune", "idontwant")


def cap(t: str):
    return DIR / TRUTHS[t]["capture"]


def keys(tshark, t: str, side: str | None = None) -> list[str]:
    pref = "tls.keylog_file" if TRUTHS[t]["transport"] == "quic" else "libp2p_noise.keylog_file"
    name = TRUTHS[t]["keys"][side] if side else TRUTHS[t]["keys"]
    return ["-o", f"{pref}:{tshark.ws.readable(DIR / name)}"]


def addr(t: str) -> dict[str, str]:
    return {"a": TRUTHS[t]["link"]["addr_a"], "b": TRUTHS[t]["link"]["addr_b"]}


def topic_name(topic: str) -> str:
    """The message type p2pc gives a gossip topic: /eth2/<fork digest>/<name>[_<subnet>]/ssz_snappy
    -> name, subnets merged (beacon_attestation_3 -> beacon_attestation, sync_committee_1 ->
    sync_committee)."""
    name = re.fullmatch(r"/eth2/[0-9a-f]{8}/(\w+)/ssz_snappy", topic).group(1)
    return re.sub(r"^(beacon_attestation|sync_committee)_\d+$", r"\1", name)


@pytest.fixture(scope="module", params=CASES, ids=lambda c: "-".join(filter(None, c)))
def run(request, tshark):
    """(capture, [(record, uncompressed payload)] of every record p2pc makes of it, with the
    case's keys, the -o options of those keys)."""
    t, side = request.param
    extra = keys(tshark, t, side)
    return t, decode(tshark, cap(t), extra), extra


def test_every_decoded_block_is_one_the_nodes_serve(run):
    """Each block p2pc decodes (gossip, by range, by root) hashes to the SSZ of a block the nodes'
    REST API serves, with its length, and every block of the chain but genesis, which each node
    makes itself, crossed the link at least once."""
    t, decoded, _ = run
    assert_blocks_served(decoded, TRUTHS[t]["nodes"])


def test_the_run_has_the_workload(run):
    """Status, ping, metadata, blocks by range, and gossip blocks, attestations, aggregates and
    sync committee messages each way; phase0 blocks and Altair ones; the transport asked for."""
    t, decoded, _ = run
    assert_workload(decoded, TRUTHS[t]["nodes"], addr(t))


def test_one_address_pair_on_the_transport_asked_for(tshark, run):
    """Every message goes between the two nodes' port 9000 (each node dials from the port it
    listens on), over QUIC in prysm-quic, over TCP alone in prysm-tcp (QUIC disabled)."""
    t, decoded, _ = run
    port = str(TRUTHS[t]["link"]["port"])
    assert {(rec["srcport"], rec["dstport"]) for rec, _ in decoded} == {(port, port)}
    udp = tshark.fields(cap(t), ["frame.number"], dfilter="udp")
    tcp = tshark.fields(cap(t), ["frame.number"], dfilter="tcp.len > 0")
    assert (bool(udp), bool(tcp)) == ((True, False) if TRUTHS[t]["transport"] == "quic" else (False, True))


def test_nothing_undecoded_nor_without_a_role(tshark, run):
    t, decoded, extra = run
    assert not [rec for rec, _ in decoded if rec["msg_type"] == "undecoded" or "encrypted" in rec["msg_type"]]
    bad = ("libp2p.role.unknown || libp2p.role.conflict || multistream.undecoded"
           " || libp2p_noise.no_key || libp2p_noise.bad_tag || p2pc.tls_no_keys || libp2p_quic.gap")
    assert tshark.fields(cap(t), ["frame.number"], extra=extra, dfilter=bad) == []


def test_the_peer_ids_are_the_nodes(tshark, run):
    """The peer IDs p2pc reads from the handshakes (Noise's payload; the TLS certificate inside
    QUIC) are the ones the nodes' REST API gives, each from its own address."""
    t, _, extra = run
    field = "libp2p_tls.peer_id" if TRUTHS[t]["transport"] == "quic" else "libp2p_noise.peer_id"
    rows = tshark.fields(cap(t), ["ip.src", field], dfilter=field, extra=extra)
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
    t, decoded, _ = run
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
    t, decoded, _ = run
    node = TRUTHS[t]["nodes"][side]
    _, gossip = counted(decoded, addr(t), node["metrics_time"], versions=True)
    want = Counter()
    for topic, n in metric(node["metrics"], "p2p_pubsub_rpc_sent_pub_total").items():
        want[topic_name(topic)] += n
    assert {tp: n for (s, tp), n in gossip.items() if s == side} == {tp: n for tp, n in want.items() if n}


@pytest.mark.parametrize("side", "ab")
def test_control_entries_are_the_nodes(tshark, run, side):
    """Per control kind, the entries a node says it sent (p2p_pubsub_rpc_sent_total, by its
    control_message label: Prysm's tracer adds each sent RPC's IHAVE, IWANT, GRAFT, PRUNE and
    IDONTWANT entries) are the entries of the gossip section's rows p2pc reads from it, up to
    when it printed its metrics (issue #41: gossip control counted as the clients count it)."""
    t, _, extra = run
    node = TRUTHS[t]["nodes"][side]
    times = {int(n): float(s) for n, s in tshark.fields(cap(t), ["frame.number", "frame.time_epoch"])}
    got = Counter()
    for line in tshark.taps(cap(t), extra=extra):
        if line.startswith("G\t"):
            part = parse_record(line)
            if (part.src == addr(t)[side] and part.kind in CONTROL_KINDS
                    and times[part.frame] <= node["metrics_time"]):
                got[part.kind] += part.count
    want = metric(node["metrics"], "p2p_pubsub_rpc_sent_total")
    assert got == {kind: n for kind, n in want.items() if n}


def test_one_pass_equals_two(tshark, run):
    t, _, extra = run
    assert tshark.records(cap(t), extra=extra) == tshark.records(cap(t), two_pass=True, extra=extra)


@pytest.mark.parametrize("t", UNPATCHED)
def test_without_keys_nothing_is_decoded(tshark, t):
    """The p2pc keys captures without keys: no eth2 message nor anything else decoded, every
    record p2pc makes counts encrypted bytes."""
    recs = tshark.records(cap(t))
    assert recs and all(r["msg_type"].endswith("(encrypted)") for r in recs), Counter(r["msg_type"] for r in recs)


@pytest.mark.parametrize("t", UNPATCHED)
def test_the_keys_are_p2pc_keys_from_the_unmodified_release(tshark, t):
    """Each node's key log is what p2pc keys read from its Prysm v7.1.2 beacon-chain (go-libp2p
    v0.39.1 as the release pins it, not replaced, so not patched) while it ran, as many lines as
    p2pc keys counted, each once, a handshake's keys for each connection Wireshark sees: Noise,
    a static and an ephemeral key a TCP connection (go-libp2p makes a Noise static key for each
    handshake); QUIC, the four TLS 1.3 secrets a QUIC connection."""
    truth = TRUTHS[t]
    if truth["transport"] == "tcp":
        conns = {row[0] for row in tshark.fields(cap(t), ["tcp.stream"], dfilter="tcp")}
        want = {"LOCAL_STATIC_PRIVATE_KEY": len(conns), "LOCAL_EPHEMERAL_PRIVATE_KEY": len(conns)}
    else:
        field = "quic.connection.number"
        conns = {row[0] for row in tshark.fields(cap(t), [field], dfilter=field)}
        want = {label: len(conns) for label in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                                                "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")}
    for side, role in (("a", "listener"), ("b", "dialer")):
        said = truth["nodes"][side]["p2pc_keys"]
        probing = next(line for line in said if ": probing " in line)
        assert "/beacon-chain): go1.26" in probing and ", go-libp2p v0.39.1, flynn/noise v1.1.0: probing " in probing
        lines = (DIR / truth["keys"][role]).read_text().splitlines()
        assert len(lines) == len(set(lines))
        assert Counter(line.split()[0] for line in lines) == want, (t, role)
        tls, noise = (0, len(lines)) if truth["transport"] == "tcp" else (len(lines), 0)
        assert said[-1].startswith(f"p2pc keys: stopped (every process ended): {tls} TLS and {noise} Noise"), said[-1]
