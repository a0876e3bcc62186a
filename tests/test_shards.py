"""Captures larger than memory and fleets: the capture split by connection (`p2pc shard`), the
shards analyzed in parallel and merged (`analyze --shards`, on local processes or a real Dask
cluster), and saved reports merged (`p2pc merge`).  The reference for every total is an
unsharded `p2pc analyze` of the same captures; the connections of each shard are read with
tshark's own ip/tcp fields, not with the splitter's."""
from __future__ import annotations

import json
import struct
import subprocess
from collections import Counter

import pytest

from conftest import CAPTURES, once_beyond_first
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


# Shard and merge are the analyzer's own: the first capture holds the tshark part on every version.
@pytest.mark.parametrize("capture,shards", once_beyond_first([(PARALLEL, 3), (TLS, 2), (BTC, 4)]))
def test_sharded_totals_equal_unsharded(capture, shards):
    whole = report("analyze", str(capture))
    sharded = report("analyze", "--shards", str(shards), "-j", "2", str(capture))
    assert whole["totals"]["messages"] > 0
    assert figures(sharded) == figures(whole)
    assert sharded["files"] == whole["files"] == [str(capture)]


@pytest.mark.once
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


@pytest.mark.once
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


@pytest.mark.once
def test_merge_of_two_captures_with_the_same_name_adds_up(tmp_path):
    """Two machines' `capture.pcapng` (different traffic, one name): their connections, which
    tshark numbers alike in each file, are kept apart, and the merge is the report of both
    captures analyzed at once. (The same report twice is refused: test_analyzer.py,
    test_the_same_report_or_capture_given_twice_is_refused_naming_it.)"""
    reports, caps = [], []
    for machine, src in (("m1", PARALLEL), ("m2", FISCO / "fisco-serial-on.pcapng")):
        (tmp_path / machine).mkdir()
        caps.append(tmp_path / machine / "capture.pcapng")
        caps[-1].write_bytes(src.read_bytes())
        reports.append(tmp_path / f"{machine}.json")
        res = p2pc("analyze", "capture.pcapng", "--format", "json", "--output", str(reports[-1]),
                   cwd=tmp_path / machine)
        assert res.returncode == 0, res.stderr
    merged = report("merge", *map(str, reports))
    both = report("analyze", *map(str, caps))
    for key in ("rows", "totals", "sections"):
        assert merged[key] == both[key], key


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


# once: dask's scheduling of the shards; their figures are checked on every version.
@pytest.mark.once
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


# ---- memory: the splitter keeps nothing per frame or connection; the merge one shard at a time
def synthetic_capture(path, connections: int, frames: int) -> None:
    """`connections` TCP connections (10.0.x.y:port <-> 10.1.x.y:8333) of `frames` frames each,
    interleaved, both directions, written with dpkt's pcapng writer."""
    import dpkt
    with open(path, "wb") as f:
        w = dpkt.pcapng.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for n in range(frames):
            for c in range(connections):
                a, b = bytes([10, 0, c >> 8, c & 255]), bytes([10, 1, c >> 8, c & 255])
                ports = (40000 + c % 20000, 8333)
                if n % 2:
                    a, b, ports = b, a, ports[::-1]
                tcp = dpkt.tcp.TCP(sport=ports[0], dport=ports[1], seq=n, flags=dpkt.tcp.TH_ACK,
                                   data=b"x" * 100)
                ip = dpkt.ip.IP(src=a, dst=b, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
                w.writepkt(bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)),
                           ts=n * connections + c)


def split_peak(capture, out) -> tuple[int, list[int]]:
    """The most memory split() held (tracemalloc: every Python allocation), and its frames per shard."""
    import tracemalloc
    from p2pc.shard import split
    tracemalloc.start()
    try:
        res = split(capture, out, 4)
        return tracemalloc.get_traced_memory()[1], res.frames
    finally:
        tracemalloc.stop()


# #40: a folder that cannot be made, a scheduler that is not an address or does not answer:
# one line and the documented exit code (errors.Exit), no traceback.  Dask's own connect
# timeout (distributed.comm.timeouts.connect, 30 s) is shortened through its environment.
USAGE, ERROR = 2, 1


@pytest.mark.once
@pytest.mark.parametrize("case", ["shard-out", "shard-dir", "not-an-address", "unreachable"])
def test_scale_out_errors_are_one_line(tmp_path, case):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    capture = str(BTC)
    if case == "shard-out":
        args, code, named = ["shard", capture, "--out", str(blocker / "shards")], USAGE, str(blocker / "shards")
    elif case == "shard-dir":
        args, code, named = ["analyze", "--shards", "2", "--shard-dir", str(tmp_path / "missing"), capture], \
            USAGE, "--shard-dir"
    else:
        pytest.importorskip("dask.distributed")
        addr = "notaurl" if case == "not-an-address" else "tcp://127.0.0.1:1"
        args, code, named = ["analyze", "--shards", "2", "--scheduler", addr, capture], \
            USAGE if case == "not-an-address" else ERROR, f"--scheduler {addr}"
    res = p2pc(*args, env_extra={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}, timeout=120)
    assert res.returncode == code, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("p2pc: ") and named in lines[0], res.stderr
    assert not res.stdout


