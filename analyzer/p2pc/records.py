"""Layer 1: run tshark with the p2pc plugin and stream its records.

One tshark pass per capture reads the plugin's `-z p2pc,records` dump (format:
docs/tap-format.md): `M` lines, one per P2P message, `I` lines, one per peer ID a security
handshake states, `S` lines, one per conformance check that failed, `G` lines, one per kind and
topic of a gossipsub RPC's parts, then `T` lines, one per TCP connection direction.  Lines are parsed as they
arrive, so memory does not grow with the capture.
"""
from __future__ import annotations

import codecs
import dataclasses
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .errors import (CaptureUnreadable, MalformedRecord, P2pcError, PluginMissing, RecordsIncomplete,
                     TsharkMissing, TsharkOptionError)
from .tsharkopts import TsharkOptions
from .wsenv import ToolMissing, Wireshark, built_plugin, version_mismatch, ws_version


# What tshark says when it refuses an option given to it as it was typed.
OPTION_ERRORS = ("Invalid -o flag", "isn't a valid display filter", "Couldn't register p2pc",
                 "Invalid -d flag", "bad -d", "Configuration Profile", "is not a valid preference",
                 "Unknown preference", "unknown preference", "obsolete preference", "Unknown protocol", "not a valid protocol", "can't be used",
                 "Invalid selector number", "Unknown layer type")


# A string column the plugin's printer escaped (docs/tap-format.md): the parser unescapes it.
# Any other `str` column (an address, a check's filter name) is read as printed.
Text = str


class Directed:
    """What the dump's M, I and T lines share: one direction of a connection, tcp.stream (-1: not
    TCP) from src:srcport to dst:dstport.  `key` names that direction in the aggregates."""
    stream: int
    src: str
    srcport: int
    dst: str
    dstport: int

    @property
    def key(self) -> tuple[int, str, int]:
        return (self.stream, self.src, self.srcport)

    @property
    def reverse_key(self) -> tuple[int, str, int]:
        return (self.stream, self.dst, self.dstport)

    @property
    def endpoints(self) -> str:
        return f"{self.src}:{self.srcport}>{self.dst}:{self.dstport}"


@dataclass(frozen=True)
class Where(Directed):
    """The where columns the M, I, G, B and P lines begin with (docs/tap-format.md): the frame
    and its direction.  Their records' own fields follow these, in their columns' order."""
    frame: int
    stream: int
    src: str
    srcport: int
    dst: str
    dstport: int


@dataclass(frozen=True)
class Message(Where):
    time: float
    proto: Text
    msg_type: Text
    codec: Text
    wire_len: int
    header_len: int
    payload_len: int
    raw_len: int
    batch_count: int
    mux_stream: int | None = None   # the muxed stream (yamux, mplex) that carried it
    mux_frames: int = 0             # the muxer frames that carried its bytes (0: not muxed)
    snappy_chunks: int = 0          # data chunks of its framed Snappy stream (0: not framed)
    reason: Text = ""                # msg_type undecoded: why, when known ("bound")
    # Where the unit that completed it ends in its direction's TCP payload bytes (its last
    # byte, or its Noise/TLS record's or flush unit's end); None: not over TCP, or a tail.
    unit_end: int | None = None


@dataclass(frozen=True)
class TcpDirection(Directed):
    stream: int
    src: str
    srcport: int
    dst: str
    dstport: int
    frames: int
    bytes: int
    data_segs: int
    data_bytes: int
    data_frame_bytes: int
    pure_acks: int
    pure_ack_bytes: int
    ctl_frames: int
    ctl_bytes: int
    max_seg: int
    first_time: float
    last_time: float


@dataclass(frozen=True)
class PeerIdentity(Where):
    """A security handshake's word on who sent it: the endpoint src:srcport of TCP connection
    `stream` is the libp2p peer `peer_id`, learnt `via` noise, tls or plaintext."""
    via: Text
    peer_id: Text


@dataclass(frozen=True)
class Violation:
    """A conformance check (a p2pc.spec.* expert item, its filter name) that failed in `frame`."""
    frame: int
    check: str


