"""The terminal table (default output), drawn by rich.

On a terminal every table fits its width: headers wrap first, then the least important columns
are left out (named under the table; `--format csv` or a wider terminal shows them).  Piped or
redirected, tables keep every column at their natural width (as tshark does), unless COLUMNS
sets a width.  Warnings are not part of the table: the CLI writes them on stderr.
"""
from __future__ import annotations

import io
import os
import shutil

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import pick
from .escape import text

HEAD = {"proto": "proto", "msg_type": "message type", "direction": "direction", "peer": "peer",
        "peer_id": "peer ID",
        "messages": "msgs", "wire_bytes": "wire B", "payload_bytes": "payload B",
        "raw_bytes": "raw B", "payload_saved": "payload saved", "header_saved": "header saved",
        "ack_saved": "ACK saved", "total_saved": "total saved", "payload_saved_pct": "payload %",
        "total_saved_pct": "total %",
        # compare
        "family": "family", "baseline_msgs": "baseline msgs", "compressed_msgs": "compressed msgs",
        "baseline_wire": "baseline wire B", "compressed_wire": "compressed wire B",
        "measured_message_saved": "message B saved (measured)",
        "measured_segment_hdr_saved": "segment hdr saved (measured)",
        "measured_ack_saved": "ACK saved (measured)", "measured_total_saved": "measured total saved",
        "modelled_total_saved": "modelled total saved", "model_error_pct": "model − measured %",
        "baseline_bytes": "without compression B", "compressed_bytes": "with compression B",
        "measured_saved": "saved B (measured)", "measured_saved_pct": "saved % (measured)",
        "modelled_saved": "saved B (model)",
        "saved_pct": "saved %", "compression_pct": "compression %", "avg_raw": "avg raw B",
        "avg_sent": "avg sent B",
        # diff (A and B are the sides; lengths in bytes)
        "matched": "matched", "only_a": "only A", "only_b": "only B", "a_frame": "A frame",
        "b_frame": "B frame", "a_codec": "A codec", "b_codec": "B codec", "a_wire": "A wire",
        "b_wire": "B wire", "a_payload": "A payload", "b_payload": "B payload", "a_raw": "A raw",
        "b_raw": "B raw", "a_header": "A header", "b_header": "B header",
        "payload_ratio": "payload B/A", "a_first_ms": "A 1st resp ms", "b_first_ms": "B 1st resp ms",
        "a_last_ms": "A last resp ms", "b_last_ms": "B last resp ms", "sha256": "payload SHA-256",
        "wire": "wire", "payload": "payload", "raw": "raw", "header": "header",
        # diff's negotiation section
        "first_speaker": "spoke first", "security_offered": "security offered",
        "muxer_offered": "muxer offered", "early_muxer": "early muxer", "protocols_offered": "protocols offered",
        "protocols_accepted": "protocols accepted", "lazy_streams": "lazy streams",
        # analyze's gossip section
        "src": "sender", "message_ids": "message IDs", "duplicate_bytes": "duplicate B",
        "after_idontwant": "after IDONTWANT", "after_idontwant_bytes": "after IDONTWANT B",
        "idontwant_saved": "IDONTWANT saved", "idontwant_saved_bytes": "saved B",
        # whatif
        "strategy": "strategy", "codec": "codec", "sent_bytes": "compressed B", "threshold": "over N B",
        "compress_ms_per_mb": "compress CPU ms/MB", "decompress_ms_per_mb": "decompress CPU ms/MB"}

# Columns left out first when a table is too wide for the terminal, in this order; columns not
# named here go after them, rightmost first; the first two columns always stay.
DROP_ORDER = ["payload_bytes", "raw_bytes", "sent_bytes", "header_bytes", "items", "wire_bytes", "payload_saved_pct",
              "header_saved", "ack_saved", "direction",
              "baseline_msgs", "compressed_msgs", "measured_segment_hdr_saved", "measured_ack_saved",
              "baseline_wire", "compressed_wire", "measured_message_saved",
              "avg_sent", "avg_raw", "note"]


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return "" if v is None else text(str(v))


def _numeric(rows: list[dict], c: str) -> bool:
    return all(r.get(c) is None or isinstance(r.get(c), (int, float)) for r in rows)


def _longest_word(s: str) -> int:
    return max((len(w) for w in s.split()), default=0)


