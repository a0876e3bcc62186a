"""The `p2pc` command: analyze, compare, whatif, live, doctor.

Exit codes: 0 ok, 2 usage, 3 tshark missing, 4 plugin missing, 5 capture unreadable,
6 no P2P traffic, 7 interface cannot be opened, 8 capture truncated (report printed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import __version__
from .model import (BATCHABLE, BIP_ACK_BYTES, PROTOCOL_HEADER, RATIO_BIN, Aggregate, compute_rows,
                    family, family_measured, measured_tcp, pct, size_table, totals)
from .output import FORMATS, render
from .records import (TRUNCATED_EXIT, InterfaceError, NoP2PTraffic, P2pcError, open_wireshark,
                      personal_plugin, progress_printer, read_capture, read_payloads,
                      tshark_has_plugin)
from .wsenv import Wireshark, built_plugin, version_mismatch, ws_version

SCHEMA = "p2pc-report/1"


# ---- reading ----
def analyze_file(capture: str, plugin: str | None) -> Aggregate:
    """One tshark pass over one capture (runs in a worker process)."""
    ws = open_wireshark(plugin)
    try:
        agg = Aggregate(files=[capture])
        res = read_capture(ws, capture, lambda m: agg.add_message(capture, m),
                           lambda t: agg.add_tcp(capture, t), progress_printer(Path(capture).name))
        if res.truncated:
            agg.warnings.append(res.warning)
        return agg
    finally:
        ws.cleanup()


def gather(captures: list[str], plugin: str | None, jobs: int) -> Aggregate:
    agg = Aggregate()
    if jobs > 1 and len(captures) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for part in pool.map(analyze_file, captures, [plugin] * len(captures)):
                agg.merge(part)
    else:
        for c in captures:
            agg.merge(analyze_file(c, plugin))
    if not any(agg.by_dir.values()):
        raise NoP2PTraffic("no P2P messages found in " + ", ".join(captures) +
                           ": check the capture holds Bitcoin/FISCO/libp2p traffic (`p2pc doctor` checks the plugin)")
    return agg


# ---- report building ----
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
    if not agg.bandwidth:
        return {}
    t0 = min(t for t, _ in agg.bandwidth)
    series = defaultdict(list)
    for (t, d), v in sorted(agg.bandwidth.items()):
        series[d].append((t - t0, v))
    return dict(series)


def analyze_report(agg: Aggregate, model: str, by_direction: bool, explain: bool) -> dict:
    rows = compute_rows(agg, model=model, by_direction=by_direction, explain=explain)
    tot = totals(rows).as_dict()
    sizes = size_table(agg)
    report = {
        "schema": SCHEMA, "command": "analyze", "title": "p2pc: savings by protocol and message type",
        "files": agg.files, "model": model, "warnings": agg.warnings,
        "rows": [r.as_dict() for r in rows], "totals": tot,
        "sections": [{"name": "size_ranges", "title": "Compression by message size range",
                      "columns": ["proto", "msg_type", "range", "messages", "avg_raw", "avg_sent",
                                  "compression_pct"], "rows": sizes}],
        "series": {"size_ranges": [s for s in sizes if s["compression_pct"]],
                   "ratio_cdf": ratio_cdf(agg), "bandwidth": {k: v for k, v in bandwidth_series(agg).items()}},
    }
    if explain:
        report["explain"] = [{"proto": r.proto, "msg_type": r.msg_type, "direction": r.direction,
                              "inputs": r.explain} for r in rows]
        report["sections"].append({
            "name": "explain", "title": "Inputs of each row (--explain)",
            "columns": ["proto", "msg_type", "direction", "delta_bytes", "batched_headers", "mss",
                        "seg_overhead", "ack_ratio", "ack_frame_bytes", "segments_saved"],
            "rows": [{"proto": r.proto, "msg_type": r.msg_type, **e} for r in rows for e in r.explain]})
    return report


def compare_report(base: Aggregate, comp: Aggregate) -> dict:
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
                     "model_error_pct": pct(model - measured, measured) if abs(measured) >= 1 else None})
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
            "rows": rows,
            "sections": [{"name": "connections", "title": "Whole connections (every TCP frame)",
                          "columns": ["measure", "baseline", "compressed", "saved", "saved_pct"], "rows": conn}]}


# ---- commands ----
def emit(report: dict, args) -> None:
    text = render(report, args.format)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)


def cmd_analyze(args) -> int:
    agg = gather(args.captures, args.plugin, args.jobs)
    emit(analyze_report(agg, args.model, args.by_direction, args.explain), args)
    return TRUNCATED_EXIT if agg.warnings else 0


def cmd_compare(args) -> int:
    base = gather([args.baseline], args.plugin, 1)
    comp = gather([args.compressed], args.plugin, 1)
    emit(compare_report(base, comp), args)
    return TRUNCATED_EXIT if base.warnings or comp.warnings else 0


def cmd_whatif(args) -> int:
    from .whatif import WhatIf
    ws = open_wireshark(args.plugin)
    w = WhatIf(args.codecs.split(",") if args.codecs else None)
    n = 0
    try:
        for cap in args.captures:
            for _, proto, mtype, codec, raw in read_payloads(ws, cap):
                if args.all or codec == "none":
                    w.add(proto, mtype, raw)
                    n += 1
    finally:
        ws.cleanup()
    if not n:
        raise NoP2PTraffic("no uncompressed P2P payloads found (use --all to recompress "
                           "already-compressed traffic's decompressed payloads)")
    report = {"schema": SCHEMA, "command": "whatif", "title": "p2pc: what each codec would save",
              "files": list(args.captures), "warnings": [f"codec not available: {m} (pip install 'p2pc[all]')"
                                                          for m in w.missing],
              "rows": [], "sections": w.sections(PROTOCOL_HEADER, BIP_ACK_BYTES, BATCHABLE)}
    emit(report, args)
    return 0


def cmd_live(args) -> int:
    if not shutil.which("dumpcap"):
        raise InterfaceError("dumpcap not found: sudo apt-get install wireshark-common")
    total = Aggregate()
    end = time.monotonic() + args.duration if args.duration else None
    with tempfile.TemporaryDirectory(prefix="p2pc-live-") as tmp:
        os.chmod(tmp, 0o755)
        i = 0
        while end is None or time.monotonic() < end:
            slice_s = args.interval if end is None else max(1, min(args.interval, int(end - time.monotonic()) or 1))
            out = Path(tmp) / f"slice{i}.pcapng"
            res = subprocess.run(["dumpcap", "-q", "-i", args.interface, "-a", f"duration:{slice_s}",
                                  "-w", str(out)] + (["-f", args.capture_filter] if args.capture_filter else []),
                                 capture_output=True, text=True)
            if res.returncode != 0 or not out.exists():
                raise InterfaceError(f"cannot capture on {args.interface}: "
                                     f"{(res.stderr.strip().splitlines() or ['dumpcap failed'])[-1]} "
                                     "(run as root or add yourself to the wireshark group)")
            os.chmod(out, 0o644)
            part = analyze_file(str(out), args.plugin)
            out.unlink()
            total.merge(part)
            i += 1
            if any(total.by_dir.values()):
                report = analyze_report(total, args.model, args.by_direction, False)
                report["title"] = f"p2pc live on {args.interface}: {i * args.interval} s"
                if sys.stdout.isatty() and args.format == "table":
                    sys.stdout.write("\x1b[2J\x1b[H")
                emit(report, args)
            else:
                print(f"p2pc live: {i * slice_s} s on {args.interface}, no P2P messages yet", file=sys.stderr)
    return 0


def cmd_doctor(args) -> int:
    ok = True

    def line(good: bool, text: str, fix: str = "") -> None:
        nonlocal ok
        ok &= good
        print(f"[{'ok' if good else '!!'}] {text}" + (f"\n     fix: {fix}" if fix and not good else ""))

    tshark = shutil.which("tshark")
    line(bool(tshark), f"tshark: {tshark or 'not found'}", "sudo apt-get install tshark")
    if not tshark:
        return 3
    major, minor, micro = ws_version()
    line(True, f"Wireshark version {major}.{minor}.{micro}")
    root = os.geteuid() == 0
    plain = Wireshark()
    loaded = tshark_has_plugin(plain)
    personal = personal_plugin()
    built = built_plugin()
    if root:
        line(True, "running as root: tshark ignores personal plugin folders; p2pc runs it as "
                   "'nobody' with a private HOME holding the plugin")
    for plugin in dict.fromkeys(p for p in (args.plugin, personal, built) if p):
        why = version_mismatch(plugin)
        if why:
            line(False, why)
    if personal and built and personal.read_bytes() != built.read_bytes():
        line(False, f"the installed plugin ({personal}) differs from this repository's build ({built})",
             "make install-user   (to install the build)")
    line(loaded or bool(personal) or bool(built),
         "p2pc plugin: " + ("loaded by tshark" if loaded else
                            f"installed at {personal}" if personal else
                            f"built at {built} (not installed)" if built else "not found"),
         "make install-user   (in the p2pc repository)")
    try:
        ws = open_wireshark(args.plugin)
        try:
            res = ws.run("tshark", ["-G", "plugins"])
            got = [l for l in res.stdout.splitlines() if l.startswith("p2pc.so")]
            line(bool(got), "tshark loads p2pc through p2pc's runner: " + (got[0].split()[1] if got else "no"),
                 "make install-user; check that the plugin was built for this Wireshark version")
        finally:
            ws.cleanup()
    except P2pcError as e:
        line(False, str(e))
    if root and not shutil.which("setpriv"):
        line(False, "setpriv not found (needed to run tshark as nobody)", "sudo apt-get install util-linux")
    return 0 if ok else 4


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p2pc", description="Measure what compression and batching save in P2P traffic.")
    ap.add_argument("--version", action="version", version=f"p2pc {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    def common(p, fmt=True):
        p.add_argument("--plugin", help="path of the p2pc.so to load (default: the installed one)")
        if fmt:
            p.add_argument("--format", choices=FORMATS, default="table")
            p.add_argument("-o", "--output", help="write the report to this file")

    p = sub.add_parser("analyze", help="savings per protocol and message type")
    p.add_argument("captures", nargs="+")
    p.add_argument("--by-direction", action="store_true", help="one row per connection direction")
    p.add_argument("--model", choices=["capture", "bip"], default="capture",
                   help="capture: segments and ACKs from the capture itself; bip: the draft's flat 24+52 B")
    p.add_argument("--explain", action="store_true", help="show the inputs each row is computed from")
    p.add_argument("-j", "--jobs", type=int, default=min(4, os.cpu_count() or 1),
                   help="captures read in parallel")
    common(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("compare", help="measured savings (baseline vs compressed) next to the model")
    p.add_argument("baseline")
    p.add_argument("compressed")
    common(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("whatif", help="what each codec would save on uncompressed traffic")
    p.add_argument("captures", nargs="+")
    p.add_argument("--codecs", help="comma-separated subset (zlib-1,zlib-6,lzo1x-1,lzo1x-999,snappy,zstd,brotli)")
    p.add_argument("--all", action="store_true", help="also recompress already-compressed messages' payloads")
    common(p)
    p.set_defaults(func=cmd_whatif)

    p = sub.add_parser("live", help="the analyze report, refreshed from live traffic")
    p.add_argument("-i", "--interface", required=True)
    p.add_argument("--duration", type=int, default=0, help="stop after S seconds (default: run until ^C)")
    p.add_argument("--interval", type=int, default=10, help="refresh every S seconds")
    p.add_argument("-f", "--capture-filter", help="BPF capture filter, e.g. 'tcp port 8333'")
    p.add_argument("--by-direction", action="store_true")
    p.add_argument("--model", choices=["capture", "bip"], default="capture")
    common(p)
    p.set_defaults(func=cmd_live)

    p = sub.add_parser("doctor", help="check tshark and the plugin, and print the fix")
    p.add_argument("--plugin")
    p.set_defaults(func=cmd_doctor)

    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except P2pcError as e:
        print(f"p2pc: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