@dataclass(frozen=True)
class GossipPart(Where):
    """The parts of one kind and topic of a gossipsub RPC that src:srcport sent: `count` entries
    (control entries, SubOpts, Messages; RPCs for rpc_framing) carrying `message_ids` message
    IDs, `bytes` protobuf bytes (each field's tag, length and body).  A publish part is one
    Message, `message_id` its message ID in hex by its topic's rule ("" when it has none); an
    ihave, iwant or idontwant part's `message_id` is the IDs its entries carry, in hex,
    comma-separated."""
    kind: str
    topic: Text
    count: int
    message_ids: int
    bytes: int
    message_id: str


@dataclass(frozen=True)
class BudgetPart(Where):
    """A layer's own bytes that src:srcport sent in `frame` and that no message record carries
    (plugin/core/budget.h): `bytes` of the part `kind` of `layer` (negative: bytes reported in
    an earlier frame that this frame's messages took into their wire_len)."""
    proto: Text
    layer: str
    kind: str
    bytes: int


@dataclass(frozen=True)
class Payload(Where):
    """A record's uncompressed payload (`-z p2pc,payloads`), with its frame and direction."""
    proto: Text
    msg_type: Text
    codec: Text
    raw: bytes


def personal_plugin() -> Path | None:
    try:
        major, minor, _ = ws_version()
    except ToolMissing:
        return None
    p = Path.home() / ".local/lib/wireshark/plugins" / f"{major}.{minor}" / "epan" / "p2pc.so"
    return p if p.is_file() else None


def tshark_has_plugin(ws: Wireshark) -> bool:
    """Ask tshark itself (`-G plugins`: about 0.5-1 s, it also probes every extcap)."""
    res = ws.run("tshark", ["-G", "plugins"])
    return any(line.startswith("p2pc.so") for line in res.stdout.splitlines())


def _global_plugin_roots() -> list[Path]:
    """Where distributions put Wireshark's global plugin folder (<libdir>/wireshark/plugins),
    plus the one beside the tshark executable's own prefix."""
    roots = [Path("/usr/lib/wireshark/plugins"), Path("/usr/lib64/wireshark/plugins"),
             Path("/usr/local/lib/wireshark/plugins"), Path("/usr/local/lib64/wireshark/plugins")]
    roots += sorted(Path("/usr/lib").glob("*/wireshark/plugins"))
    roots += sorted(Path("/usr/local/lib").glob("*/wireshark/plugins"))
    exe = shutil.which("tshark")
    if exe:
        prefix = Path(exe).resolve().parents[1]
        roots += [prefix / "lib/wireshark/plugins", prefix / "lib64/wireshark/plugins"]
    return list(dict.fromkeys(roots))


def plugin_tshark_loads() -> Path | None:
    """The p2pc.so tshark loads on its own, found from the folders it reads (no tshark run):
    the global plugin folder, and (not as root, which ignores them) WIRESHARK_PLUGIN_DIR and
    the personal folder."""
    try:
        major, minor, _ = ws_version()
    except ToolMissing:
        return None
    rel = Path(f"{major}.{minor}") / "epan" / "p2pc.so"
    cands = [root / rel for root in _global_plugin_roots()]
    if os.geteuid() != 0:
        if os.environ.get("WIRESHARK_PLUGIN_DIR"):
            cands.append(Path(os.environ["WIRESHARK_PLUGIN_DIR"]) / rel)
        cands.append(Path.home() / ".local/lib/wireshark/plugins" / rel)
    return next((c for c in cands if c.is_file()), None)


def _loadable(plugin: Path) -> Wireshark:
    why = version_mismatch(plugin)
    if why:
        raise PluginMissing(why)
    return Wireshark(plugin=plugin)


