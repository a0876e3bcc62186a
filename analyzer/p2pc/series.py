"""Plot data for the reports' figures (`report["series"]`), from the accounting's sums.

SeriesAggregate is the accounting's Aggregate plus the compression-ratio histogram per message
size range (the seeds' CDF is drawn per size range); it merges exactly, like Aggregate.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .model import RATIO_BIN, SIZE_RANGES, Aggregate, size_range, size_range_label
from .records import Message


def _ratio_map() -> defaultdict:
    return defaultdict(int)


@dataclass
class SeriesAggregate(Aggregate):
    # (size range index, ratio bin) -> messages, ratio = raw / sent (compressed messages)
    size_ratios: dict = field(default_factory=_ratio_map)

    def add_message(self, file: str, m: Message) -> None:
        super().add_message(file, m)
        if m.codec != "none" and m.payload_len > 0:
            self.size_ratios[(size_range(m.raw_len), int(m.raw_len / m.payload_len / RATIO_BIN))] += 1

    def merge(self, o: Aggregate) -> None:
        super().merge(o)
        for k, v in getattr(o, "size_ratios", {}).items():
            self.size_ratios[k] += v


def _cdf(bins: dict) -> list:
    total, acc, pts = sum(bins.values()), 0, []
    for b in sorted(bins):
        acc += bins[b]
        pts.append((round(b * RATIO_BIN, 2), acc / total))
    return pts


def _by_size(agg: Aggregate) -> dict:
    """{size range index: {ratio bin: compressed messages}}."""
    per: dict = defaultdict(dict)
    for (idx, b), n in sorted(getattr(agg, "size_ratios", {}).items()):
        per[idx][b] = n
    return per


def ratio_cdf_by_size(agg: Aggregate) -> dict:
    """{size range label: [(ratio, fraction of that range's compressed messages ≤ ratio)]}."""
    return {size_range_label(*SIZE_RANGES[idx]): _cdf(bins) for idx, bins in sorted(_by_size(agg).items())}


def ratio_counts_by_size(agg: Aggregate) -> dict:
    """{size range label: [(ratio, compressed messages in that ratio bin)]}: how many messages
    each CDF stands on (a figure draws none from a handful)."""
    return {size_range_label(*SIZE_RANGES[idx]): [(round(b * RATIO_BIN, 2), n) for b, n in sorted(bins.items())]
            for idx, bins in sorted(_by_size(agg).items())}

