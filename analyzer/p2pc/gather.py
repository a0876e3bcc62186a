"""Reading captures into aggregates: one tshark pass per capture (analyze_file, run in worker
processes), several captures in parallel and merged exactly in the order given (gather)."""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Iterator

from .attribution import FrameAttribution
from .errors import NoP2PTraffic
from .progress import CaptureProgress
from .records import open_wireshark, read_records, start_capture
from .series import SeriesAggregate
from .tsharkopts import TsharkOptions

if TYPE_CHECKING:
    from .model import Aggregate


def analyze_file(capture: str, plugin: str | None, opts: TsharkOptions | None = None,
                 attribution=None) -> Aggregate:
    """One tshark pass over one capture (runs in a worker process).  With `attribution` (a
    attribution.FrameAttribution), the records are read in stream mode and it sees them too."""
    ws = open_wireshark(plugin)
    try:
        proc = start_capture(ws, capture, opts=opts, stream=attribution is not None)
        agg = SeriesAggregate(files=[capture])
        on_message, on_peer = (lambda m: agg.add_message(capture, m)), (lambda p: agg.add_peer(capture, p))
        if attribution is not None:
            on_message, on_peer = (_both(on_message, attribution.on_message),
                                   _both(on_peer, attribution.on_peer))
        res = read_records(proc, capture, on_message, lambda t: agg.add_tcp(capture, t), on_peer=on_peer,
                           on_violation=lambda v: agg.add_violation(capture, v), on_gossip=agg.add_gossip,
                           on_budget=agg.add_budget,
                           on_progress=attribution.on_progress if attribution is not None else None)
        if res.truncated:
            agg.warnings.append(res.warning)
        return agg
    finally:
        ws.cleanup()


def _both(f, g):
    def call(x):
        f(x)
        g(x)
    return call


def gather_attributed(capture: str, plugin: str | None, opts: TsharkOptions | None = None):
    """One capture's Aggregate and its FrameAttribution's result (compare's bandwidth table:
    attribution.py)."""
    att = FrameAttribution()
    agg = analyze_file(capture, plugin, opts, att)
    if not any(agg.by_dir.values()):
        raise NoP2PTraffic(f"no P2P messages found in {capture}: check the capture holds "
                           "Bitcoin/FISCO/libp2p traffic (`p2pc doctor` checks the plugin)")
    return agg, att.result()


def submit_largest_first(pool, fn, captures: list[str], *args) -> list:
    """fn(capture, *args) for each capture on `pool`, the largest files submitted first, so that
    the last a worker starts is a small one and the workers finish together; the futures are
    returned in the order of `captures`."""
    def size(c: str) -> int:
        try:
            return os.path.getsize(c)
        except OSError:
            return 0
    futures: list = [None] * len(captures)
    for i in sorted(range(len(captures)), key=lambda i: -size(captures[i])):
        futures[i] = pool.submit(fn, captures[i], *args)
    return futures


def _parts(captures: list[str], plugin: str | None, jobs: int,
           opts: TsharkOptions | None) -> Iterator[Aggregate]:
    """Each capture's Aggregate, in the order given."""
    if jobs > 1 and len(captures) > 1 and "-" not in captures:     # a worker's stdin is /dev/null
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for fut in submit_largest_first(pool, analyze_file, captures, plugin, opts):
                yield fut.result()
    else:
        for c in captures:
            yield analyze_file(c, plugin, opts)


def gather(captures: list[str], plugin: str | None, jobs: int,
           opts: TsharkOptions | None = None) -> Aggregate:
    agg = None
    with CaptureProgress(captures) as bar:
        for c, part in zip(captures, _parts(captures, plugin, jobs, opts)):   # merged in the order given
            if agg is None:
                agg = type(part)()
            agg.merge(part)
            bar.done(c)
    if agg is None or not agg.has_p2p():
        raise NoP2PTraffic("no P2P messages found in " + ", ".join(captures) +
                           ": check the capture holds Bitcoin/FISCO/libp2p traffic (`p2pc doctor` checks the plugin)")
    return agg
