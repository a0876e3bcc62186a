"""Saved reports that merge exactly: the accounting behind a report, as JSON.

`p2pc analyze --format json` adds an `aggregate` object to its report: the integer sums per
connection direction (and the size, ratio and bandwidth tallies) that every figure of the report
is computed from (model.Aggregate).  `p2pc merge A.json B.json ...` reads them back, adds them up
(Aggregate.merge) and computes the report again, so merging the reports of two captures gives
the report of analyzing both together.  Only plain JSON is read: maps, lists, numbers, strings,
and the two record types by name; nothing is executed.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Iterator

from .errors import ReportUnmergeable
from .model import SIZE_RANGES, Aggregate, Sums
from .records import TcpDirection
from .series import SeriesAggregate

AGGREGATE_SCHEMA = "p2pc-aggregate/2"
# /1 keyed a direction's sums by (proto, msg_type); /2 by (proto, msg_type, codec).  A /1
# aggregate still merges, its codec unknown.
AGGREGATE_SCHEMAS = ("p2pc-aggregate/1", AGGREGATE_SCHEMA)
UNKNOWN_CODEC = "unknown"
_RECORDS = {"Sums": Sums, "TcpDirection": TcpDirection}


# The aggregate classes a saved aggregate may name (SeriesAggregate: analyze's, with the report's
# extra series).
_AGGREGATES = {"Aggregate": Aggregate, "SeriesAggregate": SeriesAggregate}


def _enc(v):
    if isinstance(v, dict):
        return {"map": [[list(k) if isinstance(k, tuple) else k, _enc(x)] for k, x in v.items()]}
    if dataclasses.is_dataclass(v):
        return {"record": type(v).__name__,
                "fields": {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}}
    if isinstance(v, tuple):
        return list(v)
    return v


class AggregateJSON:
    """An Aggregate as a report's `aggregate` member (schema p2pc-aggregate/1), encoded compact
    piece by piece as the report is written: one map entry (a connection direction, a tally)
    at a time, so its text is never whole in memory."""

    def __init__(self, agg: Aggregate):
        self.agg = agg

    def chunks(self) -> Iterator[str]:
        dump = functools.partial(json.dumps, separators=(",", ":"))
        yield dump({"schema": AGGREGATE_SCHEMA, "class": type(self.agg).__name__})[:-1] + ',"fields":{'
        for i, f in enumerate(dataclasses.fields(self.agg)):
            v = getattr(self.agg, f.name)
            yield ("," if i else "") + dump(f.name) + ":"
            if isinstance(v, dict):
                yield '{"map":['
                for j, (k, x) in enumerate(v.items()):
                    yield ("," if j else "") + dump([list(k) if isinstance(k, tuple) else k, _enc(x)])
                yield "]}"
            else:
                yield dump(_enc(v))
        yield "}}"


# A sum p2pc keeps counts messages, bytes or seconds: a 64-bit count, as tshark's are.
MAX_COUNT = 2**63 - 1


def _count(v) -> bool:
    """A tally's value: a whole number, never negative, within 64 bits."""
    return type(v) is int and 0 <= v <= MAX_COUNT


def _not_count(v) -> str:
    """Why `v` is no count, for the one line merge prints."""
    if type(v) is int and v > MAX_COUNT:
        return "past any count p2pc writes (2^63)"
    return "not a non-negative int"


def _show(v) -> str:
    return json.dumps(v)[:40]


def _text(v) -> bool:
    return isinstance(v, str)


def _port(v) -> bool:
    return type(v) is int and 0 <= v <= 65535


def _size_range(v) -> bool:
    return type(v) is int and 0 <= v < len(SIZE_RANGES)


def _tuple(*checks):
    """A key written as a list of len(checks) parts, each passing its check."""
    return lambda k: isinstance(k, list) and len(k) == len(checks) and all(c(x) for c, x in zip(checks, k))


def _list(check, lengths=None):
    """A list of values passing `check`, of one of `lengths` (None: any length)."""
    return ("list", check, lengths)