def open_wireshark(plugin: str | os.PathLike | None = None) -> Wireshark:
    """A Wireshark runner that loads p2pc: the given plugin, else the one tshark already loads,
    else the personal installation (which tshark ignores as root), else this repo's build."""
    if not shutil.which("tshark"):
        raise TsharkMissing("tshark not found: install it with `sudo apt-get install tshark` "
                            "(or run `make deps`)")
    if plugin or os.environ.get("P2PC_PLUGIN"):
        path = Path(plugin or os.environ["P2PC_PLUGIN"])
        if not path.is_file():
            raise PluginMissing(f"{path}: no such plugin file (build it with `make build`)")
        return _loadable(path)
    # Decided from the plugin folders, without a tshark run; `tshark -G plugins` (about 1 s)
    # only when no plugin file is found anywhere, for an installation in an unusual place.
    plain = Wireshark()
    if plugin_tshark_loads() is not None:
        return plain
    for cand in (personal_plugin(), built_plugin()):
        if cand is not None:
            return _loadable(cand)
    if tshark_has_plugin(plain):
        return plain
    raise PluginMissing("the p2pc plugin is not installed: run `make install-user` in the p2pc "
                        "repository (or pass --plugin PATH/p2pc.so)")


# The dump's format version (its `#p2pc-records` line) this parser reads.
RECORDS_VERSION = "4"


def unescape(field: str) -> str:
    r"""A string column as the plugin's printer escaped it (docs/tap-format.md): \\, \t, \n, \r
    and \xHH, the bytes UTF-8."""
    if "\\" not in field:
        return field
    return codecs.escape_decode(field.encode("ascii", "backslashreplace"))[0].decode("utf-8", "replace")


def _optional_int(field: str) -> int | None:
    return int(field) if field else None


# How a column becomes its record's field, by the field's annotation as its dataclass writes it.
COLUMN_TYPES = {"int": int, "float": float, "str": str, "Text": unescape, "int | None": _optional_int,
                "bytes": bytes.fromhex}


def _malformed(kind: str, key: str, parts: list[str], why: str) -> MalformedRecord:
    """The error naming the record by its first column (`key`: the frame, or a T line's stream)."""
    value = parts[1] if len(parts) > 1 else "?"
    return MalformedRecord(f"a {kind} record of {key} {value} is malformed ({why}): is the plugin "
                           "this analyzer's version? `p2pc doctor` checks")


def record_parser(cls, kind: str):
    """The parser of one line tag's records: its columns (the tag, then one per field of the
    dataclass `cls`, in order) to a `cls`, each converted by its field's type (COLUMN_TYPES);
    a wrong column count or a column that is not its type is a MalformedRecord naming `kind`
    and the record's first column (its frame; a T line's stream).

    Written out as the one expression a hand-made parser would be (as dataclasses writes its
    __init__): a dump holds millions of records, and a loop over converters per column took
    about a quarter longer per M or P line."""
    names = {"cls": cls, "kind": kind, "key": dataclasses.fields(cls)[0].name, "malformed": _malformed}
    args = []
    for i, f in enumerate(dataclasses.fields(cls), 1):
        convert = COLUMN_TYPES[f.type]
        if convert is str:
            args.append(f"parts[{i}]")
        else:
            names[f"convert_{f.name}"] = convert
            args.append(f"convert_{f.name}(parts[{i}])")
    columns = len(args) + 1
    source = (f"def parse_{cls.__name__}(parts):\n"
              f"    if len(parts) != {columns}:\n"
              f"        raise malformed(kind, key, parts, f'{{len(parts)}} columns, {columns} expected')\n"
              f"    try:\n"
              f"        return cls({', '.join(args)})\n"
              f"    except ValueError as e:\n"
              f"        raise malformed(kind, key, parts, str(e)) from None\n")
    exec(source, names)
    return names[f"parse_{cls.__name__}"]


# The dump's line tags: the record each is, parsed by PARSERS[tag](line split at its tabs).
RECORD_TYPES = {"M": (Message, "message"), "T": (TcpDirection, "TCP"), "I": (PeerIdentity, "peer ID"),
                "S": (Violation, "conformance"), "G": (GossipPart, "gossip"), "B": (BudgetPart, "budget"),
                "P": (Payload, "payload")}
PARSERS = {tag: record_parser(cls, kind) for tag, (cls, kind) in RECORD_TYPES.items()}
M_FIELDS = tuple(f.name for f in dataclasses.fields(Message))


