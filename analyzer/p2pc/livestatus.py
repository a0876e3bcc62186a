"""How `p2pc live` is doing, while it runs: elapsed time, packets captured, packets dropped,
P2P messages and their wire bytes, tshark's session resets, and the metrics URL if it serves one.

On a terminal (stderr), one line refreshed in place every second (rich.live); otherwise one JSON
object per line on stderr at each --interval and once at the end (`"final": true`), so a service
log or a script reads how the capture is doing without the report (docs/analyzer.md, "live").

Packets are those dumpcap captured (the packet blocks of the pcapng it writes); drops are
dumpcap's own count, which it gives only when the capture stops (tests/test_live.py,
test_dumpcap_tells_its_drops_only_when_it_stops): null until then.
"""
from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager


class LiveStatus:
    """`with LiveStatus(capture, totals, url) as s: ... s.tick() ... s.final()`."""

    def __init__(self, capture, totals, url: str | None, stream=None):
        self.capture, self.totals, self.url = capture, totals, url
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.started = time.monotonic()
        self.dropped: int | None = None         # dumpcap's count, once it stopped
        self._live = None

    def snapshot(self) -> dict:
        with self.totals.lock:
            messages, wire, resets = self.totals.messages, self.totals.wire_bytes, self.totals.epoch
        return {"elapsed_s": round(time.monotonic() - self.started, 1), "packets": self.capture.packets,
                "dropped": self.dropped, "messages": messages, "wire_bytes": wire, "resets": resets,
                "metrics": self.url}

    def line(self) -> str:
        """The terminal's line."""
        s = self.snapshot()
        m, sec = divmod(int(s["elapsed_s"]), 60)
        h, m = divmod(m, 60)
        drops = "?" if s["dropped"] is None else f"{s['dropped']:,}"
        return (f"p2pc live on {self.capture.interface}: {h}:{m:02}:{sec:02}  {s['packets']:,} packets  "
                f"{drops} dropped  {s['messages']:,} messages  {s['wire_bytes']:,} bytes  "
                f"{s['resets']} resets" + (f"  {s['metrics']}" if s["metrics"] else ""))

    def __enter__(self) -> "LiveStatus":
        if self.terminal:
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text
            # stderr's messages (warnings) print above the line; stdout (the report) is left alone.
            self._live = Live(get_renderable=lambda: Text(self.line(), no_wrap=True, overflow="ellipsis"),
                              console=Console(file=self.stream, highlight=False), refresh_per_second=1,
                              redirect_stdout=False, redirect_stderr=True)
            self._live.start()
        return self

    def tick(self) -> None:
        """At each --interval: the JSON line off a terminal (the terminal's line refreshes itself)."""
        if not self.terminal:
            self._json(final=False)

    @contextmanager
    def aside(self):
        """Something else written to the terminal meanwhile (live's table, refreshed): the line
        stops while it is written, and starts again below it."""
        if self._live:
            self._live.stop()
        try:
            yield
        finally:
            if self._live:
                self._live.start()

    def final(self, dropped: int) -> None:
        """The capture ended: its drops, and the last line (kept on a terminal)."""
        self.dropped = dropped
        self.close()
        if not self.terminal:
            self._json(final=True)

    def close(self) -> None:
        if self._live:
            self._live.stop()       # its last render stays, and the cursor goes to the next line
            self._live = None

    def __exit__(self, *exc) -> None:
        self.close()

    def _json(self, final: bool) -> None:
        print(json.dumps({"p2pc_live": self.capture.interface, **self.snapshot(), "final": final}),
              file=self.stream, flush=True)
