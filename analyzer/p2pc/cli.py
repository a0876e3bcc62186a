"""The `p2pc` command: analyze, compare, diff, whatif, records, live, keys, doctor, shard, merge.

Exit codes: errors.Exit (each error is a P2pcError subclass carrying its code).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import textwrap
import threading

from . import __version__, doctor, export, keys as keysource, live, private, tsharkopts, whatif
from .diff import Side, run_diff
from .errors import EXIT_CODES, CaptureUnreadable, Exit, P2pcError, UsageError
from .gather import gather_attributed
from .idontwant import DEFAULT_THRESHOLDS as IDONTWANT_THRESHOLDS
from .merge import merge_reports
from .model import not_comparable
from .output import ALL, FORMATS, SECTION_FORMATS
from .output.emit import emit
from .report import analyze_report, compare_report
from .shard import analyze_captures, split


# A capture named "-" is standard input, as for tshark -r -; an --output named "-" is stdout.
STDIN = "-"


# ---- commands ----
def refuse_repeats(paths: list[str], why: str = "its counts would be added twice; give each capture once") -> None:
    """CaptureUnreadable naming the first capture given again (the same file by another name
    too), and `why` that is wrong."""
    seen: list[str] = []
    for p in paths:
        for q in seen:
            if p == q or (os.path.exists(p) and os.path.exists(q) and os.path.samefile(p, q)):
                same = "" if p == q else f" (the same file as {q})"
                raise CaptureUnreadable(f"{p}: the same capture given twice{same}: {why}")
        seen.append(p)


def cmd_analyze(args) -> int:
    refuse_repeats(args.captures)
    if STDIN in args.captures and (args.shards > 1 or args.scheduler):
        raise UsageError("standard input (-) cannot be split into shards: save it to a file first")
    agg = analyze_captures(args.captures, args.plugin, args.jobs, args.tshark, args.shards, args.shard_dir,
                           args.scheduler)
    emit(analyze_report(agg, args.model, args.by_direction, args.explain, args.by_peer,
                        keylog=(args.keylog, args.tshark.keylog), sums=args.format == "json"),
         args.format, args.section, args.output)
    return Exit.TRUNCATED if agg.warnings else 0


def cmd_shard(args) -> int:
    if args.capture == STDIN:
        raise UsageError("shard reads a file: standard input (-) cannot be split; save it first")
    res = split(args.capture, args.out, args.shards)
    for path, n, b in zip(res.paths, res.frames, res.bytes):
        print(f"{path}\t{n} frames\t{b} bytes")
    for w in res.warnings:
        print(f"p2pc: {w}", file=sys.stderr)
    return Exit.TRUNCATED if res.warnings else 0


def cmd_merge(args) -> int:
    agg, reports = merge_reports(args.reports)
    model = args.model or reports[0].get("model", "capture")
    emit(analyze_report(agg, model, args.by_direction, args.explain, sums=args.format == "json"),
         args.format, args.section, args.output)
    return Exit.TRUNCATED if agg.warnings else 0


def cmd_compare(args) -> int:
    refuse_repeats([args.baseline, args.compressed], "compare needs the workload captured with "
                   "compression off (BASELINE) and on (COMPRESSED)")
    base, base_bytes = gather_attributed(args.baseline, args.plugin, args.tshark)
    comp, comp_bytes = gather_attributed(args.compressed, args.plugin, args.tshark)
    why = not_comparable(base, comp, args.baseline, args.compressed)
    if why:
        raise UsageError(why)
    emit(compare_report(base, comp, base_bytes, comp_bytes), args.format, args.section, args.output)
    return Exit.TRUNCATED if base.warnings or comp.warnings else 0


def cmd_diff(args) -> int:
    if args.capture_b is None and not (args.filter_a and args.filter_b):
        raise UsageError("diff of one capture needs both sides' filters: --a FILTER --b FILTER")
    if STDIN in (args.capture_a, args.capture_b):      # records, payloads, negotiation: three passes
        raise UsageError("diff reads each capture more than once: standard input (-) cannot be "
                         "diffed; save it to a file first")
    sides = (Side("A", args.capture_a, args.filter_a), Side("B", args.capture_b or args.capture_a, args.filter_b))
    report = run_diff(args.plugin, sides, args.tshark)
    emit(report, args.format, args.section, args.output)
    return Exit.TRUNCATED if report["warnings"] else 0 if report["equivalent"] else Exit.DIFFER


def cmd_whatif(args) -> int:
    refuse_repeats(args.captures)
    report, cut = whatif.run(args.captures, args.plugin, args.tshark, args.strategy, args.codecs, args.threshold,
                             args.idontwant_threshold, args.all)
    emit(report, args.format, args.section, args.output)
    return Exit.TRUNCATED if cut else 0


def cmd_records(args) -> int:
    return Exit.TRUNCATED if export.write(args.capture, args.plugin, args.tshark, args.output) else 0


# ---- the command line ----
# The exit codes of every command (errors.Exit), as the help lists them.
EXIT_HELP = "exit codes:\n" + "\n".join(
    textwrap.fill(text, 79, initial_indent=f"{code:>3}  ", subsequent_indent=" " * 5)
    for code, text in EXIT_CODES.items())

EXAMPLES = {
    "p2pc": """examples:
  p2pc analyze btc-compressed.pcapng
  p2pc analyze --format html --output report.html a.pcapng b.pcapng
  p2pc compare btc-baseline.pcapng btc-compressed.pcapng
  p2pc diff eth2-yamux.pcapng eth2-mplex.pcapng
  p2pc whatif --strategy stream --codecs gzip,zstd btc-baseline.pcapng
  p2pc records btc-compressed.pcapng --output records.parquet
  p2pc live -i eth0 -f 'tcp port 8333'
  p2pc keys --pid 4242 --output node.keys
  p2pc doctor

