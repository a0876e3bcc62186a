"""HTML: one self-contained file (opens offline: plotly.js is inlined, nothing is fetched) with
interactive plotly figures and sortable tables, laid out by the jinja2 template
`p2pc/templates/report.html.j2`.

plotly.js is plotly's own "basic" partial bundle (scatter and bar traces, which is every figure
here), vendored in `p2pc/vendor/` (provenance there) and embedded gzipped and base64-encoded: the
page unpacks it with the browser's DecompressionStream, then draws each figure from its JSON.  A
report is about 0.5 MB, not the 4.8 MB of the whole plotly.min.js inlined as plotly writes it.

Figures, from the report's rows and series (as the seeds' figures):
  analyze  savings per message type, stacked payload/header/ACK; compression % per message type
           and size range; the compression-ratio CDF per size range; inbound and outbound
           bandwidth, one line per capture
  compare  inbound and outbound bandwidth over time, compression off vs on
  whatif   the strategies side by side (bytes saved per codec), CPU time per MB, the
           compress-above-N sweep, and the message strategy's ratio per size range
  diff     payload bytes sent, A minus B, per message type (the two encoders on the same content)
Legends sit outside the plotting area, so they never cover data.  Colours stay distinct however
many message types a capture has: message types lie along an axis, never in a legend; a
legend's entries are size ranges (a sequential scale, small to large, the same in every
figure), strategies, codecs or captures, each its own colour (distinct_colors).  Each capture's
time axis starts at its own first message.  A size range with fewer than CDF_MIN_MESSAGES
compressed messages gets no CDF line but a table row of its ratios.
"""
from __future__ import annotations

import base64
import functools
from collections import defaultdict
from importlib import resources

import colorsys
import os

import jinja2
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from .. import __version__
from ..model import SIZE_RANGES, size_range_label
from . import tables
from .table import HEAD, fmt

COLORS = {"payload_saved": "#4c72b0", "header_saved": "#dd8452", "ack_saved": "#55a868"}
LEGEND_RIGHT = dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top")
RANGE_ORDER = {size_range_label(lo, hi): i for i, (lo, hi) in enumerate(SIZE_RANGES)}
# One colour per size range, light (small) to dark (large), the same in every figure; Viridis
# short of its palest yellow, which a white page would swallow.
RANGE_COLORS = {name: "#%02x%02x%02x" % tuple(round(255 * c) for c in rgb) for name, rgb in zip(
    RANGE_ORDER, sample_colorscale("Viridis", [0.85 * (1 - i / (len(SIZE_RANGES) - 1))
                                               for i in range(len(SIZE_RANGES))], colortype="tuple"))}
# Tableau 10: ten colours chosen to stay apart from one another.
TEN = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
       "#9c755f", "#bab0ac"]
# Fewer compressed messages than this in a size range: no CDF line (each step would be more than
# a tenth of the range, the shape that of a few messages, not of a distribution), but a table of
# its ratios.
CDF_MIN_MESSAGES = 10


def distinct_colors(n: int) -> list[str]:
    """n colours, no two alike: Tableau 10 up to ten, else n hues spaced evenly round the colour
    wheel, every other one darker, so neighbours differ in lightness too."""
    if n <= len(TEN):
        return TEN[:n]
    out = []
    for i in range(n):
        r, g, b = colorsys.hls_to_rgb(i / n, 0.42 if i % 2 else 0.6, 0.7)
        out.append("#%02x%02x%02x" % (round(r * 255), round(g * 255), round(b * 255)))
    return out


def _layout(fig: go.Figure, height: int, **kw) -> go.Figure:
    fig.update_layout(template="plotly_white", height=height, legend=LEGEND_RIGHT,
                      margin=dict(l=10, r=10, t=30, b=10), **kw)
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def _label(r: dict) -> str:
    return f"{r['proto']} {r['msg_type']}" + (f" {r['direction']}" if r.get("direction") else "")


