"""The reports of analyze, merge, compare and live, built from the records' aggregate as one
dict in the report schema (schema/p2pc-report-1.json) that every output format renders."""
from __future__ import annotations

from collections import defaultdict

from .encrypted import warnings as encrypted_warnings
from .errors import NoP2PTraffic
from .model import (BANDWIDTH_CELLS, RATIO_BIN, Aggregate, Row, Sums, bandwidth_table, budget_rows,
                    compute_rows, conformance_rows, family, gossip_rows, family_measured, measured_tcp, pct, size_table, totals)
from .merge import AggregateJSON, capture_of
from .peers import peer_rows
from .series import ratio_cdf_by_size, ratio_counts_by_size

SCHEMA = "p2pc-report/1"



def ratio_cdf(agg: Aggregate) -> dict:
    per = defaultdict(lambda: defaultdict(int))
    for (proto, mtype, b), n in agg.ratios.items():
        per[f"{proto} {mtype}"][b] += n
    out = {}
    for name, bins in per.items():
        total, acc, pts = sum(bins.values()), 0, []
        for b in sorted(bins):
            acc += bins[b]
            pts.append((round(b * RATIO_BIN, 2), acc / total))
        out[name] = pts
    return out


def bandwidth_series(agg: Aggregate) -> dict:
    """{capture: {src:port>dst:port: [(second, bytes per second)]}}, each capture's seconds from
    its own first message (captures taken hours apart share no empty axis); averages over the
    bins when they are wider than a second (a long capture).  A bin belongs to the capture whose
    TCP direction with those endpoints was open then (captures may reuse endpoints); one not on
    TCP (QUIC) to the only capture, else to "" (capture unknown)."""
    if not agg.bandwidth:
        return {}
    w = agg.bandwidth_bin
    files = set(agg.files)
    spans = defaultdict(list)
    for (f, *_), t in agg.tcp.items():
        f = capture_of(f, files)      # a shard's connections are its capture's
        spans[f"{t.src}:{t.srcport}>{t.dst}:{t.dstport}"].append((t.first_time, t.last_time, f))
    only = agg.files[0] if len(files) == 1 else ""
    cells: dict = defaultdict(list)
    for (t, d), v in sorted(agg.bandwidth.items()):
        f = next((f for lo, hi, f in spans.get(d, ()) if t <= hi and t + w > lo), only)
        cells[f].append((t, d, v))
    out = {}
    for f, rows in cells.items():
        t0, series = min(t for t, _, _ in rows), defaultdict(list)
        for t, d, v in rows:
            series[d].append((t - t0, v if w == 1 else v / w))
        out[f] = dict(series)
    return out
def bandwidth_warning(agg: Aggregate) -> list[str]:
    if agg.bandwidth_bin == 1:
        return []
    return [f"the bandwidth figure averages {agg.bandwidth_bin}-second bins (past "
            f"{BANDWIDTH_CELLS:,} sums of a second and a connection direction)"]


# The rules of a protocol's specification a peer broke: the p2pc.spec.* expert items.
CONFORMANCE_SECTION = {"name": "conformance", "title": "Conformance checks that failed (p2pc.spec.*)",
                       "columns": ["file", "check", "count", "first_frame"]}

# Where every byte of the P2P connections went, by layer (docs/savings-model.md, the byte budget).
BUDGET_SECTION = {"name": "budget", "title": "Bytes by protocol, layer and kind",
                  "columns": ["proto", "layer", "kind", "bytes", "pct"]}

# Where the gossipsub streams' bytes went (docs/analyzer.md, gossip).
GOSSIP_SECTION = {"name": "gossip", "title": "Gossipsub bytes by sender, kind and topic",
                  "columns": ["src", "kind", "topic", "count", "message_ids", "bytes", "duplicates",
                              "duplicate_bytes", "after_idontwant", "after_idontwant_bytes", "idontwant_saved",
                              "idontwant_saved_bytes"]}