`p2pc COMMAND --help` describes each command and its arguments.""",
    "analyze": """examples:
  p2pc analyze btc-compressed.pcapng                     # table on the terminal
  p2pc analyze --by-direction --explain btc-compressed.pcapng
  p2pc analyze --format html --output report.html *.pcapng     # interactive report, opens offline
  p2pc analyze --format csv --section size_ranges btc-compressed.pcapng
  p2pc analyze --format csv --section all --output all.csv btc-compressed.pcapng
  p2pc analyze -Y 'ip.addr==192.0.2.2' -d 'tcp.port==18444,btcc' node.pcapng
  p2pc analyze --keylog keys.log -o fisco.rc1:TRUE fisco-tls.pcapng
  p2pc analyze --by-peer node.pcapng                     # one row per remote address and peer ID
  tcpdump -w - -i eth0 port 8333 | p2pc analyze -r -     # a capture from standard input

sections (--section): main, size_ranges, conformance, explain (with --explain)""",
    "compare": """examples:
  p2pc compare btc-baseline.pcapng btc-compressed.pcapng
  p2pc compare --format html --output compare.html btc-baseline.pcapng btc-compressed.pcapng

sections (--section): main, connections""",
    "diff": """examples:
  p2pc diff eth2-yamux.pcapng eth2-mplex.pcapng
  p2pc diff --format html --output diff.html node-a.pcapng node-b.pcapng
  p2pc diff both.pcapng --a 'tcp.port==52396' --b 'tcp.port==36186'   # two connections of one capture
  p2pc diff -Y eth2 a.pcapng b.pcapng            # only the eth2 messages of each

