#!/usr/bin/env python3
"""Benchmark of `p2pc live`: a large capture replayed with tcpreplay onto a veth pair in a
private network namespace, captured and decoded by `p2pc live` as it arrives. Prints the peak
RSS of each process (p2pc, tshark, dumpcap: VmHWM, polled), the bytes live counted as undecoded
by reason (p2pc_undecoded_bytes_total, scraped at the end), live's messages per protocol next to
the offline analysis's, and live's totals next to the offline ones. Every copy's connections are
open across every session reset. With live's state budget (--state-mib) the libp2p connections
go on decoding across resets, and so do Bitcoin's (core/holes.c finishes the message a reset
cut): their messages must equal the offline ones exactly.
Live's wire bytes must equal the offline ones exactly, once the undecoded bytes of the
directions a session reset cut (TCP payload bytes) are set against the offline bytes of those
directions (message bytes plus framing); a capture that dropped packets is not comparable.

    make bench-live                        # >= 2 GB (copies of the Bitcoin and libp2p captures)
    tools/live-bench.py --size-mb 100      # a quick run
    tools/live-bench.py --state-mib 16     # a budget smaller than the working set: evictions
    tools/live-bench.py --size-mb 100 --find-rate-mb 300   # and the highest rate kept up with

Needs root (network namespaces), tcpreplay/tcprewrite, mergecap, and the build's plugin. The
capture is built by tools/bench.py's builder and kept in build/bench/.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
sys.path.insert(0, str(REPO / "tools"))
from bench import build, sources  # noqa: E402
from p2pc.wsenv import built_plugin  # noqa: E402

NS = f"p2pcbench{os.getpid()}"
# tshark, p2pc and dumpcap together, for the default run (docs/audit-your-node.md): what they
# measured with every protocol's state carried over every reset (612 MB), and some room.
RSS_BOUND_MB = 650


def ns(*cmd: str) -> list[str]:
    return ["ip", "netns", "exec", NS, *cmd]


def tree(root: int) -> list[int]:
    """root and its descendants, from /proc."""
    kids: dict = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def peak_rss(pid: int) -> tuple[str, int] | None:
    """(program name, VmHWM in kB)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(l.split(":", 1) for l in status.splitlines() if ":" in l)
    if "VmHWM" not in fields:
        return None
    return fields["Name"].strip(), int(fields["VmHWM"].split()[0])