def test_splitter_memory_does_not_grow_with_the_capture(tmp_path):
    """100 times the frames and the connections: the same memory (the 4 write buffers and one
    frame), so nothing is kept per frame or per connection."""
    small, large = tmp_path / "small.pcapng", tmp_path / "large.pcapng"
    synthetic_capture(small, 4, 5)
    synthetic_capture(large, 400, 5)
    split_peak(small, tmp_path / "warm")        # dpkt's modules imported once
    peak_small, frames_small = split_peak(small, tmp_path / "s")
    peak_large, frames_large = split_peak(large, tmp_path / "l")
    assert sum(frames_small) == 20 and sum(frames_large) == 2000
    assert min(frames_large) > 0                 # the connections spread over every shard
    assert peak_large - peak_small < 32 << 10, (peak_small, peak_large)


def test_sharded_merge_holds_one_shard_at_a_time(monkeypatch, tmp_path):
    """analyze_sharded merges each shard's Aggregate and drops it before the next one is read."""
    import weakref
    from p2pc import shard
    from p2pc.records import Message
    from p2pc.series import SeriesAggregate
    refs: list = []
    held = []

    def one_shard(path, plugin, opts=None):
        held.append(sum(r() is not None for r in refs))    # earlier shards still in memory
        part = SeriesAggregate(files=[path])
        part.add_message(path, Message(1, 0, "10.0.0.1", 40000, "10.0.0.2", 8333, 1.0, "bitcoin",
                                       "tx", "none", 124, 24, 100, 100, 1))
        refs.append(weakref.ref(part))
        return part

    monkeypatch.setattr(shard, "resolve_plugin", lambda plugin: None)
    monkeypatch.setattr(shard, "analyze_shard", one_shard)
    capture = tmp_path / "c.pcapng"
    synthetic_capture(capture, 40, 2)
    agg = shard.analyze_sharded(str(capture), 5, 1, workdir=str(tmp_path))
    assert held == [0] * 5
    assert sum(s.messages for types in agg.by_dir.values() for s in types.values()) == 5


def test_parallel_shard_results_are_dropped_once_read():
    """The worker processes' results: each released when the merge has read it."""
    import weakref
    from p2pc.shard import _in_order
    from p2pc.series import SeriesAggregate

    class Done:
        def __init__(self, part):
            self.part = part

        def result(self):
            return self.part

    parts = [SeriesAggregate(files=[str(i)]) for i in range(4)]
    refs = [weakref.ref(p) for p in parts]
    futures = [Done(p) for p in parts]
    del parts
    for i, part in enumerate(_in_order(futures, lambda f: None)):
        assert part is refs[i]()
        assert all(r() is None for r in refs[:i])
        del part


def merged_aggregate(connections: int, file: str = "cap.pcapng#0"):
    """An Aggregate of `connections` Bitcoin connections: per direction four message types in
    two seconds, and the direction's TCP record."""
    from p2pc.records import Message, TcpDirection
    from p2pc.series import SeriesAggregate
    agg = SeriesAggregate()
    for c in range(connections):
        a, b = f"10.0.{c >> 8}.{c & 255}", f"10.1.{c >> 8}.{c & 255}"
        for src, sport, dst, dport in ((a, 40000, b, 8333), (b, 8333, a, 40000)):
            for k, mtype in enumerate(("tx", "inv", "block", "cmpctblock")):
                for sec in (0, 1):
                    agg.add_message(file, Message(k, c, src, sport, dst, dport, 1000.0 + sec, "bitcoin",
                                                  mtype, "zstd" if k % 2 else "none", 500, 24, 476, 900, 1))
            agg.add_tcp(file, TcpDirection(c, src, sport, dst, dport, 100, 50000, 50, 40000, 45000,
                                           30, 2000, 3, 200, 1448, 1000.0, 1001.0))
    return agg


def test_merged_sums_are_small_per_connection():
    """What grows with the connections (one sum per direction and message type, the TCP record,
    the per-second bandwidth): under 8 KiB per connection (5.3 KiB on Python 3.11)."""
    import pickle
    import tracemalloc
    sent = pickle.dumps(merged_aggregate(2000))         # as it comes from a worker
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        agg = pickle.loads(sent)
        per_connection = (tracemalloc.get_traced_memory()[0] - before) / 2000
    finally:
        tracemalloc.stop()
    assert len(agg.tcp) == 4000 and len(agg.bandwidth) == 8000
    assert per_connection < 8 << 10, per_connection