def analyze_report(agg: Aggregate, model: str, by_direction: bool, explain: bool,
                   by_peer: bool = False, local: set[str] | None = None, extra_rows: tuple = (),
                   keylog: tuple | None = None, sums: bool = False) -> dict:
    """The analyze report; by_peer: rows per remote address and peer ID (`local`: the node's
    own addresses, else guessed); extra_rows: rows the records do not hold (live's undecoded
    bytes); keylog: (the --keylog file or None, its KeylogFiles) of the run that read the
    captures, to say what stayed encrypted (encrypted.py), or None to say nothing of it; sums:
    the aggregate's sums behind every figure too (JSON's: `p2pc merge` adds reports up exactly)."""
    rows = compute_rows(agg, model=model, by_direction=by_direction, explain=explain)
    for extra in extra_rows:                # into the records' own row of that kind, if any
        same = next((r for r in rows if (r.proto, r.msg_type, r.direction) ==
                     (extra.proto, extra.msg_type, extra.direction)), None)
        if same:
            same.sums.merge(extra.sums)
        else:
            rows.append(extra)
    tot = totals(rows).as_dict()
    if by_peer:
        row_dicts = [{**r.as_dict(), "peer": addr, "peer_id": pid}
                     for addr, pid, r in peer_rows(agg, model, local)]
        row_dicts += [r.as_dict() for r in extra_rows]
    else:
        row_dicts = [r.as_dict() for r in rows]
    sizes = size_table(agg)
    report = {
        "schema": SCHEMA, "command": "analyze", "title": "p2pc: savings by protocol and message type",
        "files": agg.files, "model": model,
        "warnings": agg.warnings + bandwidth_warning(agg) + (encrypted_warnings(agg, *keylog) if keylog else []),
        "rows": row_dicts, "totals": tot,
        "sections": [{"name": "size_ranges", "title": "Compression by message size range",
                      "columns": ["proto", "msg_type", "range", "messages", "avg_raw", "avg_sent",
                                  "compression_pct"], "rows": sizes},
                     CONFORMANCE_SECTION | {"rows": conformance_rows(agg)},
                     GOSSIP_SECTION | {"rows": gossip_rows(agg)},
                     BUDGET_SECTION | {"rows": budget_rows(agg)}],
        "series": {"size_ranges": [s for s in sizes if s["compression_pct"]],
                   "ratio_cdf": ratio_cdf(agg), "ratio_cdf_by_size": ratio_cdf_by_size(agg),
                   "ratio_counts_by_size": ratio_counts_by_size(agg), "bandwidth": bandwidth_series(agg)},
    }
    if explain:
        report["explain"] = [{"proto": r.proto, "msg_type": r.msg_type, "direction": r.direction,
                              "inputs": r.explain} for r in rows]
        report["sections"].append({
            "name": "explain", "title": "Inputs of each row (--explain)",
            "columns": ["proto", "msg_type", "direction", "delta_bytes", "batched_headers", "mss",
                        "seg_overhead", "ack_ratio", "ack_frame_bytes", "segments_saved"],
            "rows": [{"proto": r.proto, "msg_type": r.msg_type, **e} for r in rows for e in r.explain]})
    if sums:
        report["aggregate"] = AggregateJSON(agg)
    return report


def error_pct(modelled: float, measured: float) -> float | None:
    """How far the model is from what was measured, in % of it (none when nothing was)."""
    return pct(modelled - measured, measured) if abs(measured) >= 1 else None


