#!/usr/bin/env python3
"""Structure-aware hostile captures for every protocol family p2pc decodes, and the project's
one pcap writer (`tcp_pcap`, which tests/conftest.py imports).

Each case is one crafted TCP connection (192.0.2.1 dials 192.0.2.2) whose bytes are valid
framing of its family up to the point the case attacks.  Kinds:

  bomb         maximal-ratio input to each codec the family uses (LZO1X and zlib for Bitcoin,
               Snappy for FISCO 2.x and eth2, zstd for FISCO 3.x, gzip and brotli for the
               compression transport), at and past the protocol's own bounds
  flood        many tiny messages, many streams
  nest         libp2p layers inside libp2p layers (yamux in yamux, mplex in yamux, compression
               inside compression): the libp2p families only
  varint       non-canonical, 10-byte and 11-byte, maximal varints; lengths claiming more than
               is present (uvarints for libp2p/eth2/Snappy/protobuf, CompactSize for Bitcoin,
               header lengths for FISCO)
  cardinality  random commands, modules, topics, protocol IDs

Every case is seeded (the same bytes on every run) and small (under 400 KB on disk; `scale`
shrinks the counts), but one: `flood-quic` is a real QUIC connection (libp2p over QUIC, UDP)
of aioquic's client and server (tools/quic_churn.py), whose keys and connection IDs are
aioquic's own random ones.  Nothing is committed: `tools/fuzz.py --hostile` makes them in its temp
folder, `tests/test_craft.py` checks them.

    PYTHONPATH=analyzer python3 tools/craft.py OUTDIR [--family F] [--kind K]
"""
from __future__ import annotations

import argparse
import random
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]

FAMILIES = ("bitcoin", "fisco2", "fisco3", "eth2", "libp2p", "compression")
KINDS = ("bomb", "flood", "nest", "varint", "cardinality")
# What each family gets: nesting exists only where libp2p layers stack; the libp2p muxers
# alone (multistream, yamux, mplex) have no codec of their own, so no bomb.
MATRIX = {
    "bitcoin": ("bomb", "flood", "varint", "cardinality"),
    "fisco2": ("bomb", "flood", "varint", "cardinality"),
    "fisco3": ("bomb", "flood", "varint", "cardinality"),
    "eth2": ("bomb", "flood", "nest", "varint", "cardinality"),
    "libp2p": ("flood", "nest", "varint", "cardinality"),
    "compression": ("bomb", "flood", "nest", "varint", "cardinality"),
}
MIB = 1 << 20


# ---------------------------------------------------------------- the pcap writer


def tcp_pcap(path, segments: list[tuple[str, bytes]], ports: tuple[int, int] = (40001, 40002),
             syn: str | None = None, mss: int | None = None, hosts: tuple[int, int] = (1, 2)) -> int:
    """A pcap of one TCP connection between 192.0.2.1 (A) and 192.0.2.2 (B) (192.0.2.N, N of
    `hosts`) on `ports` carrying `segments`, (sender "a" or "b", payload) in order; with `syn`,
    that side's SYN opens it, else it is captured after its handshake (the protocols' heuristics
    and ports pick it up, and no TCP fact says who dialed).  With `mss`, a payload longer than
    it goes in several segments (an IPv4 packet holds at most 65,495 payload bytes).  Returns
    the TCP payload bytes written."""
    addr = {"a": (bytes([192, 0, 2, hosts[0]]), ports[0]), "b": (bytes([192, 0, 2, hosts[1]]), ports[1])}
    seq = {"a": 1000, "b": 5000}
    frames = []

    def segment(side: str, flags: int, payload: bytes = b"") -> None:
        other = "b" if side == "a" else "a"
        (src, sport), (dst, dport) = addr[side], addr[other]
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq[side] & 0xFFFFFFFF, seq[other] & 0xFFFFFFFF,
                          5 << 4, flags, 65535, 0, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), len(frames) + 1 & 0xFFFF,
                         0, 64, 6, 0, src, dst)
        frames.append(b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + payload)
        seq[side] += len(payload) + (1 if flags & 0x02 else 0)

    if syn:
        segment(syn, 0x02)
        segment("b" if syn == "a" else "a", 0x12)
        segment(syn, 0x10)
    total = 0
    for side, payload in segments:
        step = mss or max(len(payload), 1)
        for i in range(0, max(len(payload), 1), step):
            segment(side, 0x18, payload[i:i + step])
        total += len(payload)
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1 + i, 0, len(f), len(f)) + f
    Path(path).write_bytes(bytes(out))
    return total


# ---------------------------------------------------------------- encodings


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def uvarint_long(n: int, width: int) -> bytes:
    """`n` as a non-canonical uvarint of exactly `width` bytes (zero continuation groups)."""
    out = bytearray(uvarint(n))
    if len(out) > width:
        raise ValueError("too wide")
    if len(out) < width:
        out[-1] |= 0x80
        out += b"\x80" * (width - len(out) - 1) + b"\x00"
    return bytes(out)


U64_MAX_VARINT = b"\xff" * 9 + b"\x01"          # 2^64 - 1 in 10 bytes
OVERLONG_VARINT = b"\xff" * 10 + b"\x01"        # 11 bytes: no uint64 holds it


def ms(text: str) -> bytes:
    """One multistream-select message: uvarint length, text, newline."""
    body = text.encode() + b"\n"
    return uvarint(len(body)) + body


MS = ms("/multistream/1.0.0")
YAMUX_ID, MPLEX_ID, MESHSUB = "/yamux/1.0.0", "/mplex/6.7.0", "/meshsub/1.1.0"
SYN, ACK, FIN, RST = 1, 2, 4, 8


def yamux(flags: int, stream: int, data: bytes = b"", type_: int = 0, length: int | None = None) -> bytes:
    return struct.pack(">BBHII", 0, type_, flags, stream, len(data) if length is None else length) + data


def tls12_hello(server: bool, alpn: list[str]) -> bytes:
    """A TLS 1.2 ClientHello (or ServerHello) record offering (choosing) the `alpn` protocols
    (RFC 5246 section 7.4.1, RFC 7301 section 3.1), cipher suite 0xc02f, no session ID."""
    names = b"".join(bytes([len(p.encode())]) + p.encode() for p in alpn)
    ext = struct.pack(">HHH", 0x0010, len(names) + 2, len(names)) + names
    suites = b"\xc0\x2f\x00" if server else b"\x00\x02\xc0\x2f\x01\x00"
    body = b"\x03\x03" + bytes(32) + b"\x00" + suites + struct.pack(">H", len(ext)) + ext
    hs = bytes([2 if server else 1]) + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x03" + struct.pack(">H", len(hs)) + hs