def offline_directions(cap: Path, env: dict) -> tuple[dict, dict]:
    """Per connection direction (src, srcport, dst, dstport) of an offline records pass: its
    TCP payload bytes, and the wire bytes of the messages decoded from it."""
    from p2pc.records import ONE_PASS_PREFS, Message, TcpDirection, parse_record
    from p2pc.wsenv import Wireshark
    tcp, wire = {}, defaultdict(int)
    with Wireshark(env["P2PC_PLUGIN"]) as ws:
        proc = ws.popen("tshark", ["-n", "-q", "-r", ws.readable(cap), *ONE_PASS_PREFS, "-z", "p2pc,records"],
                        stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            if line[:2] not in ("M\t", "T\t"):
                continue
            r = parse_record(line)
            if isinstance(r, Message):
                wire[(r.src, r.srcport, r.dst, r.dstport)] += r.wire_len
            elif isinstance(r, TcpDirection):
                tcp[(r.src, r.srcport, r.dst, r.dstport)] = r.data_bytes
        proc.wait()
    return tcp, wire


def replay_live(cap: Path, mbps: float, live_args: list[str], env: dict) -> tuple[dict, dict, str]:
    """`p2pc live` on a veth in a private namespace while tcpreplay sends `cap` at `mbps`: its
    report, the peak RSS of each of its processes ({pid: (name, kB)}) and its metrics page."""
    subprocess.run(["ip", "netns", "add", NS], check=True)
    report = REPO / "build" / "bench" / "live-report.json"
    try:
        for cmd in (["link", "add", "va", "type", "veth", "peer", "name", "vb"],
                    ["link", "set", "va", "up"], ["link", "set", "vb", "up"], ["link", "set", "lo", "up"]):
            subprocess.run(["ip", "-n", NS, *cmd], check=True)
        live_cmd = ns(sys.executable, "-m", "p2pc", "live", "-i", "vb", "--interval", "30", *live_args,
                      "--metrics", "127.0.0.1:9469", "--format", "json", "--output", str(report))
        print("$", " ".join(live_cmd), f"  (replay at {mbps:g} Mbit/s)", flush=True)
        live = subprocess.Popen(live_cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        peaks: dict = {}

        def poll() -> None:
            for pid in tree(live.pid):
                got = peak_rss(pid)
                if got:
                    peaks[pid] = max(peaks.get(pid, ("", 0)), got, key=lambda x: x[1])

        time.sleep(5)                       # tshark loads; packets wait in the capture buffer
        replay = subprocess.Popen(ns("tcpreplay", "-q", f"--mbps={mbps}", "-i", "va", str(cap)),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while replay.poll() is None:
            poll()
            time.sleep(0.5)
        print(f"replayed in {time.monotonic() - t0:.0f} s", flush=True)
        last = None
        while True:                         # until live has read everything (its CPU time settles)
            poll()
            time.sleep(2)
            cpu = sum(float(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[11])
                      for p in tree(live.pid) if Path(f"/proc/{p}/stat").exists())
            if last is not None and cpu == last:
                break
            last = cpu
        metrics = subprocess.run(ns("curl", "-sf", "http://127.0.0.1:9469/metrics"), capture_output=True,
                                 text=True).stdout
        live.send_signal(signal.SIGINT)
        err = live.communicate()[1]
        if live.returncode != 0:
            sys.exit(f"live-bench: p2pc live exited {live.returncode}: {err.strip()}")
    finally:
        subprocess.run(["ip", "netns", "del", NS])
    return json.loads(report.read_text()), peaks, metrics


class Offline:
    """The offline analysis of a capture, and the per-direction bytes of one records pass."""

    def __init__(self, cap: Path, env: dict) -> None:
        off = subprocess.run([sys.executable, "-m", "p2pc", "analyze", "--format", "json", str(cap)],
                             env=env, capture_output=True, text=True)
        self.report = json.loads(off.stdout)
        self.tcp, self.wire = offline_directions(cap, env)


def messages_per_proto(rep: dict) -> dict:
    return defaultdict(int, {p: sum(r["messages"] for r in rep["rows"] if r["proto"] == p and r["msg_type"] != "undecoded")
                             for p in {r["proto"] for r in rep["rows"]}})


def verdict(live_rep: dict, offline: Offline) -> tuple[str, int, int]:
    """PASS (live's wire bytes equal offline's once the framing of the directions a reset cut is
    set against its undecoded bytes), FAIL, or DROPS (the capture dropped packets: not
    comparable); the difference, and that framing."""
    cut = next((s["rows"] for s in live_rep["sections"] if s["name"] == "undecoded"), [])
    framing = sum(offline.tcp[k] - offline.wire[k] for k in
                  ((d["src"], d["srcport"], d["dst"], d["dstport"]) for d in cut))
    diff = live_rep["totals"]["wire_bytes"] - framing - offline.report["totals"]["wire_bytes"]
    if any(w.startswith("the capture dropped") for w in live_rep["warnings"]):
        return "DROPS", diff, framing
    return ("PASS" if diff == 0 else "FAIL"), diff, framing


def find_rate(cap: Path, start: float, live_args: list[str], env: dict) -> None:
    """The highest replay rate at which live drops nothing and equals the offline analysis (wire
    bytes, and messages per protocol): doubling from `start` until a run fails, then halving
    the interval twice."""
    offline = Offline(cap, env)
    want = messages_per_proto(offline.report)

    def exact(mbps: float) -> bool:
        rep, _, _ = replay_live(cap, mbps, live_args, env)
        v, diff, _ = verdict(rep, offline)
        same = messages_per_proto(rep) == want
        print(f"  {mbps:7.0f} Mbit/s: {v}, wire bytes {diff:+d}, messages "
              f"{'equal' if same else 'differ'}", flush=True)
        return v == "PASS" and same

    good, bad = 0.0, None
    rate = start
    while bad is None and rate <= 10_000:
        if exact(rate):
            good, rate = rate, rate * 2
        else:
            bad = rate
    for _ in range(2 if bad else 0):
        mid = (good + bad) / 2
        if exact(mid):
            good = mid
        else:
            bad = mid
    print(f"\nhighest replay rate with 0 drops and an exact result: {good:.0f} Mbit/s"
          + (f" (failed at {bad:.0f})" if bad else ""), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=2100, help="capture size to replay (default: %(default)s)")
    ap.add_argument("--mbps", type=float, default=20,
                    help="replay rate (default: %(default)s Mbit/s, what two shared cores keep up with)")
    ap.add_argument("--session-reset", type=int, metavar="N",
                    help="p2pc live --session-reset (default: p2pc live's own)")
    ap.add_argument("--state-mib", type=int, metavar="MIB",
                    help="p2pc live --state-mib (default: p2pc live's own)")
    ap.add_argument("--find-rate-mb", type=int, metavar="MB",
                    help="then, on a capture of MB, the highest replay rate (from --mbps up) with 0 drops "
                         "and an exact result")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("live-bench: needs root (network namespaces)")
    # TLS and QUIC keep their state in Wireshark, which a reset drops (docs/live-state.md).
    srcs = sources("bitcoin") + sources("libp2p-compression") + \
        [s for s in sources("eth2") if "tls" not in s.name and "quic" not in s.name]
    cap, _, copies = build(f"live-{args.size_mb}mb", srcs, args.size_mb * 1_000_000, 4096)
    print(f"capture: {cap} ({cap.stat().st_size / 1e6:.0f} MB, {copies} copies of {len(srcs)} captures)", flush=True)

    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
    live_args = ["--session-reset", str(args.session_reset)] if args.session_reset is not None else []
    if args.state_mib is not None:
        live_args += ["--state-mib", str(args.state_mib)]
    live_rep, peaks, metrics = replay_live(cap, args.mbps, live_args, env)

    print("\npeak RSS (VmHWM):")
    total = 0
    for pid, (name, kb) in sorted(peaks.items(), key=lambda kv: -kv[1][1]):
        if kb > 10_000:
            print(f"  {name:<10} pid {pid:<8} {kb / 1024:8.1f} MB")
            total += kb
    print(f"  {'all':<10} {'':<12} {total / 1024:8.1f} MB   (target: < {RSS_BOUND_MB} MB)")

    offline = Offline(cap, env)
    undecoded = sum(r["wire_bytes"] for r in live_rep["rows"] if r["msg_type"] == "undecoded")
    lt, ot = live_rep["totals"], offline.report["totals"]
    print("\nundecoded bytes by reason (p2pc_undecoded_bytes_total):")
    reasons: dict = defaultdict(float)
    for labels, value in re.findall(r'^p2pc_undecoded_bytes_total\{([^}]*)\} (\S+)$', metrics, re.M):
        got = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        reasons[(got["proto"], got["reason"])] += float(value)
    for (proto, reason), value in sorted(reasons.items()):
        if value:
            print(f"  {proto:<10}{reason:<12}{value:>14.0f}")
    print("\nmessages decoded   live       offline")
    lm, om = messages_per_proto(live_rep), messages_per_proto(offline.report)
    for p in sorted(set(lm) | set(om)):
        print(f"  {p:<14}{lm[p]:>10}  {om[p]:>12}   {'equal' if lm[p] == om[p] else f'{lm[p] - om[p]:+d}'}")
    print("\ntotals          live          offline")
    for k in ("messages", "wire_bytes", "raw_bytes", "payload_saved", "total_saved"):
        print(f"  {k:<14}{lt[k]:>12}  {ot[k]:>12}")
    print(f"  undecoded     {undecoded:>12}   ({100 * undecoded / ot['wire_bytes']:.1f} % of offline wire bytes)")
    print("  warnings:", "; ".join(live_rep["warnings"]) or "none")
    v, diff, framing = verdict(live_rep, offline)
    cut = next((s["rows"] for s in live_rep["sections"] if s["name"] == "undecoded"), [])
    print(f"  framing       {framing:>12}   (offline: TCP payload - message bytes, of the "
          f"{len(cut)} directions cut)")
    v = "not comparable: the capture dropped packets (replay slower, --mbps)" if v == "DROPS" else v
    print(f"\nlive decoded + undecoded - framing - offline wire bytes: {diff} "
          f"({100 * diff / ot['wire_bytes']:+.3f} %; target: 0: {v})")
    print(f"peak RSS < {RSS_BOUND_MB} MB: {'PASS' if total / 1024 < RSS_BOUND_MB else 'FAIL'}", flush=True)

    if args.find_rate_mb:
        rcap, _, _ = build(f"live-{args.find_rate_mb}mb", srcs, args.find_rate_mb * 1_000_000, 4096)
        print(f"\nreplay rate ({rcap.stat().st_size / 1e6:.0f} MB capture, the same sources):", flush=True)
        find_rate(rcap, args.mbps, live_args, env)


if __name__ == "__main__":
    main()