sections (--section): main, differences, messages, unmatched, not_derived, conformance, negotiation
docs/interop.md walks through an interop problem.""",
    "whatif": """examples:
  p2pc whatif btc-baseline.pcapng
  p2pc whatif --strategy stream --codecs gzip,brotli-9 comp-none.pcapng   # the libp2p transports
  p2pc whatif --strategy message,block --threshold 512,1024,4096 fisco.pcapng
  p2pc whatif --codecs zlib-1,lzo1x-1,zstd --format html --output whatif.html btc-baseline.pcapng
  p2pc whatif --all btc-compressed.pcapng    # recompress what was sent compressed, too
  p2pc whatif --idontwant-threshold 0,1024 eth2-gossip-mesh.pcapng --section idontwant

sections (--section): main (strategies side by side), by_type, thresholds, whatif (message
strategy by size range), batching, idontwant (on gossipsub traffic)""",
    "records": """examples:
  p2pc records btc-compressed.pcapng --output records.parquet
  python3 -c "import pyarrow.parquet as pq; t = pq.read_table('records.parquet'); print(t.group_by(['proto', 'msg_type']).aggregate([('wire_len', 'sum'), ('raw_len', 'sum')]))"

columns: proto, msg_type, codec, wire_len, header_len, payload_len, raw_len, batch_count,
frame, stream, src, srcport, dst, dstport, time, mux_stream, mux_frames, snappy_chunks, reason
(docs/tap-format.md)""",
    "live": """examples:
  p2pc live -i eth0 -f 'tcp port 8333'
  p2pc live -i eth0 -f 'tcp port 8333' -w node.pcapng --metrics 127.0.0.1:9464
  p2pc live -i lo --duration 60 --interval 5 --format json --output live.json
  p2pc analyze node.pcapng          # the same report as live's final one, from the -w file
  p2pc live -i eth0 -f 'tcp port 13000' --keys-from $(pidof beacon-chain) -w node.pcapng

Every --interval the report goes to --output (rewritten) or, as a table, to a terminal; a pipe
or file on stdout gets the final one only, at ^C or after --duration. stderr says how the
capture is doing: one line refreshed on a terminal, else one JSON line per --interval.

sections (--section): main, size_ranges, undecoded (once a --session-reset cut a connection:
each direction cut, its TCP payload bytes, decoded bytes and undecoded bytes)""",
    "keys": """examples:
  sudo p2pc keys --pid $(pidof ipfs) --output node.keys           # until ^C
  sudo p2pc keys --pid 4242 --pid 4343 --output nodes.keys --duration 600
  p2pc analyze --keylog node.keys node.pcapng

Entry uprobes (eBPF) on the running program: no patch, no restart. Needs CAP_BPF and CAP_PERFMON
(Linux 6.6+; CAP_SYS_ADMIN before), and CAP_SYS_PTRACE for another user's process.""",
    "doctor": """examples:
  p2pc doctor
  p2pc doctor --plugin build/plugins/4.0/epan/p2pc.so""",
    "shard": """examples:
  p2pc shard huge.pcapng --shards 8 --out shards/     # shards/huge.shard000.pcapng ...
  p2pc analyze --format json --output a.json shards/huge.shard00[0-3].pcapng   # on one machine
  p2pc analyze --format json --output b.json shards/huge.shard00[4-7].pcapng   # on another
  p2pc merge a.json b.json                            # = p2pc analyze huge.pcapng

Every TCP connection lands whole (both directions) in one shard; docs/analyzer.md,
"Large captures and fleets".""",
    "merge": """examples:
  p2pc analyze --format json --output day1.json day1.pcapng
  p2pc analyze --format json --output day2.json day2.pcapng
  p2pc merge day1.json day2.json                      # = p2pc analyze day1.pcapng day2.pcapng
  p2pc merge --format json --output week.json day*.json     # merges again later""",
}

