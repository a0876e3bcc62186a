"""The terminal table (default output)."""
from . import main_columns

HEAD = {"proto": "proto", "msg_type": "message type", "direction": "direction",
        "messages": "msgs", "wire_bytes": "wire B", "payload_bytes": "payload B",
        "raw_bytes": "raw B", "payload_saved": "payload saved", "header_saved": "header saved",
        "ack_saved": "ACK saved", "total_saved": "total saved", "payload_saved_pct": "payload %",
        "total_saved_pct": "total %"}


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return "" if v is None else str(v)


def grid(columns: list[str], rows: list[dict], heads: dict | None = None) -> str:
    heads = heads or {}
    cells = [[heads.get(c, c) for c in columns]] + [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    numeric = [all(r.get(c) is None or isinstance(r.get(c), (int, float)) for r in rows) for c in columns]
    out = []
    for n, row in enumerate(cells):
        out.append("  ".join(v.rjust(w) if num and n else v.ljust(w)
                             for v, w, num in zip(row, widths, numeric)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def render(report: dict) -> str:
    parts = []
    title = report.get("title")
    if title:
        parts.append(title)
    rows = list(report.get("rows", []))
    if report.get("totals"):
        rows.append(report["totals"])
    if rows:
        parts.append(grid(main_columns(report), rows, HEAD))
    for sec in report.get("sections", []):
        parts.append(f"\n{sec['title']}\n" + grid(sec["columns"], sec["rows"]))
    for w in report.get("warnings", []):
        parts.append(f"warning: {w}")
    return "\n".join(parts) + "\n"
