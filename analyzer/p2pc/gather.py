"""Reading captures into aggregates: one tshark pass per capture (analyze_file, run in worker
processes), several captures in parallel and merged exactly in the order given (gather)."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

from .model import Aggregate
from .progress import CaptureProgress
from .records import NoP2PTraffic, open_wireshark, read_capture
from .series import SeriesAggregate
from .tsharkopts import TsharkOptions


def analyze_file(capture: str, plugin: str | None, opts: TsharkOptions | None = None) -> Aggregate:
    """One tshark pass over one capture (runs in a worker process)."""
    ws = open_wireshark(plugin)
    try:
        agg = SeriesAggregate(files=[capture])
        res = read_capture(ws, capture, lambda m: agg.add_message(capture, m),
                           lambda t: agg.add_tcp(capture, t), opts=opts,
                           on_peer=lambda p: agg.add_peer(capture, p))
        if res.truncated:
            agg.warnings.append(res.warning)
        return agg
    finally:
        ws.cleanup()


def gather(captures: list[str], plugin: str | None, jobs: int,
           opts: TsharkOptions | None = None) -> Aggregate:
    agg = SeriesAggregate()
    with CaptureProgress(captures) as bar:
        if jobs > 1 and len(captures) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                parts = [pool.submit(analyze_file, c, plugin, opts) for c in captures]
                for c, part in zip(captures, parts):   # merged in the order given
                    agg.merge(part.result())
                    bar.done(c)
        else:
            for c in captures:
                agg.merge(analyze_file(c, plugin, opts))
                bar.done(c)
    if not any(agg.by_dir.values()):
        raise NoP2PTraffic("no P2P messages found in " + ", ".join(captures) +
                           ": check the capture holds Bitcoin/FISCO/libp2p traffic (`p2pc doctor` checks the plugin)")
    return agg