class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) and help that keeps the examples' layout."""

    def __init__(self, *a, **kw):
        kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*a, **kw)

    def error(self, message: str):
        self.exit(Exit.USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def captures(p, help: str, one: bool = False) -> None:
    """A command's captures: positional, or after -r as tshark takes them (-: standard input)."""
    p.add_argument("-r", "--read-file", dest="read", action="append", default=[], metavar="CAPTURE",
                   help="read this capture, as tshark -r does (-: standard input)" +
                        ("" if one else "; repeat for several"))
    p.add_argument("captures", nargs="*", metavar="CAPTURE", help=help)
    p.set_defaults(one_capture=one)


def whole(minimum: int):
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{n} is less than {minimum}")
        return n
    return parse


def listen_address(text: str) -> tuple[str, int]:
    """--metrics [HOST:]PORT: (host, port); 127.0.0.1 unless a host is given ([::1]:PORT for
    IPv6)."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: PORT must be a number from 1 to 65535 "
                                         "([HOST:]PORT, e.g. 127.0.0.1:9464)")
    return host.strip("[]") or "127.0.0.1", int(port)


def name_list(what: str, choices: tuple):
    """A comma-separated list of names from `choices` (--codecs, --strategy)."""
    def parse(text: str) -> list[str]:
        names = [c.strip() for c in text.split(",") if c.strip()]
        bad = [c for c in names if c not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad) or repr(text)}: choose from "
                                             + ",".join(choices))
        return names
    return parse


def size_list(text: str) -> list[int]:
    """--threshold N[,N...]: byte counts."""
    parse = whole(0)
    return [parse(t.strip()) for t in text.split(",") if t.strip()] or [parse(text)]


def _terminate(signum, frame) -> None:
    raise SystemExit(Exit.TERMINATED)


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="p2pc", description="Measure what compression and batching save in P2P traffic\n"
                "(reads captures with tshark and the p2pc Wireshark plugin).",
                epilog=EXAMPLES["p2pc"] + "\n\n" + EXIT_HELP)
    ap.add_argument("--version", action="version", version=f"p2pc {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, description: str):
        return sub.add_parser(name, help=help, description=textwrap.fill(description, 79),
                              epilog=EXAMPLES[name] + "\n\n" + EXIT_HELP)

    def common(p, fmt=True, tshark=True):
        p.add_argument("--plugin", metavar="PATH",
                       help="the p2pc.so to load (default: $P2PC_PLUGIN, else the one tshark loads, "
                            "else the personal installation, else this repository's build)")
        if fmt:
            p.add_argument("--format", choices=FORMATS, default="table",
                           help="table (the terminal; default), json (schema p2pc-report/1), csv "
                                "(one table), markdown, html (self-contained, interactive figures)")
            p.add_argument("--section", metavar="NAME",
                           help="only this table (table, csv, markdown): main or a section's name; "
                                f"with --format csv, '{ALL}' writes every table as one long table "
                                "(section,row,column,value)")
            p.add_argument("--output", metavar="FILE",
                           help="write the report to FILE, its folder made if missing (default, "
                                "and -: stdout)")
        if tshark:
            tsharkopts.add_arguments(p)

    p = command("analyze", "savings per protocol and message type",
                "Savings per protocol and message type: payload bytes saved by compression, header "
                "bytes saved by batching and fewer TCP segments, ACK bytes saved by fewer ACKs "
                "(docs/savings-model.md).")
    captures(p, "pcap/pcapng files; several are read in parallel and merged exactly")
    p.add_argument("--by-direction", action="store_true", help="one row per connection direction")
    p.add_argument("--model", choices=["capture", "bip"], default="capture",
                   help="capture: segments and ACKs from the capture itself (default); bip: the "
                        "draft's flat 24+52 B per batched message")
    p.add_argument("--explain", action="store_true", help="show the inputs each row is computed from")
    p.add_argument("--by-peer", action="store_true",
                   help="one row per remote address and libp2p peer ID (where a handshake states it)")
    p.add_argument("-j", "--jobs", type=whole(1), default=min(4, os.cpu_count() or 1), metavar="N",
                   help="captures read in parallel (default: %(default)s)")
    p.add_argument("--shards", type=whole(0), default=0, metavar="N",
                   help="split each capture by connection into N shards read in parallel (-j) and "
                        "merged exactly, for captures larger than memory (default: 0, automatic "
                        "above 2 GiB; 1: never)")
    p.add_argument("--shard-dir", metavar="DIR",
                   help="where shards are written while they are read (default: $TMPDIR); needs "
                        "as much free space as the capture")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="read the shards on this Dask cluster instead (its workers need tshark, "
                        "the plugin and the shard paths: put --shard-dir on a shared disk)")
    common(p)
    p.set_defaults(func=cmd_analyze)

    p = command("compare", "measured savings (baseline vs compressed) next to the model",
                "The same workload captured with compression off and on: measured savings per "
                "message family next to what analyze models from the compressed capture alone.")
    p.add_argument("baseline", metavar="BASELINE", help="the capture with compression off")
    p.add_argument("compressed", metavar="COMPRESSED", help="the capture with compression on")
    common(p)
    p.set_defaults(func=cmd_compare)

    p = command("diff", "two implementations' messages side by side (interop)",
                "Align A's and B's messages by protocol, message type and the SHA-256 of the "
                "uncompressed payload; list what only one side sent, and for each matched pair "
                "the wire, payload (compressed), raw and header bytes and codec of both, the "
                "payload ratio B/A and, for req/resp, the time to the first and last response "
                "chunk. A and B are two captures, or one capture and two display filters.")
    p.add_argument("capture_a", metavar="A", help="a pcap/pcapng file")
    p.add_argument("capture_b", metavar="B", nargs="?",
                   help="another pcap/pcapng file (default: A again, with --a and --b)")
    p.add_argument("--a", dest="filter_a", metavar="FILTER",
                   help="side A: only the messages of A's frames this display filter matches")
    p.add_argument("--b", dest="filter_b", metavar="FILTER",
                   help="side B: only the messages of B's frames this display filter matches")
    common(p)
    p.set_defaults(func=cmd_diff)

    p = command("whatif", "what compression would save on uncompressed traffic, by strategy",
                "Compress every uncompressed payload by each strategy (message: each on its own; "
                "stream: each connection direction as one stream, flushed after each message; "
                "block: only the messages carrying blocks) and codec: bytes saved with the header "
                "and ACK bytes fewer segments save (analyze's model), CPU time per MB, per message "
                "type; a compress-above-N sweep; what batching small messages would save; on gossipsub "
                "traffic, what IDONTWANT above N bytes would save.")
    captures(p, "pcap/pcapng files")
    p.add_argument("--strategy", type=name_list("strategy", whatif.STRATEGIES), default=list(whatif.STRATEGIES),
                   metavar="LIST", help="comma-separated subset of " + ",".join(whatif.STRATEGIES) +
                   " (default: all three, side by side)")
    p.add_argument("--codecs", type=name_list("codec", whatif.CODEC_NAMES), metavar="LIST",
                   help="comma-separated subset of " + ",".join(whatif.CODEC_NAMES) + " (default: all available)")
    p.add_argument("--threshold", type=size_list, default=list(whatif.DEFAULT_THRESHOLDS), metavar="N[,N...]",
                   help="compress only payloads over N bytes, for each N (message and block "
                        "strategies; default: " + ",".join(map(str, whatif.DEFAULT_THRESHOLDS)) + ")")
    p.add_argument("--all", action="store_true", help="also recompress already-compressed messages' payloads")
    p.add_argument("--idontwant-threshold", type=size_list, default=list(IDONTWANT_THRESHOLDS), metavar="N[,N...]",
                   help="on gossipsub traffic, what gossipsub v1.2's IDONTWANT, sent on first receipt of each "
                        "message of N bytes or more, would have saved, for each N (section idontwant; default: "
                        + ",".join(map(str, IDONTWANT_THRESHOLDS)) + ")")
    common(p)
    p.set_defaults(func=cmd_whatif)

    p = command("records", "the per-message records as a Parquet file",
                "Write one row per P2P message (the plugin's record) to a Parquet file.")
    captures(p, "a pcap/pcapng file", one=True)
    p.add_argument("--output", required=True, metavar="FILE", help="the Parquet file to write (-: stdout)")
    common(p, fmt=False)
    p.set_defaults(func=cmd_records)

    p = command("live", "the analyze report, refreshed from live traffic",
                "One continuous capture (dumpcap, never restarted) decoded as it arrives: every "
                "--interval seconds, and at ^C or --duration, the analyze report of every packet "
                "captured so far; -w saves those packets (p2pc analyze of the file gives the same "
                "report).")
    p.add_argument("-i", "--interface", required=True, metavar="IFACE",
                   help="the interface to capture on (as dumpcap -D lists them)")
    p.add_argument("--duration", type=whole(1), metavar="S",
                   help="stop after S seconds (default: run until ^C)")
    p.add_argument("--interval", type=whole(1), default=10, metavar="S",
                   help="refresh every S seconds (default: %(default)s)")
    p.add_argument("-f", "--capture-filter", metavar="BPF", help="capture filter, e.g. 'tcp port 8333'")
    p.add_argument("-w", "--write", metavar="FILE", help="save the captured packets (pcapng) to FILE")
    p.add_argument("-B", "--buffer-size", type=whole(1), default=64, metavar="MIB",
                   help="the kernel's capture buffer, as for tshark -B (default: %(default)s MiB)")
    p.add_argument("--metrics", type=listen_address, metavar="[HOST:]PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md); "
                        "HOST is 127.0.0.1 unless given (0.0.0.0: every interface)")
    p.add_argument("--session-reset", type=whole(0), default=100_000, metavar="N",
                   help="tshark forgets its connections every N packets (tshark -M), so memory "
                        "stays bounded (default: %(default)s; 0: never)")
    p.add_argument("--state-mib", type=whole(0), default=256, metavar="MIB",
                   help="at each reset, the state of the libp2p connections open, most recently "
                        "used first, up to MIB, goes on decoding (p2pc.live_state_mib); bytes of the "
                        "others are reported as undecoded, with the reason (default: %(default)s; "
                        "0: none)")
    p.add_argument("--by-direction", action="store_true", help="one row per connection direction")
    p.add_argument("--by-peer", action="store_true",
                   help="one row per remote address and libp2p peer ID (where a handshake states it)")
    p.add_argument("--model", choices=["capture", "bip"], default="capture",
                   help="how segments and ACKs are modelled, as for analyze")
    p.add_argument("--keys-from", type=whole(1), action="append", metavar="PID",
                   help="decrypt this running go-libp2p process's connections (Noise, TLS, QUIC) with "
                        "the keys p2pc keys reads from it as they are made (repeat for several; not "
                        "with --keylog)")
    common(p)
    p.set_defaults(func=live.run)

    p = command("keys", "read session keys from running go-libp2p or OpenSSL processes (eBPF)",
                "Append the session keys of running, unmodified go-libp2p processes to a key log "
                "as their connections make them: TLS 1.3 and QUIC secrets as NSS key log lines, "
                "Noise keys as p2pc's lines (--keylog of analyze and live reads both); of a process "
                "that links OpenSSL's libssl dynamically (amd64; a FISCO BCOS node built so), its TLS "
                "1.0-1.2 master secrets as CLIENT_RANDOM lines. Runs until "
                "^C, SIGTERM, --duration, or until every process has ended; then writes the keys "
                "still in flight and exits.")
    p.add_argument("--pid", type=whole(1), action="append", required=True, metavar="PID",
                   help="a process to read keys from (repeat for several)")
    p.add_argument("--output", required=True, metavar="FILE",
                   help="the key log to append to (created with mode 0600)")
    p.add_argument("--duration", type=whole(1), metavar="S",
                   help="stop after S seconds (default: until ^C)")
    p.add_argument("--uprobes", choices=("auto", "single"), default="auto",
                   help="auto: multi-uprobe links where the kernel has them (Linux 6.6+), else one "
                        "uprobe per function; single: one per function, as before 6.6 (default: auto)")
    p.set_defaults(func=keysource.run)

    p = command("doctor", "check tshark, the plugin and the optional parts, and print the fix",
                "Check tshark and the p2pc plugin ([!!] when missing: exit 4), and what only some "
                "commands need: dumpcap, liblzo2, the what-if codecs ([--] when missing). Prints the "
                "fix for each.")
    p.add_argument("--plugin", metavar="PATH", help="check this p2pc.so instead of the one p2pc would pick")
    p.set_defaults(func=doctor.run)

    p = command("shard", "split a capture by connection into shards",
                "Split a capture by connection into N shard captures, reading it once: every TCP "
                "connection whole (both directions) in one shard, the capture's TLS secrets and "
                "interface descriptions in every shard. Analyzing the shards and merging gives "
                "the capture's report (analyze --shards does all of it).")
    captures(p, "a pcap/pcapng file", one=True)
    p.add_argument("--shards", type=whole(1), default=min(4, os.cpu_count() or 1), metavar="N",
                   help="number of shards (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write the shards to")
    p.set_defaults(func=cmd_shard)

    p = command("merge", "add up saved analyze reports exactly",
                "Add up saved `analyze --format json` reports (the sums each carries) and print "
                "the report of all their captures together, as if analyzed at once.")
    p.add_argument("reports", nargs="+", metavar="REPORT", help="JSON reports of p2pc analyze")
    p.add_argument("--by-direction", action="store_true", help="one row per connection direction")
    p.add_argument("--model", choices=["capture", "bip"],
                   help="how segments and ACKs are modelled (default: the first report's)")
    p.add_argument("--explain", action="store_true", help="show the inputs each row is computed from")
    common(p, tshark=False)
    p.set_defaults(func=cmd_merge)

    args = ap.parse_args(argv)
    if hasattr(args, "read"):       # -r CAPTURE and positional captures, in that order
        args.captures = args.read + args.captures
        if not args.captures or (args.one_capture and len(args.captures) > 1):
            ap.error(f"{args.command} reads " + ("one capture" if args.one_capture else "captures") +
                     ": CAPTURE or -r CAPTURE")
        if args.captures.count(STDIN) > 1:
            ap.error("standard input (-) can be read once")
        if args.one_capture:
            args.capture = args.captures[0]
    if getattr(args, "output", None) == STDIN and args.command != "keys":
        args.output = None          # stdout, as for tshark -w -
    section = getattr(args, "section", None)
    if section is not None and args.format not in SECTION_FORMATS:
        ap.error(f"--section applies to --format {', '.join(SECTION_FORMATS)}, not {args.format}")
    if section == ALL and args.format != "csv":
        ap.error(f"--section {ALL} applies to --format csv")
    # SIGTERM unwinds like ^C, so that every temporary file is removed on the way out.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    if getattr(args, "keys_from", None) and args.keylog:
        ap.error("--keys-from and --keylog: give one (--keys-from writes the key log live reads)")
    # The --keylog parts, or --keys-from's key log, tshark reads (no folder without one).
    keys = private.make_dir("keys") if getattr(args, "keylog", None) or getattr(args, "keys_from", None) else None
    try:
        try:
            args.tshark = tsharkopts.from_args(args, keys)
        except argparse.ArgumentTypeError as e:
            ap.error(str(e))
        return args.func(args)
    except P2pcError as e:
        print(f"p2pc: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return Exit.INTERRUPTED
    except BrokenPipeError:         # stdout's reader ended (| head): no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.ERROR
    finally:
        if keys:
            shutil.rmtree(keys, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