# Each aggregate field as p2pc writes it: ("map", key check, value shape), a list, a record
# type's name, or a check of a plain value.  A field not here is one this version does not keep.
_DIRECTION = _tuple(_text, _count, _text, _port)        # (file, stream, src, srcport)
_SHAPES = {
    "by_dir": ("map", _DIRECTION, ("map", lambda k: _tuple(_text, _text, _text)(k) or _tuple(_text, _text)(k),
                                   "Sums")),
    "tcp": ("map", _DIRECTION, "TcpDirection"),
    "sizes": ("map", _tuple(_text, _text, _size_range), _list(_count, (3,))),
    "ratios": ("map", _tuple(_text, _text, _count), _count),
    "bandwidth": ("map", _tuple(_count, _text), _count),                 # (bin start second, endpoints)
    "bandwidth_bin": lambda v: _count(v) and v > 0 and v & (v - 1) == 0,  # seconds, a power of two
    "span": _list(_count, (0, 2)),
    "peers": ("map", _DIRECTION, _text),
    "conformance": ("map", _tuple(_text, _text), _list(_count, (2,))),  # (file, check): [failures, frame]
    # (src, kind, topic): [count, message IDs, bytes, duplicates, duplicate bytes, sent after
    # IDONTWANT, their bytes, IDONTWANT saved, its bytes]
    "gossip": ("map", _tuple(_text, _text, _text), _list(_count, (9,))),
    # (proto, layer, kind): bytes (a part of a capture may hold a message's take of bytes an
    # earlier part reported: negative)
    "budget": ("map", _tuple(_text, _text, _text), lambda v: type(v) is int and abs(v) <= MAX_COUNT),
    "files": _list(_text),
    "warnings": _list(_text),
    "size_ratios": ("map", _tuple(_size_range, _count), _count),
}


# What each type a record's fields are declared with must be in the JSON (bool is not a number).
_FIELD_CHECKS = {"int": _count, "str": _text,
                 "float": lambda v: type(v) in (int, float) and 0 <= v <= MAX_COUNT}


def _record(name: str, v):
    cls = _RECORDS[name]
    if not isinstance(v, dict) or v.get("record") != name:
        raise ReportUnmergeable(f"{_show(v)} where a {name} record belongs")
    fields = v.get("fields")
    want = {f.name: f.type for f in dataclasses.fields(cls)}
    if not isinstance(fields, dict):
        raise ReportUnmergeable(f"a {name} record has no fields")
    extra, missing = sorted(set(fields) - set(want)), [f for f in want if f not in fields]
    if extra or missing:
        raise ReportUnmergeable(f"a {name} record " + "; ".join(
            [f"has the unknown field{'s' * (len(extra) > 1)} {', '.join(extra)}"] * bool(extra) +
            [f"lacks {', '.join(missing)}"] * bool(missing)))
    for field, x in fields.items():
        if not _FIELD_CHECKS[want[field]](x):
            why = "not a str" if want[field] == "str" else _not_count(x).replace(" int", f" {want[field]}")
            raise ReportUnmergeable(f"a {name} record's {field} is {_show(x)}, {why}")
    return cls(**fields)


def _decode(shape, v, target=None):
    """`v` as the aggregate holds it (maps filled into `target`, which makes nested maps with
    its default factory), or ReportUnmergeable saying what in it p2pc does not write."""
    if isinstance(shape, str):
        return _record(shape, v)
    if callable(shape):
        if not shape(v):
            raise ReportUnmergeable(f"{_show(v)}, " + (_not_count(v) if type(v) is int else "not as p2pc writes it"))
        return v
    if shape[0] == "list":
        _, check, lengths = shape
        if not isinstance(v, list) or lengths is not None and len(v) not in lengths:
            many = " or ".join(map(str, lengths)) + " " if lengths else ""
            raise ReportUnmergeable(f"{_show(v)}, not a list of {many}values")
        for x in v:
            _decode(check, x)
        return list(v)
    _, key_ok, value_shape = shape
    if not isinstance(v, dict) or set(v) != {"map"} or not isinstance(v["map"], list):
        raise ReportUnmergeable(f"{_show(v)}, not a map")
    for entry in v["map"]:
        if not isinstance(entry, list) or len(entry) != 2:
            raise ReportUnmergeable(f"a map entry {_show(entry)}, not a [key, value] pair")
        k, x = entry
        if not key_ok(k):
            raise ReportUnmergeable(f"a key {_show(k)}, not as p2pc writes it")
        k = tuple(k) if isinstance(k, list) else k
        if isinstance(value_shape, tuple) and value_shape[0] == "map":
            _decode(value_shape, x, target[k])
        else:
            target[k] = _decode(value_shape, x)
    return target


