"""What each codec would save on traffic as captured: recompress every message's uncompressed
payload (from the plugin's `-z p2pc,payloads`) with zlib-1, zlib-6, LZO1X-1, LZO1X-999,
Snappy, zstd and brotli, timing compression and decompression, per message type and size range.

Codecs come from their own libraries: zlib (Python's), liblzo2 (the C library, through ctypes:
raw lzo1x_1/lzo1x_999 output, as BUIP017 sends it), and from PyPI python-snappy or cramjam
(Snappy), zstandard and brotli.  A codec whose library is missing is reported as such.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import time
import zlib
from collections import defaultdict
from typing import Callable

from .model import SIZE_RANGES, size_range, size_range_label, pct

Codec = tuple[Callable[[bytes], bytes], Callable[[bytes, int], bytes]]


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
    return {"lzo1x-1": (comp(lib.lzo1x_1_compress, mem1), dec),
            "lzo1x-999": (comp(lib.lzo1x_999_compress, mem999), dec)}


def codecs() -> tuple[dict[str, Codec], list[str]]:
    """Available codecs by name, and the names of those whose library is missing."""
    have: dict[str, Codec] = {
        "zlib-1": (lambda d: zlib.compress(d, 1), lambda c, n: zlib.decompress(c)),
        "zlib-6": (lambda d: zlib.compress(d, 6), lambda c, n: zlib.decompress(c)),
    }
    missing = []
    lzo = _lzo()
    have.update(lzo)
    if not lzo:
        missing += ["lzo1x-1", "lzo1x-999"]
    try:
        import snappy  # python-snappy
        have["snappy"] = (snappy.compress, lambda c, n: snappy.decompress(c))
    except ImportError:
        try:
            import cramjam
            have["snappy"] = (lambda d: bytes(cramjam.snappy.compress_raw(d)),
                              lambda c, n: bytes(cramjam.snappy.decompress_raw(c)))
        except ImportError:
            missing.append("snappy")
    try:
        import zstandard
        zc, zd = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        have["zstd"] = (zc.compress, lambda c, n: zd.decompress(c, max_output_size=n))
    except ImportError:
        missing.append("zstd")
    try:
        import brotli
        have["brotli"] = (lambda d: brotli.compress(d, quality=5), lambda c, n: brotli.decompress(c))
    except ImportError:
        missing.append("brotli")
    return have, missing


class WhatIf:
    def __init__(self, only: list[str] | None = None):
        self.codecs, self.missing = codecs()
        if only:
            self.codecs = {k: v for k, v in self.codecs.items() if k in only}
        # (proto, msg_type, range) -> codec -> [messages, raw, compressed, ctime, dtime]
        self.sums: dict = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0.0, 0.0]))
        # batching of small messages: (proto, msg_type) -> [messages, raw]
        self.small: dict = defaultdict(lambda: [0, 0])

    def add(self, proto: str, msg_type: str, raw: bytes) -> None:
        key = (proto, msg_type, size_range(len(raw)))
        for name, (comp, dec) in self.codecs.items():
            t0 = time.perf_counter()
            c = comp(raw)
            t1 = time.perf_counter()
            out = dec(c, len(raw))
            t2 = time.perf_counter()
            if out != raw:
                raise RuntimeError(f"{name} did not round-trip a {msg_type} payload")
            s = self.sums[key][name]
            s[0] += 1
            s[1] += len(raw)
            s[2] += len(c)
            s[3] += t1 - t0
            s[4] += t2 - t1
        if len(raw) < 500:
            sm = self.small[(proto, msg_type)]
            sm[0] += 1
            sm[1] += len(raw)

    def sections(self, header_bytes: dict, ack_bytes: int, batchable: dict) -> list[dict]:
        names = list(self.codecs)
        rows = []
        for (proto, mtype, idx), per in sorted(self.sums.items()):
            lo, hi = SIZE_RANGES[idx]
            any_codec = next(iter(per.values()))
            row = {"proto": proto, "msg_type": mtype, "range": size_range_label(lo, hi),
                   "messages": any_codec[0], "avg_raw": round(any_codec[1] / any_codec[0])}
            for n in names:
                m, raw, comp, _, _ = per[n]
                row[f"{n} %"] = pct(raw - comp, raw)
            rows.append(row)
        timing = []
        for (proto, mtype, idx), per in sorted(self.sums.items()):
            lo, hi = SIZE_RANGES[idx]
            row = {"proto": proto, "msg_type": mtype, "range": size_range_label(lo, hi)}
            for n in names:
                m, _, _, ct, dt = per[n]
                row[f"{n} c ms"] = round(1000 * ct / m, 3)
                row[f"{n} d ms"] = round(1000 * dt / m, 3)
            timing.append(row)
        batching = []
        for (proto, mtype), (n, raw) in sorted(self.small.items()):
            hdr = header_bytes.get(proto, 0)
            if n < 2 or mtype not in batchable.get(proto, ()):
                continue
            batching.append({"proto": proto, "msg_type": mtype, "small_messages": n, "raw_bytes": raw,
                             "header_saved": (n - 1) * hdr, "ack_saved_bip": (n - 1) * ack_bytes,
                             "note": "if all were merged into one batch"})
        return [
            {"name": "whatif", "title": "Compression % by message type and size range",
             "columns": ["proto", "msg_type", "range", "messages", "avg_raw"] + [f"{n} %" for n in names],
             "rows": rows},
            {"name": "timing", "title": "Time per message (ms): compress (c) and decompress (d)",
             "columns": ["proto", "msg_type", "range"] + [f"{n} {k} ms" for n in names for k in ("c", "d")],
             "rows": timing},
            {"name": "batching", "title": "Batching the small (< 500 B) messages",
             "columns": ["proto", "msg_type", "small_messages", "raw_bytes", "header_saved", "ack_saved_bip", "note"],
             "rows": batching},
        ]