def parse_record(line: str):
    """One record line of the dump (an M, T, I, S, G, B or P line, with or without its newline)
    as its record."""
    parse = PARSERS.get(line[:1])
    if parse is None or line[1:2] != "\t":
        raise MalformedRecord(f"not a record line: {line[:40]!r}")
    return parse(line.rstrip("\n").split("\t"))


def dispatch(line: str, handlers: dict) -> bool:
    """The one dispatch of the dump's record lines: a record line (RECORD_TYPES) is parsed (a
    malformed one raises) and handed to handlers[its tag], if any; False for any other line."""
    parse = PARSERS.get(line[:1])
    if parse is None or line[1:2] != "\t":
        return False
    record = parse(line.rstrip("\n").split("\t"))
    handler = handlers.get(line[:1])
    if handler is not None:
        handler(record)
    return True


def carried_connection(line: str) -> tuple[str, int, str, int] | None:
    """A `#CARRIED src srcport dst dstport` line (live's session resets, docs/tap-format.md): the
    connection the plugin carried over the reset, as (address, port, address, port); None for
    any other line."""
    if not line.startswith("#CARRIED\t"):
        return None
    _, a, pa, b, pb = line.rstrip("\n").split("\t")
    return a, int(pa), b, int(pb)


def check_version(line: str) -> None:
    """The dump's `#p2pc-records VERSION` line: a version this parser does not read is an error
    that says so (a plugin of another p2pc version), not a column count that fails later."""
    version = line.rstrip("\n").split("\t")[1:2]
    if version != [RECORDS_VERSION]:
        raise MalformedRecord(f"the records dump is format {''.join(version) or '?'}, this analyzer reads "
                              f"{RECORDS_VERSION}: is the plugin this analyzer's version? `p2pc doctor` checks")


@dataclass
class ReadResult:
    messages: int = 0
    truncated: bool = False
    warning: str = ""


