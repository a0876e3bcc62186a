"""Captures larger than memory and fleets: the capture split by connection (`p2pc shard`), the
shards analyzed in parallel and merged (`analyze --shards`, on local processes or a real Dask
cluster), and saved reports merged (`p2pc merge`).  The reference for every total is an
unsharded `p2pc analyze` of the same captures; the connections of each shard are read with
tshark's own ip/tcp fields, not with the splitter's."""
from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from conftest import CAPTURES
from conftest import p2pc_report as report
from conftest import run_p2pc as p2pc

FISCO = CAPTURES / "fisco"
# Five TCP connections; two connections and TLS secrets (a Decryption Secrets Block);
# a Bitcoin one for a second protocol.
PARALLEL = FISCO / "fisco-parallel-on.pcapng"
TLS = FISCO / "fisco-tls.pcapng"
BTC = CAPTURES / "bitcoin" / "btc-compressed.pcapng"


def figures(rep: dict) -> dict:
    """Everything a reader sees: rows, totals, sections and plot series (not the raw sums,
    whose connection keys name the shards)."""
    return {k: rep[k] for k in ("rows", "totals", "sections", "series", "warnings")}


def connections(tshark, capture) -> Counter:
    """Frames per TCP connection (the sorted address:port pair), from tshark's fields."""
    out = Counter()
    for src, sport, dst, dport in tshark.fields(capture, ["ip.src", "tcp.srcport", "ip.dst", "tcp.dstport"],
                                                dfilter="tcp"):
        out[tuple(sorted([(src, sport), (dst, dport)]))] += 1
    return out


@pytest.mark.parametrize("capture,shards", [(PARALLEL, 3), (TLS, 2), (BTC, 4)])
def test_sharded_totals_equal_unsharded(capture, shards):
    whole = report("analyze", str(capture))
    sharded = report("analyze", "--shards", str(shards), "-j", "2", str(capture))
    assert whole["totals"]["messages"] > 0
    assert figures(sharded) == figures(whole)
    assert sharded["files"] == whole["files"] == [str(capture)]


def test_sharded_by_direction_and_bip_model_equal_unsharded():
    for extra in (["--by-direction"], ["--model", "bip"]):
        assert figures(report("analyze", "--shards", "3", str(PARALLEL), *extra)) == \
            figures(report("analyze", str(PARALLEL), *extra))


@pytest.mark.parametrize("fmt", ["pcapng", "pcap"])
def test_shards_keep_every_connection_whole(tmp_path, tshark, fmt):
    src = PARALLEL
    if fmt == "pcap":
        src = tmp_path / "parallel.pcap"
        subprocess.run(["editcap", "-F", "pcap", str(PARALLEL), str(src)], check=True)
    res = p2pc("shard", str(src), "--shards", "3", "--out", str(tmp_path / "shards"))
    assert res.returncode == 0, res.stderr
    shards = sorted((tmp_path / "shards").glob(f"*.shard*.{fmt}"))
    assert len(shards) == 3
    original = connections(tshark, PARALLEL)
    assert len(original) == 5
    seen: Counter = Counter()
    for s in shards:
        mine = connections(tshark, s)
        assert not set(mine) & set(seen), "a connection is split across shards"
        seen.update(mine)
    assert seen == original                     # every frame of every connection, once
    nframes = [int(subprocess.run(["capinfos", "-c", "-M", str(p)], capture_output=True, text=True)
                   .stdout.split()[-1]) for p in [PARALLEL, *shards]]
    assert sum(nframes[1:]) == nframes[0]       # the non-TCP frames too


def test_shards_carry_the_tls_secrets(tmp_path, tshark):
    """The Decryption Secrets Block goes to every shard: FISCO over TLS still decrypts."""
    res = p2pc("shard", str(TLS), "--shards", "2", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    total = sum(len(tshark.records(s)) for s in sorted(tmp_path.glob("*.shard*")))
    assert total == len(tshark.records(TLS)) > 0


def test_merge_equals_a_joint_analyze(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for cap, out in ((BTC, a), (PARALLEL, b)):
        assert p2pc("analyze", str(cap), "--format", "json", "--output", str(out)).returncode == 0
    merged = report("merge", str(a), str(b))
    joint = report("analyze", "-j", "1", str(BTC), str(PARALLEL))
    assert figures(merged) == figures(joint)
    assert merged["files"] == joint["files"]
    assert merged["aggregate"] == joint["aggregate"]
    # and a merged report merges again
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps(merged))
    assert figures(report("merge", str(ab))) == figures(joint)


def test_merge_of_two_captures_with_the_same_name_adds_up(tmp_path):
    """Two machines' `capture.pcapng`: their connections are kept apart, every sum doubles."""
    a = tmp_path / "a.json"
    assert p2pc("analyze", str(PARALLEL), "--format", "json", "--output", str(a)).returncode == 0
    single = json.loads(a.read_text())
    double = report("merge", str(a), str(a))
    for key in ("messages", "wire_bytes", "payload_saved", "raw_bytes"):
        assert double["totals"][key] == 2 * single["totals"][key]
    assert [r["messages"] for r in double["rows"]] == [2 * r["messages"] for r in single["rows"]]


def test_merge_reads_a_report_saved_before_codecs_were_kept(tmp_path):
    """A p2pc-aggregate/1 report (a direction's sums keyed by protocol and message type, no
    codec) merges to the same figures."""
    a = tmp_path / "a.json"
    assert p2pc("analyze", str(PARALLEL), "--format", "json", "--output", str(a)).returncode == 0
    now = json.loads(a.read_text())
    old = json.loads(a.read_text())
    old["aggregate"]["schema"] = "p2pc-aggregate/1"
    for _, types in old["aggregate"]["fields"]["by_dir"]["map"]:
        types["map"] = [[key[:2], sums] for key, sums in types["map"]]
    a.write_text(json.dumps(old))
    assert figures(report("merge", str(a))) == figures(now)


def test_merge_rejects_a_report_without_its_sums(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "p2pc-report/1", "command": "whatif"}))
    res = p2pc("merge", str(bad))
    assert res.returncode == 5 and "aggregate" in res.stderr


def test_shards_on_a_dask_cluster(tmp_path):
    """A real scheduler and two worker processes on 127.0.0.1: the same figures."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        res = p2pc("analyze", "--shards", "3", "--scheduler", cluster.scheduler_address,
                   "--shard-dir", str(tmp_path), str(PARALLEL), "--format", "json")
        assert res.returncode == 0, res.stderr
        on_cluster = json.loads(res.stdout)
        # The scheduler runs in this process: the shards' tasks went through it.
        prefixes = set(cluster.scheduler.task_prefixes)
        assert len(cluster.scheduler.workers) == 2
    assert any("analyze_shard" in p for p in prefixes), prefixes
    assert figures(on_cluster) == figures(report("analyze", str(PARALLEL)))
