"""An independent reader of the source Bitcoin data, for expected values in tests: block
hashes and txids computed here from the raw block files, never from the plugin's output."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass


def sha256d(b: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def display(h: bytes) -> str:
    return h[::-1].hex()


def _varint(b: bytes, o: int) -> tuple[int, int]:
    x = b[o]
    if x < 0xfd:
        return x, o + 1
    n = {0xfd: 2, 0xfe: 4, 0xff: 8}[x]
    return int.from_bytes(b[o + 1:o + 1 + n], "little"), o + 1 + n


@dataclass
class Tx:
    raw: bytes
    txid: str
    segwit: bool


def parse_tx(b: bytes, o: int) -> tuple[Tx, int]:
    start = o
    o += 4
    segwit = b[o] == 0 and b[o + 1] == 1
    if segwit:
        o += 2
    io_start = o
    n_in, o = _varint(b, o)
    for _ in range(n_in):
        o += 36
        n, o = _varint(b, o)
        o += n + 4
    n_out, o = _varint(b, o)
    for _ in range(n_out):
        o += 8
        n, o = _varint(b, o)
        o += n
    io_end = o
    if segwit:
        for _ in range(n_in):
            items, o = _varint(b, o)
            for _ in range(items):
                n, o = _varint(b, o)
                o += n
    o += 4
    stripped = b[start:start + 4] + b[io_start:io_end] + b[o - 4:o]
    return Tx(b[start:o], display(sha256d(stripped)), segwit), o


def block_hash(block: bytes) -> str:
    return display(sha256d(block[:80]))


def block_txs(block: bytes) -> list[Tx]:
    n, o = _varint(block, 80)
    txs = []
    for _ in range(n):
        tx, o = parse_tx(block, o)
        txs.append(tx)
    assert o == len(block), "block has bytes after its last transaction"
    return txs


def merkle_root(txids: list[str]) -> str:
    """The merkle root over display-order txids, in display order (to check txids against the
    block header's own merkle root)."""
    level = [bytes.fromhex(t)[::-1] for t in txids]
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [sha256d(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return display(level[0])


def header_merkle_root(block: bytes) -> str:
    return display(block[36:68])