def savings_by_type(report: dict):
    rows = [r for r in report.get("rows", []) if "total_saved" in r and r["total_saved"] > 0]
    if not rows:
        return None
    fig = go.Figure()
    for key, name in (("payload_saved", "payload (compression)"), ("header_saved", "headers (batching, segments)"),
                      ("ack_saved", "ACKs")):
        fig.add_bar(y=[_label(r) for r in rows], x=[max(0, r[key]) for r in rows], name=name,
                    orientation="h", marker_color=COLORS[key],
                    hovertemplate="%{y}: %{x:,} B " + name + "<extra></extra>")
    _layout(fig, 120 + 28 * len(rows), barmode="stack", xaxis_title="bytes saved",
            yaxis=dict(autorange="reversed"))
    return ("Savings per message type", "message types that save bytes; stacked: payload, header, ACK", fig)


def budget_by_layer(report: dict):
    """Where every byte went (the budget section): one bar per protocol, stacked by layer."""
    rows = next((s["rows"] for s in report.get("sections", []) if s["name"] == "budget"), [])
    if not rows:
        return None
    protos = sorted({r["proto"] for r in rows})
    layers = list(dict.fromkeys(r["layer"] for r in sorted(rows, key=lambda r: -r["bytes"])))
    colours = distinct_colors(len(layers))
    fig = go.Figure()
    for layer, colour in zip(layers, colours):
        x = [sum(r["bytes"] for r in rows if r["proto"] == p and r["layer"] == layer) for p in protos]
        fig.add_bar(y=protos, x=x, name=layer, orientation="h", marker_color=colour,
                    hovertemplate="%{y} " + layer + ": %{x:,} B<extra></extra>")
    _layout(fig, 120 + 40 * len(protos), barmode="stack", xaxis_title="bytes", yaxis=dict(autorange="reversed"))
    return ("Bytes by layer", "where every byte of the P2P connections' frames went (the budget section); "
            "stacked: messages, negotiation, security framing, muxer, gossip control, undecoded, link and IP "
            "headers, TCP headers, frames without payload (ack), retransmissions", fig)


def compression_by_size(report: dict):
    sizes = report.get("series", {}).get("size_ranges") or []
    if not sizes:
        return None
    ranges = sorted({s["range"] for s in sizes}, key=lambda r: RANGE_ORDER.get(r, 99))
    types = list(dict.fromkeys(f"{s['proto']} {s['msg_type']}" for s in sizes))
    per = defaultdict(dict)
    for s in sizes:
        per[s["range"]][f"{s['proto']} {s['msg_type']}"] = s
    fig = go.Figure()
    for rng in ranges:
        got = per[rng]
        fig.add_bar(x=types, y=[got[t]["compression_pct"] if t in got else None for t in types],
                    name=rng, marker_color=RANGE_COLORS.get(rng),
                    customdata=[got[t]["messages"] if t in got else 0 for t in types],
                    hovertemplate="%{x} " + rng + ": %{y:.2f} % (%{customdata} messages)<extra></extra>")
    _layout(fig, 380, barmode="group", xaxis_title="message type",
            yaxis_title="compression % (bytes saved / raw)", legend_title_text="raw size")
    return ("Compression by message size range", "compressed message types only; a bar per uncompressed "
            "size range", fig)


def ratio_cdf(report: dict):
    """The CDF of each size range with CDF_MIN_MESSAGES compressed messages or more; the others'
    ratios as a table."""
    cdf = report.get("series", {}).get("ratio_cdf_by_size") or {}
    counts = report.get("series", {}).get("ratio_counts_by_size") or {}
    if not cdf:
        return None
    drawn = [r for r in sorted(cdf, key=lambda r: RANGE_ORDER.get(r, 99))
             if sum(n for _, n in counts.get(r, [])) >= CDF_MIN_MESSAGES]
    few = {"columns": ["range", "ratio", "messages"],
           "rows": [{"range": r, "ratio": ratio, "messages": n}
                    for r in sorted(set(cdf) - set(drawn), key=lambda r: RANGE_ORDER.get(r, 99))
                    for ratio, n in counts.get(r, [])]}
    fig = None
    if drawn:
        fig = go.Figure()
        for name in drawn:
            pts = [(cdf[name][0][0], 0.0)] + list(cdf[name])   # the step up from 0 at the smallest ratio
            fig.add_scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], name=name, mode="lines+markers",
                            line=dict(shape="hv", color=RANGE_COLORS.get(name)),
                            hovertemplate=name + ": ratio ≤ %{x:.2f}: %{y:.1%}<extra></extra>")
        _layout(fig, 380, xaxis_title="compression ratio (raw / sent)", yaxis_title="fraction of messages",
                yaxis=dict(range=[0, 1.02], tickformat=".0%"), legend_title_text="raw size")
    note = (f"compressed messages; size ranges with fewer than {CDF_MIN_MESSAGES} of them are listed "
            "in the table instead (their ratios to 0.01)")
    return ("Compression ratio CDF per message size range", note, fig, few if few["rows"] else None)