def option_error(stderr: str) -> TsharkOptionError | None:
    """tshark's refusal of an option, as its own first line (None if it refused none)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if any(k in l for k in OPTION_ERRORS):
            text = l if l.startswith("tshark") else f"tshark: {l}"
            if i + 1 < len(lines) and text.endswith(":"):
                text += " " + lines[i + 1]
            return TsharkOptionError(text)
    return None


# How tshark says it could not load a plugin (wsutil/plugins.c): the library would not open
# ("Couldn't load plugin 'p2pc.so': libwireshark.so.19: cannot open shared object file", a
# build for another Wireshark), or it was built for another version ("The plugin 'p2pc.so' was
# compiled for Wireshark version 4.6"), or it lacks a plugin's symbols.
_PLUGIN_FAILURE = re.compile(r"^(?:tshark: )?(.*plugin '(?:[^']*/)?p2pc\.so'.*)$", re.M | re.I)


def plugin_error(stderr: str) -> PluginMissing | None:
    """tshark's own reason for not loading p2pc.so, with the fix (None if it said none): every
    later complaint (an unknown p2pc preference or tap) follows from it."""
    m = _PLUGIN_FAILURE.search(stderr)
    if not m:
        return None
    try:
        major, minor, _ = ws_version()
        running = f" {major}.{minor}"
    except ToolMissing:
        running = ""
    return PluginMissing(f"tshark{running} cannot load the p2pc plugin: {m.group(1).strip()} (a build for "
                         f"another Wireshark version?): rebuild it for this one (make build; make install-user)")


def tshark_refusal(stderr: str) -> P2pcError | None:
    """What tshark refused first: the plugin (plugin_error), else an option (option_error)."""
    return plugin_error(stderr) or option_error(stderr)


def _classify_failure(capture: str, stderr: str) -> P2pcError:
    s = stderr.strip().splitlines()
    msg = s[-1] if s else "tshark failed"
    refused = tshark_refusal(stderr)
    if refused:
        return refused
    if "doesn't exist" in stderr or "No such file" in stderr:
        return CaptureUnreadable(f"{capture}: no such file")
    if "Permission denied" in stderr:
        return CaptureUnreadable(f"{capture}: permission denied (check the file's permissions)")
    if "isn't a capture file" in stderr or "unknown file format" in stderr.lower():
        return CaptureUnreadable(f"{capture}: not a capture file tshark understands")
    if "invalid -z argument" in stderr.lower() or "p2pc,records" in stderr:
        return PluginMissing("tshark did not load the p2pc plugin: run `p2pc doctor`")
    return CaptureUnreadable(f"{capture}: {msg}")


# Every analysis is one tshark pass: nothing re-dissects a frame, so the plugin keeps no replay
# state (memory stays flat over any capture), and TCP puts reordered segments back in order.
ONE_PASS_PREFS = ["-o", "p2pc.keep_replay:FALSE", "-o", "tcp.reassemble_out_of_order:TRUE"]


def readable_capture(ws: Wireshark, capture: str | os.PathLike) -> str:
    """The path tshark reads `capture` by (Wireshark.readable); CaptureUnreadable for a file
    that is missing or unreadable; "-" (standard input) as it is: tshark reads it, as -r -."""
    path = str(capture)
    if path == "-":
        return path
    if not os.path.exists(path):
        raise CaptureUnreadable(f"{path}: no such file")
    if not os.access(path, os.R_OK):
        raise CaptureUnreadable(f"{path}: permission denied (check the file's permissions)")
    if os.path.isdir(path):
        raise CaptureUnreadable(f"{path}: a folder, not a capture file")
    if os.path.getsize(path) == 0:
        raise CaptureUnreadable(f"{path}: an empty file, not a capture")
    return ws.readable(path)


def cut_short(path: str, stderr: str, result: ReadResult) -> bool:
    """Whether tshark said the capture is cut short (result then says so too)."""
    if "cut short in the middle of a packet" in stderr or "truncated" in stderr.lower():
        result.truncated = True
        result.warning = f"{path}: the capture is cut short; the report covers what could be read"
    return result.truncated


def start_capture(ws: Wireshark, capture: str | os.PathLike, extra: list[str] | None = None,
                  opts: TsharkOptions | None = None, stream: bool = False) -> subprocess.Popen:
    """Start one capture's tshark pass (read it with read_records); stream: the dump's stream
    mode (a T line after every TCP frame).  Raises CaptureUnreadable for a file that is
    missing or unreadable."""
    path = readable_capture(ws, capture)
    opts = opts or TsharkOptions()
    args = ["-n", "-q", "-r", path, *ONE_PASS_PREFS, *opts.args,
            "-z", opts.tap("records,stream" if stream else "records"),
            *(extra or [])]
    return ws.popen("tshark", args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    bufsize=1 << 16)


class _StderrTail:
    """A tshark's stderr read in a thread of its own while its stdout is read: a pipe whose
    buffer fills blocks the writer, so reading stdout to the end first could wait on a tshark
    that waits on a full stderr.  Keeps the last `keep` characters."""

    def __init__(self, proc: subprocess.Popen, keep: int = 1 << 16):
        self._chunks: list[str] = []
        self._keep = keep
        self._thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self._thread.start()

    def _read(self, pipe) -> None:
        size = 0
        for chunk in iter(lambda: pipe.read(4096), ""):
            self._chunks.append(chunk)
            size += len(chunk)
            while size - len(self._chunks[0]) > self._keep:
                size -= len(self._chunks.pop(0))

    def text(self) -> str:
        """Everything kept, once tshark closed its stderr."""
        self._thread.join()
        return "".join(self._chunks)


def read_records(proc: subprocess.Popen, capture: str | os.PathLike, on_message, on_tcp,
                 on_peer=None, on_violation=None, on_payload=None, on_progress=None,
                 on_gossip=None, on_budget=None) -> ReadResult:
    """Stream the records of a tshark pass start_capture started: on_message(Message) per M
    line, on_tcp(TcpDirection) per T line, on_peer(PeerIdentity) per I line,
    on_violation(Violation) per S line, on_gossip(GossipPart) per G line, on_budget(BudgetPart)
    per B line, on_payload(Payload) per P line (when the pass also runs
    `-z p2pc,payloads`).  on_progress(key, data_bytes), for a stream-mode pass of a file
    (start_capture(stream=True), no session reset): per T line, the direction's key and its TCP
    payload bytes so far; on_tcp then gets each direction's last T line only, once the dump
    ends (what the plain mode prints), and the other T lines are never parsed whole.  Raises
    P2pcError subclasses; a truncated capture returns what was read with result.truncated set."""
    path = str(capture)
    result = ReadResult()
    header_seen = False
    last_t: dict = {}           # on_progress: direction key -> its last T line
    assert proc.stdout is not None
    err = _StderrTail(proc)
    parse_m, parse_t = PARSERS["M"], PARSERS["T"]
    others = {"P": on_payload, "I": on_peer, "S": on_violation, "G": on_gossip, "B": on_budget}
    try:
        for line in proc.stdout:
            tag = line[:2]
            if tag == "M\t":
                on_message(parse_m(line.rstrip("\n").split("\t")))
                result.messages += 1
            elif tag == "T\t":
                if on_progress is None:
                    on_tcp(parse_t(line.rstrip("\n").split("\t")))
                else:           # a line per TCP frame: only the columns on_progress needs
                    f = line.split("\t", 10)
                    key = (int(f[1]), f[2], int(f[3]))
                    last_t[key] = line
                    on_progress(key, int(f[9]))
            elif dispatch(line, others):
                pass
            elif line.startswith("#p2pc-records"):
                check_version(line)
                header_seen = True
            elif line.startswith("#END"):
                end = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t")[1:] if "=" in kv)
                if "not_kept_from" in end:
                    raise RecordsIncomplete(
                        f"{path}: records from frame {end['not_kept_from']} on are missing: tshark's "
                        "second pass (-2) found nothing kept for them (p2pc.max_replay_mib ran out); "
                        "run one pass (no -2) or raise p2pc.max_replay_mib")
        for line in last_t.values():
            on_tcp(parse_t(line.rstrip("\n").split("\t")))
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    rc = proc.wait()
    stderr = err.text()
    if cut_short(path, stderr, result):
        return result
    if rc != 0 or not header_seen:
        raise _classify_failure(path, stderr)
    return result


def read_capture(ws: Wireshark, capture: str | os.PathLike, on_message, on_tcp,
                 extra: list[str] | None = None, opts: TsharkOptions | None = None,
                 on_violation=None) -> ReadResult:
    """One capture's tshark pass, its records streamed as read_records does."""
    return read_records(start_capture(ws, capture, extra, opts), capture, on_message, on_tcp,
                        on_violation=on_violation)


