"""A progress bar for reading captures: % and ETA by bytes read, on stderr, only on a terminal.

tshark reads each capture itself (in a worker process with `-j`, as `nobody` when p2pc runs as
root), so the bytes read are taken from where tshark is in the file: the offset of its file
descriptor, for every process below this one, as psutil reports them (Linux, the BSDs, macOS,
Windows alike).  That works the same for a capture of a few huge messages as for one of millions
of small ones.  Where psutil cannot tell the offsets, the bar still shows each capture's completion.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

POLL_S = 0.2


def read_offsets(names: dict[str, str]) -> dict[str, int]:
    """For each capture (by the file name tshark opened, a copy keeps the name), the offset
    tshark has reached in it."""
    import psutil       # here, as rich: only a terminal's bar pays for it
    got: dict[str, int] = {}
    try:
        procs = psutil.Process().children(recursive=True)
    except psutil.Error:
        return got
    for proc in procs:
        try:
            files = proc.open_files()
        except (psutil.Error, OSError):     # ended meanwhile, or another user's (nobody's) files
            continue
        for f in files:
            cap = names.get(os.path.basename(f.path))
            position = getattr(f, "position", None)     # Linux gives it; elsewhere the bar
            if cap is not None and position is not None:    # shows completion only
                got[cap] = max(got.get(cap, 0), position)
    return got


class CaptureProgress:
    """`with CaptureProgress(captures) as p: ... p.done(capture)`; a no-op off a terminal."""

    def __init__(self, captures: list[str], label: str = "reading", stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.captures = list(captures)
        self.label = label
        self._stop = threading.Event()

    def __enter__(self) -> "CaptureProgress":
        if not self.enabled:
            return self
        # rich is imported here, on a terminal only: it is a third of the analyzer's start-up,
        # which a script reading JSON pays per capture.
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TaskProgressColumn,
                                   TextColumn, TimeRemainingColumn)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                 DownloadColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 console=Console(file=self.stream), transient=True)
        self.tasks = {}
        for c in self.captures:
            try:
                size = os.path.getsize(c)
            except OSError:
                size = 0
            self.tasks[c] = self.progress.add_task(f"{self.label} {Path(c).name}", total=size or None)
        self.names = {Path(c).name: c for c in self.captures}
        self.progress.start()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                for cap, pos in read_offsets(self.names).items():
                    self.progress.update(self.tasks[cap], completed=pos)
            except OSError:
                pass

    def done(self, capture: str) -> None:
        if self.enabled and capture in self.tasks:
            task = self.tasks[capture]
            total = self.progress.tasks[task].total
            self.progress.update(task, completed=total or 1, total=total or 1)

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._stop.set()
            self.thread.join()
            self.progress.stop()
