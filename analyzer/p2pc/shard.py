"""Captures larger than memory: split by connection, analyze the shards in parallel, merge.

`split()` reads a pcap or pcapng capture once, front to back, and writes every frame to one of
N shard files chosen by a hash of its connection (the sorted pair of address:port ends for TCP
and UDP, the address pair for other IP, shard 0 for the rest).  Each TCP connection therefore
lands whole, both directions, in one shard, and the accounting (model.Aggregate: integer sums per
connection direction) of the shards adds up to the capture's.  Memory does not grow with the
capture: one frame at a time, and a write buffer per shard.

The file framing is copied block by block, unchanged: every pcapng block that is not a packet
(section and interface descriptions, name resolution, the TLS secrets of a Decryption Secrets
Block, interface statistics) goes to every shard, packet blocks to their connection's shard.
connkey.py names each frame's connection (dpkt decodes it).

`analyze_sharded()` splits, hands the shards to worker processes (or to a Dask cluster with
`scheduler=`), each running the usual single tshark pass, and merges the Aggregates;
`analyze_captures()`, `p2pc analyze`'s, picks which captures to split.
"""
from __future__ import annotations

import os
import shutil
import struct
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from . import private
from .connkey import frame_key
from .errors import CaptureUnreadable, NoP2PTraffic, P2pcError, UsageError
from .gather import analyze_file, gather, submit_largest_first
from .merge import rename_files, shard_key
from .records import open_wireshark
from .tsharkopts import TsharkOptions

if TYPE_CHECKING:
    from .model import Aggregate

# Above this size `p2pc analyze` shards a capture on its own (P2PC_SHARD_ABOVE overrides).
AUTO_SHARD_BYTES = int(os.environ.get("P2PC_SHARD_ABOVE", 2 << 30))
# Target shard size when sharding on its own: a shard's tshark pass stays well within memory.
SHARD_TARGET_BYTES = 512 << 20

_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",      # microseconds
                b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}      # nanoseconds
_SHB = 0x0A0D0D0A
_IDB, _PB, _SPB, _EPB = 1, 2, 3, 6
_BUF = 1 << 20


@dataclass
class SplitResult:
    paths: list[str]
    frames: list[int]
    bytes: list[int]
    warnings: list[str] = field(default_factory=list)


class _Router:
    def __init__(self, n: int):
        self.n = n
        self.keys: dict[int, object] = {}       # one function per link type

    def shard(self, linktype: int, frame: bytes) -> int:
        if self.n == 1:
            return 0
        key_of = self.keys.get(linktype, False)
        if key_of is False:
            key_of = self.keys[linktype] = frame_key(linktype)
        if key_of is None:
            return 0
        try:
            key = key_of(frame)
        except Exception:       # a frame dpkt cannot decode (cut short, malformed): shard 0
            return 0
        return 0 if key is None else zlib.crc32(key) % self.n


def split(capture: str | os.PathLike, out_dir: str | os.PathLike, n: int,
          prefix: str | None = None) -> SplitResult:
    """Split `capture` into `n` shard files in `out_dir` (same format as the capture)."""
    capture = str(capture)
    if n < 1:
        raise ValueError("n must be at least 1")
    try:
        f = open(capture, "rb")
    except FileNotFoundError:
        raise CaptureUnreadable(f"{capture}: no such file") from None
    except PermissionError:
        raise CaptureUnreadable(f"{capture}: permission denied (check the file's permissions)") from None
    except IsADirectoryError:
        raise CaptureUnreadable(f"{capture}: a folder, not a capture file") from None
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{out_dir}: cannot create the shard folder: {e.strerror}") from None
    stem = prefix or Path(capture).name.split(".")[0]
    with f:
        head = f.read(4)
        if head in _PCAP_MAGICS:
            ext, fn = "pcap", _split_pcap
        elif len(head) == 4 and struct.unpack("<I", head)[0] == _SHB:
            ext, fn = "pcapng", _split_pcapng
        else:
            raise CaptureUnreadable(f"{capture}: not a pcap or pcapng capture (convert it with "
                                    f"`editcap -F pcapng {capture} OUT.pcapng`)")
        paths = [str(out_dir / f"{stem}.shard{i:03d}.{ext}") for i in range(n)]
        # The shards hold the capture's traffic: private files (private.py), as the capture may be.
        outs = [private.open_file(p, "wb", buffering=_BUF) for p in paths]
        res = SplitResult(paths, [0] * n, [0] * n)
        try:
            f.seek(0)
            fn(f, outs, _Router(n), res)
        finally:
            for o in outs:
                o.close()
    if res.warnings:
        res.warnings = [f"{capture}: {w}" for w in res.warnings]
    return res