def _tshark_lines(ws: Wireshark, capture: str | os.PathLike, args: list[str],
                  result: ReadResult | None) -> Iterator[str]:
    """The stdout lines of one tshark pass over `capture` (-n -r, one pass, then `args`);
    `result` says whether the capture was cut short (what was read is yielded)."""
    proc = ws.popen("tshark", ["-n", "-r", readable_capture(ws, capture), *ONE_PASS_PREFS, *args],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    err = _StderrTail(proc)
    try:
        yield from proc.stdout
    except BaseException:       # the caller stopped early (GeneratorExit) or failed: no orphan
        proc.kill()
        proc.wait()
        raise
    rc = proc.wait()
    stderr = err.text()
    if rc != 0 and not cut_short(str(capture), stderr, result or ReadResult()):
        raise _classify_failure(str(capture), stderr)


# Separates a field's occurrences in a frame (read_fields): no protocol ID or address has it.
FIELD_AGGREGATOR = "\x1f"


def read_fields(ws: Wireshark, capture: str | os.PathLike, fields: list[str], opts: TsharkOptions,
                result: ReadResult | None = None) -> Iterator[list[list[str]]]:
    """Per frame the display filter (opts.display_filter, as -Y) matches: each of `fields`,
    as the list of its occurrences in the frame (tshark -T fields)."""
    args = [*opts.args, *(["-Y", opts.display_filter] if opts.display_filter else []), "-T", "fields",
            "-E", "occurrence=a", "-E", f"aggregator={FIELD_AGGREGATOR}", "-E", "separator=/t"]
    for f in fields:
        args += ["-e", f]
    for line in _tshark_lines(ws, capture, args, result):
        yield [c.split(FIELD_AGGREGATOR) if c else [] for c in line.rstrip("\n").split("\t")]
