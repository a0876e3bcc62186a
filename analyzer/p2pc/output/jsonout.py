"""JSON: the report dict itself (schema p2pc-report/1).

Indented for reading, except the `aggregate` (the sums `p2pc merge` reads back, one entry per
connection direction): compact, and when it is a merge.AggregateJSON, encoded piece by piece as
it is written (`chunks`), so a report of many connections is never whole in memory."""
import json
from typing import Iterator


def chunks(report: dict) -> Iterator[str]:
    head = json.dumps({k: v for k, v in report.items() if k != "aggregate"}, indent=2)
    if "aggregate" not in report:
        yield head + "\n"
        return
    yield head[:-2] + ',\n  "aggregate": '
    agg = report["aggregate"]
    if hasattr(agg, "chunks"):
        yield from agg.chunks()
    else:
        yield json.dumps(agg, separators=(",", ":"))
    yield "\n}\n"


def render(report: dict) -> str:
    return "".join(chunks(report))