def _in_out(bw: dict) -> dict:
    """Bandwidth per second summed into inbound/outbound as seen by the listening peer of each
    connection (the end with the lower port): {"inbound"|"outbound": {second: bytes}}."""
    out = {"inbound": defaultdict(int), "outbound": defaultdict(int)}
    for key, pts in bw.items():
        src, dst = key.split(">")
        sport, dport = int(src.rsplit(":", 1)[1]), int(dst.rsplit(":", 1)[1])
        way = "outbound" if sport < dport else "inbound"
        for t, v in pts:
            out[way][t] += v
    return out


def bandwidth(runs: dict, title: str):
    """runs: {label: {src>dst: points}}, each from its own capture's start; one subplot for
    inbound, one for outbound."""
    runs = {k: v for k, v in runs.items() if v}
    if not runs:
        return None
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("inbound (to the listening peer)", "outbound (from the listening peer)"))
    dash = ["solid", "dot", "dash"]
    colors = distinct_colors(len(runs))
    for i, (label, bw) in enumerate(runs.items()):
        io = _in_out(bw)
        for row, way in ((1, "inbound"), (2, "outbound")):
            secs = sorted(io[way])
            fig.add_scatter(x=secs, y=[io[way][s] * 8 / 1000 for s in secs], name=label,
                            legendgroup=label, showlegend=row == 1, mode="lines+markers",
                            line=dict(shape="hv", dash=dash[i % 3], color=colors[i]),
                            hovertemplate=label + " " + way + ": %{y:,.1f} kbit/s at %{x} s<extra></extra>",
                            row=row, col=1)
    fig.update_yaxes(title_text="kbit/s", rangemode="tozero")
    fig.update_xaxes(title_text="seconds from the capture's first message", rangemode="tozero", row=2, col=1)
    _layout(fig, 520)
    return (title, "P2P message bytes per second", fig)


def codec_ratio(report: dict):
    rows = report.get("series", {}).get("codecs") or []
    if not rows:
        return None
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    ranges = sorted({r["range"] for r in rows}, key=lambda r: (r == "all", RANGE_ORDER.get(r, 99)))
    fig = go.Figure()
    for rng in ranges:
        got = {r["codec"]: r for r in rows if r["range"] == rng}
        fig.add_bar(x=codecs, y=[got[c]["ratio"] if c in got else None for c in codecs],
                    name=rng if rng != "all" else "all messages", marker_color=RANGE_COLORS.get(rng, "#888888"),
                    hovertemplate="%{x} " + rng + ": ratio %{y:.3f}<extra></extra>")
    _layout(fig, 400, barmode="group", xaxis_title="codec", yaxis_title="compression ratio (raw / compressed)",
            legend_title_text="raw size")
    return ("What-if codecs: compression ratio", "message strategy, per uncompressed size range and over all "
            "messages", fig)


STRATEGY_COLORS = {"message": "#4c72b0", "stream": "#55a868", "block": "#c44e52"}


def strategies(report: dict):
    rows = report.get("series", {}).get("strategies") or []
    if not rows:
        return None
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    fig = go.Figure()
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        got = {r["codec"]: r for r in rows if r["strategy"] == strategy}
        fig.add_bar(x=codecs, y=[got[c]["total_saved"] if c in got else None for c in codecs], name=strategy,
                    marker_color=STRATEGY_COLORS.get(strategy),
                    customdata=[[got[c][k] for k in ("payload_saved", "header_saved", "ack_saved", "messages")]
                                if c in got else [0, 0, 0, 0] for c in codecs],
                    hovertemplate=strategy + " %{x}: %{y:,} B saved (payload %{customdata[0]:,}, headers "
                                  "%{customdata[1]:,}, ACKs %{customdata[2]:,}; %{customdata[3]:,} messages)<extra></extra>")
    _layout(fig, 400, barmode="group", xaxis_title="codec", yaxis_title="bytes saved (payload + headers + ACKs)",
            legend_title_text="strategy")
    return ("What-if strategies side by side", "bytes saved by each strategy and codec", fig)


