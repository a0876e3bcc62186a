#!/usr/bin/env python3
"""Do no harm: stock tshark against tshark with p2pc, frame by frame, on other projects' captures.

For every frame it compares the layers (`frame.protocols`) the two give.  A frame differs in one
of two ways:

  lost     a layer stock shows is missing with p2pc (p2pc took traffic stock decodes);
  claimed  a p2pc layer is on a frame stock shows without it (p2pc named traffic as its own).

A claim is right only where the capture really is that P2P protocol: `--expect FILE` lists those
(tab-separated: capture path relative to the corpus root, p2pc protocol, why).  There p2pc decodes
in stock's place, so the layers it replaces are printed but are not harm; its own tests hold what
it shows.  Anything else is harm, printed one line per capture, and the exit status is 1.

    tools/noharm.py --root captures/noharm --expect captures/noharm/expected.tsv
    tools/noharm.py --root DIR --batch 40 FILES...   # a big corpus: captures concatenated
                                                     # 40 at a time (mergecap -a), two tshark
                                                     # runs per batch instead of per file

Batching is for screening hundreds of captures quickly; two captures in a batch that reuse an
address pair become one conversation to both tshark runs alike, so a difference still comes from
p2pc, but the kept corpus (CI) is run one file at a time.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
from p2pc.wsenv import Wireshark, built_plugin  # noqa: E402


@dataclass
class Harm:
    """What p2pc changed in one capture."""
    lost: Counter = field(default_factory=Counter)      # stock layer -> frames
    claimed: Counter = field(default_factory=Counter)   # p2pc layer -> frames
    first: dict = field(default_factory=dict)           # (kind, layer) -> first frame number


def protocols(ws: Wireshark) -> set[str]:
    """The filter names of every protocol this tshark knows."""
    out = ws.run("tshark", ["-G", "protocols"], check=True).stdout
    return {line.split("\t")[2] for line in out.splitlines() if line.count("\t") >= 2}


def layers(ws: Wireshark, capture: Path) -> list[list[str]] | None:
    """Each frame's layers; None when tshark cannot read the file at all."""
    res = ws.run("tshark", ["-n", "-r", ws.readable(capture), "-T", "fields", "-e", "frame.protocols"])
    if res.returncode != 0 and not res.stdout:
        return None
    return [line.split(":") for line in res.stdout.splitlines()]


def compare(stock: list[list[str]], ours: list[list[str]], mine: set[str]) -> list[tuple[int, str, str]]:
    """(frame, 'lost'|'claimed', layer) for every difference."""
    diffs = []
    for n, (a, b) in enumerate(zip(stock, ours), 1):
        if a == b:
            continue
        have = Counter(b)
        for layer in a:
            if have[layer] > 0:
                have[layer] -= 1
            elif layer not in mine:
                diffs.append((n, "lost", layer))
        diffs += [(n, "claimed", layer) for layer in dict.fromkeys(b) if layer in mine and layer not in a]
    if len(stock) != len(ours):
        diffs.append((min(len(stock), len(ours)) + 1, "lost", "frames"))
    return diffs


def batches(files: list[Path], size: int, tmp: Path):
    """(capture, [(source file, first frame, frame count)]) of files concatenated `size` at a
    time; a file that mergecap cannot read goes on its own."""
    for i in range(0, len(files), size):
        group = files[i:i + size]
        counts = []
        for f in group:
            res = subprocess.run(["capinfos", "-c", "-M", "-T", "-r", str(f)], capture_output=True, text=True)
            parts = res.stdout.strip().split("\t")
            if res.returncode == 0 and len(parts) == 2 and parts[1].isdigit():
                counts.append((f, int(parts[1])))
            else:
                yield f, [(f, 1, None)]
        if not counts:
            continue
        merged = tmp / f"batch{i}.pcapng"
        res = subprocess.run(["mergecap", "-a", "-w", str(merged), *(str(f) for f, _ in counts)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            for f, _ in counts:
                yield f, [(f, 1, None)]
            continue
        spans, first = [], 1
        for f, c in counts:
            spans.append((f, first, c))
            first += c
        yield merged, spans


def source(spans, frame: int) -> tuple[Path, int]:
    for f, first, count in spans:
        if count is None or frame < first + count:
            return f, frame - first + 1
    return spans[-1][0], frame


def run(files: list[Path], root: Path, batch: int) -> dict[str, Harm]:
    stock, ours = Wireshark(), Wireshark(built_plugin())
    mine = protocols(ours) - protocols(stock)
    found: dict[str, Harm] = {}
    with tempfile.TemporaryDirectory(prefix="p2pc-noharm-") as tmp:
        for capture, spans in batches(files, batch, Path(tmp)) if batch > 1 else ((f, [(f, 1, None)]) for f in files):
            a = layers(stock, capture)
            if a is None:
                continue
            b = layers(ours, capture) or []
            for frame, kind, layer in compare(a, b, mine):
                f, n = source(spans, frame)
                harm = found.setdefault(str(f.relative_to(root)), Harm())
                (harm.lost if kind == "lost" else harm.claimed)[layer] += 1
                harm.first.setdefault((kind, layer), n)
    return found


def expected(path: Path | None) -> set[tuple[str, str]]:
    if path is None:
        return set()
    with path.open() as f:
        return {(row[0], row[1]) for row in csv.reader(f, delimiter="\t") if row and not row[0].startswith("#")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="captures (default: every capture under --root)")
    ap.add_argument("--root", type=Path, required=True, help="the corpus folder paths are named from")
    ap.add_argument("--expect", type=Path, help="TSV: capture, p2pc protocol, why it is really that protocol")
    ap.add_argument("--batch", type=int, default=1, help="captures per tshark run (screening)")
    args = ap.parse_args()
    root = args.root.resolve()
    files = [f.resolve() for f in args.files] or sorted(
        p for p in root.rglob("*") if p.suffix in (".pcap", ".pcapng", ".cap") and p.stat().st_size)
    allowed = expected(args.expect)
    found = run(files, root, args.batch)
    bad = 0
    for name, harm in sorted(found.items()):
        lost = {} if any(name == f for f, _ in allowed) else dict(harm.lost)
        claimed = {layer: n for layer, n in harm.claimed.items() if (name, layer) not in allowed}
        ok = not lost and not claimed
        bad += not ok
        what = [f"lost {layer} in {n} frames (first {harm.first[('lost', layer)]})" for layer, n in lost.items()]
        what += [f"replaced {layer} in {n} frames" for layer, n in harm.lost.items() if layer not in lost]
        what += [f"claimed {n} frames as {layer} (first {harm.first[('claimed', layer)]})" for layer, n in claimed.items()]
        what += [f"{layer} in {n} frames, expected" for layer, n in harm.claimed.items() if layer not in claimed]
        print(f"{'ok  ' if ok else 'HARM'} {name}: " + "; ".join(what))
    print(f"noharm: {len(files)} captures, {len(found)} differ from stock, {bad} harmed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
