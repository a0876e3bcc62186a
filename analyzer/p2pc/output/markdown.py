"""Markdown: GitHub tables, one per section (or the one --section names)."""
from __future__ import annotations

from . import pick
from .escape import text
from .table import HEAD, fmt


def table(columns: list[str], rows: list[dict], heads: dict | None = None) -> str:
    heads = heads or {}
    lines = ["| " + " | ".join(heads.get(c, c) for c in columns) + " |",
             "|" + "|".join("---:" if rows and isinstance(rows[0].get(c), (int, float)) else "---"
                            for c in columns) + "|"]
    lines += ["| " + " | ".join(fmt(r.get(c)).replace("|", "\\|") for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def render(report: dict, section: str | None = None) -> str:
    parts = [f"# {text(report.get('title', 'p2pc report'))}", ""]
    for t in pick(report, section):
        if t["name"] != "main":
            parts += [f"## {text(t['title'])}", ""]
        parts += [table(t["columns"], t["rows"], HEAD), ""]
    for w in report.get("warnings", []):
        parts.append(f"> warning: {text(w)}")
    return "\n".join(parts) + "\n"