def mplex(stream: int, flag: int, data: bytes = b"") -> bytes:
    """mplex: uvarint(id << 3 | flag), uvarint(len), data (0 NewStream, 1/2 Message
    receiver/initiator, 3/4 Close, 5/6 Reset)."""
    return uvarint(stream << 3 | flag) + uvarint(len(data)) + data


def pb_field(num: int, wire: int, value: bytes | int) -> bytes:
    key = uvarint(num << 3 | wire)
    if wire == 0:
        return key + uvarint(value)  # type: ignore[arg-type]
    return key + uvarint(len(value)) + value  # type: ignore[arg-type]


def snappy_block(data: bytes) -> bytes:
    import snappy
    return snappy.compress(data)


def snappy_framed(data: bytes) -> bytes:
    import snappy
    return snappy.StreamCompressor().add_chunk(data)


def zstd_rle(total: int, fcs: int | None = None, byte: int = 0) -> bytes:
    """A zstd frame of `total` copies of `byte` in RLE blocks (4 bytes per 128 KiB: the
    format's best ratio), optionally declaring Frame_Content_Size `fcs` (8 bytes; it may lie)."""
    out = bytearray(b"\x28\xb5\x2f\xfd")
    out += bytes([0xC0 if fcs is not None else 0x00, 0x38])   # FCS 8 bytes or none; window 128 KiB
    if fcs is not None:
        out += struct.pack("<Q", fcs)
    left = total
    while True:
        n = min(left, 128 * 1024)
        left -= n
        out += (1 | 1 << 1 | n << 3 if left == 0 else 1 << 1 | n << 3).to_bytes(3, "little") + bytes([byte])
        if left == 0:
            return bytes(out)


def deflate_repeat(unit: bytes, total: int, wbits: int, flush_every: int = 0) -> bytes:
    """`unit` repeated to `total` bytes, deflated at level 9 (zlib's best ratio for repeats,
    about 1:1000), sync-flushed every `flush_every` bytes (0: at the end only)."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    chunk = unit * max(1, MIB // len(unit))
    out, done, since = [], 0, 0
    while done < total:
        piece = chunk[:total - done]
        out.append(c.compress(piece))
        done += len(piece)
        since += len(piece)
        if flush_every and since >= flush_every:
            out.append(c.flush(zlib.Z_SYNC_FLUSH))
            since = 0
    out.append(c.flush(zlib.Z_SYNC_FLUSH))
    return b"".join(out)


def brotli_repeat(unit: bytes, total: int) -> bytes:
    import brotli
    c = brotli.Compressor(quality=5)
    chunk = unit * max(1, MIB // len(unit))
    out, done = [], 0
    while done < total:
        piece = chunk[:total - done]
        out.append(c.process(piece))
        done += len(piece)
    out.append(c.flush())
    return b"".join(out)


def rand_name(rng: random.Random, n: int, alphabet: str = "abcdefghijklmnopqrstuvwxyz0123456789-_") -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# ---------------------------------------------------------------- cases


@dataclass
class Case:
    name: str
    family: str
    kind: str
    what: str
    build: Callable[[], list[tuple[str, bytes]]] | None
    ports: tuple[int, int]
    path: Path | None = None
    payload_bytes: int = 0
    segment: int = 0            # its own segment size, else by kind
    # A case that is no TCP connection writes its capture itself (`build` unused): the
    # payload bytes it wrote (UDP's, for QUIC).
    write: Callable[[Path], int] | None = None

    @property
    def mss(self) -> int:
        if self.segment:
            return self.segment
        # Floods in Ethernet-sized segments: a 16 KB segment of 500 Bitcoin messages trips
        # Wireshark's own layer limit (packet.c "saved_layers_len < prefs.gui_max_tree_depth"),
        # stock tshark too, before p2pc's flood handling is reached.
        return 1448 if self.kind == "flood" else MSS


MSS = 16000
BTC_PORTS, FISCO_PORTS, LIBP2P_PORTS = (40001, 8333), (40001, 30300), (40001, 45678)


# -- Bitcoin (BUIP017): the captures' own message builder


def _btc():
    sys.path.insert(0, str(REPO / "captures" / "gen"))
    import btc  # noqa: E402  (captures/gen/btc.py: message(), version_payload(), LZO through liblzo2)
    return btc


def btc_session(bit: int, messages: list[bytes]) -> list[tuple[str, bytes]]:
    btc = _btc()
    services = btc.NODE_NETWORK | bit
    return [("a", btc.message("version", btc.version_payload(services, 0xA))),
            ("b", btc.message("version", btc.version_payload(services, 0xB)) + btc.message("verack", b"")),
            ("a", btc.message("verack", b"")), ("a", b"".join(messages))]


def btc_bomb(codec: str) -> Callable[[], list[tuple[str, bytes]]]:
    def build():
        btc = _btc()
        if codec == "lzo1x":
            comp, bit = btc.lzo1x_999, btc.NODE_COMPRESS
        else:
            comp, bit = (lambda b: zlib.compress(b, 9)), btc.NODE_COMPRESS_2015
        at_bound = comp(bytes(16_000_000))           # a cblock at its 16 MB bound
        over = comp(bytes(20 * MIB))                 # past the block bound, under MAX_SIZE
        txs = comp(bytes(2 * MIB))                   # a ctxcat twice its 1 MB bound
        msgs = [btc.message("cblock", at_bound)] * 2 + [btc.message("cblock", over), btc.message("ctxcat", txs)]
        return btc_session(bit, msgs)
    return build


def btc_bomb_items() -> list[tuple[str, bytes]]:
    """A cblock of 266,000 minimal transactions (16 MB decompressed, under its bound; Wireshark's
    own tx parser draws some 4,000,000 tree items, past gui.max_tree_items), then 100 pings: the
    tree is cut (p2pc.tree_cut), the cblock is one whole record and every ping counts (#40)."""
    btc = _btc()
    tx = (struct.pack("<I", 1) + b"\x01" + bytes(36) + b"\x00" + b"\xff" * 4 +
          b"\x01" + struct.pack("<Q", 0) + b"\x00" + bytes(4))
    block = bytes(80) + btc.varint(266000) + tx * 266000
    pings = [btc.message("ping", struct.pack("<Q", i)) for i in range(100)]
    return btc_session(btc.NODE_COMPRESS, [btc.message("cblock", btc.lzo1x_999(block))] + pings)


def btc_flood() -> list[tuple[str, bytes]]:
    btc = _btc()
    ping = [btc.message("ping", struct.pack("<Q", i)) for i in range(4000)]
    small = [btc.message("txcat", b"") for _ in range(2000)] + [btc.message("verack", b"")] * 2000
    return btc_session(btc.NODE_COMPRESS, ping + small)


def btc_varint() -> list[tuple[str, bytes]]:
    btc = _btc()
    h = bytes(32)
    m = btc.message
    msgs = [
        m("inv", b"\xfd\x01\x00" + struct.pack("<I", 1) + h),                 # non-canonical 1
        m("inv", b"\xff" + b"\xff" * 8 + struct.pack("<I", 1) + h),           # 2^64-1 items, one present
        m("inv", b"\xfe\xff\xff\xff\xff"),                                    # 2^32-1 items, none
        m("getdata", b"\xfd"),                                                # cut inside the CompactSize
        m("txcat", b"\x01\x00\x00\x00" + b"\xff" + b"\xff" * 8),              # a tx with 2^64-1 inputs
        m("txcat", b"\x01\x00\x00\x00\x00\x01" + b"\xfe\xff\xff\xff\x7f"),     # segwit marker, 2^31-1 inputs
        m("ctxcat", btc.lzo1x_1(b"\x02\x00\x00\x00\xfd\xff\xff" + bytes(64))),  # decoded: 65535 inputs claimed
        m("cblock", btc.lzo1x_1(bytes(80) + b"\xff" + b"\xff" * 8)),            # a block claiming 2^64-1 txs
        m("cblock", b"\x11\x00\x00"),                                         # an LZO end marker alone
        # payload length past MAX_SIZE, then one claiming more than the capture holds
        btc.MAGIC_MAIN + b"cblock".ljust(12, b"\0") + struct.pack("<I", 0xFFFFFFFF) + b"\0" * 4 + b"\x11\x00\x00",
        btc.MAGIC_MAIN + b"ping".ljust(12, b"\0") + struct.pack("<I", 0x01FFFFFF) + b"\0" * 4 + bytes(8),
    ]
    return btc_session(btc.NODE_COMPRESS, msgs)


def btc_cardinality() -> list[tuple[str, bytes]]:
    btc = _btc()
    rng = random.Random(4001)
    msgs = []
    for i in range(6000):
        cmd = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 13)))
        msgs.append(btc.MAGIC_MAIN + cmd.ljust(12, b"\0") + struct.pack("<I", 0) + bytes.fromhex("5df6e0e2"))
    return btc_session(btc.NODE_COMPRESS, msgs)