def strategy_time(report: dict):
    rows = report.get("series", {}).get("strategies") or []
    if not rows:
        return None
    fig = make_subplots(rows=1, cols=2, subplot_titles=("compress", "decompress"))
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        got = {r["codec"]: r for r in rows if r["strategy"] == strategy}
        for col, key in ((1, "compress_ms_per_mb"), (2, "decompress_ms_per_mb")):
            fig.add_bar(x=codecs, y=[got[c][key] if c in got else None for c in codecs], name=strategy,
                        legendgroup=strategy, showlegend=col == 1, marker_color=STRATEGY_COLORS.get(strategy),
                        hovertemplate=strategy + " %{x}: %{y:,.2f} CPU ms per MB<extra></extra>", row=1, col=col)
    fig.update_yaxes(title_text="CPU ms per MB of raw bytes", type="log", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    _layout(fig, 400, barmode="group", legend_title_text="strategy")
    return ("What-if strategies: CPU time per MB", "process time, per MB of uncompressed bytes (log scale)", fig)


def threshold_sweep(report: dict):
    rows = report.get("series", {}).get("thresholds") or []
    if not rows:
        return None
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("bytes saved", "messages compressed"))
    xs = sorted({r["threshold"] for r in rows})
    labels = [f"> {x:,} B" for x in xs]
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    codec_color = dict(zip(codecs, distinct_colors(len(codecs))))
    for strategy, codec in dict.fromkeys((r["strategy"], r["codec"]) for r in rows):
        got = {r["threshold"]: r for r in rows if (r["strategy"], r["codec"]) == (strategy, codec)}
        name = f"{strategy} {codec}"
        fig.add_scatter(x=labels, y=[got[x]["total_saved"] for x in xs], name=name, mode="lines+markers",
                        line=dict(dash="solid" if strategy == "message" else "dot", color=codec_color[codec]),
                        hovertemplate=name + " %{x}: %{y:,} B saved<extra></extra>", row=1, col=1)
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        got = {r["threshold"]: r for r in rows if r["strategy"] == strategy}
        fig.add_scatter(x=labels, y=[got[x]["messages"] for x in xs], name=f"{strategy}: messages",
                        mode="lines+markers", line=dict(color=STRATEGY_COLORS.get(strategy), shape="hv"),
                        hovertemplate=strategy + " %{x}: %{y:,} messages compressed<extra></extra>", row=2, col=1)
    fig.update_yaxes(title_text="bytes saved", row=1, col=1)
    fig.update_yaxes(title_text="messages", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="compress only payloads over", row=2, col=1)
    _layout(fig, 560)
    return ("Compress-above-N sweep", "message and block strategies, each codec; FISCO compresses over 1,024 B", fig)


def size_difference(report: dict):
    """Per message type: payload bytes A sent minus those B sent, over the matched messages (a
    bar), and each message's difference (a dot), so a type where the encoders differ stands
    out from those where they agree."""
    per_type = report.get("series", {}).get("compressed_size_ab") or {}
    if not per_type:
        return None
    types = sorted(per_type, key=lambda t: -abs(sum(a - b for a, b in per_type[t])))
    total = [sum(a - b for a, b in per_type[t]) for t in types]
    differ = [sum(1 for a, b in per_type[t] if a != b) for t in types]
    fig = go.Figure()
    fig.add_bar(y=types, x=total, orientation="h", name="all matched messages",
                marker_color=["#e15759" if d > 0 else "#4e79a7" if d < 0 else "#bab0ac" for d in total],
                customdata=[[len(per_type[t]), n] for t, n in zip(types, differ)],
                hovertemplate="%{y}: A − B = %{x:+,} B over %{customdata[0]:,} messages "
                              "(%{customdata[1]:,} differ)<extra></extra>")
    fig.add_scatter(y=[t for t in types for _ in per_type[t]], x=[a - b for t in types for a, b in per_type[t]],
                    mode="markers", name="one message", marker=dict(color="#222222", size=5, opacity=0.6),
                    hovertemplate="%{y}: A − B = %{x:+,} B<extra></extra>")
    _layout(fig, 140 + 28 * len(types), xaxis=dict(title="payload bytes sent, A − B", zeroline=True,
                                                  zerolinecolor="#444", zerolinewidth=1),
            yaxis=dict(autorange="reversed"))
    return ("Payload bytes sent, A minus B, per message type",
            "right of 0 (red): A sent more; left (blue): B sent more; grey: the same", fig)