def _split_pcap(f, outs, router: _Router, res: SplitResult) -> None:
    hdr = f.read(24)
    if len(hdr) < 24:
        raise CaptureUnreadable("the capture's file header is cut short")
    bo = _PCAP_MAGICS[hdr[:4]]
    linktype = struct.unpack(bo + "I", hdr[20:24])[0] & 0x0FFFFFFF
    for o in outs:
        o.write(hdr)
    rec = struct.Struct(bo + "IIII")
    read = f.read
    while True:
        rh = read(16)
        if not rh:
            return
        if len(rh) < 16:
            res.warnings.append("the capture is cut short; the shards hold what could be read")
            return
        incl = rec.unpack(rh)[2]
        data = read(incl)
        if len(data) < incl:
            res.warnings.append("the capture is cut short; the shards hold what could be read")
            return
        i = router.shard(linktype, data)
        outs[i].write(rh)
        outs[i].write(data)
        res.frames[i] += 1
        res.bytes[i] += 16 + incl


# Per byte order: a block's type and length; an Enhanced Packet Block's interface and captured
# length; an (obsolete) Packet Block's; an Interface Description Block's link type.
_PCAPNG_STRUCTS = {bo: (struct.Struct(bo + "II"), struct.Struct(bo + "I8xI"),
                        struct.Struct(bo + "H10xI"), struct.Struct(bo + "H")) for bo in "<>"}
_SHB_TYPE = struct.pack("<I", _SHB)     # the same bytes in either byte order


def _split_pcapng(f, outs, router: _Router, res: SplitResult) -> None:
    head, epb, pb, idb = _PCAPNG_STRUCTS["<"]
    linktypes: list[int] = []
    read = f.read
    shard = router.shard
    while True:
        bh = read(8)
        if not bh:
            return
        if len(bh) < 8:
            res.warnings.append("the capture is cut short; the shards hold what could be read")
            return
        if bh[:4] == _SHB_TYPE:     # a new section: its own byte order and interfaces
            bom = read(4)
            head, epb, pb, idb = _PCAPNG_STRUCTS["<" if bom == b"\x4d\x3c\x2b\x1a" else ">"]
            btype, blen = head.unpack(bh)
            body = bom + read(blen - 12)
            linktypes = []
        else:
            btype, blen = head.unpack(bh)
            body = read(blen - 8)
        if blen < 12 or len(body) < blen - 8:
            res.warnings.append("the capture is cut short; the shards hold what could be read")
            return
        if btype == _EPB:
            iface, caplen = epb.unpack_from(body)
            frame = body[20:20 + caplen]
        elif btype == _SPB:
            iface, frame = 0, body[4:blen - 12]
        elif btype == _PB:
            iface, caplen = pb.unpack_from(body)
            frame = body[20:20 + caplen]
        else:                       # not a packet: every shard needs it
            if btype == _IDB:
                linktypes.append(idb.unpack_from(body)[0])
            for o in outs:
                o.write(bh)
                o.write(body)
            continue
        i = shard(linktypes[iface] if iface < len(linktypes) else -1, frame)
        outs[i].write(bh + body)        # one call: cheaper than two
        res.frames[i] += 1
        res.bytes[i] += blen


# ---- running the shards ----
def resolve_plugin(plugin: str | None) -> str | None:
    """Decide once, in the parent, which plugin file the workers load (None: tshark loads it
    already), so no worker repeats the lookup."""
    ws = open_wireshark(plugin)
    try:
        return str(ws.plugin) if ws.plugin is not None else None
    finally:
        ws.cleanup()


def analyze_shard(path: str, plugin: str | None, opts: TsharkOptions | None = None) -> Aggregate:
    """One shard's tshark pass (a worker process, local or on a Dask worker)."""
    return analyze_file(path, plugin, opts)