def test_json_aggregate_is_written_piece_by_piece():
    """A report's aggregate is encoded one connection direction at a time, and reads back whole."""
    from p2pc.merge import AggregateJSON, aggregate_from_json
    agg = merged_aggregate(300)
    pieces = list(AggregateJSON(agg).chunks())
    assert max(len(p) for p in pieces) < 2 << 10
    back = aggregate_from_json(json.loads("".join(pieces)))
    assert type(back) is type(agg)
    for name in ("by_dir", "tcp", "sizes", "ratios", "bandwidth", "size_ratios"):
        assert getattr(back, name) == getattr(agg, name), name


@pytest.mark.parametrize("link", ["ethernet", "vlan", "sll", "sll2", "raw", "loopback"])
@pytest.mark.parametrize("family", [4, 6])
def test_both_directions_of_a_connection_get_one_key(link, family):
    """The splitter's connection key, for frames built with dpkt: the sorted address:port ends
    of the generator, the same both ways; by address pair for an IPv4 fragment past the first."""
    import dpkt
    from p2pc.connkey import frame_key
    if family == 4:
        a, b = bytes([192, 0, 2, 1]), bytes([192, 0, 2, 200])
    else:
        a, b = bytes(15) + b"\x01", bytes(15) + b"\x02"

    def frame(src, dst, sport, dport, udp=False, fragment=False):
        l4 = (dpkt.udp.UDP(sport=sport, dport=dport, data=b"hi") if udp else
              dpkt.tcp.TCP(sport=sport, dport=dport, flags=dpkt.tcp.TH_ACK, data=b"hello"))
        proto = dpkt.ip.IP_PROTO_UDP if udp else dpkt.ip.IP_PROTO_TCP
        if family == 4:
            net = dpkt.ip.IP(src=src, dst=dst, p=proto, data=l4, offset=64 if fragment else 0)
            etype, fam = dpkt.ethernet.ETH_TYPE_IP, 2
        else:
            net = dpkt.ip6.IP6(src=src, dst=dst, nxt=proto, hlim=64, data=l4, plen=len(bytes(l4)))
            etype, fam = dpkt.ethernet.ETH_TYPE_IP6, 30
        raw = bytes(net)
        if link == "ethernet":
            return 1, bytes(dpkt.ethernet.Ethernet(type=etype, data=raw))
        if link == "vlan":
            tag = dpkt.ethernet.VLANtag8021Q(id=7, type=etype)
            return 1, bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_8021Q)) + bytes(tag) + raw
        if link == "sll":
            return 113, bytes(dpkt.sll.SLL(ethtype=etype, data=raw))
        if link == "sll2":
            return 276, bytes(dpkt.sll2.SLL2(ethtype=etype, data=raw))
        if link == "raw":
            return 101, raw
        return 0, struct.pack("=I", fam) + raw

    for udp in (False, True):
        lt, ab = frame(a, b, 40000, 8333, udp)
        _, ba = frame(b, a, 8333, 40000, udp)
        key = frame_key(lt)
        ends = sorted([a + struct.pack("!H", 40000), b + struct.pack("!H", 8333)])
        assert key(ab) == key(ba) == (b"U" if udp else b"T") + ends[0] + ends[1]
    if family == 4:
        lt, later = frame(a, b, 40000, 8333, fragment=True)
        assert frame_key(lt)(later) == b"I" + a + b


def test_bandwidth_bins_widen_for_long_captures(monkeypatch):
    """A day of messages in three connection directions, at most 100 sums kept: the bins double
    until under it, every byte is still counted, and the directions analyzed apart (as shards)
    and merged in any order give the same bins as one pass."""
    from p2pc import model
    from p2pc.records import Message
    from p2pc.series import SeriesAggregate
    monkeypatch.setattr(model, "BANDWIDTH_CELLS", 100)
    sent = [(d, t, 100 + d) for t in range(0, 86_400, 60) for d in range(3)]
    one, parts = SeriesAggregate(), [SeriesAggregate() for _ in range(3)]
    for d, t, n in sent:
        m = Message(t, d, f"10.0.0.{d}", 40000, "10.0.1.1", 8333, 1.7e9 + t + 0.5, "bitcoin",
                    "tx", "none", n, 24, n - 24, n - 24, 1)
        one.add_message("c", m)
        parts[d].add_message("c", m)
    assert len(one.bandwidth) <= 100
    assert one.bandwidth_bin > 1 and one.bandwidth_bin & (one.bandwidth_bin - 1) == 0
    assert sum(one.bandwidth.values()) == sum(n for _, _, n in sent)
    for order in ([0, 1, 2], [2, 0, 1]):
        merged = SeriesAggregate()
        for d in order:
            merged.merge(parts[d])
        assert (merged.bandwidth_bin, merged.bandwidth) == (one.bandwidth_bin, one.bandwidth)