def aggregate_from_json(d: dict) -> Aggregate:
    """The Aggregate `d` encodes; ReportUnmergeable for anything but what this version writes
    (a field missing or unknown, a sum that is not a non-negative 64-bit whole number, a key, a
    list or a record not shaped as written)."""
    if not isinstance(d, dict) or d.get("schema") not in AGGREGATE_SCHEMAS:
        raise ReportUnmergeable("not a p2pc aggregate")
    if not isinstance(d.get("fields"), dict):
        raise ReportUnmergeable("the aggregate has no fields")
    cls = _AGGREGATES.get(d.get("class"), Aggregate)
    agg = cls()
    names = {f.name for f in dataclasses.fields(agg)}
    for name, v in d["fields"].items():
        if name not in names or name not in _SHAPES:
            continue        # a tally this version does not keep
        cur = getattr(agg, name)
        try:
            decoded = _decode(_SHAPES[name], v, cur if isinstance(cur, dict) else None)
        except ReportUnmergeable as e:
            raise ReportUnmergeable(f"the aggregate's {name}: {e}") from None
        if not isinstance(cur, dict):
            setattr(agg, name, decoded)
    if d["schema"] != AGGREGATE_SCHEMA:
        for types in agg.by_dir.values():
            for k in [k for k in types if len(k) == 2]:
                types[(*k, UNKNOWN_CODEC)] = types.pop(k)
    return agg


def load_report_aggregate(path: str) -> tuple[Aggregate, dict]:
    """The Aggregate a saved `analyze --format json` report carries, and the report."""
    try:
        rep = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ReportUnmergeable(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise ReportUnmergeable(f"{path}: not a JSON report ({e})") from None
    if not isinstance(rep, dict) or rep.get("command") != "analyze" or "aggregate" not in rep:
        raise ReportUnmergeable(f"{path}: not a `p2pc analyze --format json` report with its "
                                "aggregate (write it again with this version of p2pc)")
    try:
        return aggregate_from_json(rep["aggregate"]), rep
    except ReportUnmergeable as e:
        raise ReportUnmergeable(f"{path}: {e}") from None


def merge_reports(paths: list[str]) -> tuple[Aggregate, list[dict]]:
    """Add up the aggregates of saved reports, in the order given.  The same report given twice
    (by one path or two, or a copy: the same captures' sums) is refused: its counts would be
    added twice."""
    parts = [load_report_aggregate(p) for p in paths]
    for i, (_, rep) in enumerate(parts):
        for j in range(i):
            if parts[j][1]["aggregate"] == rep["aggregate"] and parts[j][1].get("files") == rep.get("files"):
                again = "given twice" if Path(paths[i]).resolve() == Path(paths[j]).resolve() \
                    else f"as {paths[j]} (the same captures' sums)"
                raise ReportUnmergeable(f"{paths[i]}: the same report {again}: its counts would be added "
                                        "twice; give each report once")
    cls = SeriesAggregate if any(type(a) is SeriesAggregate for a, _ in parts) else Aggregate
    total = cls()
    seen: set = set()
    for path, (a, _) in zip(paths, parts):
        files = {d[0] for d in a.by_dir} | {d[0] for d in a.tcp}
        if files & seen:    # the same capture name in two reports (two machines' capture.pcapng)
            a = rename_files(a, {f: f"{path}:{f}" for f in files})
        seen |= {d[0] for d in a.by_dir} | {d[0] for d in a.tcp}
        total.merge(a)
    return total, [r for _, r in parts]


def shard_key(capture: str, i: int) -> str:
    """The capture part of the connection keys of a capture's i-th shard (shards' tshark stream
    numbers overlap; rename_files)."""
    return f"{capture}#{i}"


def capture_of(key: str, captures: set[str]) -> str:
    """The capture a connection key's capture part stands for: one of `captures`, or the one a
    shard_key() was made from (else the key itself)."""
    return key if key in captures else next((c for c in captures if key.startswith(f"{c}#")), key)


def rename_files(agg: Aggregate, names: dict) -> Aggregate:
    """The same Aggregate with the capture part of its connection keys renamed (a shard's keys
    after the capture it came from; two reports' keys apart when their captures share a name),
    so that tshark's stream numbers, which restart in every file, never meet."""
    out = dataclasses.replace(agg)
    out.by_dir = type(agg.by_dir)(agg.by_dir.default_factory)
    for (f, *rest), types in agg.by_dir.items():
        out.by_dir[(names.get(f, f), *rest)] = types
    out.tcp = {(names.get(f, f), *rest): t for (f, *rest), t in agg.tcp.items()}
    out.peers = {(names.get(f, f), *rest): p for (f, *rest), p in agg.peers.items()}
    return out
