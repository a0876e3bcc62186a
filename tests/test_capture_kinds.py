"""conftest's per_capture_kind(): on 4.4 and 4.6, per-capture tests run one capture of each kind
(.ci/README.md, "Tests that run once"), so the kinds must cover every capture and part what
Wireshark reads differently.  What tells kinds apart is the interop cells' own truth (the peers'
security, muxer and where the link was captured), not their names."""
from __future__ import annotations

import json
import re
from itertools import combinations

from conftest import CAPTURES, REPO, capture_kind, per_capture_kind

INTEROP = CAPTURES / "interop"
CELLS = sorted(p.name.removesuffix(".truth.json") for p in INTEROP.glob("*.truth.json"))


def everywhere(params: list) -> list:
    """The values of a parametrize list that run on every version (not marked `once`)."""
    return [p for p in params if not any(m.name == "once" for m in getattr(p, "marks", ()))]


def truth_kind(cell: str) -> tuple:
    """What Wireshark reads differently in an interop cell, as its peers say: the security (QUIC
    is its transport too), the muxer, and the side the link was captured at."""
    t = json.loads((INTEROP / f"{cell}.truth.json").read_text())
    return t["security"], t["muxer"], t["link"]["captured_at"]


def test_every_capture_has_its_kinds_first_on_every_version():
    """Every capture file of the repository: the first of each kind runs on every version, each
    other one is marked once and has its kind's first among those that run everywhere."""
    captures = sorted(p for p in CAPTURES.rglob("*.pcap*") if p.suffix in (".pcap", ".pcapng"))
    params = per_capture_kind(captures)
    assert len(params) == len(captures)
    first = {}
    for c in captures:
        first.setdefault(capture_kind(c), c)
    assert everywhere(params) == list(first.values())
    for p in params:
        if p not in first.values():
            assert [m.name for m in p.marks] == ["once"]
            assert first[capture_kind(p.values[0])] in everywhere(params)


def test_values_holding_a_capture_keep_their_values():
    """per_capture_kind(values, capture): a tuple of several arguments is one test's, marked or
    not, its kind that of the capture it holds."""
    values = [(name, i) for i, name in enumerate(CELLS)]
    params = per_capture_kind(values, capture=lambda v: v[0])
    assert [p.values if hasattr(p, "marks") else p for p in params] == values
    assert len(everywhere(params)) == len({capture_kind(n) for n in CELLS})


def test_cells_the_peers_ran_differently_both_run_on_every_version():
    """Two interop cells whose peers ran another security, muxer or capture side (their truth)
    are of two kinds: both run on 4.4 and 4.6, whatever else of their names differs.  Fails if
    capture_kind() lumps such cells together."""
    lumped = [(a, b) for a, b in combinations(CELLS, 2)
              if truth_kind(a) != truth_kind(b) and everywhere(per_capture_kind([a, b])) != [a, b]]
    assert not lumped
    assert len({truth_kind(c) for c in CELLS}) > 1      # the matrix has kinds to tell apart


def test_the_ci_readme_counts_the_interop_kinds():
    """.ci/README.md's figure: the interop matrix's cells, and the kinds run on every version."""
    cells, kinds = map(int, re.search(r"interop matrix's per-cell tests \((\d+) cells, (\d+) kinds\)",
                                      " ".join((REPO / ".ci/README.md").read_text().split())).groups())
    assert (len(CELLS), len(everywhere(per_capture_kind(CELLS)))) == (cells, kinds)