# -- FISCO 2.x: 16-byte header (length, version/compress flag, group, module, packet type, seq)


def fisco2(module: int, data: bytes, seq: int, compress: bool = False, group: int = 1, ptype: int = 0,
           length: int | None = None) -> bytes:
    payload = snappy_block(data) if compress else data
    n = 16 + len(payload) if length is None else length
    return struct.pack(">IHhHHI", n, 0x8000 if compress else 0, group, module, ptype, seq) + payload


PBFT2, BLOCKSYNC2, TOPIC2 = 8, 9, 2


def fisco2_bomb() -> list[tuple[str, bytes]]:
    big = snappy_block(bytes(4 * MIB))                    # 21:1, Snappy's best (copies of 64 bytes)
    body = snappy_block(bytes(64 * 1024))[len(uvarint(64 * 1024)):]
    hdr = lambda p, s: struct.pack(">IHhHHI", 16 + len(p), 0x8000, 1, BLOCKSYNC2, 0, s) + p  # noqa: E731
    return [("a", hdr(big, 2)), ("b", hdr(big, 2)),
            ("a", hdr(uvarint(100 * MIB + 1) + body, 3)),      # preamble past the 100 MiB bound
            ("a", hdr(uvarint(0xFFFFFFFF) + body, 4))]         # 4 GiB claimed, 64 KiB there


def fisco2_flood() -> list[tuple[str, bytes]]:
    a = b"".join(fisco2(PBFT2 if i % 2 else BLOCKSYNC2, bytes([i & 0xFF]), i + 2) for i in range(8000))
    b = b"".join(fisco2(BLOCKSYNC2, b"", 0) for _ in range(2000))
    return [("a", a), ("b", b)]


def fisco2_varint() -> list[tuple[str, bytes]]:
    c = lambda pre, body: struct.pack(">IHhHHI", 16 + len(pre + body), 0x8000, 1, BLOCKSYNC2, 0, 7) + pre + body  # noqa: E731
    lit = b"\x0c" + b"abcd"                                  # a 4-byte literal
    msgs = [
        c(uvarint_long(4, 5), lit),                          # non-canonical 5-byte preamble
        c(U64_MAX_VARINT, lit),                              # 10-byte preamble: 2^64-1
        c(OVERLONG_VARINT, lit),                             # 11 bytes
        c(uvarint(0xFFFFFFFF), lit),                         # 4 GiB claimed, 4 bytes present
        c(b"\x80\x80", b""),                                 # cut inside the preamble
        fisco2(BLOCKSYNC2, b"\x03\xf9\xff\xff" + bytes(8), 8),   # RLP list claiming 65535 bytes
        fisco2(BLOCKSYNC2, b"\x03\xbf" + b"\xff" * 8, 9),        # RLP string length of 8 bytes 0xff..
        fisco2(PBFT2, b"", 10, length=15),                   # length under the header
        fisco2(PBFT2, b"xy", 11, length=0xFFFFFFFF),         # 4 GiB claimed
    ]
    return [("a", b"".join(msgs[:-1])), ("b", msgs[-1])]


def fisco2_cardinality() -> list[tuple[str, bytes]]:
    rng = random.Random(2002)
    mods = b"".join(fisco2(rng.randrange(1, 0x10000), b"x", i + 2, group=rng.randrange(-0x8000, 0x8000))
                    for i in range(4000))
    topics = b"".join(fisco2(TOPIC2, ("%d\t" % i + "\t".join(rand_name(rng, rng.randrange(1, 40))
                                                            for _ in range(20))).encode(), 0, ptype=3)
                      for i in range(300))
    return [("a", mods), ("b", topics)]


# -- FISCO 3.x: header (length, version, packet type, seq, ext), V1+ P2P IDs, front + payload


F3_HDR = struct.Struct(">IHHIH")
F3_HANDSHAKE, F3_HEARTBEAT, F3_P2P = 0x2, 0x1, 0x5
F3_COMPRESS = 0x10


