"""tools/craft.py, the fuzz gate's hostile-capture generator: each kind for each family, real
pcaps holding the TCP payload the generator says, small and the same on every run.  (No tshark:
the gate itself runs them under ASan, tools/fuzz.py --hostile-only.)"""
from __future__ import annotations

import hashlib

import dpkt
import pytest

from conftest import REPO  # noqa: F401  (puts tools/ on sys.path)
import craft


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return craft.generate(tmp_path_factory.mktemp("hostile"))


def payload(c) -> tuple[int, int]:
    """(TCP payload bytes, frames) of a case's pcap, read with dpkt; UDP's of a case that writes
    its own capture (QUIC, a pcapng)."""
    total = frames = 0
    transport = dpkt.udp.UDP if c.write else dpkt.tcp.TCP
    with open(c.path, "rb") as f:
        for _ts, buf in (dpkt.pcapng.Reader(f) if c.write else dpkt.pcap.Reader(f)):
            frames += 1
            ip = dpkt.ethernet.Ethernet(buf).data
            assert isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, transport)
            total += len(ip.data.data)
    return total, frames


def test_every_family_gets_every_kind_it_has(made):
    got = {(c.family, c.kind) for c in made}
    want = {(f, k) for f, kinds in craft.MATRIX.items() for k in kinds}
    assert got == want
    assert set(craft.MATRIX) == set(craft.FAMILIES)
    # nesting is libp2p's alone, bombs need a codec: every other pair is there
    assert all(k in craft.MATRIX[f] for f in craft.FAMILIES for k in ("flood", "varint", "cardinality"))
    assert len({c.name for c in made}) == len(made)


def test_each_capture_holds_the_bytes_it_was_made_of(made):
    for c in made:
        total, frames = payload(c)
        assert total == c.payload_bytes > 0, c.name
        assert frames >= 5, c.name                # the handshake and both sides
        assert c.path.stat().st_size < 512 * 1024, c.name


def test_bombs_are_bombs(made):
    """The ratio is the point: each bomb's payload is far smaller than what it decodes to."""
    sizes = {c.name: c.payload_bytes for c in made if c.kind == "bomb"}
    assert sizes["bomb-comp-brotli"] < 16 * 1024          # 1 GiB of yamux frames
    assert sizes["bomb-fisco3-zstd"] < 64 * 1024          # 1 GiB + 4 x 32 MiB of zstd RLE
    assert craft.zstd_rle(1 << 30)[:4] == b"\x28\xb5\x2f\xfd"
    import zstandard
    assert len(zstandard.ZstdDecompressor().decompressobj().decompress(craft.zstd_rle(3 * 131072 + 5, byte=7))) \
        == 3 * 131072 + 5


def test_varints(made):
    assert craft.uvarint_long(19, 3) == b"\x93\x80\x00"
    assert len(craft.U64_MAX_VARINT) == 10 and len(craft.OVERLONG_VARINT) == 11
    assert craft.uvarint((1 << 64) - 1) == craft.U64_MAX_VARINT


def test_the_same_bytes_every_run(made, tmp_path):
    """Every case but the QUIC one, whose keys and connection IDs are aioquic's random ones."""
    again = craft.generate(tmp_path, families=["fisco3", "libp2p"])
    first = {c.name: c.path for c in made}
    assert [c.name for c in again if c.write] == ["flood-quic"]
    for c in again:
        if not c.write:
            assert hashlib.sha256(c.path.read_bytes()).digest() == hashlib.sha256(first[c.name].read_bytes()).digest()


def test_the_quic_case_ends_with_a_late_copy(made):
    """flood-quic (every stream received, aioquic's server says: craft asserts it): its last
    datagram is a copy of an earlier one, the first stream's request sent again."""
    (c,) = [c for c in made if c.name == "flood-quic"]
    with open(c.path, "rb") as f:
        datagrams = [dpkt.ethernet.Ethernet(buf).data.data.data for _ts, buf in dpkt.pcapng.Reader(f)]
    assert datagrams[-1] in datagrams[:-1]
