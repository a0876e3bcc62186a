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
from .model import Aggregate, Sums
from .records import TcpDirection

AGGREGATE_SCHEMA = "p2pc-aggregate/2"
# /1 keyed a direction's sums by (proto, msg_type); /2 by (proto, msg_type, codec).  A /1
# aggregate still merges, its codec unknown.
AGGREGATE_SCHEMAS = ("p2pc-aggregate/1", AGGREGATE_SCHEMA)
UNKNOWN_CODEC = "unknown"
_RECORDS = {"Sums": Sums, "TcpDirection": TcpDirection}
# The aggregate maps whose values are strings (an endpoint's peer ID); every other map counts.
_TEXT_MAPS = {"peers"}


def _aggregate_classes() -> dict:
    classes = {"Aggregate": Aggregate}
    try:    # the report's extra series, when this version of the analyzer has them
        from .series import SeriesAggregate
        classes["SeriesAggregate"] = SeriesAggregate
    except ImportError:
        pass
    return classes


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


def _key(k):
    return tuple(k) if isinstance(k, list) else k


def _fill(target: dict, enc: dict, text: bool = False) -> None:
    """Decode the map `enc` into `target`; its plain values are counts (text: strings)."""
    for k, v in enc["map"]:
        k = _key(k)
        if isinstance(v, dict) and "map" in v:
            _fill(target[k], v, text)       # a nested map: the target's default factory makes it
        elif text:
            if not isinstance(v, str):
                raise ReportUnmergeable(f"a text in an aggregate is {json.dumps(v)[:40]}")
            target[k] = v
        else:
            target[k] = _dec(v)


def _count(v) -> bool:
    """A tally's value: a whole number, never negative (a sum of message and byte counts)."""
    return type(v) is int and v >= 0


# What each type a record's fields are declared with must be in the JSON (bool is not a number).
_FIELD_CHECKS = {"int": _count, "str": lambda v: isinstance(v, str),
                 "float": lambda v: type(v) in (int, float) and v >= 0}


def _dec(v):
    if isinstance(v, dict) and "record" in v:
        cls = _RECORDS.get(v["record"])
        if cls is None:
            raise ReportUnmergeable(f"unknown record type in an aggregate: {v['record']}")
        fields = v.get("fields")
        want = {f.name: f.type for f in dataclasses.fields(cls)}
        if not isinstance(fields, dict):
            raise ReportUnmergeable(f"a {v['record']} record has no fields")
        extra, missing = sorted(set(fields) - set(want)), [f for f in want if f not in fields]
        if extra or missing:
            raise ReportUnmergeable(f"a {v['record']} record " + "; ".join(
                [f"has the unknown field{'s' * (len(extra) > 1)} {', '.join(extra)}"] * bool(extra) +
                [f"lacks {', '.join(missing)}"] * bool(missing)))
        for name, x in fields.items():
            if not _FIELD_CHECKS[want[name]](x):
                raise ReportUnmergeable(f"a {v['record']} record's {name} is {json.dumps(x)[:40]}, "
                                        f"not a{' non-negative' if want[name] != 'str' else ''} "
                                        f"{want[name]}")
        return cls(**fields)
    if not (_count(v) or isinstance(v, list) and all(_count(x) for x in v)):
        raise ReportUnmergeable(f"a tally in an aggregate is {json.dumps(v)[:40]}, not a count")
    return v


def aggregate_from_json(d: dict) -> Aggregate:
    """The Aggregate `d` encodes; ReportUnmergeable for anything but the sums this version
    writes (a field missing or unknown, a sum that is not a non-negative whole number)."""
    if not isinstance(d, dict) or d.get("schema") not in AGGREGATE_SCHEMAS:
        raise ReportUnmergeable("not a p2pc aggregate")
    if not isinstance(d.get("fields"), dict):
        raise ReportUnmergeable("the aggregate has no fields")
    classes = _aggregate_classes()
    cls = classes.get(d.get("class"), Aggregate)
    agg = cls()
    names = {f.name for f in dataclasses.fields(agg)}
    try:
        for name, v in d["fields"].items():
            if name not in names:
                continue        # a tally this version does not keep
            cur = getattr(agg, name)
            if isinstance(cur, dict):
                _fill(cur, v, text=name in _TEXT_MAPS)
            else:
                setattr(agg, name, list(v) if isinstance(v, list) else v)
    except (TypeError, ValueError, KeyError, AttributeError) as e:   # a map not shaped as written
        raise ReportUnmergeable(f"the aggregate's {name} is not as p2pc writes it ({type(e).__name__}: {e})") from None
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
    """Add up the aggregates of saved reports, in the order given."""
    parts = [load_report_aggregate(p) for p in paths]
    classes = list(_aggregate_classes().values())
    cls = classes[-1] if any(type(a) is classes[-1] for a, _ in parts) else Aggregate
    total = cls()
    seen: set = set()
    for path, (a, _) in zip(paths, parts):
        files = {d[0] for d in a.by_dir} | {d[0] for d in a.tcp}
        if files & seen:    # the same capture name in two reports (two machines' capture.pcapng)
            a = rename_files(a, {f: f"{path}:{f}" for f in files})
        seen |= {d[0] for d in a.by_dir} | {d[0] for d in a.tcp}
        total.merge(a)
    return total, [r for _, r in parts]


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