def f3(ptype: int, payload: bytes, seq: int, version: int = 2, ext: int = 0, module: int = 2000,
       group: bytes = b"group0", length: int | None = None) -> bytes:
    extra = b""
    if version >= 1:
        sp, dp = b"\x11" * 32, b"\x22" * 32
        extra = struct.pack(">hH", 10, len(sp)) + sp + struct.pack(">H", len(dp)) + dp
        if ptype == F3_P2P:
            node = b"\x33" * 64
            extra += struct.pack(">H", len(group)) + group + struct.pack(">H", len(node)) + node + b"\x01" + \
                b"\x44" * 64 + struct.pack(">H", module)
    n = F3_HDR.size + len(extra) + len(payload) if length is None else length
    return F3_HDR.pack(n, version, ptype, seq, ext) + extra + payload


def f3_front(module: int, payload: bytes) -> bytes:
    return struct.pack(">HB", module, 0) + struct.pack(">H", 0) + payload


def f3_session(a: list[bytes], b: list[bytes] = ()) -> list[tuple[str, bytes]]:
    # ProtocolInfo in tars: moduleID 1, minVersion 0, maxVersion 2
    info = b"\x10\x01\x2c\x20\x02"
    return [("a", f3(F3_HANDSHAKE, info, 1, version=0)), ("b", f3(F3_HANDSHAKE, info, 1, version=0)),
            ("a", b"".join(a))] + ([("b", b"".join(b))] if b else [])


def fisco3_bomb() -> list[tuple[str, bytes]]:
    at_bound = f3(F3_P2P, zstd_rle(32 * MIB), 10, ext=F3_COMPRESS)           # 1 KB for its 32 MiB bound
    gib = f3(F3_P2P, zstd_rle(1 << 30), 11, ext=F3_COMPRESS)                 # 32 KB for 1 GiB
    lie = f3(F3_P2P, zstd_rle(64 * 1024, fcs=(1 << 63) - 1), 12, ext=F3_COMPRESS)  # FCS claims 8 EiB
    small_fcs = f3(F3_P2P, zstd_rle(8 * MIB, fcs=16), 13, ext=F3_COMPRESS)   # FCS claims 16 bytes
    return f3_session([at_bound] * 4 + [gib, lie, small_fcs])


def fisco3_flood() -> list[tuple[str, bytes]]:
    return f3_session([f3(F3_HEARTBEAT, b"", i, version=0) for i in range(3000)],
                      [f3(F3_P2P, f3_front(2001, b"\x08\x01"), i) for i in range(800)])


def fisco3_varint() -> list[tuple[str, bytes]]:
    fr = lambda pb: f3(F3_P2P, f3_front(2000, pb), 20)  # noqa: E731  BlockSyncMessage protobuf
    msgs = [
        fr(b"\x08" + U64_MAX_VARINT),                       # version: 2^64-1 in 10 bytes
        fr(b"\x08" + OVERLONG_VARINT),                      # 11 bytes
        fr(b"\x18" + uvarint_long(5, 10)),                  # number: non-canonical 10-byte 5
        fr(b"\x22" + uvarint(0xFFFFFFFF) + b"hash"),        # hash: 4 GiB claimed
        fr(b"\x3a" + U64_MAX_VARINT + b"x"),                # blocksData: 2^64-1 claimed
        fr(b"\x22\xff"),                                    # cut inside the length
        f3(F3_P2P, f3_front(2000, b"\x08\x01")[:2], 21),    # front cut in its uuid length
        f3(F3_P2P, struct.pack(">HB", 2000, 255) + b"u" * 3, 22),  # uuid length 255, 3 present
        f3(F3_P2P, b"", 23, group=b"g" * 300)[:-60],        # header cut inside the IDs
        F3_HDR.pack(8, 2, F3_P2P, 24, 0),                   # length under the header
        F3_HDR.pack(0xFFFFFFFF, 2, F3_P2P, 25, 0) + b"\xff\xff",  # 4 GiB claimed
    ]
    return f3_session(msgs[:-1], [msgs[-1]])


def fisco3_cardinality() -> list[tuple[str, bytes]]:
    rng = random.Random(3003)
    a = [f3(F3_P2P, f3_front(rng.randrange(0x10000), b"\x08\x01"), i, module=rng.randrange(0x10000),
            group=rand_name(rng, rng.randrange(1, 30)).encode()) for i in range(1000)]
    b = [f3(rng.randrange(0x10000), b"", i, version=rng.randrange(0x10000)) for i in range(1500)]
    return f3_session(a, b)


# -- libp2p: multistream on the raw connection, yamux / mplex, streams


def l2p_conn(muxer: str, a: bytes, b: bytes = b"") -> list[tuple[str, bytes]]:
    """multistream-select then `muxer` (no security layer: the plugin accepts any protocol at
    any level), then each side's muxer bytes."""
    out = [("a", MS + ms(muxer)), ("b", MS + ms(muxer))]
    if a:
        out.append(("a", a))
    if b:
        out.append(("b", b))
    return out


def ystream(sid: int, proto: str, data: bytes = b"", opener: bool = True) -> bytes:
    return yamux(SYN if opener else ACK, sid, MS + ms(proto) + data)


def libp2p_flood() -> list[tuple[str, bytes]]:
    a = bytearray()
    b = bytearray()
    for i in range(3000):
        sid = 2 * i + 1
        if i % 3 == 0:
            a += yamux(SYN, sid, type_=1)                                    # opened, never used
        else:
            a += ystream(sid, "/ipfs/ping/1.0.0", bytes(32)) + yamux(FIN, sid)
            b += ystream(sid, "/ipfs/ping/1.0.0", bytes(32), opener=False) + yamux(FIN, sid)
    return l2p_conn(YAMUX_ID, bytes(a), bytes(b))


def libp2p_flood_mplex() -> list[tuple[str, bytes]]:
    a = b"".join(mplex(i, 0, b"s") + mplex(i, 2, MS + ms("/ipfs/ping/1.0.0") + bytes(32)) + mplex(i, 4)
                 for i in range(3000))
    return l2p_conn(MPLEX_ID, a)


MUX_IDS = {"yamux": YAMUX_ID, "mplex": MPLEX_ID}


def nest(depth: int, proto: str, data: bytes, opener: bool, pattern: tuple[str, ...] = ("yamux",)) -> bytes:
    """`depth` muxers (pattern[i % len] at level i, 0 the outermost), each negotiated in stream 1
    of the one around it, the innermost stream running `proto` with `data`.  Returns level 0's
    frames (the connection negotiates pattern[0])."""
    inner = MS + ms(proto) + data
    for i in reversed(range(depth)):
        kind = pattern[i % len(pattern)]
        if kind == "yamux":
            frame = yamux(SYN if opener else ACK, 1, inner)
        else:
            frame = (mplex(1, 0, b"") if opener else b"") + mplex(1, 2 if opener else 1, inner)
        if i == 0:
            return frame
        inner = MS + ms(MUX_IDS[kind]) + frame
    return inner


