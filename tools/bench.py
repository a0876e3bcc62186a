#!/usr/bin/env python3
"""Benchmark: `p2pc analyze` against a bare `tshark -q -r` of the same large capture.

Builds the capture from the committed ones (each copy shifted in time with editcap, then
concatenated with mergecap -a), and prints frames/s and the ratio of the two run times.
    make bench        # or: tools/bench.py [--copies N]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
from p2pc.records import open_wireshark  # noqa: E402
from p2pc.wsenv import built_plugin  # noqa: E402


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=10)
    args = ap.parse_args()
    # Every committed capture of every protocol (the cut-short ones cannot be merged).
    sources = sorted(p for p in (REPO / "captures").glob("*/*.pcapng") if "truncated" not in p.name)
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for i in range(args.copies):
            for s in sources:
                out = Path(tmp) / f"{i}-{s.name}"
                res = subprocess.run(["editcap", "-t", str(i * 100), str(s), str(out)], capture_output=True)
                if res.returncode == 0:     # editcap cannot time-shift a pcapng holding TLS secrets
                    parts.append(str(out))
        big = Path(tmp) / "big.pcapng"
        subprocess.run(["mergecap", "-a", "-w", str(big), *parts], check=True)
        big.chmod(0o644)
        Path(tmp).chmod(0o755)
        frames = int(subprocess.run(["capinfos", "-c", "-M", str(big)], capture_output=True,
                                    text=True).stdout.split()[-1])
        ws = open_wireshark(str(built_plugin()) if built_plugin() else None)
        bare = timed(ws.command("tshark", ["-n", "-q", "-r", str(big)]))
        records = timed(ws.command("tshark", ["-n", "-q", "-r", str(big), "-z", "p2pc,records"]))
        analyze = timed([sys.executable, "-m", "p2pc", "analyze", str(big), "--format", "json"])
        ws.cleanup()
    size = big.stat().st_size if big.exists() else 0
    print(f"capture: {frames} frames ({args.copies} copies of {len(sources)} captures)")
    print(f"tshark -q -r (with the plugin):   {bare:6.2f} s  {frames / bare:10.0f} frames/s")
    print(f"tshark -z p2pc,records:           {records:6.2f} s  {frames / records:10.0f} frames/s")
    print(f"p2pc analyze:                     {analyze:6.2f} s  {frames / analyze:10.0f} frames/s")
    print(f"analyze / bare tshark:            {analyze / bare:6.2f}x")


if __name__ == "__main__":
    main()
