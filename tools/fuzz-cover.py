#!/usr/bin/env python3
"""Which committed captures the fuzz gate's short profile can leave out (fuzz/short-skip.txt).

The short profile (tools/fuzz.py, CI) mutates each capture cut to its first packets.  Many
captures reach the same plugin code: the interop matrix's 68 cells are a handful of security
and muxer stacks.  This tool builds the plugin with gcov (build-cov/), runs each capture as
the short profile prepares it (cut, its secrets and key log) through the gate's two tshark
consumers (-2 -V -x, and the records stream with a session reset), and records the plugin lines
each one reaches.  It then keeps, greedily, captures until every line any capture reaches is
reached by two kept ones (or by every capture that reaches it, when fewer do), and every capture
folder keeps at least one capture (what gcov cannot see, Lua dissectors and the analyzer, is
reached per family).  The others are written to fuzz/short-skip.txt; the long profile still
mutates every capture, and a capture not listed there (a new one) is always mutated.

    tools/fuzz-cover.py            # about 10 minutes on two cores; rewrites fuzz/short-skip.txt
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import fuzz  # noqa: E402  (the gate: its captures, how it prepares them, its consumers' options)

BUILD = REPO / "build-cov"
SKIP = REPO / "fuzz" / "short-skip.txt"
COPIES = 2      # how many kept captures must reach each line


def build() -> Path:
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Debug", "-DP2PC_ONLY=",
                    "-DP2PC_WERROR=OFF", "-DCMAKE_C_FLAGS=--coverage -O1"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(BUILD), "-j", str(os.cpu_count() or 2)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["chmod", "-R", "a+rX", str(BUILD)], check=True)
    return next(BUILD.glob("plugins/*/epan/p2pc.so"))


def prepare(cap: Path, tmp: Path, max_packets: int) -> tuple[Path, list[str]]:
    """The capture as the short profile mutates it (fuzz.main, fuzz.mutate), unmutated, and the
    tshark options of the key log beside it."""
    plain = tmp / "plain.pcapng"
    secrets = fuzz.split_secrets(cap, plain)
    cut = tmp / "cut.pcapng"
    subprocess.run(["editcap", "-r", str(plain), str(cut), f"1-{max_packets}"], capture_output=True, check=True)
    out = cut
    if secrets:
        keyfile = tmp / "secrets.keys"
        keyfile.write_bytes(b"\n".join(s.rstrip(b"\n\0") for _, s in secrets) + b"\n")
        out = tmp / "prepared.pcapng"
        subprocess.run(["editcap", "--inject-secrets", f"tls,{keyfile}", str(cut), str(out)],
                       capture_output=True, check=True)
    os.chmod(out, 0o644)
    keys = fuzz.Keys.beside(cap, tmp / "keys")
    return out, keys.tshark if keys else []


def reached(ws, cap: Path, tmp: Path, max_packets: int) -> set[str]:
    """The plugin source lines (file:line) the two tshark consumers run on the prepared capture."""
    os.chmod(tmp, 0o755)
    prepared, keys = prepare(cap, tmp, max_packets)
    gcda = tmp / "gcda"
    gcda.mkdir(mode=0o777)
    os.chmod(gcda, 0o777)       # tshark runs as nobody (wsenv) and writes its counters here
    env = dict(os.environ, GCOV_PREFIX=str(gcda))
    for args in (["-n", "-2", "-V", "-x", *keys, "-r", str(prepared)],
                 ["-n", "-q", "-z", "p2pc,records,stream", "-M", "61", "-o", "p2pc.live_state_mib:64", *keys,
                  "-r", str(prepared)]):
        subprocess.run(ws.command("tshark", args), env=env, capture_output=True, timeout=600)
    counters = list(gcda.rglob("*.gcda"))
    for c in counters:          # gcov wants each object's notes beside its counters
        shutil.copy(Path(str(c)[len(str(gcda)):]).with_suffix(".gcno"), c.with_suffix(".gcno"))
    lines: set[str] = set()
    if counters:
        out = subprocess.run(["gcov", "--json-format", "--stdout", *map(str, counters)], capture_output=True,
                             text=True, cwd=gcda, check=True).stdout
        for doc in filter(str.strip, out.splitlines()):
            for f in json.loads(doc)["files"]:
                if f["file"].startswith(str(REPO / "plugin")):
                    lines |= {f"{Path(f['file']).relative_to(REPO)}:{l['line_number']}"
                              for l in f["lines"] if l["count"] > 0}
    return lines


def keep(cov: dict[str, set[str]]) -> list[str]:
    """Greedy: the capture reaching most of the lines still short of COPIES kept captures, until
    none is; then one capture of each folder that has none yet (its biggest reach)."""
    need = {l: min(COPIES, sum(l in s for s in cov.values())) for s in cov.values() for l in s}
    kept: list[str] = []
    while any(need.values()):
        best = max((c for c in cov if c not in kept), key=lambda c: (sum(need.get(l, 0) > 0 for l in cov[c]), c))
        kept.append(best)
        for l in cov[best]:
            need[l] = max(0, need[l] - 1)
    for folder in sorted({Path(c).parent for c in cov}):
        if not any(Path(c).parent == folder for c in kept):
            kept.append(max((c for c in cov if Path(c).parent == folder), key=lambda c: (len(cov[c]), c)))
    return kept


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    max_packets = fuzz.PROFILES["short"]["max_packets"]
    plugin = build()
    sys.path.insert(0, str(REPO / "analyzer"))
    from p2pc.wsenv import Wireshark  # noqa: E402
    ws = Wireshark(plugin=plugin)
    tmp = Path(tempfile.mkdtemp(prefix="p2pc-fuzz-cover-"))
    os.chmod(tmp, 0o755)
    caps = fuzz.gate_captures()
    try:
        def one(i: int, cap: Path) -> tuple[str, set[str]]:
            d = tmp / str(i)
            d.mkdir()
            return str(cap.relative_to(REPO)), reached(ws, cap, d, max_packets)
        with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            cov = dict(pool.map(lambda ic: one(*ic), enumerate(caps)))
    finally:
        ws.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    kept = keep(cov)
    skipped = sorted(set(cov) - set(kept))
    union = set().union(*cov.values())
    SKIP.write_text(
        "# Captures the fuzz gate's short profile leaves out (tools/fuzz-cover.py wrote this; the long\n"
        f"# profile mutates them all).  Of {len(cov)} captures, cut to their first {max_packets} packets, the\n"
        f"# {len(kept)} kept reach every one of the {len(union)} plugin lines (gcov) any capture reaches, each\n"
        f"# line by {COPIES} kept captures or by all that reach it, and every capture folder keeps one.\n"
        + "".join(f"{c}\n" for c in skipped))
    print(f"fuzz-cover: {len(cov)} captures reach {len(union)} plugin lines; kept {len(kept)}, "
          f"{len(skipped)} written to {SKIP.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