def nested_conn(depth: int, proto: str, data_a: bytes, data_b: bytes, pattern=("yamux",)) -> list[tuple[str, bytes]]:
    mux_id = MUX_IDS[pattern[0]]
    return [("a", MS + ms(mux_id)), ("b", MS + ms(mux_id)),
            ("a", nest(depth, proto, data_a, True, pattern)), ("b", nest(depth, proto, data_b, False, pattern))]


def libp2p_nest() -> list[tuple[str, bytes]]:
    return nested_conn(2000, "/ipfs/ping/1.0.0", bytes(32), bytes(32))


def libp2p_nest_mixed() -> list[tuple[str, bytes]]:
    return nested_conn(600, "/ipfs/ping/1.0.0", bytes(32), bytes(32), pattern=("yamux", "mplex"))


def libp2p_varint() -> list[tuple[str, bytes]]:
    a = bytearray()
    a += ystream(1, "/ipfs/ping/1.0.0")
    # multistream lengths: non-canonical, 10-byte, 2^64-1, 1 MiB claimed with 5 bytes present
    a += yamux(SYN, 3, uvarint_long(19, 3) + b"/multistream/1.0.0\n")
    a += yamux(SYN, 5, MS + U64_MAX_VARINT + b"/x\n")
    a += yamux(SYN, 7, MS + OVERLONG_VARINT + b"/x\n")
    a += yamux(SYN, 9, MS + uvarint(1 << 20) + b"/abc\n")
    a += yamux(SYN, 11, MS + b"\x80\x80\x80")
    # gossip-style uvarint messages on a negotiated stream
    a += yamux(SYN, 13, MS + ms(MESHSUB) + U64_MAX_VARINT + b"\x0a\x00")
    a += yamux(SYN, 15, MS + ms(MESHSUB) + uvarint(0xFFFFFFFF) + b"\x12\x02")
    # yamux: a length claiming 2^32-1 on a stream, a window update of 2^32-1, stream id 2^32-1
    a += yamux(0, 2**32 - 1, type_=1, length=2**32 - 1) + yamux(SYN, 2**32 - 1, b"", type_=0)
    a += yamux(0, 1, b"ab", length=0x00FFFFFF)
    # an mplex connection would need its own negotiation: its varints go on B's side as yamux data
    b = bytearray(yamux(ACK, 1, MS + ms("/ipfs/ping/1.0.0")))
    b += yamux(ACK, 17, MS + ms(MPLEX_ID) + uvarint_long(1 << 3, 10) + uvarint(3) + b"abc"
               + U64_MAX_VARINT + b"\x00" + OVERLONG_VARINT + uvarint(1 << 30) + b"xy")
    return l2p_conn(YAMUX_ID, bytes(a), bytes(b))


def libp2p_varint_mplex() -> list[tuple[str, bytes]]:
    a = (mplex(1, 0, b"a") + uvarint_long(1 << 3 | 2, 10) + uvarint(4) + b"abcd"   # non-canonical header
         + U64_MAX_VARINT + uvarint(1) + b"x"                                      # id 2^61-1, flag 7
         + uvarint(3 << 3 | 2) + U64_MAX_VARINT + b"xyz"                           # length 2^64-1
         + uvarint(5 << 3 | 2) + uvarint(1 << 20) + b"short"                       # 1 MiB claimed
         + OVERLONG_VARINT)
    return l2p_conn(MPLEX_ID, a)


def libp2p_varint_plaintext() -> list[tuple[str, bytes]]:
    """/plaintext/2.0.0 Exchanges (libp2p specs plaintext.md: uvarint length, protobuf id = 1,
    pubkey = 2) whose peer IDs are 64 KiB, 1 MiB claimed, and 2^64-1 claimed: base58 is
    quadratic, so a peer ID longer than any format allows must never reach it (issue #40)."""
    def exchange(peer_id: bytes, claim: int | None = None) -> bytes:
        pid = uvarint(len(peer_id) if claim is None else claim) + peer_id
        pb = b"\x0a" + pid + pb_field(2, 2, pb_field(1, 0, 1) + pb_field(2, 2, bytes(32)))
        return uvarint(len(pb)) + pb
    hello = MS + ms("/plaintext/2.0.0")
    return [("a", hello), ("b", hello), ("a", exchange(b"\x00\x80" + bytes(65000))),
            ("b", exchange(bytes(64), claim=1 << 20) + exchange(b"", claim=2**64 - 1))]


QUIC_STREAMS = 1500


def libp2p_quic_churn(path: Path) -> int:
    """libp2p over QUIC: one connection of QUIC_STREAMS streams, 50 open at a time, each ended
    by a FIN both ways (each freed), then a late copy of the packet of the first one's request
    (a stream that ended opens no new one).  Real QUIC: tools/quic_churn.py's aioquic client and
    server, each stream an eth2 ping; the TLS secrets are in the pcapng, so every consumer
    decrypts it."""
    sys.path.insert(0, str(REPO / "tools"))
    import quic_churn
    link, received = quic_churn.run(QUIC_STREAMS, late_copy=True)
    assert received == QUIC_STREAMS
    return link.write(path)


def libp2p_cardinality() -> list[tuple[str, bytes]]:
    rng = random.Random(5005)
    a, b = bytearray(), bytearray()
    for i in range(2000):
        proto = "/" + "/".join(rand_name(rng, rng.randrange(1, 12)) for _ in range(rng.randrange(1, 4))) + \
            "/%d.%d.0" % (rng.randrange(10), rng.randrange(10))
        sid = 2 * i + 1
        a += ystream(sid, proto, rng.randbytes(4)) + yamux(FIN, sid)
        b += ystream(sid, proto, rng.randbytes(4), opener=False) + yamux(FIN, sid)
    return l2p_conn(YAMUX_ID, bytes(a), bytes(b))


# -- eth2 (req/resp ssz_snappy, gossipsub) over yamux


def eth2_req(method: str, version: int = 1) -> str:
    return f"/eth2/beacon_chain/req/{method}/{version}/ssz_snappy"


BY_RANGE = eth2_req("beacon_blocks_by_range", 2)
DIGEST = bytes.fromhex("6a95a1a9")
TOPIC = "/eth2/6a95a1a9/beacon_block/ssz_snappy"


