"""Layer 3: reports.  A report is a plain dict (schema "p2pc-report/1"):

    {"schema", "command", "files", "model", "warnings",
     "rows": [...], "totals": {...},          # the main table (analyze: one row per msg type)
     "sections": [{"name", "title", "columns", "rows"}],   # further tables
     "series": {...}}                         # data for plots (HTML only)

Each output format is one module with render(report) -> str.
"""
from __future__ import annotations

from importlib import import_module

FORMATS = ("table", "json", "csv", "markdown", "html")
_MODULES = {"table": "table", "json": "jsonout", "csv": "csvout", "markdown": "markdown", "html": "html"}

MAIN_COLUMNS = ["proto", "msg_type", "direction", "messages", "wire_bytes", "payload_bytes",
                "raw_bytes", "payload_saved", "header_saved", "ack_saved", "total_saved",
                "payload_saved_pct", "total_saved_pct"]


def main_columns(report: dict) -> list[str]:
    rows = report.get("rows", [])
    cols = report.get("columns") or MAIN_COLUMNS
    return [c for c in cols if any(c in r for r in rows)] if rows else cols


def render(report: dict, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return import_module(f".{_MODULES[fmt]}", __name__).render(report)
