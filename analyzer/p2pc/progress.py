"""A progress bar for reading captures: % and ETA by bytes read, on stderr, only on a terminal.

tshark reads each capture itself (in a worker process with `-j`, as `nobody` when p2pc runs as
root), so the bytes read are taken from where tshark is in the file: the offset of its file
descriptor in /proc/PID/fdinfo, for every process below this one.  That works the same for a
capture of a few huge messages as for one of millions of small ones.  Where /proc is not there,
the bar still shows each capture's completion.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

POLL_S = 0.2


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _descendants(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def read_offsets(names: dict[str, str]) -> dict[str, int]:
    """For each capture (by the file name tshark opened, a copy keeps the name), the offset
    tshark has reached in it."""
    got: dict[str, int] = {}
    for pid in _descendants(os.getpid()):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            cap = names.get(os.path.basename(target))
            if cap is None:
                continue
            try:
                for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                    if line.startswith("pos:"):
                        got[cap] = max(got.get(cap, 0), int(line.split()[1]))
            except OSError:
                pass
    return got


class CaptureProgress:
    """`with CaptureProgress(captures) as p: ... p.done(capture)`; a no-op off a terminal."""

    def __init__(self, captures: list[str], label: str = "reading", stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() and os.path.isdir("/proc")
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