def gossip_rpc(topic: str, data: bytes, subscribe: bool = False) -> bytes:
    rpc = b""
    if subscribe:
        rpc += pb_field(1, 2, pb_field(1, 0, 1) + pb_field(2, 2, topic.encode()))
    if data is not None:
        rpc += pb_field(2, 2, pb_field(2, 2, data) + pb_field(4, 2, topic.encode()))
    return uvarint(len(rpc)) + rpc


def eth2_bomb() -> list[tuple[str, bytes]]:
    req = struct.pack("<QQQ", 100, 64, 1)
    ssz = bytes(4 * MIB)
    chunk = b"\x00" + DIGEST + uvarint(len(ssz)) + snappy_framed(ssz)              # 21:1, 4 MiB
    lie = b"\x00" + DIGEST + uvarint(10 * MIB) + snappy_framed(bytes(64 * 1024))  # 10 MiB claimed
    over = b"\x00" + DIGEST + uvarint(11 * MIB) + snappy_framed(bytes(64 * 1024))  # past MAX_PAYLOAD_SIZE
    gossip = gossip_rpc(TOPIC, snappy_block(bytes(2 * MIB)), subscribe=True)
    a = ystream(1, BY_RANGE, uvarint(len(req)) + snappy_framed(req)) + yamux(FIN, 1) + \
        ystream(3, MESHSUB, gossip)
    b = ystream(1, BY_RANGE, chunk + lie + over, opener=False) + yamux(FIN, 1) + \
        ystream(3, MESHSUB, gossip_rpc(TOPIC, None, subscribe=True), opener=False)
    return l2p_conn(YAMUX_ID, a, b)


def eth2_flood() -> list[tuple[str, bytes]]:
    ping = struct.pack("<Q", 7)
    framed = snappy_framed(ping)
    a, b = bytearray(), bytearray()
    for i in range(1200):
        sid = 2 * i + 1
        a += ystream(sid, eth2_req("ping"), uvarint(8) + framed) + yamux(FIN, sid)
        b += ystream(sid, eth2_req("ping"), b"\x00" + uvarint(8) + framed, opener=False) + yamux(FIN, sid)
    msgs = b"".join(gossip_rpc(TOPIC, snappy_block(struct.pack("<I", i))) for i in range(2500))
    a += ystream(2 * 1200 + 1, MESHSUB, gossip_rpc(TOPIC, None, subscribe=True) + msgs)
    return l2p_conn(YAMUX_ID, bytes(a), bytes(b))


def eth2_nest() -> list[tuple[str, bytes]]:
    ping = uvarint(8) + snappy_framed(struct.pack("<Q", 7))
    return nested_conn(1000, eth2_req("ping"), ping, b"\x00" + ping, pattern=("yamux", "mplex"))


def eth2_varint() -> list[tuple[str, bytes]]:
    f8 = snappy_framed(bytes(8))
    a = bytearray()
    b = bytearray()
    cases = [  # (request, response) on a ping stream each
        (uvarint_long(8, 10) + f8, b"\x00" + uvarint_long(8, 4) + f8),            # non-canonical
        (U64_MAX_VARINT + f8, b"\x00" + U64_MAX_VARINT + f8),                     # 2^64-1
        (OVERLONG_VARINT + f8, b"\x00" + OVERLONG_VARINT + f8),                   # 11 bytes
        (uvarint(10 * MIB) + f8, b"\x00" + uvarint(10 * MIB) + f8),               # claims 10 MiB, 8 present
        (b"\x80\x80", b"\x00\x80"),                                               # cut inside
        (uvarint(8) + f8[:10] + b"\x00\xff\xff\xff" + bytes(4),                   # a frame claiming 16 MiB
         b"\x00" + uvarint(8) + f8[:10] + b"\x00\x10\x00\x00" + bytes(4) + b"\xfe\xff\xff\xff\x0f"),
    ]
    for i, (req, resp) in enumerate(cases):
        sid = 2 * i + 1
        a += ystream(sid, eth2_req("ping"), req) + yamux(FIN, sid)
        b += ystream(sid, eth2_req("ping"), resp, opener=False) + yamux(FIN, sid)
    # by_range (v2, with context): the result byte then the uvarint after the fork digest
    a += ystream(21, BY_RANGE, uvarint(24) + snappy_framed(bytes(24)))
    b += ystream(21, BY_RANGE, b"\x00" + DIGEST + U64_MAX_VARINT + f8 + b"\x00" + DIGEST[:2], opener=False)
    # gossip: RPC length and protobuf lengths at their limits
    rpc_bad = pb_field(2, 2, b"\x12" + U64_MAX_VARINT + b"d") + b"\x0a" + uvarint(1 << 30)
    a += ystream(23, MESHSUB, U64_MAX_VARINT + b"\x0a\x00" + uvarint(len(rpc_bad)) + rpc_bad
                 + uvarint_long(3, 10) + b"\x0a\x01\x00" + uvarint(1 << 24) + b"\x12")
    return l2p_conn(YAMUX_ID, bytes(a), bytes(b))


def eth2_cardinality() -> list[tuple[str, bytes]]:
    rng = random.Random(2222)
    a, b = bytearray(), bytearray()
    ping = uvarint(8) + snappy_framed(bytes(8))
    for i in range(800):
        sid = 2 * i + 1
        proto = eth2_req(rand_name(rng, rng.randrange(3, 30)), rng.randrange(1, 9))
        a += ystream(sid, proto, ping) + yamux(FIN, sid)
        b += ystream(sid, proto, b"\x00" + ping, opener=False) + yamux(FIN, sid)
    topics = [f"/eth2/{rng.randbytes(4).hex()}/{rand_name(rng, rng.randrange(3, 30))}/ssz_snappy" for _ in range(1200)]
    rpcs = b"".join(gossip_rpc(t, snappy_block(b"x" * 8), subscribe=True) for t in topics)
    a += ystream(2 * 800 + 1, MESHSUB, rpcs)
    return l2p_conn(YAMUX_ID, bytes(a), bytes(b))


# -- the libp2p compression transport (gzip, brotli): one stream per direction


GZIP_HDR = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
EMPTY_YAMUX = yamux(0, 1)   # 12 bytes: a data frame of no bytes on stream 1


def comp_conn(proto: str, a: bytes, b: bytes, segment: int = 0) -> list[tuple[str, bytes]]:
    out = [("a", MS + ms(proto)), ("b", MS + ms(proto))]
    if segment:  # each flush unit of A in its own segment
        out += [("a", a[i:i + segment]) for i in range(0, len(a), segment)]
    else:
        out.append(("a", a))
    if b:
        out.append(("b", b))
    return out


def muxer_start(sid_data: bytes = b"") -> bytes:
    return MS + ms(YAMUX_ID) + sid_data


def gz(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return GZIP_HDR + c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)


