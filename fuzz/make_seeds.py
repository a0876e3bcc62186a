#!/usr/bin/env python3
"""Write the libFuzzer seed corpora (fuzz/corpus/<harness>/) from the committed captures.

The captures' uncompressed payloads come from `tshark -q -z p2pc,payloads` with the plugin
(build/, or --plugin); each payload (cut to --max-bytes) is then compressed with the real codec
libraries: zlib (zlib/deflate/gzip, and sync-flushed gzip/deflate streams of several
payloads), python-snappy (block and framing format), brotli (one-shot and a flushed stream),
zstandard, and liblzo2 through the analyzer's ctypes binding (lzo1x-1 and lzo1x-999).
The dissect_* corpora are the captures' real TCP connections in fuzz_dissect.c's input
format, cut after the multistream-select negotiation each harness's preamble replaces (yamux
streams demultiplexed for the eth2 req/resp and gossipsub harnesses), at most 16 KiB each.
dissect_quic's are the STREAM frames of the libp2p QUIC captures, go-libp2p's and rust-libp2p's
(decrypted with their key logs by
Wireshark's own QUIC: no plugin), each `[stream id][offset]` and its data.
dissect_signed_key's are the libp2p extensions' SignedKeys of the certificates in the libp2p TLS
captures (TLS 1.3: decrypted with the plugin) and in tests/data/repro/tls-signedkey-neg34.pcap.gz;
keylog_noise's are writes of the committed Noise key logs in fuzz_keylog.c's input format.
The output is deterministic for a given set of captures and plugin.

    python3 fuzz/make_seeds.py                  # what `make -C fuzz seeds` runs
    python3 fuzz/make_seeds.py --dissect-only   # just the dissect_* corpora (no plugin needed)
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
                if len(cols) != 11 or cols[0] != "P" or not cols[10]:
                    continue
                data = bytes.fromhex(cols[10])[:max_bytes]
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
SEED_LEN = 16384        # a seed's bytes at most: short inputs run fast (-max_len is 65536)
MAX_SEGMENT = 16000     # fuzz_dissect.c's MAX_SEGMENT: longer records are cut there

Conn = list[tuple[int, bytes]]     # a TCP connection's segments: (0 client->server / 1 back, payload)


def tcp_connections(cap: str) -> list[Conn]:
    """The capture's TCP connections, segments in capture order (retransmissions included),
    direction 0 from the side that sent the first payload."""
    import subprocess
    r = subprocess.run(["tshark", "-n", "-r", str(REPO / "captures" / cap), "-T", "fields",
                        "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.payload"],
                       capture_output=True, text=True, timeout=300)   # a truncated capture exits 2
    streams: dict[str, list[tuple[str, bytes]]] = {}
    for line in r.stdout.splitlines():
        cols = line.split("\t")
        if len(cols) < 3 or not cols[0] or not cols[2]:
            continue
        streams.setdefault(cols[0], []).append((cols[1], bytes.fromhex(cols[2].replace(":", ""))))
    return [[(0 if port == pkts[0][0] else 1, data) for port, data in pkts] for pkts in streams.values()]


def records(conn: Conn, head: bytes = b"", max_len: int = SEED_LEN, lost: frozenset[int] = frozenset()) -> bytes:
    """fuzz_dissect.c's input: head (the choice byte, if any), then [dir:1][len:2 BE][data]
    per segment, as many whole segments as fit in max_len; the segments numbered in `lost` are
    marked lost (flag 0x80: missing from the capture)."""
    seed = bytearray(head)
    for n, (d, data) in enumerate(conn):
        for i in range(0, len(data), MAX_SEGMENT):
            piece = data[i:i + MAX_SEGMENT]
            if len(seed) + 3 + len(piece) > max_len:
                return bytes(seed)
            seed += bytes([d | (0x80 if n in lost else 0)]) + len(piece).to_bytes(2, "big") + piece
    return bytes(seed)


# A frame's length at data[off:] (0: incomplete), for cutting windows on frame boundaries.
def yamux_frame(data: bytes, off: int) -> int:       # 12-byte header; Data (type 0) carries length bytes
    if off + 12 > len(data):
        return 0
    return 12 + (int.from_bytes(data[off + 8:off + 12], "big") if data[off + 1] == 0 else 0)


def noise_frame(data: bytes, off: int) -> int:       # u16 big-endian length
    return 2 + int.from_bytes(data[off:off + 2], "big") if off + 2 <= len(data) else 0


def bitcoin_frame(data: bytes, off: int) -> int:     # 24-byte header, payload length u32 LE at 16
    return 24 + int.from_bytes(data[off + 16:off + 20], "little") if off + 24 <= len(data) else 0


def fisco_frame(data: bytes, off: int) -> int:       # Length u32 BE covers the header
    return int.from_bytes(data[off:off + 4], "big") if off + 4 <= len(data) else 0


def windows(conn: Conn, frame_len, count: int) -> list[Conn]:
    """`count` cuts of the connection from evenly spaced points on, each direction starting on
    one of its frame boundaries (frame_len gives a frame's length; the walk stops where it
    returns 0 or a frame claims more than the direction holds)."""
    import bisect
    bounds = {}
    for d in (0, 1):
        data = b"".join(x for dd, x in conn if dd == d)
        b, off = [], 0
        while off < len(data):
            b.append(off)
            n = frame_len(data, off)
            if n <= 0:
                break
            off += n
        bounds[d] = b
    starts, seen = [], {0: 0, 1: 0}
    for d, x in conn:
        starts.append(seen[d])
        seen[d] += len(x)
    out = []
    for w in range(1, count + 1):
        k = len(conn) * w // (count + 1)
        first = {}
        for d in (0, 1):
            later = [starts[i] for i in range(k, len(conn)) if conn[i][0] == d]
            j = bisect.bisect_left(bounds[d], later[0]) if later else len(bounds[d])
            first[d] = bounds[d][j] if j < len(bounds[d]) else None
        cut = [(d, x[max(0, first[d] - starts[i]):]) for i, (d, x) in enumerate(conn[k:], k)
               if first[d] is not None and starts[i] + len(x) > first[d]]
        if cut:
            out.append(cut)
    return out


def ms_line(text: str) -> bytes:
    """A multistream-select message as fuzz_dissect.c's preamble writes it: uvarint(len) text \\n
    (every protocol ID here is under 127 bytes: a one-byte length)."""
    body = text.encode() + b"\n"
    assert len(body) < 0x80
    return bytes([len(body)]) + body


def cut_after(conn: Conn, marks: dict[int, bytes]) -> Conn | None:
    """The connection from just after marks[d]'s first occurrence in direction d's bytes (a
    direction without a mark is kept whole); None when a mark is missing."""
    start = {}
    for d, mark in marks.items():
        at = b"".join(data for dd, data in conn if dd == d).find(mark)
        if at < 0:
            return None
        start[d] = at + len(mark)
    out, seen = [], {0: 0, 1: 0}
    for d, data in conn:
        skip = start.get(d, 0) - seen[d]
        seen[d] += len(data)
        if skip < len(data):
            out.append((d, data[max(skip, 0):]))
    return out


def target_protocols(name: str) -> list[str]:
    """The protocol IDs of a harness in fuzz_dissect.c's `targets` table, in its order (input
    byte 0 picks one by index when there are several)."""
    import re
    src = (REPO / "fuzz" / "fuzz_dissect.c").read_text()
    row = re.search(r'\{ "%s", \{[^}]*\}, \w+, \{(.*?)\}[^{}]*\},' % name, src, re.S)
    assert row, name
    return re.findall(r'"([^"]+)"', row.group(1))


def yamux_streams(conn: Conn) -> list[Conn]:
    """The data of each yamux stream in a connection cut after "/yamux/1.0.0", as connections
    of their own (direction 0 from the side that opened the stream, SYN), frames in the order
    the capture completed them.  hashicorp/yamux spec.md: a 12-byte header version, type,
    flags, stream id, length (big-endian), then length bytes for Data (type 0) frames."""
    import bisect
    import struct
    frames = []     # (record index that completed it, direction, stream id, flags, data)
    for d in (0, 1):
        idx = [i for i, (dd, _) in enumerate(conn) if dd == d]
        ends, total = [], 0
        for i in idx:
            total += len(conn[i][1])
            ends.append(total)
        data = b"".join(conn[i][1] for i in idx)
        off = 0
        while off + 12 <= len(data):
            _ver, typ, flags, sid, length = struct.unpack_from(">BBHII", data, off)
            end = off + 12 + (length if typ == 0 else 0)
            if end > len(data):
                break
            frames.append((idx[bisect.bisect_left(ends, end)], d, sid, flags, data[off + 12:end] if typ == 0 else b""))
            off = end
    frames.sort(key=lambda f: f[0])
    opener: dict[int, int] = {}
    streams: dict[int, Conn] = {}
    for _, d, sid, flags, payload in frames:
        if flags & 1:
            opener.setdefault(sid, d)
        if payload and sid in opener:
            streams.setdefault(sid, []).append((0 if d == opener[sid] else 1, payload))
    return list(streams.values())


def agreed(conn: Conn, protocols: list[str]) -> int:
    """The index of the first of `protocols` both directions sent (proposed and echoed), or -1."""
    sent = [b"".join(data for d, data in conn if d == side) for side in (0, 1)]
    for i, p in enumerate(protocols):
        if all(ms_line(p) in s for s in sent):
            return i
    return -1


LIBP2P_CAPTURES = ["eth2/eth2-yamux.pcapng", "eth2/eth2-mplex.pcapng", "eth2/eth2-noise.pcapng",
                   "eth2/eth2-badcrc.pcapng", "eth2/eth2-broken.pcapng", "eth2/eth2-truncated.pcapng",
                   "libp2p-compression/comp-gzip.pcapng", "libp2p-compression/comp-gzip-corrupt.pcapng",
                   "libp2p-compression/comp-gzip-gap.pcapng", "libp2p-compression/comp-deflate.pcapng",
                   "libp2p-compression/comp-cbrotli.pcapng", "libp2p-compression/comp-fallback.pcapng",
                   "libp2p-compression/comp-none.pcapng"]


# dissect_noise_keyed's connection: fuzz_dissect.c sets its keys (eth2-noise-yamux.keys).  Its
# seeds are as long as the harness's -max_len, so that they reach the bulk transfer, where a
# lost segment cuts a Noise message in the middle.
KEYED_NOISE = "eth2/eth2-noise-yamux.pcapng"
# dissect_plaintext's connections (the /plaintext/2.0.0 Exchange of go, js, py and rust-libp2p),
# and with the Bitswap ones dissect_items' Bitswap streams (plaintext, then yamux).
PLAINTEXT_CAPTURES = ["interop/interop-go-js-plaintext-yamux.pcapng", "interop/interop-js-go-plaintext-mplex.pcapng",
                      "interop/interop-py-go-plaintext-yamux.pcapng", "interop/interop-rust-go-plaintext-yamux.pcapng",
                      "bitswap/bitswap-1.0.0.pcapng", "bitswap/bitswap-1.1.0.pcapng", "bitswap/bitswap-1.2.0.pcapng"]
KEYED_LEN = 65536


def dissect_seeds(per_target: int) -> dict[str, list[bytes]]:
    """Every dissect_* harness's seeds: real connections from the captures, cut after the
    negotiation the harness's preamble replaces (so each seed holds that layer's real bytes)."""
    from collections import Counter
    seeds: dict[str, list[bytes]] = {}

    def add(target: str, seed: bytes) -> None:
        got = seeds.setdefault("dissect_" + target, [])
        if len(got) < per_target and seed not in got and len(seed) > 3:
            got.append(seed)

    conns = {cap: tcp_connections(cap) for cap in sorted(
        set(DISSECT_CAPTURES) | set(LIBP2P_CAPTURES) | {KEYED_NOISE} | set(PLAINTEXT_CAPTURES) |
        {str(p.relative_to(REPO / "captures")) for p in (REPO / "captures").glob("bitcoin/*.pcapng")} |
        {str(p.relative_to(REPO / "captures")) for p in (REPO / "captures").glob("fisco/*.pcapng")
         if "tls" not in p.name})}
    # dissect_tcp: whole connections, byte 0 picking the port (2 per capture).
    for cap, sel in DISSECT_CAPTURES.items():
        for conn in conns[cap][:2]:
            add("tcp", records(conn, bytes([sel])))
    for cap in sorted(conns):
        for conn in conns[cap]:
            for target, frame_len in (("bitcoin", bitcoin_frame), ("fisco", fisco_frame)):
                if cap.startswith(target + "/"):
                    for part in [conn] + windows(conn, frame_len, 3):
                        add(target, records(part))
                    # dissect_items: each capture's first connection, byte 0 picking the port
                    # (0: 8333, 1: 30300), leaving room for the gossipsub and Bitswap streams.
                    if conn is conns[cap][0]:
                        add("items", records(conn, bytes([target == "fisco"])))
    for cap in LIBP2P_CAPTURES:
        for conn in conns[cap]:
            after_header = cut_after(conn, {0: ms_line("/multistream/1.0.0")})
            if after_header:
                add("multistream", records(after_header))
            for target in ("yamux", "mplex", "noise", "compression"):
                protocols = target_protocols(target)
                i = agreed(conn, protocols)
                if i < 0:
                    continue
                mark = ms_line(protocols[i])
                layer = cut_after(conn, {0: mark, 1: mark})
                head = bytes([i]) if len(protocols) > 1 else b""
                add(target, records(layer, head))
                # Later parts of the connection, where a frame boundary allows.
                for part in windows(layer, {"yamux": yamux_frame, "noise": noise_frame}.get(target), 6) \
                        if target in ("yamux", "noise") else []:
                    add(target, records(part, head))
                if target != "yamux":
                    continue
                # The muxed streams: eth2 req/resp and gossipsub, each stream a seed of its own.
                for stream in yamux_streams(layer):
                    for app in ("eth2_reqresp", "gossipsub"):
                        ids = target_protocols(app)
                        if app == "gossipsub":   # the harness negotiates 1.1.0; every version is the same RPC
                            ids = ["/meshsub/1.3.0", "/meshsub/1.2.0", "/meshsub/1.1.0"]
                        j = agreed(stream, ids)
                        if j < 0:
                            continue
                        mark = ms_line(ids[j])
                        body = cut_after(stream, {0: mark, 1: mark})
                        if body:
                            add(app, records(body, bytes([j]) if app == "eth2_reqresp" else b""))
                            if app == "gossipsub":      # dissect_items: byte 2, PORT_OTHER and meshsub
                                add("items", records(body, bytes([2])))
    # dissect_plaintext: each connection from just after its /plaintext/2.0.0 (the Exchange
    # on), and a crafted Exchange whose peer ID is longer than any peer ID can be.
    plaintext = ms_line("/plaintext/2.0.0")
    bitswap = [p for p in target_protocols("items") if "bitswap" in p] + ["/ipfs/bitswap/1.1.0", "/ipfs/bitswap/1.0.0"]
    for cap in PLAINTEXT_CAPTURES:
        for conn in conns[cap]:
            body = cut_after(conn, {0: plaintext, 1: plaintext})
            if not body:
                continue
            add("plaintext", records(body))
            # dissect_items: the Bitswap streams (byte 5: PORT_OTHER, the second protocol ID).
            layer = cut_after(body, {0: ms_line("/yamux/1.0.0"), 1: ms_line("/yamux/1.0.0")})
            for stream in yamux_streams(layer) if cap.startswith("bitswap/") and layer else []:
                j = agreed(stream, bitswap)
                if j >= 0:
                    msgs = cut_after(stream, {0: ms_line(bitswap[j]), 1: ms_line(bitswap[j])})
                    if msgs:
                        add("items", records(msgs, bytes([5])))
    add("plaintext", records(long_peer_id_exchange()))
    # dissect_noise_keyed: the keyed connection from its handshake on, whole, and with one
    # segment lost at seven places (the holes Noise resynchronises after).
    for conn in conns[KEYED_NOISE]:
        mark = ms_line("/noise")
        layer = cut_after(conn, {0: mark, 1: mark})
        if not layer:
            continue
        whole = records(layer, max_len=KEYED_LEN)
        add("noise_keyed", whole)
        fit, size = 0, 0
        while fit < len(layer) and size + 3 + len(layer[fit][1]) <= KEYED_LEN:
            size += 3 + len(layer[fit][1])
            fit += 1
        for i in range(1, 8):
            add("noise_keyed", records(layer, max_len=KEYED_LEN, lost=frozenset({fit * i // 8})))
    for name, items in seeds.items():
        print(f"make_seeds: {name}: {len(items)} connections "
              f"({', '.join(f'{n} x {k}' for k, n in Counter(len(s) // 4096 * 4 for s in items).most_common(3))} KiB)")
    return seeds


def long_peer_id_exchange() -> Conn:
    """Two /plaintext/2.0.0 Exchanges (libp2p specs plaintext.md: uvarint length, then protobuf
    id = 1 and pubkey = 2, an Ed25519 key): one whose peer ID is 2,000 bytes (a peer ID is at most
    a multihash of 64 bytes), one whose peer ID claims 2^64-1 bytes."""
    sys.path.insert(0, str(REPO / "tools"))
    from craft import pb_field, uvarint

    def exchange(peer_id: bytes, claim: int | None = None) -> bytes:
        pid = uvarint(len(peer_id) if claim is None else claim) + peer_id
        pb = b"\x0a" + pid + pb_field(2, 2, pb_field(1, 0, 1) + pb_field(2, 2, bytes(32)))
        return uvarint(len(pb)) + pb
    return [(0, exchange(b"\x00\x80" + bytes(2000))), (1, exchange(b"", claim=2**64 - 1))]


CODEC_CORPORA = ("lzo1x", "zlib", "deflate", "gzip", "snappy", "snappy_framed", "brotli", "zstd",
                 "gzip_stream", "deflate_stream", "brotli_stream")


def codec_seeds(plugin: Path, max_bytes: int, per_capture: int) -> dict[str, list[bytes]]:
    import brotli
    import snappy
    import zstandard
    from p2pc.whatif import _lzo

    texts = payloads(plugin, max_bytes, per_capture)
    lzo = _lzo()
    seeds: dict[str, list[bytes]] = {k: [] for k in CODEC_CORPORA}

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
    return seeds


# 1.3.6.1.4.1.53594.1.1 (libp2p/specs tls: the libp2p Public Key Extension), DER.
LIBP2P_EXT_OID = bytes.fromhex("060a2b0601040183a25a0101")
TLS_CAPTURES = {"eth2/eth2-tls-yamux.pcapng": "eth2/eth2-tls-yamux.keys", "eth2/eth2-tls-embedded.pcapng": None}


def signed_keys(der: bytes) -> list[bytes]:
    """The values of the libp2p extensions in `der` (certificates, or any bytes holding them):
    after the OID, an optional critical BOOLEAN, then the OCTET STRING that holds the SignedKey
    (cut at the end of `der` when its length claims more)."""
    out = []
    i = der.find(LIBP2P_EXT_OID)
    while i >= 0:
        j = i + len(LIBP2P_EXT_OID)
        if der[j:j + 1] == b"\x01":
            j += 3
        if der[j:j + 2] and der[j] == 0x04:
            n, j = der[j + 1], j + 2
            if n & 0x80:
                width = n & 0x7F
                n, j = int.from_bytes(der[j:j + width], "big"), j + width
            out.append(der[j:j + n])
        i = der.find(LIBP2P_EXT_OID, i + 1)
    return out


def signed_key_seeds(plugin: Path) -> list[bytes]:
    """dissect_signed_key: each SignedKey one client segment ([flags 0][length][data])."""
    import gzip
    from p2pc.wsenv import Wireshark
    found = signed_keys(gzip.decompress((REPO / "tests/data/repro/tls-signedkey-neg34.pcap.gz").read_bytes()))
    with Wireshark(plugin=plugin) as ws:
        for cap, keys in TLS_CAPTURES.items():
            opts = ["-o", f"tls.keylog_file:{REPO / 'captures' / keys}"] if keys else []
            r = ws.run("tshark", ["-n", "-r", str(REPO / "captures" / cap), "-Y", "tls.handshake.certificate",
                                  "-T", "fields", "-e", "tls.handshake.certificate", *opts], timeout=300)
            for cert in r.stdout.replace("|", ",").replace("\n", ",").split(","):
                if cert:
                    found += signed_keys(bytes.fromhex(cert.replace(":", "")))
    seeds = []
    for sk in found:
        seed = bytes([0]) + len(sk).to_bytes(2, "big") + sk
        if seed not in seeds:
            seeds.append(seed)
    return seeds


def keylog_seeds() -> list[bytes]:
    """keylog_noise: [op][length][data] writes (op 0 append, 1 replace the file) of the
    committed Noise key logs: whole, line by line with a line cut in two, replaced by another
    node's, and with a NUL line before the keys."""
    def op(kind: int, data: bytes) -> bytes:
        return b"".join(bytes([kind, len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255))
    yamux, mplex = ((REPO / "captures/eth2" / f"eth2-noise-{n}.keys").read_bytes() for n in ("yamux", "mplex"))
    return [op(0, yamux),
            b"".join(op(0, line) for line in mplex.splitlines(keepends=True)) + op(0, yamux[:50]) + op(0, yamux[50:]),
            op(0, mplex) + op(1, yamux),
            op(0, b"# node\nLOCAL_EPHEMERAL_PRIVATE_KEY = \x00x\n") + op(0, mplex + yamux.rstrip(b"\n"))]


# dissect_quic: the QUIC captures and their key logs.
QUIC_CAPTURES = {"eth2/eth2-quic.pcapng": "eth2/eth2-quic.keys", "eth2/eth2-tcp-quic.pcapng": "eth2/eth2-tcp-quic.keys",
                 "interop/interop-go-rust-quic.pcapng": "interop/interop-go-rust-quic.keys",
                 "interop/interop-rust-go-quic-lf.pcapng": "interop/interop-rust-go-quic-lf.keys"}
QUIC_SERVER_PORT = 9000     # the listener's (captures/gen/make_eth2.py PORT): the QUIC server
QuicFrames = list[tuple[int, int, int, bytes]]   # (0 client->server / 1 back, stream id, offset, data)


def quic_frames(cap: str, keys: str) -> QuicFrames:
    """The STREAM frames of the capture's QUIC connection, in capture order, as Wireshark's QUIC
    decrypts them with the key log (two passes: one pass filters before the keys apply)."""
    import json
    import subprocess
    r = subprocess.run(["tshark", "-n", "-2", "-r", str(REPO / "captures" / cap), "-o",
                        f"tls.keylog_file:{REPO / 'captures' / keys}", "-Y", "quic.stream_data", "-T", "json",
                        "--no-duplicate-keys", "-J", "udp quic"], capture_output=True, text=True, timeout=600)
    listify = lambda x: x if isinstance(x, list) else [x]  # noqa: E731
    out: QuicFrames = []
    for pkt in json.loads(r.stdout):
        layers = pkt["_source"]["layers"]
        d = 1 if int(layers["udp"]["udp.srcport"]) == QUIC_SERVER_PORT else 0
        for q in listify(layers["quic"]):
            for f in listify(q.get("quic.frame", [])):
                if "quic.stream_data" in f:
                    out.append((d, int(f["quic.stream.stream_id"]), int(f.get("quic.stream.offset", 0)),
                                bytes.fromhex(f["quic.stream_data"].replace(":", ""))))
    return out


def quic_record(d: int, sid: int, off: int, data: bytes, lost: bool = False) -> bytes:
    body = bytes([sid]) + off.to_bytes(4, "big") + data[:MAX_SEGMENT - 5]
    return bytes([d | (0x80 if lost else 0)]) + len(body).to_bytes(2, "big") + body


def quic_seeds(per_target: int) -> list[bytes]:
    """dissect_quic: each capture's STREAM frames from the start, each stream's alone, and the
    first ones again with a frame sent twice (a retransmission) and with one lost (a hole)."""
    seeds: list[bytes] = []

    def add(frames: QuicFrames, twice: int = -1, lost: int = -1) -> None:
        seed = b""
        for i, (d, sid, off, data) in enumerate(frames):
            rec = quic_record(d, sid, off, data, i == lost) * (2 if i == twice else 1)
            if len(seed) + len(rec) > SEED_LEN:
                break
            seed += rec
        if len(seed) > 3 and seed not in seeds and len(seeds) < per_target:
            seeds.append(seed)

    for cap, keys in QUIC_CAPTURES.items():
        frames = [f for f in quic_frames(cap, keys) if f[1] < 256]    # the harness's ids are one byte
        add(frames)
        for i in (3, 7, 11):
            add(frames, twice=i)
            add(frames, lost=i)
        for sid in sorted({f[1] for f in frames}):
            add([f for f in frames if f[1] == sid])
    seeds += quic_churn_seeds()
    print(f"make_seeds: dissect_quic: {len(seeds)} connections")
    return seeds


def quic_churn_seeds() -> list[bytes]:
    """dissect_quic: stream churn, as tools/quic_churn.py makes it (eth2 pings, the index in each
    stream): the client's 64 bidirectional streams (the harness's ids are one byte) each ended
    with a FIN both ways, then a late copy of an ended stream's request (it opens nothing);
    the same with each FIN alone in an empty frame after the data; and the 64 never ended."""
    sys.path.insert(0, str(REPO / "tools"))
    from quic_churn import HELLO, ping
    fin = 1 << 31
    ended, split, open_ = b"", b"", b""
    for i in range(64):
        req, resp = HELLO + ping(i, False), HELLO + ping(i, True)
        ended += quic_record(0, 4 * i, fin, req) + quic_record(1, 4 * i, fin, resp)
        split += (quic_record(0, 4 * i, 0, req) + quic_record(0, 4 * i, fin | len(req), b"") +
                  quic_record(1, 4 * i, 0, resp) + quic_record(1, 4 * i, fin | len(resp), b""))
        open_ += quic_record(0, 4 * i, 0, req)
    late = quic_record(0, 0, fin, HELLO + ping(0, False))
    return [ended + late, split + late, open_]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin", type=Path, default=REPO / "build/plugins/4.0/epan/p2pc.so")
    ap.add_argument("--out", type=Path, default=REPO / "fuzz/corpus")
    ap.add_argument("--max-bytes", type=int, default=8192)
    ap.add_argument("--per-capture", type=int, default=6)
    ap.add_argument("--per-target", type=int, default=40, help="dissect_* seeds per harness at most")
    ap.add_argument("--dissect-only", action="store_true",
                    help="only the dissect_* corpora (they need tshark, not the plugin)")
    args = ap.parse_args()

    seeds = {} if args.dissect_only else codec_seeds(args.plugin, args.max_bytes, args.per_capture)
    if not args.dissect_only:
        seeds["dissect_signed_key"] = signed_key_seeds(args.plugin)
    seeds.update(dissect_seeds(args.per_target))
    seeds["dissect_quic"] = quic_seeds(args.per_target)
    seeds["keylog_noise"] = keylog_seeds()
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
