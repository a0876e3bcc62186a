#!/usr/bin/env python3
"""Dump the `-z p2pc,records` tap output of every committed capture, one pass and two, into a
folder, so that a change meant to keep decoding as it was can be checked with `diff -r`:

    tools/records-same.py /tmp/before      # on the untouched build
    (change, make build)
    tools/records-same.py /tmp/after
    diff -r /tmp/before /tmp/after         # nothing: every record is the same

It runs the freshly built plugin as the tests do (p2pc.wsenv: private HOME, nobody as root).
A capture whose generator truth file (<name>.truth.json, see tests/conftest.py) names key files
is read twice: without keys (the undecoded path) and with every key file it names, split into
Noise and TLS key logs by the analyzer's own p2pc.keylog.split (what `p2pc analyze --keylog`
does).  Each output file is named <capture path>.<keys|nokeys>.<1|2>pass.
"""
from __future__ import annotations

import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))

from p2pc import keylog  # noqa: E402
from p2pc.wsenv import Wireshark, built_plugin  # noqa: E402

CAPTURES = REPO / "captures"


def key_files(capture: Path) -> list[Path]:
    """The key files the capture's truth file names (every side's), those that exist."""
    truth = capture.with_suffix(".truth.json")    # bitswap-1.2.0-noise.pcapng: the last suffix only
    if not truth.is_file():
        return []
    keys = json.loads(truth.read_text()).get("keys") or {}
    names = keys.values() if isinstance(keys, dict) else keys if isinstance(keys, list) else [keys]
    return sorted({capture.with_name(v) for v in names if isinstance(v, str) and capture.with_name(v).is_file()})


def key_options(ws: Wireshark, capture: Path, work: Path) -> list[str] | None:
    """tshark's -o options for all the capture's key files joined, None if it has none."""
    files = key_files(capture)
    if not files:
        return None
    folder = work / capture.relative_to(CAPTURES).as_posix().replace("/", "_")
    folder.mkdir(parents=True)
    joined = folder / "all.keys"
    joined.write_text("".join(f.read_text().rstrip("\n") + "\n" for f in files))
    return keylog.split(joined, folder).options(ws.readable)


def main(out: Path) -> int:
    ws = Wireshark(plugin=built_plugin())
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="records-same-"))
    jobs = []
    for cap in sorted(p for p in CAPTURES.rglob("*") if p.suffix in (".pcap", ".pcapng")):
        name = cap.relative_to(CAPTURES).as_posix().replace("/", "__")
        keyed = key_options(ws, cap, work)
        for label, opts in [("nokeys", [])] + ([("keys", keyed)] if keyed else []):
            for passes in (1, 2):
                args = ["-n", "-q", "-r", ws.readable(cap), "-z", "p2pc,records", *opts]
                jobs.append((out / f"{name}.{label}.{passes}pass", args + (["-2"] if passes == 2 else [])))

    def run(job) -> str | None:
        path, args = job
        res = ws.run("tshark", args)
        path.write_text(res.stdout + (f"\n# exit {res.returncode}\n" if res.returncode else "")
                        + "".join(f"# stderr: {l}\n" for l in res.stderr.splitlines()))
        return None if res.returncode == 0 else f"{path.name}: exit {res.returncode}"

    with ThreadPoolExecutor(2) as pool:
        bad = [b for b in pool.map(run, jobs) if b]
    ws.cleanup()
    print(f"{len(jobs)} dumps in {out}" + "".join(f"\n  {b}" for b in bad))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: records-same.py OUTDIR")
    sys.exit(main(Path(sys.argv[1])))
