#!/usr/bin/env python3
"""Where a test run's tshark time went, from the log tests/tshark_memo.py writes when
P2PC_TSHARK_LOG=FILE is set: per test module, how many tshark runs, how they were answered
("ran": run and remembered, "memo": from the session's memory, "unremembered": run, as it
cannot be remembered) and tshark's CPU seconds for each kind.

    P2PC_TSHARK_LOG=/tmp/tshark.jsonl python3 -m pytest -q tests/test_x.py
    tools/tshark-log.py /tmp/tshark.jsonl
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict

KINDS = ("ran", "memo", "unremembered")


def main(path: str) -> int:
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: {k: [] for k in KINDS})
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            module = rec["test"].split("::")[0].rsplit("/", 1)[-1] or "(outside a test)"
            runs[module][rec["how"]].append(rec["cpu"])
    print(f"{'module':28} " + " ".join(f"{k:>12} {'cpu s':>8}" for k in KINDS))
    total = {k: [0, 0.0] for k in KINDS}
    for module, by in sorted(runs.items(), key=lambda kv: -sum(map(sum, kv[1].values()))):
        print(f"{module:28} " + " ".join(f"{len(by[k]):12} {sum(by[k]):8.1f}" for k in KINDS))
        for k in KINDS:
            total[k][0] += len(by[k])
            total[k][1] += sum(by[k])
    print(f"{'all':28} " + " ".join(f"{n:12} {s:8.1f}" for n, s in total.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]) if len(sys.argv) == 2 else print(__doc__) or 2)