def comp_bomb_gzip() -> list[tuple[str, bytes]]:
    # 128 MiB of empty yamux frames after the muxer's negotiation: ~260 KB (deflate's 1:500 here)
    start = muxer_start(ystream(1, "/ipfs/ping/1.0.0"))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = GZIP_HDR + c.compress(start) + c.flush(zlib.Z_SYNC_FLUSH)
    unit = EMPTY_YAMUX * (MIB // len(EMPTY_YAMUX))
    body = [c.compress(unit) for _ in range(128)] + [c.flush(zlib.Z_SYNC_FLUSH)]
    return comp_conn("/compression/gzip", head + b"".join(body), gz(muxer_start()))


def comp_bomb_brotli() -> list[tuple[str, bytes]]:
    # 1 GiB of empty yamux frames: ~5 KB (brotli's ratio on a 12-byte period has no ceiling
    # in practice)
    import brotli
    c = brotli.Compressor(quality=5)
    out = [c.process(muxer_start(ystream(1, "/ipfs/ping/1.0.0"))), c.flush()]
    unit = EMPTY_YAMUX * (MIB // len(EMPTY_YAMUX))
    out += [c.process(unit) for _ in range(1024)] + [c.flush()]
    return comp_conn("/compression/cbrotli", b"".join(out), b"")


def comp_flood() -> list[tuple[str, bytes]]:
    # 3,000 flush units, each a tiny yamux stream of its own in its own segment
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    units = [GZIP_HDR + c.compress(muxer_start()) + c.flush(zlib.Z_SYNC_FLUSH)]
    for i in range(3000):
        units.append(c.compress(yamux(SYN, 2 * i + 1, type_=1) if i % 2 else
                                ystream(2 * i + 1, "/ipfs/ping/1.0.0", bytes(32)))
                     + c.flush(zlib.Z_SYNC_FLUSH))
    out = [("a", MS + ms("/compression/gzip")), ("b", MS + ms("/compression/gzip"))]
    out += [("a", u) for u in units]
    out.append(("b", gz(muxer_start())))
    return out


def comp_frames() -> list[tuple[str, bytes]]:
    # Two gzip segments of ~60 KB, each inflating to 1,000,000 muxer frames (12 MB, ~190:1,
    # under the ratio bound): window updates and empty data frames, and in the first a quarter
    # one-byte data frames: 250,000 bytes on a ping stream (within its 256 KiB window), 7,812
    # pings in one frame.
    rng = random.Random(7007)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [("a", MS + ms("/compression/gzip")), ("b", MS + ms("/compression/gzip")),
           ("a", GZIP_HDR + c.compress(muxer_start(ystream(1, "/ipfs/ping/1.0.0"))) + c.flush(zlib.Z_SYNC_FLUSH))]
    for seg in range(2):
        unit = bytearray()
        for i in range(1_000_000):
            if i % 200 == 1:
                unit += yamux(0, 1, type_=1, length=rng.getrandbits(16))
            else:
                unit += yamux(0, 1, b"\0") if seg == 0 and i % 4 == 0 else EMPTY_YAMUX
        out.append(("a", c.compress(bytes(unit)) + c.flush(zlib.Z_SYNC_FLUSH)))
    return out


def comp_nest() -> list[tuple[str, bytes]]:
    """Compression negotiated again inside the decompressed stream, 60 levels, gzip and brotli
    in turn, with yamux-in-yamux at the bottom."""
    import brotli

    def wrap(depth: int, leaf: bytes) -> bytes:
        inner = leaf
        for level in range(depth):
            if level % 2:
                inner = MS + ms("/compression/cbrotli") + brotli.compress(inner, quality=5)
            else:
                inner = MS + ms("/compression/gzip") + gz(inner)
        return inner
    leaf_a = muxer_start(nest(50, "/ipfs/ping/1.0.0", bytes(32), True))
    leaf_b = muxer_start(nest(50, "/ipfs/ping/1.0.0", bytes(32), False))
    a, b = wrap(60, leaf_a), wrap(60, leaf_b)
    return [("a", a), ("b", b)]


def comp_varint() -> list[tuple[str, bytes]]:
    inner = (MS + uvarint_long(len(YAMUX_ID) + 1, 10) + YAMUX_ID.encode() + b"\n"   # non-canonical, 10 bytes
             + yamux(SYN, 1, MS + U64_MAX_VARINT + b"/x\n")
             + yamux(SYN, 3, MS + OVERLONG_VARINT)
             + yamux(SYN, 5, MS + uvarint(1 << 20) + b"/short\n")
             + yamux(0, 7, b"abc", length=0xFFFFFFFF))
    # B: a gzip header whose FEXTRA length claims 65,535 bytes, then a never-ended FNAME
    b = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\xff\xff" + b"x" * 40 + b"\x1f\x8b\x08\x08" + b"n" * 30
    return comp_conn("/compression/gzip", gz(inner), b)


def comp_cardinality() -> list[tuple[str, bytes]]:
    rng = random.Random(6006)
    streams = bytearray()
    for i in range(2000):
        proto = "/" + rand_name(rng, rng.randrange(1, 40)) + "/1.0.0"
        streams += ystream(2 * i + 1, proto, rng.randbytes(3)) + yamux(FIN, 2 * i + 1)
    # and the transport's own negotiation: random compression IDs refused before gzip
    refused = b"".join(ms("/compression/" + rand_name(rng, rng.randrange(1, 20))) for _ in range(300))
    na = ms("na") * 300
    return [("a", MS + refused), ("b", MS + na), ("a", ms("/compression/gzip")), ("b", ms("/compression/gzip")),
            ("a", gz(muxer_start(bytes(streams)))), ("b", gz(muxer_start()))]


def cases() -> list[Case]:
    c = [
        Case("bomb-btc-lzo1x", "bitcoin", "bomb", "LZO1X-999 of zeros: 2 cblocks at the 16 MB bound, one of 20 MiB, a ctxcat of 2 MiB",
             btc_bomb("lzo1x"), BTC_PORTS),
        Case("bomb-btc-zlib", "bitcoin", "bomb", "the same in zlib level 9 under the 2015 draft's service bit 28",
             btc_bomb("zlib"), BTC_PORTS),
        Case("bomb-btc-items", "bitcoin", "bomb", "a cblock of 266,000 minimal transactions (some 4,000,000 tree items), then 100 pings",
             btc_bomb_items, BTC_PORTS),
        Case("flood-btc", "bitcoin", "flood", "8,000 tiny messages (ping, empty txcat, verack)", btc_flood, BTC_PORTS),
        Case("varint-btc", "bitcoin", "varint", "CompactSize non-canonical, 2^64-1, cut; payload lengths past MAX_SIZE and the capture",
             btc_varint, BTC_PORTS),
        Case("cardinality-btc", "bitcoin", "cardinality", "6,000 random command names", btc_cardinality, BTC_PORTS),
        Case("bomb-fisco2-snappy", "fisco2", "bomb", "Snappy of 4 MiB of zeros (21:1) both ways, preambles past 100 MiB and at 4 GiB",
             fisco2_bomb, FISCO_PORTS),
        Case("flood-fisco2", "fisco2", "flood", "10,000 messages of 0-1 payload bytes", fisco2_flood, FISCO_PORTS),
        Case("varint-fisco2", "fisco2", "varint", "Snappy preambles of 5, 10 and 11 bytes, RLP and header lengths past the data",
             fisco2_varint, FISCO_PORTS),
        Case("cardinality-fisco2", "fisco2", "cardinality", "4,000 random group/module pairs, 6,000 random AMOP topics",
             fisco2_cardinality, FISCO_PORTS),
        Case("bomb-fisco3-zstd", "fisco3", "bomb", "zstd RLE frames: 4 at the 32 MiB bound, 1 GiB in 32 KB, content sizes that lie",
             fisco3_bomb, FISCO_PORTS),
        Case("flood-fisco3", "fisco3", "flood", "3,000 heartbeats, 800 tiny P2P messages", fisco3_flood, FISCO_PORTS),
        Case("varint-fisco3", "fisco3", "varint", "protobuf varints of 10 and 11 bytes, lengths past the data, cut headers",
             fisco3_varint, FISCO_PORTS),
        Case("cardinality-fisco3", "fisco3", "cardinality", "1,000 random modules and groups, 1,500 random packet types and versions",
             fisco3_cardinality, FISCO_PORTS),
        Case("bomb-eth2-snappy", "eth2", "bomb", "by_range/2 chunk of 4 MiB (framed Snappy, 21:1), 10 and 11 MiB claims, a 2 MiB gossip block",
             eth2_bomb, LIBP2P_PORTS),
        Case("flood-eth2", "eth2", "flood", "1,200 ping streams and 2,500 gossip messages", eth2_flood, LIBP2P_PORTS),
        Case("nest-eth2", "eth2", "nest", "a ping stream under 1,000 levels of yamux and mplex", eth2_nest, LIBP2P_PORTS),
        Case("varint-eth2", "eth2", "varint", "req/resp and gossip lengths: non-canonical, 10 and 11 bytes, claims past the data",
             eth2_varint, LIBP2P_PORTS),
        Case("cardinality-eth2", "eth2", "cardinality", "800 random req/resp methods, 1,200 random gossip topics",
             eth2_cardinality, LIBP2P_PORTS),
        Case("flood-yamux", "libp2p", "flood", "3,000 yamux streams (a third never used)", libp2p_flood, LIBP2P_PORTS),
        Case("flood-mplex", "libp2p", "flood", "3,000 mplex streams", libp2p_flood_mplex, LIBP2P_PORTS),
        Case("flood-quic", "libp2p", "flood", f"{QUIC_STREAMS:,} QUIC streams ended both ways, then a late copy of "
             "the first", None, (40001, 4001), write=libp2p_quic_churn),
        Case("nest-yamux", "libp2p", "nest", "yamux in yamux, 2,000 levels", libp2p_nest, LIBP2P_PORTS),
        Case("nest-mixed", "libp2p", "nest", "yamux and mplex in turn, 600 levels", libp2p_nest_mixed, LIBP2P_PORTS),
        Case("varint-yamux", "libp2p", "varint", "multistream and mplex uvarints, yamux lengths and ids at 2^32-1",
             libp2p_varint, LIBP2P_PORTS),
        Case("varint-mplex", "libp2p", "varint", "mplex headers of 10 and 11 bytes, lengths past the data", libp2p_varint_mplex,
             LIBP2P_PORTS),
        Case("varint-plaintext", "libp2p", "varint", "/plaintext/2.0.0 peer IDs of 64 KiB, 1 MiB and 2^64-1 bytes claimed",
             libp2p_varint_plaintext, LIBP2P_PORTS),
        Case("cardinality-libp2p", "libp2p", "cardinality", "2,000 streams with random protocol IDs", libp2p_cardinality,
             LIBP2P_PORTS),
        Case("bomb-comp-gzip", "compression", "bomb", "gzip: 128 MiB of empty yamux frames in ~260 KB", comp_bomb_gzip,
             LIBP2P_PORTS),
        Case("bomb-comp-brotli", "compression", "bomb", "brotli: 1 GiB of empty yamux frames in ~5 KB", comp_bomb_brotli,
             LIBP2P_PORTS),
        Case("flood-comp", "compression", "flood", "3,000 gzip flush units, one segment each", comp_flood, LIBP2P_PORTS),
        Case("bomb-comp-frames", "compression", "bomb", "2 gzip segments of 1,000,000 muxer frames each (12 MB, ~190:1)",
             comp_frames, LIBP2P_PORTS, segment=65000),
        Case("nest-comp", "compression", "nest", "gzip and brotli negotiated inside each other 60 levels, 50 of yamux under",
             comp_nest, LIBP2P_PORTS),
        Case("varint-comp", "compression", "varint", "uvarints inside the gzip stream; a gzip header whose FEXTRA claims 64 KiB",
             comp_varint, LIBP2P_PORTS),
        Case("cardinality-comp", "compression", "cardinality", "300 refused random compression IDs, 2,000 random stream protocols",
             comp_cardinality, LIBP2P_PORTS),
    ]
    return c


def generate(outdir: Path, families: list[str] | None = None, kinds: list[str] | None = None) -> list[Case]:
    """Write each selected case to outdir/NAME.pcap (seeded: the same bytes every run)."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    for case in cases():
        if (families and case.family not in families) or (kinds and case.kind not in kinds):
            continue
        if case.write:
            case.path = outdir / f"{case.name}.pcapng"
            case.payload_bytes = case.write(case.path)
        else:
            case.path = outdir / f"{case.name}.pcap"
            case.payload_bytes = tcp_pcap(case.path, case.build(), case.ports, syn="a", mss=case.mss)
        made.append(case)
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--family", action="append", choices=FAMILIES)
    ap.add_argument("--kind", action="append", choices=KINDS)
    args = ap.parse_args()
    for c in generate(args.outdir, args.family, args.kind):
        print(f"{c.path}\t{c.family}\t{c.kind}\t{c.path.stat().st_size}\t{c.payload_bytes}\t{c.what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