def compare_report(base: Aggregate, comp: Aggregate, base_bytes: tuple | None = None,
                   comp_bytes: tuple | None = None) -> dict:
    """compare's report; base_bytes, comp_bytes: each capture's attribution.FrameAttribution
    result, for the bandwidth section (model.bandwidth_table)."""
    mb, mc = family_measured(base), family_measured(comp)
    model_rows = compute_rows(comp)
    modelled: dict = defaultdict(float)
    for r in model_rows:
        modelled[(r.proto, family(r.proto, r.msg_type))] += r.total_saved
    rows = []
    for key in sorted(set(mb) | set(mc)):
        b, c = mb.get(key, {}), mc.get(key, {})
        m_payload_hdr = b.get("wire_bytes", 0) - c.get("wire_bytes", 0)
        m_seg = b.get("segment_header_bytes", 0) - c.get("segment_header_bytes", 0)
        m_ack = b.get("ack_bytes", 0) - c.get("ack_bytes", 0)
        measured = m_payload_hdr + m_seg + m_ack
        model = modelled.get(key, 0.0)
        rows.append({"proto": key[0], "family": key[1],
                     "baseline_msgs": int(b.get("messages", 0)), "compressed_msgs": int(c.get("messages", 0)),
                     "baseline_wire": int(b.get("wire_bytes", 0)), "compressed_wire": int(c.get("wire_bytes", 0)),
                     "measured_message_saved": int(m_payload_hdr), "measured_segment_hdr_saved": round(m_seg),
                     "measured_ack_saved": round(m_ack), "measured_total_saved": round(measured),
                     "modelled_total_saved": round(model),
                     "model_error_pct": error_pct(model, measured)})
    # The ALL row sums the families' bytes and counts; its error is that of the sums (never an
    # average of the rows' percentages), as analyze's totals are.
    summed = ("baseline_msgs", "compressed_msgs", "baseline_wire", "compressed_wire", "measured_message_saved",
              "measured_segment_hdr_saved", "measured_ack_saved", "measured_total_saved", "modelled_total_saved")
    tot = {"proto": "ALL", "family": "ALL", **{k: sum(r[k] for r in rows) for k in summed}}
    tot["model_error_pct"] = error_pct(tot["modelled_total_saved"], tot["measured_total_saved"])
    tb, tc = measured_tcp(base), measured_tcp(comp)
    conn = [{"measure": k, "baseline": tb.get(k, 0), "compressed": tc.get(k, 0),
             "saved": tb.get(k, 0) - tc.get(k, 0), "saved_pct": pct(tb.get(k, 0) - tc.get(k, 0), tb.get(k, 0))}
            for k in ("frames", "bytes", "data_segments", "tcp_payload_bytes", "segment_header_bytes",
                      "pure_acks", "pure_ack_bytes", "duration_ms")]
    return {"schema": SCHEMA, "command": "compare", "title": "p2pc: measured vs modelled savings",
            "files": base.files + comp.files, "model": "capture", "warnings": base.warnings + comp.warnings,
            "columns": ["proto", "family", "baseline_msgs", "compressed_msgs", "baseline_wire",
                        "compressed_wire", "measured_message_saved", "measured_segment_hdr_saved",
                        "measured_ack_saved", "measured_total_saved", "modelled_total_saved",
                        "model_error_pct"],
            "rows": rows, "totals": tot,
            "sections": [{"name": "connections", "title": "Whole connections (every TCP frame)",
                          "columns": ["measure", "baseline", "compressed", "saved", "saved_pct"], "rows": conn},
                         {"name": "bandwidth", "title": "Bandwidth use without and with compression (TCP payload)",
                          "columns": ["proto", "family", "baseline_bytes", "compressed_bytes", "measured_saved",
                                      "measured_saved_pct", "modelled_saved", "model_error_pct"],
                          "rows": bandwidth_table(base, comp, base_bytes, comp_bytes)}],
            "series": {"bandwidth_compare": {"baseline": bandwidth_series(base),
                                             "compressed": bandwidth_series(comp)}}}


def live_report(totals_, interface: str, model: str, by_direction: bool, by_peer: bool,
                local: set[str] | None, final: bool) -> dict | None:
    """live's report of everything captured so far (final: at the end): analyze's, with the
    bytes a session reset left undecoded; None while nothing was captured."""
    with totals_.lock:
        if not any(totals_.agg.by_dir.values()):
            if final:
                raise NoP2PTraffic(f"no P2P messages captured on {interface}")
            return None
        cut = totals_.undecoded_directions()
        undecoded = [Row(proto, "undecoded", None, Sums(wire=n, payload=n, raw=n))
                     for proto, n in sorted(totals_.undecoded().items())]
        rep = analyze_report(totals_.agg, model, by_direction, False, by_peer, local, tuple(undecoded))
        if cut:                                 # else the report is analyze's, exactly
            rep["sections"].append({
                "name": "undecoded", "title": "Connection directions whose state a session reset dropped",
                "columns": ["proto", "src", "srcport", "dst", "dstport", "tcp_bytes", "decoded_bytes",
                            "undecoded_bytes"],
                "rows": sorted(cut, key=lambda d: -d["undecoded_bytes"])})
        dropped = totals_.dropped
    rep["files"] = [f"live:{interface}"]
    rep["warnings"] = list(rep["warnings"])          # the aggregate's own list stays as it is
    if dropped:
        rep["warnings"].append(f"the capture dropped {dropped} packets")
    if totals_.agg.trimmed_before is not None:
        rep["warnings"].append("the bandwidth figure covers the latest seconds only (from "
                               f"{totals_.agg.trimmed_before}, epoch seconds)")
    for r in undecoded:
        rep["warnings"].append(f"{r.sums.wire} bytes of {r.proto} connections were not decoded: "
                               "their state was dropped at a session reset (--session-reset)")
    rep["title"] = f"p2pc live on {interface}" + (" (final)" if final else "")
    return rep
