"""CSV (RFC 4180): one table per file.  Without --section the main table (the rows and the
totals row; the first section when a report has no rows); --section NAME picks another table;
--section all writes every table as one long-format table: section, row, column, value.
Every string cell goes through escape.csv_cell (no formula, no control character)."""
from __future__ import annotations

import csv
import io

from . import ALL, pick, tables
from .escape import csv_cell


def render(report: dict, section: str | None = None) -> str:
    buf = io.StringIO()
    if section == ALL:
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["section", "row", "column", "value"])
        for t in tables(report):
            for i, r in enumerate(t["rows"]):
                for c in t["columns"]:
                    if c in r:
                        w.writerow([t["name"], i, c, "" if r[c] is None else csv_cell(r[c])])
        return buf.getvalue()
    t = pick(report, section)[0]
    w = csv.DictWriter(buf, fieldnames=t["columns"], extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in t["rows"]:
        w.writerow({c: csv_cell(v) for c, v in r.items()})
    return buf.getvalue()
