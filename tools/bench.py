#!/usr/bin/env python3
"""Benchmark: stock tshark vs tshark with p2pc, `p2pc analyze` vs its own tshark pass, sharded
vs unsharded analysis: wall time and peak RSS, each command printed as it was run.

The capture: every committed capture (the cut-short ones left out), copied N times, each copy
of each capture on its own IPv4 addresses (tcprewrite --pnat 192.0.2.0/24 -> 10.a.b.0/24), so
every copy is a separate set of connections, then merged in time order (mergecap).  The decoded
record count must be exactly N times one copy's.  Built captures are kept in build/bench/.

    tools/bench.py            # ~1 GB mixed capture (and ~250 MB per protocol, and the
                              # js-libp2p plaintext captures of captures/interop 40 times)
    tools/bench.py --quick    # ~100 MB (and ~25 MB per protocol and of js-libp2p plaintext)
    tools/bench.py --one-pass --quick   # only: tshark's one pass, stock vs p2pc peak RSS, on
                                        # the mix, each protocol and js-libp2p plaintext copies
    tools/bench.py --huge-gb 10   # only: `p2pc analyze` of a 10 GB capture (make bench-huge),
                                  # peak RSS of its whole process tree (psutil), records exact
    tools/bench.py --quic         # only: one QUIC connection of 20,000 libp2p streams
                                  # (tools/quic_churn.py), CPU time of p2pc's records pass vs
                                  # stock tshark drawing a tree of the same stream ids
    tools/bench.py --quic --quic-streams 50000   # the same with 50,000 streams (both grow with
                                  # the square of the streams: Wireshark's QUIC stream list)

Needs tcprewrite (Debian: tcpreplay), editcap/mergecap/capinfos, GNU time (/usr/bin/time), and
the analyzer's dpkt (the QUIC case: aioquic and python-snappy, the analyzer's test extras).  Targets are printed with PASS/FAIL; they never fail the run.  The machine
may be busy: every measurement is repeated, runs interleaved, and the median is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
from p2pc.wsenv import Wireshark, built_plugin  # noqa: E402

BENCH = REPO / "build" / "bench"
PROTOS = {"bitcoin": "bitcoin", "fisco": "fisco", "eth2": "eth2",
          "libp2p-compression": "libp2p compression transport"}
JS_PLAINTEXT = "js-libp2p plaintext"    # captures/interop: every pair with js, no security layer
ONE_PASS_RSS = 1.05     # tshark's one pass keeps nothing for re-dissection: peak RSS near stock's
JS_COPIES = 40          # copies of the js-libp2p plaintext captures (issue #39's check; ~360 MB)
TIME = "/usr/bin/time"
SHARDS = 8          # the sharded analysis: four shards per worker of the 2-worker run
SHARD_RUNS = 5      # runs of the 1- vs 2-worker pair: the ratio sits near its 2-core ceiling
QUIC_STREAMS = 20000    # issue #40: p2pc's CPU time within QUIC_CPU of stock's with a tree
QUIC_CPU = 1.5


def sh(cmd: list[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)


def need(tool: str, package: str) -> None:
    if not shutil.which(tool) and not os.path.exists(tool):
        sys.exit(f"bench: {tool} not found: sudo apt-get install {package}")


# ---- building the captures ----
def sources(proto: str | None = None) -> list[Path]:
    dirs = [proto] if proto else list(PROTOS)
    return sorted(p for d in dirs for p in (REPO / "captures" / d).glob("*.pcapng")
                  if "truncated" not in p.name)


def js_plaintext_sources() -> list[Path]:
    """The interop captures of js-libp2p with itself and the other stacks over plaintext: many
    long muxed streams, all of it decoded, nothing encrypted (the replay cache's largest case)."""
    return sorted(p for p in (REPO / "captures" / "interop").glob("interop-*-plaintext-*.pcapng")
                  if "js" in p.name.split("-")[1:3])


def build(name: str, srcs: list[Path], target_bytes: int, k0: int) -> tuple[Path, Path, int]:
    """build/bench/NAME.pcapng: copies of `srcs`, each (copy, source) on 10.a.b.0/24 with
    a.b = k0 + its index; and NAME-copy0.pcapng, the first copy alone.  Returns the paths and
    the number of copies.  k0 keeps the address blocks of the different captures apart."""
    BENCH.mkdir(parents=True, exist_ok=True)
    round_bytes = sum(s.stat().st_size for s in srcs)
    copies = max(1, round(target_bytes / round_bytes))
    out, one = BENCH / f"{name}.pcapng", BENCH / f"{name}-copy0.pcapng"
    stamp = BENCH / f"{name}.built"
    want = f"{copies} copies of {len(srcs)} captures, {round_bytes} B each"
    if out.exists() and one.exists() and stamp.exists() and stamp.read_text() == want:
        return out, one, copies
    print(f"building {out.relative_to(REPO)}: {want}", flush=True)
    with tempfile.TemporaryDirectory(dir=BENCH) as tmp:
        merged = []
        for c in range(copies):
            parts = []
            for j, s in enumerate(srcs):
                k = k0 + c * len(srcs) + j
                assert k < 1 << 16, "too many copies for 10.0.0.0/8"
                dst = Path(tmp) / f"{c}-{j}.pcap"
                subprocess.run(["tcprewrite", f"--pnat=192.0.2.0/24:10.{k >> 8}.{k & 255}.0/24",
                                f"--infile={s}", f"--outfile={dst}"], check=True,
                               stdout=subprocess.DEVNULL)
                parts.append(str(dst))
            copy = Path(tmp) / f"copy{c}.pcapng"
            subprocess.run(["mergecap", "-F", "pcapng", "-w", str(copy), *parts], check=True)
            for p in parts:
                os.unlink(p)
            if c == 0:
                shutil.copy(copy, one)
            merged.append(str(copy))
        subprocess.run(["mergecap", "-F", "pcapng", "-w", str(out), *merged], check=True)
    for p in (out, one):
        p.chmod(0o644)
    stamp.write_text(want)
    return out, one, copies


def frames(path: Path) -> int:
    return int(subprocess.run(["capinfos", "-c", "-M", str(path)], capture_output=True,
                              text=True).stdout.split()[-1])


# ---- measuring ----
class Runner:
    def __init__(self):
        self.commands: dict[str, str] = {}
        self.results: dict[str, list[tuple[float, int]]] = {}
        self.cpu: dict[str, list[float]] = {}

    def run(self, label: str, cmd: list[str], env: dict | None = None, stdout=None) -> tuple[float, int]:
        """Wall time (s) and peak RSS (KiB, of the largest process: GNU time's %M) of cmd; its
        CPU time (user + system, children included) is kept for `cores()`."""
        self.commands.setdefault(label, sh(cmd))
        with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
            t0 = time.perf_counter()
            res = subprocess.run([TIME, "-f", "%M %U %S", "-o", tf.name, *cmd], env=env,
                                 stdout=stdout or subprocess.DEVNULL, stderr=subprocess.PIPE)
            wall = time.perf_counter() - t0
            rss, user, system = Path(tf.name).read_text().split()[-3:]
        if res.returncode not in (0, 8):
            sys.exit(f"bench: {label} failed ({res.returncode}): {sh(cmd)}\n{res.stderr.decode()[-2000:]}")
        self.results.setdefault(label, []).append((wall, int(rss)))
        self.cpu.setdefault(label, []).append(float(user) + float(system))
        return wall, int(rss)

    def med(self, label: str) -> tuple[float, int]:
        r = self.results[label]
        return statistics.median(w for w, _ in r), int(statistics.median(m for _, m in r))

    def cores(self, label: str) -> float:
        """How many cores cmd kept busy: median CPU time over median wall time."""
        return statistics.median(self.cpu[label]) / self.med(label)[0]


def replay_budget_mib(ws: Wireshark) -> int:
    """p2pc.max_replay_mib as this tshark reads it: everything p2pc keeps for a second pass."""
    for line in ws.run("tshark", ["-G", "currentprefs"]).stdout.splitlines():
        if line.lstrip("#").startswith("p2pc.max_replay_mib:"):
            return int(line.split(":", 1)[1])
    sys.exit("bench: this tshark's p2pc has no p2pc.max_replay_mib preference")


def mark(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def scale_check(one: dict, all_: dict, copies: int) -> tuple[int, int, bool]:
    """One copy's and all copies' message counts (reports), and whether every proto/msg_type
    row of all copies holds exactly `copies` times the one copy's messages."""
    per_copy = {(x["proto"], x["msg_type"]): x["messages"] * copies for x in one["rows"]}
    rows_ok = len(one["rows"]) == len(all_["rows"]) and all(
        per_copy.get((y["proto"], y["msg_type"])) == y["messages"] for y in all_["rows"])
    return one["totals"]["messages"], all_["totals"]["messages"], rows_ok


def tree_peak(cmd: list[str], env: dict) -> tuple[float, int, int, int]:
    """Run cmd; wall time (s), the peak of the summed RSS of it and all its descendants, the
    peak RSS of cmd's own process (the splitter and the merge), and the exit status.  Sampled
    every 0.2 s with psutil: GNU time reports only the largest single process."""
    import psutil
    t0 = time.perf_counter()
    proc = psutil.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_tree = peak_own = 0
    while proc.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
            rss = [p.memory_info().rss for p in procs if p.is_running()]
            peak_tree, peak_own = max(peak_tree, sum(rss)), max(peak_own, rss[0])
        except psutil.Error:
            pass
        time.sleep(0.2)
    return time.perf_counter() - t0, peak_tree, peak_own, proc.returncode


def huge(gb: int) -> None:
    """`p2pc analyze` of a capture larger than memory allows for one tshark pass: it shards the
    capture by connection on its own (above 2 GiB), reads the shards on every core and merges."""
    import psutil
    cap, one, copies = build(f"huge{gb}", sources(), gb << 30, 1 << 14)
    env = dict(os.environ, P2PC_PLUGIN=str(built_plugin()), PYTHONPATH=str(REPO / "analyzer"))
    py = [sys.executable, "-m", "p2pc"]
    work = Path(tempfile.mkdtemp(prefix="p2pc-huge-", dir=BENCH))
    gib = cap.stat().st_size / (1 << 30)
    print(f"\n== {gib:.1f} GiB capture ({copies} copies of {len(sources())} captures) on "
          f"{os.cpu_count()} cores, {psutil.virtual_memory().total / (1 << 30):.0f} GiB ==", flush=True)
    subprocess.run([*py, "analyze", str(one), "--format", "json", "--output", str(work / "one.json")],
                   env=env, check=True)
    cmd = [*py, "analyze", str(cap), "--format", "json", "--output", str(work / "huge.json")]
    wall, peak_tree, peak_own, rc = tree_peak(cmd, env)
    if rc != 0:
        sys.exit(f"bench: {sh(cmd)} failed ({rc})")
    one_r, all_r = (json.loads((work / n).read_text()) for n in ("one.json", "huge.json"))
    n1, nall, rows_ok = scale_check(one_r, all_r, copies)
    print(f"  {sh(cmd)}")
    print(f"  wall {wall:.0f} s ({gib * 1024 / wall:.0f} MiB/s); peak RSS of the whole process tree "
          f"{peak_tree / (1 << 30):.2f} GiB (target < 4 GB {mark(peak_tree < 4e9)}); of the "
          f"splitter and merge process {peak_own / (1 << 20):.0f} MiB")
    print(f"  records: one copy {n1}, all {nall}, expected {n1 * copies}: "
          f"{mark(nall == n1 * copies and rows_ok)} (every proto/msg_type row too: {rows_ok})")
    shutil.rmtree(work, ignore_errors=True)


def quic_streams(r: Runner, stock: Wireshark, ws: Wireshark, streams: int, repeat: int) -> None:
    """One QUIC connection of `streams` libp2p streams, 50 open at a time, each ended both ways
    (tools/quic_churn.py, built once into build/bench/): CPU time (user + system) of tshark with
    p2pc writing its records against stock tshark writing the stream id of every STREAM frame
    (a tree of the same streams).  Wireshark's own QUIC keeps a sorted list of a connection's
    stream ids that it walks for every STREAM frame (4.0 to 4.6, quic_streams_add()), so both
    grow with the square of the streams; p2pc's share is what it adds on top."""
    sys.path.insert(0, str(REPO / "tools"))
    import quic_churn
    BENCH.mkdir(parents=True, exist_ok=True)
    cap = BENCH / f"quic-churn-{streams}.pcapng"
    if not cap.exists():
        print(f"building {cap.relative_to(REPO)}: {streams} streams (tools/quic_churn.py)", flush=True)
        quic_churn.generate(cap, streams)
        cap.chmod(0o644)
    tree = ["-n", "-r", str(cap), "-T", "fields", "-e", "quic.stream.stream_id"]
    ours = ["-n", "-q", "-r", str(cap), "-z", "p2pc,records"]
    for _ in range(repeat):
        r.run("quic streams: stock, tree", stock.command("tshark", tree))
        r.run("quic streams: p2pc records", ws.command("tshark", ours))
    s, p = (statistics.median(r.cpu[k]) for k in ("quic streams: stock, tree", "quic streams: p2pc records"))
    print(f"\n== one QUIC connection, {streams} libp2p streams ({cap.stat().st_size / 1e6:.1f} MB), "
          f"{repeat} runs, median CPU time ==")
    print(f"  stock tshark, tree of the stream ids {s:6.2f} s   tshark + p2pc -z p2pc,records {p:6.2f} s   "
          f"{p / s:.2f}x  target <= {QUIC_CPU}x {mark(p / s <= QUIC_CPU)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="~100 MB instead of ~1 GB")
    ap.add_argument("--size-mb", type=int, help="size of the mixed capture (default 1000, --quick 100)")
    ap.add_argument("--repeat", type=int, help="runs of each measurement (default 3, 1 GB: 2)")
    ap.add_argument("--huge-gb", type=int, metavar="N",
                    help="only analyze an N GiB capture (sharded), peak RSS of the process tree")
    ap.add_argument("--js-copies", type=int,
                    help=f"copies of the js-libp2p plaintext captures (default {JS_COPIES}; --quick: a "
                         "quarter of the mix's size)")
    ap.add_argument("--quic", action="store_true",
                    help=f"only the QUIC case: {QUIC_STREAMS} streams on one connection, CPU time vs stock")
    ap.add_argument("--quic-streams", type=int, default=QUIC_STREAMS, metavar="N",
                    help=f"streams of the QUIC case (default {QUIC_STREAMS}, the target's)")
    ap.add_argument("--one-pass", action="store_true",
                    help="only tshark's one pass, stock vs p2pc (the mix, each protocol, js-libp2p plaintext)")
    args = ap.parse_args()
    if args.huge_gb:
        need("tcprewrite", "tcpreplay")
        huge(args.huge_gb)
        return
    for tool, pkg in (("tcprewrite", "tcpreplay"), ("mergecap", "wireshark-common"),
                      ("capinfos", "wireshark-common"), ("tshark", "tshark"), (TIME, "time")):
        need(tool, pkg)
    size = (args.size_mb or (100 if args.quick else 1000)) << 20
    repeat = args.repeat or (3 if size <= 300 << 20 else 2)
    plugin = built_plugin()
    if plugin is None:
        sys.exit("bench: the plugin is not built: run `make build`")

    if not args.quic:
        mixed, mixed1, copies = build("mixed", sources(), size, 0)
        per = {}
        k0 = 1 << 15
        js = js_plaintext_sources()
        js_copies = args.js_copies or (0 if args.quick else JS_COPIES)
        for d, srcs in [*((d, sources(d)) for d in PROTOS), ("js-plaintext", js)]:
            target = js_copies * sum(p.stat().st_size for p in js) if d == "js-plaintext" and js_copies else size // 4
            per[d] = build(d, srcs, target, k0)
            k0 += per[d][2] * len(srcs)

    ws = Wireshark(plugin=plugin)
    # Stock: the same runner (as nobody when root) with a private HOME that holds no plugin.
    stock = Wireshark()
    stock_home = Path(tempfile.mkdtemp(prefix="p2pc-stock-"))
    (stock_home / ".config/wireshark").mkdir(parents=True)
    for p in (stock_home, stock_home / ".config", stock_home / ".config/wireshark"):
        p.chmod(0o755)
    stock._home = stock_home
    loaded = [l for l in stock.run("tshark", ["-G", "plugins"]).stdout.splitlines() if "p2pc" in l]
    if loaded:
        sys.exit("bench: the stock tshark loads p2pc (a global installation?): " + loaded[0])
    env = dict(os.environ, P2PC_PLUGIN=str(plugin), PYTHONPATH=str(REPO / "analyzer"))
    py = [sys.executable, "-m", "p2pc"]
    r = Runner()
    work = Path(tempfile.mkdtemp(prefix="p2pc-bench-", dir=BENCH))
    work.chmod(0o755)

    def dissect(w: Wireshark, cap: Path, *prefs: str) -> list[str]:
        return w.command("tshark", ["-n", "-q", "-r", str(cap), "-z", "io,stat,0", *prefs])

    # tshark's one pass keeps no frame, and p2pc finds that from the frame store by the fourth
    # frame: it keeps no replay state there, with its preferences as they are by default; two
    # passes (-2), like the GUI, dissect every frame again: p2pc keeps what its stateful layers
    # decoded, up to its budget (what -2 costs over stock is about that budget, whatever the
    # capture).
    two_pass = ("-2",)
    budget = replay_budget_mib(ws)

    def within_budget(label: str, base: str) -> None:
        over = (r.med(label)[1] - r.med(base)[1]) / 1024
        print(f"  target -2 RSS over stock <= 1.25x p2pc.max_replay_mib ({budget} MiB): {over:.0f} MiB  "
              f"{mark(over <= 1.25 * budget)}")

    def finish() -> None:
        print("\n== commands (first run of each) ==")
        for lab, cmd in r.commands.items():
            print(f"  {lab}:\n    {cmd}")
        print(f"  (wrapped in: {TIME} -f '%M %U %S' -o FILE ...: peak RSS is that of the largest process)")
        ws.cleanup()
        shutil.rmtree(stock_home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)

    if args.quic:
        quic_streams(r, stock, ws, args.quic_streams, repeat)
        finish()
        return

    nfr = frames(mixed)
    mb = mixed.stat().st_size / 1e6
    print(f"\nmixed capture: {mixed.relative_to(REPO)}: {mb:.0f} MB, {nfr} frames, "
          f"{copies} copies of {len(sources())} captures; {repeat} runs each, interleaved, medians\n",
          flush=True)

    def one_pass(base: str, cap: Path) -> tuple[float, float]:
        """tshark's one pass over cap, stock and p2pc, `repeat` runs interleaved: medians' ratios
        (time, peak RSS); labels `base: stock` and `base: p2pc`."""
        for _ in range(repeat):
            r.run(f"{base}: stock", dissect(stock, cap))
            r.run(f"{base}: p2pc", dissect(ws, cap))
        (sw, sm), (pw, pm) = r.med(f"{base}: stock"), r.med(f"{base}: p2pc")
        print(f"  {base:42s} {cap.stat().st_size / 1e6:5.0f} MB  stock {sw:6.2f} s {sm / 1024:6.0f} MiB  "
              f"p2pc {pw:6.2f} s {pm / 1024:6.0f} MiB  {pw / sw:5.2f}x time {pm / sm:5.2f}x RSS  "
              f"target RSS <= {ONE_PASS_RSS}x {mark(pm / sm <= ONE_PASS_RSS)}", flush=True)
        return pw / sw, pm / sm

    def one_pass_rows() -> None:
        print(f"== tshark's one pass (-z io,stat,0, default preferences): p2pc keeps nothing for "
              f"re-dissection, peak RSS within {ONE_PASS_RSS}x stock's ==")
        one_pass("mixed", mixed)
        for d, (cap, _, n) in per.items():
            one_pass(f"{PROTOS.get(d, JS_PLAINTEXT)} ({n} copies)", cap)

    if args.one_pass:
        one_pass_rows()
        finish()
        return

    # 1. records scale exactly with the copies (one analyze of copy 0, one of all)
    one_json, all_json = work / "copy0.json", work / "unsharded.json"
    subprocess.run([*py, "analyze", str(mixed1), "--format", "json", "--output", str(one_json)],
                   env=env, check=False)
    # Four shards per worker, as `p2pc analyze` splits on its own: one hash split by connection
    # leaves shards of unequal cost, which the pool evens out, largest first.
    nsh = str(SHARDS)
    split_cmd = [*py, "shard", str(mixed), "--shards", nsh, "--out", str(work / "shards")]
    shard_j1 = [*py, "analyze", "--shards", nsh, "-j", "1", "--format", "json", "--output",
                str(work / "sharded-j1.json"), str(mixed)]
    shard_j2 = [*py, "analyze", "--shards", nsh, "-j", "2", "--format", "json", "--output",
                str(work / "sharded-j2.json"), str(mixed)]
    for i in range(repeat):
        r.run("stock tshark", dissect(stock, mixed))
        r.run("tshark + p2pc", dissect(ws, mixed))
        r.run("stock tshark -2", dissect(stock, mixed, *two_pass))
        r.run("tshark + p2pc -2", dissect(ws, mixed, *two_pass))
        r.run("tshark + p2pc -z p2pc,records", ws.command(
            "tshark", ["-n", "-q", "-r", str(mixed), "-z", "p2pc,records"]))
        r.run("p2pc analyze", [*py, "analyze", str(mixed), "--format", "json", "--output", str(all_json)], env=env)
        # sharded end to end: the split, then the shards' analysis with 1 and 2 workers
        r.run(f"p2pc analyze --shards {SHARDS} -j 1", shard_j1, env=env)
        r.run(f"p2pc analyze --shards {SHARDS} -j 2", shard_j2, env=env)
    # the split alone, then the shards' analysis with 1 and 2 workers, SHARD_RUNS pairs
    for i in range(repeat):
        shutil.rmtree(work / "shards", ignore_errors=True)
        r.run(f"p2pc shard (split, {SHARDS} shards)", split_cmd, env=env)
    shards = sorted(str(p) for p in (work / "shards").glob("*.shard*"))
    for i in range(max(repeat, SHARD_RUNS)):
        r.run("shards analyzed, 1 worker", [*py, "analyze", "-j", "1", "--format", "json", "--output",
                                            str(work / "shards-j1.json"), *shards], env=env)
        r.run("shards analyzed, 2 workers", [*py, "analyze", "-j", "2", "--format", "json", "--output",
                                             str(work / "shards-j2.json"), *shards], env=env)
    shutil.rmtree(work / "shards", ignore_errors=True)

    def table(labels: list[str], base: str | None = None) -> None:
        bw, bm = r.med(base) if base else (None, None)
        for lab in labels:
            w, m = r.med(lab)
            extra = f"   {w / bw:5.2f}x time  {m / bm:5.2f}x RSS" if base and lab != base else ""
            print(f"  {lab:34s} {w:8.2f} s  {m / 1024:8.0f} MiB{extra}")

    def totals(p: Path) -> dict:
        rep = json.loads(p.read_text())
        return {"totals": rep["totals"], "rows": rep["rows"]}

    print("== stock tshark vs tshark with p2pc (both dissect every frame: -z io,stat,0) ==")
    table(["stock tshark", "tshark + p2pc"], "stock tshark")
    sw, sm = r.med("stock tshark")
    pw, pm = r.med("tshark + p2pc")
    print(f"  target plugin <= 1.15x stock time: {pw / sw:.2f}x  {mark(pw / sw <= 1.15)}")
    print(f"  target one pass <= {ONE_PASS_RSS}x stock RSS (nothing kept for re-dissection): "
          f"{pm / sm:.2f}x  {mark(pm / sm <= ONE_PASS_RSS)}")
    print("  two passes (-2: every frame dissected again, as the GUI does; p2pc keeps its replay state,")
    print(f"  at most p2pc.max_replay_mib = {budget} MiB: frames past it are decoded in the first pass only):")
    table(["stock tshark -2", "tshark + p2pc -2"], "stock tshark -2")
    within_budget("tshark + p2pc -2", "stock tshark -2")
    end = [l for l in ws.run("tshark", ["-n", "-q", "-r", str(mixed), "-2", "-z", "p2pc,records"]).stdout.splitlines()
           if l.startswith("#END")]
    cut = dict(kv.split("=", 1) for kv in end[0].split("\t")[1:]).get("not_kept_from") if end else None
    print(f"  kept whole for re-dissection: frames 1-{int(cut) - 1} of {nfr} ({(int(cut) - 1) / nfr:.0%}; "
          f"#END not_kept_from={cut})" if cut else f"  kept whole for re-dissection: all {nfr} frames")

    print("\n== p2pc analyze vs its own tshark pass ==")
    table(["tshark + p2pc -z p2pc,records", "p2pc analyze"], "tshark + p2pc -z p2pc,records")
    tw, _ = r.med("tshark + p2pc -z p2pc,records")
    aw, _ = r.med("p2pc analyze")
    print(f"  target analyze <= 1.1x its tshark pass: {aw / tw:.2f}x  {mark(aw / tw <= 1.1)}")

    # fixed cost per file: a tiny capture, analyze vs its own tshark pass.  p2pc as installed
    # (pip compiles its bytecode), even where PYTHONDONTWRITEBYTECODE would recompile every run.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "analyzer" / "p2pc")], check=True)
    small = REPO / "captures" / "bitcoin" / "btc-small.pcapng"
    for _ in range(7):
        r.run("small: tshark -z p2pc,records", ws.command(
            "tshark", ["-n", "-q", "-r", str(small), "-z", "p2pc,records"]))
        r.run("small: p2pc analyze", [*py, "analyze", str(small), "--format", "json"], env=env)
    fixed = r.med("small: p2pc analyze")[0] - r.med("small: tshark -z p2pc,records")[0]
    print(f"  fixed cost per file (btc-small, 7 runs): analyze {r.med('small: p2pc analyze')[0]:.3f} s"
          f" - tshark {r.med('small: tshark -z p2pc,records')[0]:.3f} s = {fixed:.3f} s  "
          f"target < 0.2 s {mark(fixed < 0.2)}")

    print("\n== records scale with the copies ==")
    one, allr = totals(one_json), totals(all_json)
    n1, nall, per_type_ok = scale_check(one, allr, copies)
    print(f"  one copy: {n1} records; {copies} copies: {nall} records; expected {n1 * copies}: "
          f"{mark(nall == n1 * copies and per_type_ok)} (every proto/msg_type row too: {per_type_ok})")

    print(f"\n== sharded vs unsharded analysis ({SHARDS} shards by connection) ==")
    table(["p2pc analyze", f"p2pc shard (split, {SHARDS} shards)", "shards analyzed, 1 worker",
           "shards analyzed, 2 workers", f"p2pc analyze --shards {SHARDS} -j 1",
           f"p2pc analyze --shards {SHARDS} -j 2"], "p2pc analyze")
    s1, s2 = r.med("shards analyzed, 1 worker")[0], r.med("shards analyzed, 2 workers")[0]
    e1, e2 = r.med(f"p2pc analyze --shards {SHARDS} -j 1")[0], r.med(f"p2pc analyze --shards {SHARDS} -j 2")[0]
    busy = r.cores("shards analyzed, 1 worker")
    print(f"  shards' analysis, 2 workers vs 1 (median of {len(r.results['shards analyzed, 1 worker'])} runs): "
          f"{s1 / s2:.2f}x  target >= 1.7x {mark(s1 / s2 >= 1.7)}")
    print(f"  (1 worker keeps {busy:.2f} cores busy, tshark and its parser overlapping: "
          f"2 cores give at most {2 / busy:.2f}x)")
    print(f"  end to end (split + analysis), --shards {SHARDS} -j 2 vs -j 1: {e1 / e2:.2f}x; "
          f"vs unsharded analyze: {aw / e2:.2f}x")
    same = totals(work / "sharded-j2.json") == allr and totals(work / "sharded-j1.json") == allr
    print(f"  sharded report rows and totals == unsharded: {mark(same)}")

    print("\n== per protocol: stock tshark vs tshark with p2pc, one pass ==")
    for d, (cap, _, n) in per.items():
        one_pass(f"{PROTOS.get(d, JS_PLAINTEXT)} ({n} copies)", cap)

    print("\n== bad input: 512 MiB of zeros through one gzip stream (tests/data/repro, 2.1 MB) ==")
    zeros = REPO / "tests" / "data" / "repro" / "gzip-stream-512MiB-zeros.pcapng.gz"
    for _ in range(repeat):
        r.run("zeros: stock", dissect(stock, zeros))
        r.run("zeros: p2pc", dissect(ws, zeros))
        r.run("zeros: stock -2", dissect(stock, zeros, *two_pass))
        r.run("zeros: p2pc -2", dissect(ws, zeros, *two_pass))
    table(["zeros: stock", "zeros: p2pc"], "zeros: stock")
    zm, pm0 = r.med("zeros: stock")[1], r.med("zeros: p2pc")[1]
    print(f"  target one pass RSS <= {ONE_PASS_RSS}x stock: {pm0 / zm:.2f}x  {mark(pm0 / zm <= ONE_PASS_RSS)}")
    table(["zeros: stock -2", "zeros: p2pc -2"], "zeros: stock -2")
    within_budget("zeros: p2pc -2", "zeros: stock -2")

    quic_streams(r, stock, ws, args.quic_streams, repeat)

    finish()


if __name__ == "__main__":
    main()
