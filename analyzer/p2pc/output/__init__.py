"""Layer 3: reports.  A report is a plain dict (schema "p2pc-report/1", described by
`p2pc/schema/p2pc-report-1.json`):

    {"schema", "command", "files", "model", "warnings",
     "rows": [...], "totals": {...},          # the main table (analyze: one row per msg type)
     "sections": [{"name", "title", "columns", "rows"}],   # further tables
     "series": {...}}                         # data for plots (HTML only)

Each output format is one module with render(report, section=None) -> str.  `section` names
one table ("main" is the rows plus totals, the others are the sections' names).  emit.py writes
a report where the command line asks.
"""
from __future__ import annotations

from importlib import import_module

FORMATS = ("table", "json", "csv", "markdown", "html")
_MODULES = {"table": "table", "json": "jsonout", "csv": "csvout", "markdown": "markdown", "html": "html"}
# Formats where --section picks one table (JSON and HTML always hold the whole report).
SECTION_FORMATS = ("table", "csv", "markdown")
# --section ALL (CSV only): every table in one long-format table.
ALL = "all"

MAIN_COLUMNS = ["proto", "msg_type", "direction", "peer", "peer_id", "messages", "wire_bytes",
                "payload_bytes", "raw_bytes", "payload_saved", "header_saved", "ack_saved", "total_saved",
                "payload_saved_pct", "total_saved_pct"]


class UnknownSection(ValueError):
    """--section names a table the report does not have (a usage error)."""


def main_columns(report: dict) -> list[str]:
    rows = report.get("rows", [])
    cols = report.get("columns") or MAIN_COLUMNS
    return [c for c in cols if any(c in r for r in rows)] if rows else cols


def tables(report: dict) -> list[dict]:
    """Every table of the report as {name, title, columns, rows}: "main" (the rows, then the
    totals row) first when the report has rows, then the sections."""
    out = []
    rows = list(report.get("rows", []))
    if report.get("totals"):
        rows.append(report["totals"])
    if rows:
        out.append({"name": "main", "title": report.get("title", ""), "columns": main_columns(report),
                    "rows": rows})
    return out + list(report.get("sections", []))


def pick(report: dict, section: str | None) -> list[dict]:
    """The tables to print: all of them, or the one `section` names."""
    every = tables(report)
    if section is None:
        return every
    got = [t for t in every if t["name"] == section]
    if not got:
        names = ", ".join(t["name"] for t in every)
        raise UnknownSection(f"no section {section!r} in this {report.get('command', '')} report: "
                             f"choose one of {names}")
    return got


def render(report: dict, fmt: str, section: str | None = None) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    mod = import_module(f".{_MODULES[fmt]}", __name__)
    return mod.render(report, section) if fmt in SECTION_FORMATS else mod.render(report)