def _min_col(t: dict, c: str) -> int:
    """A column's narrowest width: its widest number (numbers never break), else its longest
    word, and at least the header's longest word (headers wrap at spaces)."""
    cells = [fmt(r.get(c)) for r in t["rows"]]
    body = (max((len(v) for v in cells), default=0) if _numeric(t["rows"], c)
            else max((_longest_word(v) for v in cells), default=0))
    return max(body, _longest_word(HEAD.get(c, c)))


def _natural_col(t: dict, c: str) -> int:
    return max([len(HEAD.get(c, c))] + [len(fmt(r.get(c))) for r in t["rows"]])


def build(t: dict, columns: list[str], widths: dict | None = None) -> Table:
    tab = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for c in columns:
        num = _numeric(t["rows"], c)
        tab.add_column(HEAD.get(c, c), justify="right" if num else "left",
                       width=(widths or {}).get(c), overflow="fold")
    for r in t["rows"]:
        total = t["name"] == "main" and r.get("proto") == "ALL"
        tab.add_row(*(fmt(r.get(c)) for c in columns), style="bold" if total else None)
    return tab


def min_width(t: dict, columns: list[str]) -> int:
    """The narrowest the table can be drawn: each column's narrowest width, one space of padding
    each side of a column and one between (the box)."""
    return sum(_min_col(t, c) for c in columns) + 3 * (len(columns) - 1)


# Sections the whole report shows short, their first rows only (the most bytes first): the rest
# are in --section NAME, --format csv and --format json.
SHORT_SECTIONS = {"gossip": 10}


def shorten(t: dict) -> tuple[dict, int]:
    """The table as the whole report shows it, and how many rows it leaves out."""
    keep = SHORT_SECTIONS.get(t["name"])
    if keep is None or len(t["rows"]) <= keep:
        return t, 0
    return {**t, "rows": t["rows"][:keep]}, len(t["rows"]) - keep


def fit(console: Console, t: dict) -> tuple[Table, list[str]]:
    """The table with as many columns as fit the console's width, and the ones left out."""
    cols = list(t["columns"])
    order = [c for c in DROP_ORDER if c in cols[2:]] + [c for c in reversed(cols[2:]) if c not in DROP_ORDER]
    dropped = []
    while min_width(t, cols) > console.width and order:
        c = order.pop(0)
        cols.remove(c)
        dropped.append(c)
    natural = {c: _natural_col(t, c) for c in cols}
    if sum(natural.values()) + 3 * (len(cols) - 1) <= console.width:
        return build(t, cols), dropped
    # Too wide at its natural width: every column at its narrowest, and what is left of the
    # width given back to the headers, left to right, so fewer of them wrap.
    widths = {c: _min_col(t, c) for c in cols}
    spare = console.width - min_width(t, cols)
    for c in cols:
        grow = max(0, min(spare, natural[c] - widths[c]))
        widths[c] += grow
        spare -= grow
    return build(t, cols, widths), dropped


def console_for(stream=None, width: int | None = None) -> Console:
    """A console writing to `stream` (a string buffer if None): the terminal's width and colours
    when `stream` is a terminal; otherwise COLUMNS, else no limit, and no colours."""
    tty = stream is not None and stream.isatty()
    if width is None and not tty:
        width = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else 100_000
    if width is None:
        width = shutil.get_terminal_size().columns
    return Console(file=stream or io.StringIO(), width=width, force_terminal=tty, no_color=not tty,
                   highlight=False, soft_wrap=False, emoji=False, markup=False)


def print_report(console: Console, report: dict, section: str | None = None) -> None:
    title = report.get("title")
    if title and section is None:
        console.print(Text(text(title), style="bold"))
    for t in pick(report, section):
        if t["name"] != "main" and section is None:
            console.print()
            console.print(Text(text(t["title"]), style="bold"))
        more = 0
        if section is None:
            t, more = shorten(t)
        tab, dropped = fit(console, t)
        console.print(tab)
        if more:
            console.print(Text(f"({more:,} more rows: --section {t['name']} shows them all)", style="dim"))
        if dropped:
            console.print(Text(f"(left out to fit {console.width} columns: "
                               + ", ".join(HEAD.get(c, c) for c in dropped)
                               + "; see --format csv)", style="dim"))


def render(report: dict, section: str | None = None, width: int | None = None) -> str:
    console = console_for(None, width)
    print_report(console, report, section)
    return console.file.getvalue()
