"""Markdown: GitHub tables."""
from . import main_columns
from .table import HEAD, fmt


def table(columns: list[str], rows: list[dict], heads: dict | None = None) -> str:
    heads = heads or {}
    lines = ["| " + " | ".join(heads.get(c, c) for c in columns) + " |",
             "|" + "|".join("---:" if rows and isinstance(rows[0].get(c), (int, float)) else "---"
                            for c in columns) + "|"]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def render(report: dict) -> str:
    parts = [f"# {report.get('title', 'p2pc report')}", ""]
    rows = list(report.get("rows", []))
    if report.get("totals"):
        rows.append(report["totals"])
    if rows:
        parts += [table(main_columns(report), rows, HEAD), ""]
    for sec in report.get("sections", []):
        parts += [f"## {sec['title']}", "", table(sec["columns"], sec["rows"]), ""]
    for w in report.get("warnings", []):
        parts.append(f"> warning: {w}")
    return "\n".join(parts) + "\n"
