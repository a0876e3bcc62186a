"""Two real beacon nodes' truth, as make_lodestar.py and make_prysm.py write it (their REST blocks
by sha256; their identity and counters as they printed them, read by captures/gen/beacon.py), and
the checks of p2pc's records against it that tests/test_lodestar.py and tests/test_prysm.py share."""
from __future__ import annotations

import hashlib
import re
from collections import Counter

BLOCK_TYPES = ("gossip beacon_block", "beacon_blocks_by_range/1 response", "beacon_blocks_by_range/2 response",
               "beacon_blocks_by_root/1 response", "beacon_blocks_by_root/2 response")
GOSSIP_TOPICS = ("beacon_block", "beacon_attestation", "beacon_aggregate_and_proof", "sync_committee",
                 "sync_committee_contribution_and_proof")


def decode(tshark, cap, extra: list[str]) -> list[tuple[dict, bytes]]:
    """(record, uncompressed payload) of every record p2pc makes of the capture."""
    recs = tshark.records(cap, extra=extra)
    pays = tshark.payloads(cap, extra=extra)
    assert len(recs) == len(pays)
    for rec, (frame, mtype, _) in zip(recs, pays):
        assert (int(rec["frame"]), rec["msg_type"]) == (frame, mtype)
    return [(rec, raw) for rec, (_, _, raw) in zip(recs, pays)]


def metric(lines: list[str], name: str) -> dict[str, int]:
    """A node's counter by its first label's value (`name{label="v",...} n` lines as it printed
    them; Prometheus may print a float, 1e+06 style for large ones)."""
    out = {}
    for line in lines:
        m = re.fullmatch(rf'{name}\{{\w+="([^"]+)"[^}}]*\}} (\S+)', line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + int(float(m.group(2)))
    return out


def total(lines: list[str], name: str) -> int:
    """A counter with no labels."""
    return next(int(float(line.split()[1])) for line in lines if line.split()[0] == name)


def assert_blocks_served(decoded, nodes: dict) -> Counter:
    """Each block p2pc decodes (gossip, by range, by root) hashes to the SSZ of a block the nodes'
    REST API serves, with its length, and every block of the chain but genesis, which each node
    makes itself, crossed the link at least once.  Returns how many blocks of each message type
    it checked."""
    rest = {b["ssz_sha256"]: b for side in "ab" for b in nodes[side]["blocks"]}
    got = [hashlib.sha256(raw).hexdigest() for rec, raw in decoded if rec["msg_type"] in BLOCK_TYPES]
    assert got and all(sha in rest for sha in got)
    for rec, raw in decoded:
        if rec["msg_type"] in BLOCK_TYPES:
            assert int(rec["raw_len"]) == len(raw) == rest[hashlib.sha256(raw).hexdigest()]["ssz_len"]
    chain = {b["ssz_sha256"] for side in "ab" for b in nodes[side]["blocks"] if b["slot"] > 0}
    assert chain <= set(got)
    return Counter(rec["msg_type"] for rec, _ in decoded if rec["msg_type"] in BLOCK_TYPES)


def assert_workload(decoded, nodes: dict, addrs: dict[str, str]) -> set[tuple[str, str]]:
    """Status, ping, metadata, blocks by range, and gossip blocks, attestations, aggregates and
    sync committee messages each way; phase0 blocks and Altair ones.  Returns the (sender,
    message type) pairs decoded."""
    assert {b["version"] for side in "ab" for b in nodes[side]["blocks"]} == {"phase0", "altair"}
    kinds = {(rec["src"], rec["msg_type"]) for rec, _ in decoded}
    for mtype in ("status/1 request", "status/1 response", "ping/1 request", "ping/1 response"):
        assert any(m == mtype for _, m in kinds), mtype
    for prefix in ("metadata/", "beacon_blocks_by_range/"):
        assert any(m.startswith(prefix) for _, m in kinds), prefix
    for topic in GOSSIP_TOPICS:
        assert {src for src, m in kinds if m == f"gossip {topic}"} == set(addrs.values()), topic
    return kinds


def counted(decoded, addrs: dict[str, str], until: float, versions: bool) -> tuple[Counter, Counter]:
    """What p2pc recorded before `until` (when a node printed its metrics): ((sender side, method
    or method/version, request or response) -> records, (sender side, gossip topic) -> messages)."""
    side_of = {v: k for k, v in addrs.items()}
    method_re = r"(\w+/\d+) (request|response)" if versions else r"(\w+)/\d+ (request|response)"
    reqresp, gossip = Counter(), Counter()
    for rec, _ in decoded:
        if float(rec["time"]) > until or rec["proto"] != "eth2":
            continue
        src = side_of[rec["src"]]
        mtype = rec["msg_type"]
        if mtype.startswith("gossip "):
            gossip[src, mtype.removeprefix("gossip ")] += 1
        else:
            method, kind = re.fullmatch(method_re, mtype).groups()
            reqresp[src, method, kind] += 1
    return reqresp, gossip
