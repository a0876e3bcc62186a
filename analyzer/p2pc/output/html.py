"""HTML: the tables plus embedded plots (matplotlib, PNG as data: URIs): savings by message
type, compression % by size range, the compression-ratio CDF, and bandwidth over time."""
from __future__ import annotations

import base64
import html
import io

from . import main_columns
from .table import HEAD, fmt


def _table(columns, rows, heads=None) -> str:
    heads = heads or {}
    th = "".join(f"<th>{html.escape(heads.get(c, c))}</th>" for c in columns)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(r.get(c)))}</td>" for c in columns) + "</tr>"
                  for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def plots(report: dict) -> list[tuple[str, str]]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    out = []
    rows = report.get("rows", [])
    if rows and "total_saved" in rows[0]:
        fig, ax = plt.subplots(figsize=(8, 0.5 + 0.4 * len(rows)))
        labels = [f"{r['proto']} {r['msg_type']}" + (f" {r['direction']}" if r.get("direction") else "")
                  for r in rows]
        left = [0] * len(rows)
        for key, color in (("payload_saved", "#4c72b0"), ("header_saved", "#dd8452"), ("ack_saved", "#55a868")):
            vals = [max(0, r.get(key, 0)) for r in rows]
            ax.barh(labels, vals, left=left, color=color, label=key.replace("_", " "))
            left = [a + b for a, b in zip(left, vals)]
        ax.set_xlabel("bytes saved")
        ax.legend()
        out.append(("Savings by message type", _png(fig)))
    series = report.get("series", {})
    sizes = series.get("size_ranges")
    if sizes:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        labels = [f"{s['msg_type']} {s['range']}" for s in sizes]
        ax.bar(range(len(sizes)), [s["compression_pct"] for s in sizes], color="#4c72b0")
        ax.set_xticks(range(len(sizes)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("compression %")
        out.append(("Compression by size range", _png(fig)))
    cdf = series.get("ratio_cdf")
    if cdf:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for name, pts in cdf.items():
            ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=name)
        ax.set_xlabel("compression ratio (raw / sent)")
        ax.set_ylabel("fraction of messages")
        ax.legend(fontsize=7)
        out.append(("Compression ratio CDF", _png(fig)))
    bw = series.get("bandwidth")
    if bw:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for name, pts in bw.items():
            ax.plot([p[0] for p in pts], [p[1] * 8 / 1000 for p in pts], label=name, drawstyle="steps-post")
        ax.set_xlabel("seconds")
        ax.set_ylabel("kbit/s (P2P message bytes)")
        ax.legend(fontsize=7)
        out.append(("Bandwidth over time", _png(fig)))
    return out


def render(report: dict) -> str:
    title = html.escape(report.get("title", "p2pc report"))
    body = [f"<h1>{title}</h1>"]
    files = report.get("files")
    if files:
        body.append("<p>" + ", ".join(html.escape(f) for f in files) + "</p>")
    rows = list(report.get("rows", []))
    if report.get("totals"):
        rows.append(report["totals"])
    if rows:
        body.append(_table(main_columns(report), rows, HEAD))
    for sec in report.get("sections", []):
        body.append(f"<h2>{html.escape(sec['title'])}</h2>" + _table(sec["columns"], sec["rows"]))
    for name, uri in plots(report):
        body.append(f'<h2>{html.escape(name)}</h2><img alt="{html.escape(name)}" src="{uri}">')
    for w in report.get("warnings", []):
        body.append(f"<p class=warn>warning: {html.escape(w)}</p>")
    style = ("body{font-family:sans-serif;margin:2em} table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right} .warn{color:#a00}")
    return (f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")
