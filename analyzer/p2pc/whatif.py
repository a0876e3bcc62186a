"""What compression would save on traffic as captured, by the three strategies the ResNetLab
study compared on IPFS Bitswap (shared/seeds/004, "Honey, I shrunk our libp2p streams"):

- **message**: each message's uncompressed payload (`-z p2pc,payloads`) compressed on its own;
- **stream**: each connection direction's payloads compressed as one stream, in order, flushed
  after each message, as the libp2p compression transport flushes after each write
  (docs/libp2p-compression.md).  A message stands for one write; the bytes between messages
  (muxer headers, negotiations) are left as they are;
- **block**: only the messages that carry blocks (model.BLOCKS) compressed, each on its own.

Each strategy and codec gives, per connection direction and message type, the bytes the
messages would have been (raw) and become (compressed); analyze's savings model
(model.direction_savings: each direction's MSS, segment overhead and ACKs, from the same
capture) adds the header and ACK bytes the fewer segments save.  CPU time (process time) to
compress and to decompress is kept per message type.  `thresholds` sweep a compress-above-N
rule over the per-message strategies (FISCO compresses payloads over 1024 bytes).

Codecs come from their own libraries: zlib (Python's: zlib-1 and zlib-6 as BUIP017 sends them,
gzip as /compression/gzip at Go's default level 6, deflate as rust-libp2p's /deflate/1.0.0:
raw, level 1), liblzo2 (the C library, through ctypes: raw lzo1x_1/lzo1x_999 output, as BUIP017
sends it), and from PyPI python-snappy or cramjam (Snappy), zstandard and brotli (quality 2 as
the study measured, 9 as /compression/cbrotli sends).  A codec whose library is missing is
reported as such; LZO1X and Snappy have no stream form here (Snappy's framing keeps no state
across frames), so they take part in the per-message strategies only.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Optional

from .errors import NoP2PTraffic
from .idontwant import COLUMNS as IDONTWANT_COLUMNS, IDontWantWhatIf
from .model import (BATCHABLE, BIP_ACK_BYTES, PROTOCOL_HEADER, SIZE_RANGES, LinkParams, Sums,
                    direction_savings, is_block, pct, size_range, size_range_label)
from .progress import CaptureProgress
from .records import Payload, TcpDirection, open_wireshark, read_records, start_capture
from .report import SCHEMA
from .tsharkopts import TsharkOptions

STRATEGIES = ("message", "stream", "block")
CODEC_NAMES = ("zlib-1", "zlib-6", "gzip", "deflate", "lzo1x-1", "lzo1x-999", "snappy", "zstd",
               "brotli-2", "brotli-9")
# The compress-above-N rules swept when none are given: every message, then FISCO's 1024 and
# sizes around it.
DEFAULT_THRESHOLDS = (0, 128, 512, 1024, 4096, 16384)
# What installs each codec's library (liblzo2 is a C library, read through ctypes).
CODEC_FIX = {"lzo1x-1": "sudo apt-get install liblzo2-2", "lzo1x-999": "sudo apt-get install liblzo2-2",
             "snappy": "pip install python-snappy", "zstd": "pip install zstandard",
             "brotli-2": "pip install brotli", "brotli-9": "pip install brotli"}

Writer = Callable[[bytes], bytes]


@dataclass(frozen=True)
class Codec:
    compress: Callable[[bytes], bytes]              # one message on its own
    decompress: Callable[[bytes, int], bytes]       # (compressed, raw length) -> raw
    stream: Optional[Callable[[], Writer]] = None   # a new stream: write(data) -> its bytes, flushed
    unstream: Optional[Callable[[], Writer]] = None  # its reader: flushed bytes -> data


def _zlib(level: int, wbits: int) -> Codec:
    """zlib's deflate in the container wbits names (15 zlib, 31 gzip, -15 raw); the stream is
    sync-flushed (Z_SYNC_FLUSH) after each write."""
    def compress(data: bytes) -> bytes:
        c = zlib.compressobj(level, zlib.DEFLATED, wbits)
        return c.compress(data) + c.flush()

    def stream() -> Writer:
        c = zlib.compressobj(level, zlib.DEFLATED, wbits)
        return lambda data: c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
    return Codec(compress, lambda c, n: zlib.decompress(c, wbits), stream,
                 lambda: zlib.decompressobj(wbits).decompress)


def _lzo() -> dict[str, Codec]:
    name = ctypes.util.find_library("lzo2") or "liblzo2.so.2"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return {}
    mem1 = 16384 * ctypes.sizeof(ctypes.c_void_p)
    mem999 = 14 * 16384 * ctypes.sizeof(ctypes.c_short)

    def comp(fn, mem):
        def c(data: bytes) -> bytes:
            out = ctypes.create_string_buffer(len(data) + len(data) // 16 + 67)
            n = ctypes.c_ulong(0)
            wrk = ctypes.create_string_buffer(mem)
            if fn(data, ctypes.c_ulong(len(data)), out, ctypes.byref(n), wrk) != 0:
                raise RuntimeError("lzo compression failed")
            return out.raw[:n.value]
        return c

    def dec(data: bytes, size: int) -> bytes:
        out = ctypes.create_string_buffer(max(size, 1))
        n = ctypes.c_ulong(size)
        if lib.lzo1x_decompress_safe(data, ctypes.c_ulong(len(data)), out, ctypes.byref(n), None) != 0:
            raise RuntimeError("lzo decompression failed")
        return out.raw[:n.value]
    return {"lzo1x-1": Codec(comp(lib.lzo1x_1_compress, mem1), dec),
            "lzo1x-999": Codec(comp(lib.lzo1x_999_compress, mem999), dec)}


def _brotli(brotli, quality: int) -> Codec:
    def stream() -> Writer:
        c = brotli.Compressor(quality=quality)
        return lambda data: c.process(data) + c.flush()
    def unstream() -> Writer:
        d = brotli.Decompressor()

        def read(data: bytes) -> bytes:
            # brotli 1.2 hands out a flushed chunk's output in pieces: the rest comes with
            # empty input, until there is none.
            out = [d.process(data)]
            while out[-1]:
                out.append(d.process(b""))
            return b"".join(out)
        return read
    return Codec(lambda d: brotli.compress(d, quality=quality), lambda c, n: brotli.decompress(c),
                 stream, unstream)


def codecs() -> tuple[dict[str, Codec], list[str]]:
    """Available codecs by name (in CODEC_NAMES order), and the names of those whose library is
    missing."""
    have: dict[str, Codec] = {"zlib-1": _zlib(1, 15), "zlib-6": _zlib(6, 15), "gzip": _zlib(6, 31),
                              "deflate": _zlib(1, -15)}
    have.update(_lzo())
    try:
        import snappy  # python-snappy
        have["snappy"] = Codec(snappy.compress, lambda c, n: snappy.decompress(c))
    except ImportError:
        try:
            import cramjam
            have["snappy"] = Codec(lambda d: bytes(cramjam.snappy.compress_raw(d)),
                                   lambda c, n: bytes(cramjam.snappy.decompress_raw(c)))
        except ImportError:
            pass
    try:
        import zstandard
        # A ZstdCompressor (ZstdDecompressor) is one zstd context, which carries one operation
        # at a time (python-zstandard's docs; the zstd manual): the one-shot messages take
        # turns on one, and each stream, which lives as long as its direction, has its own.
        # Streams sharing one interleaved their windows and were reset by every one-shot
        # message, so their figures depended on --strategy.
        zc, zd = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()

        def zstd_stream() -> Writer:
            c = zstandard.ZstdCompressor(level=3).compressobj()
            return lambda data: c.compress(data) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        have["zstd"] = Codec(zc.compress, lambda c, n: zd.decompress(c, max_output_size=n), zstd_stream,
                             lambda: zstandard.ZstdDecompressor().decompressobj().decompress)
    except ImportError:
        pass
    try:
        import brotli
        have["brotli-2"], have["brotli-9"] = _brotli(brotli, 2), _brotli(brotli, 9)
    except ImportError:
        pass
    return {n: have[n] for n in CODEC_NAMES if n in have}, [n for n in CODEC_NAMES if n not in have]


def _timed(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return out, time.process_time() - t0


class WhatIf:
    """Sums of every strategy and codec, fed one payload at a time (add) with the TCP counts of
    its capture (add_tcp); sections() and series() report them."""

    def __init__(self, strategies=STRATEGIES, only: list[str] | None = None,
                 thresholds=DEFAULT_THRESHOLDS):
        self.codecs, self.missing = codecs()
        if only:
            self.codecs = {k: v for k, v in self.codecs.items() if k in only}
        self.strategies = [s for s in STRATEGIES if s in strategies]
        self.thresholds = sorted(set(thresholds))
        # (strategy, codec, threshold or None, direction, proto, msg_type) -> Sums (payload:
        # the compressed bytes); direction = (file, stream, src, srcport)
        self.sums: dict = defaultdict(Sums)
        # (strategy, codec, proto, msg_type) -> [compress s, decompress s] of CPU time
        self.times: dict = defaultdict(lambda: [0.0, 0.0])
        # message strategy by size range: (proto, msg_type, range) -> codec -> [messages, raw, comp]
        self.ranges: dict = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
        # batching of small messages: (proto, msg_type) -> [messages, raw]
        self.small: dict = defaultdict(lambda: [0, 0])
        # direction -> codec -> (writer, reader) of its stream
        self.streams: dict = {}
        self.tcp: dict = {}

    def add_tcp(self, file: str, t: TcpDirection) -> None:
        self.tcp[(file, *t.key)] = t

    def _count(self, strategy: str, codec: str, d: tuple, p: Payload, comp: int, ct: float, dt: float) -> None:
        raw = len(p.raw)
        for n in [None] + [n for n in self.thresholds if raw > n and strategy != "stream"]:
            s = self.sums[(strategy, codec, n, d, p.proto, p.msg_type)]
            s.messages += 1
            s.raw += raw
            s.payload += comp
        tm = self.times[(strategy, codec, p.proto, p.msg_type)]
        tm[0] += ct
        tm[1] += dt

    def add(self, file: str, p: Payload) -> None:
        d = (file, *p.key)
        raw = p.raw
        oneshot = [s for s in ("message", "block") if s in self.strategies
                   and (s == "message" or is_block(p.proto, p.msg_type))]
        for name, codec in self.codecs.items():
            if oneshot:
                c, ct = _timed(codec.compress, raw)
                out, dt = _timed(codec.decompress, c, len(raw))
                if out != raw:
                    raise RuntimeError(f"{name} did not round-trip a {p.msg_type} payload")
                for s in oneshot:
                    self._count(s, name, d, p, len(c), ct, dt)
                if "message" in oneshot:
                    r = self.ranges[(p.proto, p.msg_type, size_range(len(raw)))][name]
                    r[0] += 1
                    r[1] += len(raw)
                    r[2] += len(c)
            if "stream" in self.strategies and codec.stream:
                per = self.streams.setdefault(d, {})
                if name not in per:
                    per[name] = (codec.stream(), codec.unstream())
                write, read = per[name]
                c, ct = _timed(write, raw)
                out, dt = _timed(read, c)
                if out != raw:
                    raise RuntimeError(f"{name} stream did not round-trip a {p.msg_type} payload")
                self._count("stream", name, d, p, len(c), ct, dt)
        if len(raw) < 500:
            sm = self.small[(p.proto, p.msg_type)]
            sm[0] += 1
            sm[1] += len(raw)

    # ---- the report ----
    def _rows(self, key, threshold=None) -> dict:
        """Per key(strategy, codec, proto, msg_type): the Sums and the model's header and ACK
        bytes saved, summed over directions (the model is applied per direction, as analyze
        does)."""
        out: dict = {}
        for (strategy, codec, n, d, proto, mtype), s in self.sums.items():
            if n != threshold:
                continue
            t = self.tcp.get(d)
            rev = self.tcp.get((d[0], *t.reverse_key)) if t else None
            _, hdr, ack = direction_savings(s, LinkParams.from_tcp(t, rev))
            acc = out.setdefault(key(strategy, codec, proto, mtype), [Sums(), 0.0, 0.0, 0.0, 0.0])
            acc[0].merge(s)
            acc[1] += hdr
            acc[2] += ack
        if threshold is None:
            for (strategy, codec, proto, mtype), (ct, dt) in self.times.items():
                acc = out[key(strategy, codec, proto, mtype)]
                acc[3] += ct
                acc[4] += dt
        return out

    def _order(self, k: tuple) -> tuple:
        codecs = list(self.codecs)
        return (self.strategies.index(k[0]), codecs.index(k[1]), *k[2:])

    @staticmethod
    def _row(s: Sums, hdr: float, ack: float) -> dict:
        saved = s.raw - s.payload
        return {"messages": s.messages, "raw_bytes": s.raw, "sent_bytes": s.payload,
                "payload_saved": saved, "header_saved": round(hdr), "ack_saved": round(ack),
                "total_saved": round(saved + hdr + ack), "payload_saved_pct": pct(saved, s.raw)}

    def strategy_rows(self, by_type: bool) -> list[dict]:
        """Per strategy and codec (and message type): bytes saved and CPU ms per MB."""
        got = self._rows(lambda st, c, p, m: (st, c, p, m) if by_type else (st, c))
        rows = []
        for k in sorted(got, key=self._order):
            s, hdr, ack, ct, dt = got[k]
            mb = s.raw / 1e6
            row = {"strategy": k[0], "codec": k[1]}
            if by_type:
                row.update(proto=k[2], msg_type=k[3])
            row.update(self._row(s, hdr, ack))
            row.update(compress_ms_per_mb=round(1000 * ct / mb, 3) if mb else 0.0,
                       decompress_ms_per_mb=round(1000 * dt / mb, 3) if mb else 0.0)
            rows.append(row)
        return rows

    def threshold_rows(self) -> list[dict]:
        rows = []
        for n in self.thresholds:
            got = self._rows(lambda st, c, p, m: (st, c), threshold=n)
            for strategy in self.strategies:
                if strategy == "stream":
                    continue
                for codec in self.codecs:
                    s, hdr, ack, _, _ = got.get((strategy, codec), [Sums(), 0.0, 0.0, 0.0, 0.0])
                    rows.append({"strategy": strategy, "codec": codec, "threshold": n,
                                 **self._row(s, hdr, ack)})
        return rows

    def size_rows(self) -> list[dict]:
        names = list(self.codecs)
        rows = []
        for (proto, mtype, idx), per in sorted(self.ranges.items()):
            any_codec = next(iter(per.values()))
            row = {"proto": proto, "msg_type": mtype, "range": size_range_label(*SIZE_RANGES[idx]),
                   "messages": any_codec[0], "avg_raw": round(any_codec[1] / any_codec[0])}
            for n in names:
                if n in per:
                    row[f"{n} %"] = pct(per[n][1] - per[n][2], per[n][1])
            rows.append(row)
        return rows

    def batching_rows(self) -> list[dict]:
        rows = []
        for (proto, mtype), (n, raw) in sorted(self.small.items()):
            if n < 2 or mtype not in BATCHABLE.get(proto, ()):
                continue
            rows.append({"proto": proto, "msg_type": mtype, "small_messages": n, "raw_bytes": raw,
                         "header_saved": (n - 1) * PROTOCOL_HEADER.get(proto, 0),
                         "ack_saved_bip": (n - 1) * BIP_ACK_BYTES,
                         "note": "if all were merged into one batch"})
        return rows

    def codec_series(self) -> list[dict]:
        """The message strategy per codec, per size range and over all messages: bytes in and
        out and the ratio (raw/compressed), for the what-if figures."""
        sums: dict = defaultdict(lambda: [0, 0, 0])
        for (_, _, idx), per in self.ranges.items():
            for codec, v in per.items():
                for key in ((codec, idx), (codec, None)):
                    acc = sums[key]
                    for i in range(3):
                        acc[i] += v[i]
        order = {name: i for i, name in enumerate(self.codecs)}
        out = []
        for (codec, idx), (m, raw, comp) in sorted(
                sums.items(), key=lambda kv: (order[kv[0][0]], -1 if kv[0][1] is None else kv[0][1])):
            out.append({"codec": codec, "range": "all" if idx is None else size_range_label(*SIZE_RANGES[idx]),
                        "messages": m, "raw_bytes": raw, "compressed_bytes": comp,
                        "ratio": round(raw / comp, 4) if comp else 0.0})
        return out


MEASURES = ["messages", "raw_bytes", "sent_bytes", "payload_saved", "header_saved", "ack_saved",
            "total_saved", "payload_saved_pct"]
TIMES = ["compress_ms_per_mb", "decompress_ms_per_mb"]


def report(w: WhatIf, files: list[str], warnings: list[str]) -> dict:
    """The whatif report: the strategies side by side (the main table), per message type, the
    threshold sweep, the message strategy by size range, and batching the small messages."""
    main = w.strategy_rows(by_type=False)
    thresholds = w.threshold_rows()
    return {
        "schema": SCHEMA, "command": "whatif", "title": "p2pc: what compression would save, by strategy",
        "files": files, "model": "capture", "warnings": warnings,
        "strategies": w.strategies, "thresholds": w.thresholds,
        "columns": ["strategy", "codec"] + MEASURES + TIMES, "rows": main,
        "sections": [
            {"name": "by_type", "title": "Each strategy and codec per message type",
             "columns": ["strategy", "codec", "proto", "msg_type"] + MEASURES + TIMES,
             "rows": w.strategy_rows(by_type=True)},
            {"name": "thresholds", "title": "Compress only payloads over N bytes (message and block strategies)",
             "columns": ["strategy", "codec", "threshold"] + MEASURES, "rows": thresholds},
            {"name": "whatif", "title": "Message strategy: compression % by message type and size range",
             "columns": ["proto", "msg_type", "range", "messages", "avg_raw"] + [f"{n} %" for n in w.codecs],
             "rows": w.size_rows()},
            {"name": "batching", "title": "Batching the small (< 500 B) messages",
             "columns": ["proto", "msg_type", "small_messages", "raw_bytes", "header_saved", "ack_saved_bip", "note"],
             "rows": w.batching_rows()},
        ],
        "series": {"strategies": main, "thresholds": thresholds, "codecs": w.codec_series()},
    }


def run(captures: list[str], plugin: str | None, opts: TsharkOptions, strategies, only: list[str] | None,
        thresholds, idontwant_thresholds, recompress_all: bool) -> tuple[dict, bool]:
    """`p2pc whatif`: every capture's uncompressed payloads (with recompress_all, the
    decompressed payloads of compressed messages too) through each strategy and codec, its
    gossip through IDONTWANT; the report, and whether a capture was cut short."""
    ws = open_wireshark(plugin)
    w = WhatIf(strategies, only, thresholds)
    iw = IDontWantWhatIf(idontwant_thresholds)
    n = 0
    cut = []

    def payload(cap: str, p) -> None:
        nonlocal n
        if recompress_all or p.codec == "none":
            w.add(cap, p)
            n += 1
    try:
        with CaptureProgress(captures, "recompressing") as bar:
            for cap in captures:
                iw.next_capture()
                proc = start_capture(ws, cap, ["-z", opts.tap("payloads")], opts)
                res = read_records(proc, cap, lambda m: None, lambda t, c=cap: w.add_tcp(c, t),
                                   on_payload=lambda p, c=cap: payload(c, p), on_gossip=iw.add)
                if res.truncated:
                    cut.append(res.warning)
                bar.done(cap)
    finally:
        ws.cleanup()
    if not n and not iw.firsts:
        for warning in cut:         # no report follows to carry them
            print(f"p2pc: warning: {warning}", file=sys.stderr)
        raise NoP2PTraffic("no uncompressed P2P payloads nor gossip messages found (use --all to "
                           "recompress already-compressed traffic's decompressed payloads)")
    missing = [f"codec not available: {m} ({CODEC_FIX[m]})" for m in w.missing if not only or m in only]
    out = report(w, list(captures), cut + missing + iw.warnings())
    if iw.firsts:
        out["sections"].append({"name": "idontwant", "title": "IDONTWANT on first receipt of messages of N bytes "
                                "or more (an upper bound: each duplicate stopped)", "columns": IDONTWANT_COLUMNS,
                                "rows": iw.rows()})
    return out, bool(cut)
