"""A report written where the command line asks (--format, --section, --output), its warnings
on stderr.  Each format's module is imported when used, as render() does: rich for the
terminal's table, jinja2 and plotly for HTML are heavy, and only some runs need them."""
from __future__ import annotations

import os
import sys

from ..errors import OutputError, UsageError
from . import UnknownSection, escape, render


def emit(report: dict, fmt: str, section: str | None = None, path: str | None = None, warn: bool = True) -> None:
    """The report on stdout (or in the file at `path`), and its warnings on stderr whatever the
    format, so a script reading CSV or a piped table sees them and its data holds none (JSON, HTML
    and Markdown keep them in the report too).  warn=False: the caller says them itself (live,
    between reports)."""
    if warn:
        for w in report.get("warnings", []):
            print(f"p2pc: warning: {escape.text(w)}", file=sys.stderr)
    try:
        if fmt == "table" and not path and sys.stdout.isatty():
            from .table import console_for, print_report
            print_report(console_for(sys.stdout), report, section)   # the terminal's width, colours
            return
        if fmt == "json":   # written as it is encoded: its aggregate can be large
            from .jsonout import chunks
            pieces = chunks(report)
        else:
            pieces = iter([render(report, fmt, section)])
    except UnknownSection as e:
        raise UsageError(str(e)) from None
    if path:
        try:
            with open(output_path(path), "w") as out:
                out.writelines(pieces)
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
    else:
        sys.stdout.writelines(pieces)



def output_path(path: str) -> str:
    """`path`, its folder made first if missing (a service's --output /var/log/p2pc/x.json)."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    return path
