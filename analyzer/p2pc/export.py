"""The per-message records as a Parquet file (`p2pc records CAPTURE -o records.parquet`): one
row per P2P message, columns named as the record's fields (docs/tap-format.md), written in
row groups as tshark streams them, so memory does not grow with the capture.  mux_stream is
null for a message not carried in a muxed stream; reason is empty but for undecoded bytes whose
cause is known."""
from __future__ import annotations

import sys
from pathlib import Path

from .errors import NoP2PTraffic, UsageError
from .output.emit import output_path
from .progress import CaptureProgress
from .records import Message, open_wireshark, read_capture
from .tsharkopts import TsharkOptions

# The record's fields in the order the file holds them, with their Arrow types.
COLUMNS = [("proto", "string"), ("msg_type", "string"), ("codec", "string"),
           ("wire_len", "int64"), ("header_len", "int64"), ("payload_len", "int64"),
           ("raw_len", "int64"), ("batch_count", "int64"), ("frame", "int64"),
           ("stream", "int64"), ("src", "string"), ("srcport", "int64"), ("dst", "string"),
           ("dstport", "int64"), ("time", "float64"), ("mux_stream", "int64"),
           ("mux_frames", "int64"), ("snappy_chunks", "int64"), ("reason", "string")]
ROW_GROUP = 65_536


class ParquetRecords:
    """`with ParquetRecords(path) as out: out.add(message)`."""

    def __init__(self, path: str):
        import pyarrow as pa
        import pyarrow.parquet as pq
        self.pa = pa
        self.schema = pa.schema([(name, getattr(pa, typ)()) for name, typ in COLUMNS])
        self.writer = pq.ParquetWriter(path, self.schema, compression="zstd")
        self.buf: dict[str, list] = {name: [] for name, _ in COLUMNS}
        self.count = 0

    def add(self, m: Message) -> None:
        for name, col in self.buf.items():
            col.append(getattr(m, name))
        self.count += 1
        if len(self.buf["proto"]) >= ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if self.buf["proto"]:
            self.writer.write_table(self.pa.table(self.buf, schema=self.schema))
            self.buf = {name: [] for name in self.buf}

    def __enter__(self) -> "ParquetRecords":
        return self

    def __exit__(self, *exc) -> None:
        self.flush()
        self.writer.close()


def write(capture: str, plugin: str | None, opts: TsharkOptions, path: str | None) -> bool:
    """`p2pc records`: the capture's records as a Parquet file at `path` (None: stdout); whether
    the capture was cut short (said on stderr).  With no P2P message, no file is left."""
    ws = open_wireshark(plugin)
    try:
        target = output_path(path) if path else sys.stdout.buffer
        with CaptureProgress([capture]) as bar, ParquetRecords(target) as out:
            res = read_capture(ws, capture, out.add, lambda t: None, opts=opts)
            bar.done(capture)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        ws.cleanup()
    if not res.messages:
        if path:
            Path(path).unlink(missing_ok=True)
        raise NoP2PTraffic(f"no P2P messages found in {capture}")
    if res.truncated:
        print(f"p2pc: warning: {res.warning}", file=sys.stderr)
    return res.truncated
