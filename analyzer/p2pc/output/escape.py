r"""What a peer controls (protocol IDs, ALPN, message type names, peer IDs), made safe for each
output with the records tap's escapes (docs/tap-format.md): one function per output kind.

- `text`, for the terminal and Markdown (every cell `table.fmt` draws): a control character
  (C0, DEL, C1) becomes \t, \n, \r or \xHH (its UTF-8 bytes) and a backslash \\, so no byte
  moves the cursor, clears the screen, sets a title or splits a row, and the value stays
  readable: `records.unescape` turns it back.
- `csv_cell`, for CSV: `text`, then a cell that starts with =, +, -, @, tab or CR gets a single
  quote in front, so a spreadsheet reads it as text, not as a formula (OWASP, "CSV Injection").
  Numbers are left as they are.
JSON escapes control characters itself; HTML is escaped by jinja2's autoescape.
"""
from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")
_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _one(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or "".join(f"\\x{b:02x}" for b in c.encode())


def text(s: str) -> str:
    return _CONTROL.sub(_one, s)


def csv_cell(v):
    if not isinstance(v, str):
        return v
    s = text(v)
    return "'" + s if s.startswith(FORMULA_START) else s