def default_shards(capture: str, jobs: int) -> int:
    """Shards of at most SHARD_TARGET_BYTES, and at least four per worker: connections differ in
    size and cost, and the pool (largest shard first) evens out what one hash split does not."""
    size = os.path.getsize(capture)
    return max(4 * jobs, -(-size // SHARD_TARGET_BYTES))


def run_shards(paths: list[str], plugin: str | None, jobs: int,
               scheduler: str | None = None, opts: TsharkOptions | None = None) -> Iterator[Aggregate]:
    """Analyze every shard: `jobs` local worker processes, or the Dask cluster at `scheduler`
    (tcp://HOST:PORT; its workers must see the shard paths and have tshark and the plugin).
    Yields the shards' Aggregates in the order of `paths`, each released once yielded, so the
    caller holds one at a time (plus those finished ahead of their turn)."""
    if scheduler:
        try:    # Dask, an optional extra (p2pc[cluster]), loaded only for a scheduler
            from dask.distributed import Client
        except ImportError:
            raise P2pcError("--scheduler needs Dask: pip install 'p2pc[cluster]'") from None
        # The connect timeout is Dask's own (distributed.comm.timeouts.connect, 30 s).
        try:
            client = Client(scheduler)
        except ValueError as e:             # not an address: a usage error
            raise UsageError(f"--scheduler {scheduler}: {e} (give tcp://HOST:PORT)") from None
        except OSError as e:                # refused, timed out, unknown host
            raise P2pcError(f"--scheduler {scheduler}: cannot reach the Dask scheduler: "
                            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        with client:
            futures = client.map(analyze_shard, paths, plugin=plugin, opts=opts, pure=False)
            yield from _in_order(futures, lambda f: f.release())
        return
    if jobs > 1 and len(paths) > 1:
        with ProcessPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
            futures = submit_largest_first(pool, analyze_shard, paths, plugin, opts)
            yield from _in_order(futures, lambda f: None)
        return
    for p in paths:
        yield analyze_shard(p, plugin, opts)


def _in_order(futures: list, release) -> Iterator[Aggregate]:
    """Each future's result in turn, the future dropped (and released) as soon as it is read."""
    for i in range(len(futures)):
        fut, futures[i] = futures[i], None
        part = fut.result()
        release(fut)
        del fut
        yield part
        del part        # not held while the next one is awaited


def analyze_sharded(capture: str, shards: int, jobs: int, plugin: str | None = None,
                    workdir: str | None = None, scheduler: str | None = None,
                    keep: str | None = None, opts: TsharkOptions | None = None) -> Aggregate:
    """Split `capture` into `shards` by connection, analyze them in parallel, merge exactly.
    Shards go to a temporary folder in `workdir` (default: $TMPDIR), removed afterwards, or to
    `keep` (kept)."""
    plugin = resolve_plugin(plugin)
    try:
        tmp = keep or private.make_dir("shards", dir=workdir)
    except OSError as e:
        raise UsageError(f"--shard-dir {workdir}: {e.strerror} (give a folder p2pc can write to)") from None
    agg = None      # every shard's type: split() makes at least one
    warnings: list[str] = []
    try:
        sp = split(capture, tmp, shards)
        warnings += sp.warnings
        # Each shard merged as it arrives and then dropped: the merge holds the sums, one per
        # connection direction, and one shard's Aggregate at a time (no enumerate(): it keeps
        # its last item while the next shard is awaited).
        i = 0
        for part in run_shards(sp.paths, plugin, jobs, scheduler, opts):
            if agg is None:
                agg = type(part)()
            warnings += part.warnings
            agg.merge(rename_files(part, {f: shard_key(capture, i) for f in part.files}))
            del part
            i += 1
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    agg.files = [capture]
    agg.warnings = warnings
    return agg


def analyze_captures(captures: list[str], plugin: str | None, jobs: int, opts: TsharkOptions,
                     shards: int = 0, workdir: str | None = None, scheduler: str | None = None) -> Aggregate:
    """`p2pc analyze`'s aggregate of `captures`: the ones to split (every one with shards > 1 or
    a scheduler; with shards 0, those over AUTO_SHARD_BYTES) by analyze_sharded(), the others
    read whole in parallel (gather), all merged exactly."""
    sharded = [c for c in captures if shards > 1 or scheduler or (
        shards == 0 and os.path.isfile(c) and os.path.getsize(c) > AUTO_SHARD_BYTES)]
    whole = [c for c in captures if c not in sharded]
    agg = gather(whole, plugin, jobs, opts) if whole else None
    for c in sharded:       # split by connection, shards read in parallel, merged exactly
        part = analyze_sharded(c, shards if shards > 1 else default_shards(c, jobs), jobs, plugin,
                               workdir, scheduler, opts=opts)
        if agg is None:
            agg = part
        else:
            agg.merge(part)
    if not agg.has_p2p():
        raise NoP2PTraffic("no P2P messages found in " + ", ".join(captures) +
                           ": check the capture holds Bitcoin/FISCO/libp2p traffic (`p2pc doctor` checks the plugin)")
    agg.files = list(captures)
    return agg
