#!/usr/bin/env python3
"""Write the libFuzzer seed corpora (fuzz/corpus/<harness>/) from the committed captures.

The captures' uncompressed payloads come from `tshark -q -z p2pc,payloads` with the plugin
(build/, or --plugin); each payload (cut to --max-bytes) is then compressed with the real codec
libraries: zlib (zlib/deflate/gzip, and sync-flushed gzip/deflate streams of several
payloads), python-snappy (block and framing format), brotli (one-shot and a flushed stream),
zstandard, and liblzo2 through the analyzer's ctypes binding (lzo1x-1 and lzo1x-999).
The output is deterministic for a given set of captures and plugin.

    python3 fuzz/make_seeds.py            # what `make -C fuzz seeds` runs
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))

CAPTURES = ["bitcoin/btc-compressed.pcapng", "bitcoin/btc-small.pcapng",
            "fisco/fisco-serial-on.pcapng", "fisco/fisco-topic-on.pcapng",
            "eth2/eth2-yamux.pcapng", "libp2p-compression/comp-gzip.pcapng"]


def payloads(plugin: Path, max_bytes: int, per_capture: int) -> list[bytes]:
    from p2pc.wsenv import Wireshark
    seen: set[bytes] = set()
    out: list[bytes] = []
    with Wireshark(plugin=plugin) as ws:
        for cap in CAPTURES:
            r = ws.run("tshark", ["-n", "-q", "-z", "p2pc,payloads", "-r", str(REPO / "captures" / cap)],
                       timeout=300)
            got: list[bytes] = []
            for line in r.stdout.splitlines():
                cols = line.split("\t")
                if len(cols) != 6 or cols[0] != "P" or not cols[5]:
                    continue
                data = bytes.fromhex(cols[5])[:max_bytes]
                key = hashlib.sha1(data).digest()
                if len(data) >= 8 and key not in seen:
                    seen.add(key)
                    got.append(data)
            # a spread of sizes: sort by length, take evenly spaced ones
            got.sort(key=len)
            step = max(1, len(got) // per_capture)
            out += got[::step][:per_capture]
            print(f"make_seeds: {cap}: {len(got)} distinct payloads, {min(per_capture, len(got))} kept")
    return out


DISSECT_CAPTURES = {  # capture -> harness port selector (fuzz_dissect.c: 0 8333, 1 30300, 2 heuristics)
    "bitcoin/btc-compressed.pcapng": 0, "bitcoin/btc-small.pcapng": 0, "bitcoin/btc-zlib2015.pcapng": 0,
    "bitcoin/btc-malformed.pcapng": 0, "fisco/fisco-serial-on.pcapng": 1, "fisco/fisco-topic-on.pcapng": 1,
    "fisco/fisco-rc1.pcapng": 1, "fisco/fisco-malformed.pcapng": 1, "eth2/eth2-yamux.pcapng": 2,
    "eth2/eth2-mplex.pcapng": 2, "eth2/eth2-badcrc.pcapng": 2, "eth2/eth2-broken.pcapng": 2,
    "libp2p-compression/comp-gzip.pcapng": 2, "libp2p-compression/comp-deflate.pcapng": 2,
    "libp2p-compression/comp-cbrotli.pcapng": 2, "libp2p-compression/comp-fallback.pcapng": 2,
}


def connections(max_len: int, per_capture: int) -> list[bytes]:
    """Real TCP connections in fuzz_dissect.c's input format: [port selector] then
    [dir:1][len:2 BE][data] per segment, client first, cut at max_len bytes."""
    import subprocess
    out = []
    for cap, sel in DISSECT_CAPTURES.items():
        r = subprocess.run(["tshark", "-n", "-r", str(REPO / "captures" / cap), "-T", "fields",
                            "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.payload"],
                           capture_output=True, text=True, timeout=300)
        streams: dict[str, list[tuple[str, bytes]]] = {}
        for line in r.stdout.splitlines():
            cols = line.split("\t")
            if len(cols) < 3 or not cols[0]:
                continue
            streams.setdefault(cols[0], []).append((cols[1], bytes.fromhex(cols[2].replace(":", ""))))
        kept = 0
        for pkts in streams.values():
            client = pkts[0][0]
            seed = bytearray([sel])
            for port, data in pkts:
                data = data[:16000]
                if not data:
                    continue
                if len(seed) + 3 + len(data) > max_len:
                    break
                seed += bytes([0 if port == client else 1]) + len(data).to_bytes(2, "big") + data
            if len(seed) > 1:
                out.append(bytes(seed))
                kept += 1
            if kept >= per_capture:
                break
        print(f"make_seeds: {cap}: {kept} connections")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin", type=Path, default=REPO / "build/plugins/4.0/epan/p2pc.so")
    ap.add_argument("--out", type=Path, default=REPO / "fuzz/corpus")
    ap.add_argument("--max-bytes", type=int, default=8192)
    ap.add_argument("--per-capture", type=int, default=6)
    args = ap.parse_args()

    import brotli
    import snappy
    import zstandard
    from p2pc.whatif import _lzo

    texts = payloads(args.plugin, args.max_bytes, args.per_capture)
    lzo = _lzo()
    seeds: dict[str, list[bytes]] = {k: [] for k in (
        "lzo1x", "zlib", "deflate", "gzip", "snappy", "snappy_framed", "brotli", "zstd",
        "gzip_stream", "deflate_stream", "brotli_stream")}

    def deflate(data: bytes, wbits: int) -> bytes:
        c = zlib.compressobj(6, zlib.DEFLATED, wbits)
        return c.compress(data) + c.flush()

    for t in texts:
        seeds["lzo1x"] += [lzo["lzo1x-1"][0](t), lzo["lzo1x-999"][0](t)]
        seeds["zlib"].append(zlib.compress(t))
        seeds["deflate"].append(deflate(t, -15))
        seeds["gzip"].append(deflate(t, 31))
        seeds["snappy"].append(snappy.compress(t))
        seeds["snappy_framed"].append(snappy.StreamCompressor().add_chunk(t))
        seeds["brotli"].append(brotli.compress(t))
        seeds["zstd"].append(zstandard.ZstdCompressor().compress(t))
    # Streams: several messages, each sync-flushed, as the libp2p compression transport sends.
    for i in range(0, len(texts), 3):
        group = texts[i:i + 3]
        for name, wbits in (("gzip_stream", 31), ("deflate_stream", -15)):
            c = zlib.compressobj(6, zlib.DEFLATED, wbits)
            seeds[name].append(b"".join(c.compress(t) + c.flush(zlib.Z_SYNC_FLUSH) for t in group))
        b = brotli.Compressor()
        seeds["brotli_stream"].append(b"".join(b.process(t) + b.flush() for t in group))
    seeds["dissect_tcp"] = connections(65536, 2)
    for name, items in seeds.items():
        d = args.out / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        for data in items:
            (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
        print(f"make_seeds: {d.relative_to(REPO)}: {len(items)} seeds, {sum(map(len, items))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
