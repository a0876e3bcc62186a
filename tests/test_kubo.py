"""A real IPFS client, its keys read from the running nodes (issue #44): two kubo v0.42.0 nodes,
built from the release's source with nothing changed, one reading a file the other added, over
TCP with Noise, TCP with TLS (kubo's default) and QUIC (captures/kubo/,
captures/gen/make_kubo.py).  Each node's keys are what `p2pc keys --pid` read from it while it
ran.  The truth is the nodes' own: the DAG's blocks as the provider's `ipfs block get` gives
them, and both nodes' `ipfs stats bitswap`.  CIDs are also computed here from the block data
(test_bitswap.cid_string), never taken from p2pc's output."""
from __future__ import annotations

import hashlib
import json

import pytest

from conftest import CAPTURES
from test_bitswap import cid_string, decoded

DIR = CAPTURES / "kubo"
RUNS = ("tcp-noise", "tcp-tls", "quic")
TRUTHS = {r: json.loads((DIR / f"kubo-{r}.truth.json").read_text()) for r in RUNS}
SIDES = ("fetcher", "provider")


def cap(run: str):
    return DIR / TRUTHS[run]["capture"]


def keys(tshark, run: str, side: str) -> list[str]:
    """One node's key log for both readers (each skips the other's lines)."""
    p = tshark.ws.readable(DIR / TRUTHS[run]["keys"][side])
    return ["-o", f"libp2p_noise.keylog_file:{p}", "-o", f"tls.keylog_file:{p}"]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("run", RUNS)
def test_every_block_is_the_providers_and_every_one_crossed(tshark, run, side):
    """With one node's keys alone, every Bitswap block p2pc shows is one the provider holds: its
    data has the size and sha256 `ipfs block get` gave, its CID is its data hashed; the blocks
    B sent A are the DAG's blocks, as many as B's and A's `ipfs stats bitswap` count, with as
    many data bytes; and as many Bitswap messages each way as each node's Bitswap received."""
    t = TRUTHS[run]
    truth = {b["cid"]: b for b in t["blocks"]}
    msgs = decoded(tshark, cap(run), extra=keys(tshark, run, side))
    shown = [(m["src"], data, cid) for m in msgs for _, data, cid in m["block_data"]]
    for _, data, cid in shown:
        assert (len(data), hashlib.sha256(data).hexdigest()) == (truth[cid]["size"], truth[cid]["sha256"]), cid
        assert cid_string(0, 0x70, data) == cid       # kubo's default add: CIDv0 dag-pb
    to_a = [cid for src, _, cid in shown if src == t["link"]["addr_b"]]
    assert sorted(to_a) == sorted(truth) and len(shown) == len(to_a)
    a, b = t["nodes"]["a"]["stats_bitswap"], t["nodes"]["b"]["stats_bitswap"]
    assert len(to_a) == a["BlocksReceived"] == b["BlocksSent"]
    assert sum(truth[c]["size"] for c in to_a) == a["DataReceived"] == b["DataSent"]
    # Every Bitswap message each node's Bitswap received, each way.
    assert sum(m["src"] == t["link"]["addr_b"] for m in msgs) == a["MessagesReceived"]
    assert sum(m["src"] == t["link"]["addr_a"] for m in msgs) == b["MessagesReceived"]
    assert t["dag_stat"]["TotalSize"] == sum(b["size"] for b in t["blocks"])


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("run", RUNS)
def test_nothing_stays_encrypted(tshark, run, side):
    """With one node's keys alone no record is encrypted and no packet lacks a key."""
    extra = keys(tshark, run, side)
    recs = tshark.records(cap(run), extra=extra)
    assert recs and not [r for r in recs if r["msg_type"].endswith("(encrypted)")]
    assert {r["proto"] for r in recs} >= {"bitswap"}
    missing = tshark.fields(cap(run), ["frame.number"], extra=extra,
                            dfilter="p2pc.tls_no_keys || libp2p_noise.no_key || libp2p_noise.bad_tag "
                                    "|| libp2p_noise.stopped || libp2p_noise.no_handshake")
    assert missing == []


@pytest.mark.parametrize("run", RUNS)
def test_without_keys_no_bitswap_is_decoded(tshark, run):
    """The same captures without keys: no Bitswap message, the bytes counted as encrypted."""
    recs = tshark.records(cap(run))
    assert not [r for r in recs if r["proto"] == "bitswap"]
    assert [r for r in recs if r["msg_type"].endswith("(encrypted)") or r["proto"] == "libp2p_noise"]


def test_the_keys_are_p2pc_keys_from_the_unmodified_release():
    """Each key log is what p2pc keys read from a kubo v0.42.0 daemon (go-libp2p v0.48.0, as the
    release pins it) while it ran: one connection's lines, each once (Noise: the static and the
    ephemeral key; TLS and QUIC: the four TLS 1.3 secrets), as p2pc keys counted them."""
    for run, t in TRUTHS.items():
        for side, role in (("a", "fetcher"), ("b", "provider")):
            node = t["nodes"][side]
            assert node["version"]["Version"] == t["version"].lstrip("v") == "0.42.0"
            assert node["agent"].startswith("kubo/0.42.0")
            probing = next(line for line in node["p2pc_keys"] if ": probing " in line)
            assert "go-libp2p v0.48.0, flynn/noise v1.1.0: probing " in probing, probing
            lines = (DIR / t["keys"][role]).read_text().splitlines()
            assert len(lines) == len(set(lines))
            labels = sorted(line.split()[0] for line in lines)
            if run == "tcp-noise":
                assert labels == ["LOCAL_EPHEMERAL_PRIVATE_KEY", "LOCAL_STATIC_PRIVATE_KEY"], (run, side)
                counts = "0 TLS and 2 Noise"
            else:
                assert labels == ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
                                  "SERVER_HANDSHAKE_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0"], (run, side)
                counts = "4 TLS and 0 Noise"
            assert node["p2pc_keys"][-1].startswith("p2pc keys: stopped (every process ended): " + counts), \
                node["p2pc_keys"][-1]