def figures(report: dict) -> list[tuple]:
    """(title, note, figure or None, table or None) of each figure the report has data for."""
    series = report.get("series", {})
    cmd = report.get("command")
    if cmd == "compare":
        bw = series.get("bandwidth_compare", {})
        found = [bandwidth({"compression off": _one_run(bw.get("baseline")),
                            "compression on": _one_run(bw.get("compressed"))},
                           "Bandwidth over time: compression off vs on")]
    elif cmd == "whatif":
        found = [strategies(report), strategy_time(report), threshold_sweep(report), codec_ratio(report)]
    elif cmd == "diff":
        found = [size_difference(report)]
    else:
        found = [savings_by_type(report), budget_by_layer(report), compression_by_size(report), ratio_cdf(report),
                 bandwidth({os.path.basename(f) or "captured": bw
                            for f, bw in (series.get("bandwidth") or {}).items()}, "Bandwidth over time")]
    return [tuple(f) + (None,) * (4 - len(f)) for f in found if f]


def _one_run(per_capture: dict | None) -> dict:
    """A side of compare (one capture or several) as one run: each capture's connections, each
    from its own start."""
    per_capture = per_capture or {}
    return {f"{os.path.basename(f)} {d}" if len(per_capture) > 1 else d: pts
            for f, bw in per_capture.items() for d, pts in bw.items()}


def _cells(columns: list[str], r: dict, numeric: set) -> list[dict]:
    return [{"text": fmt(r.get(c)), "num": c in numeric,
             "value": "-Infinity" if r.get(c) is None else r.get(c)} for c in columns]


PLOTLY_JS = "plotly-basic.min.js.gz"


@functools.lru_cache(maxsize=1)
def plotly_js_gz_base64() -> str:
    """The vendored plotly.js basic bundle, gzipped, as base64 text for the page to unpack."""
    return base64.b64encode((resources.files("p2pc") / "vendor" / PLOTLY_JS).read_bytes()).decode("ascii")


def _spec(fig: go.Figure) -> str:
    """A figure's JSON for a <script type="application/json">: no "</" can close the element."""
    return fig.to_json().replace("</", "<\\/")


def render(report: dict) -> str:
    figs = [{"title": title, "note": note, "id": f"figure-{i}", "spec": _spec(fig) if fig else None,
             "table": table and {"heads": [HEAD.get(c, c) for c in table["columns"]],
                                 "body": [_cells(table["columns"], r, set(table["columns"]) - {"range"})
                                          for r in table["rows"]]}}
            for i, (title, note, fig, table) in enumerate(figures(report))]
    out_tables = []
    for t in tables(report):
        cols, rows = t["columns"], t["rows"]
        numeric = {c for c in cols if all(r.get(c) is None or isinstance(r.get(c), (int, float)) for r in rows)
                   and any(isinstance(r.get(c), (int, float)) for r in rows)}
        foot = [r for r in rows if r.get("proto") == "ALL"]
        body = [r for r in rows if not any(r is f for f in foot)]
        out_tables.append({"name": t["name"], "heading": t["title"] if t["name"] != "main" else "Summary",
                           "columns": cols, "heads": [HEAD.get(c, c) for c in cols],
                           "body": [_cells(cols, r, numeric) for r in body],
                           "foot": [_cells(cols, r, numeric) for r in foot]})
    env = jinja2.Environment(loader=jinja2.PackageLoader("p2pc", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             trim_blocks=True, lstrip_blocks=True)
    drawn = any(f["spec"] for f in figs)
    return env.get_template("report.html.j2").render(report=report, figures=figs, tables=out_tables,
                                                     version=__version__,
                                                     plotly_js=plotly_js_gz_base64() if drawn else "")
