"""`p2pc live`: one continuous capture, decoded as it arrives.

dumpcap captures without a restart for as long as p2pc runs and writes pcapng to a pipe; a
thread copies those bytes to tshark's stdin (and to the -w file); tshark, with the plugin's
streaming records tap (`-z p2pc,records,stream`), prints each record as its packet is
dissected; the main thread folds the records into the same aggregate `p2pc analyze` builds.
So every report is `p2pc analyze` of the packets captured so far.

Memory stays bounded for days through tshark's session reset (-M): every N packets tshark
forgets its connections. The plugin marks a reset with `#RESET`. With a state budget
(p2pc.live_state_mib, --state-mib) the plugin carries the state of libp2p connections over the
reset and says which with `#CARRIED`: they go on decoding where they stopped. Bytes that the
other connections open across a reset carry afterwards without a decoded message are counted
as undecoded (a row of the report, a metric), never dropped silently.

run() is the command: the capture with its status line (livestatus.py), its reports (report.py's
live_report, written by output's emit), and what the options add: the metrics endpoint
(metrics.py, imported only then: prometheus_client), --keys-from's key tracer (keys.py) and
--keylog's follower (keylog.py).
"""
from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from . import keys, private
from .errors import (CaptureEnded, CaptureFilterError, CapturePermission, InterfaceError, OutputError,
                     P2pcError, PluginMissing, UsageError, WriteFailed)
from .keylog import follow
from .livestatus import LiveStatus
from .output import escape
from .output.emit import emit, output_path
from .records import ONE_PASS_PREFS, carried_connection, check_version, dispatch, open_wireshark, tshark_refusal
from .report import live_report
from .series import SeriesAggregate
from .wsenv import Wireshark


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def ended_how(rc: int) -> str:
    return f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"


class PcapngBlocks:
    """A pcapng stream (dumpcap -w -) cut at its block boundaries: what is passed on, to the -w
    file and to tshark, always ends with a whole block."""

    # The block types that hold a packet: Enhanced, Simple, and the obsolete Packet Block.
    PACKET_BLOCKS = {6, 3, 2}

    def __init__(self):
        self.rest, self.order = b"", "<"
        self.packets = 0        # the packet blocks passed on: the packets dumpcap captured

    def whole(self, chunk: bytes) -> bytes:
        """The whole blocks of what came so far; the rest waits for the next chunk."""
        buf, off = self.rest + chunk, 0
        while len(buf) - off >= 12:
            if buf[off:off + 4] == b"\n\r\r\n":       # a Section Header Block: its byte order
                self.order = "<" if buf[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            kind, n = struct.unpack_from(self.order + "II", buf, off)
            if len(buf) - off < n:
                break
            self.packets += kind in self.PACKET_BLOCKS
            off += max(n, 12)          # a block is at least 12 bytes long
        self.rest = buf[off:]
        return buf[:off]


def capture_error(iface: str, bpf: str | None, stderr: str) -> P2pcError:
    """dumpcap's failure as one line naming the cause and the fix."""
    if "no device named" in stderr or "No such device" in stderr:
        return InterfaceError(f"no interface named {iface!r} (dumpcap -D lists them)")
    if "permission to capture" in stderr or "Operation not permitted" in stderr:
        return CapturePermission(f"no permission to capture on {iface}: run as root, or see the "
                                 "fix `p2pc doctor` prints")
    if "capture filter" in stderr:
        why = re.search(r"\(([^()]*)\)\.?\s*$", stderr.split("See the User's Guide")[0].strip())
        return CaptureFilterError(f"invalid capture filter {bpf!r}"
                                  + (f": {why.group(1)}" if why else ""))
    lines = [l for l in stderr.strip().splitlines() if l.strip() and not l.startswith("Capturing on")]
    return InterfaceError(f"cannot capture on {iface}: " + (lines[0] if lines else "dumpcap failed"))


# Wireshark's name-resolution files. tshark reloads them at every session reset (-M) without
# freeing the previous copy (with Wireshark 4.0's manuf, services, wka and enterprises.tsv,
# heaptrack attributes about 11 MB per reset to them: tshark -M 5000 grew to 1.4 GB on 600,000
# packets, and stays at 140 MB without them). tshark runs with -n: they name nothing in the
# records.
NAME_FILES = {"manuf", "manuf.tsv", "services", "wka", "enterprises", "enterprises.tsv", "ethers",
              "ipxnets", "vlans", "ss7pcs", "hosts", "subnets"}


def lean_data_dir(ws: Wireshark) -> str | None:
    """A copy of Wireshark's global data folder (as links) without its name-resolution files,
    for WIRESHARK_DATA_DIR; None if tshark does not say where that folder is."""
    res = ws.run("tshark", ["-G", "folders"])
    found = re.search(r"^Global configuration:\s*(.+)$", res.stdout, re.M)
    if not found or not os.path.isdir(found.group(1).strip()):
        return None
    src = found.group(1).strip()
    lean = private.make_dir("wsdata")      # tshark may run as nobody (wsenv, private.py)
    for name in os.listdir(src):
        if name not in NAME_FILES:
            os.symlink(os.path.join(src, name), os.path.join(lean, name))
    return lean


# The bandwidth figure keeps one sum per second and connection direction: past this many, the
# oldest seconds go (the report says so), so days of capture keep memory bounded.
BANDWIDTH_CELLS = 200_000


@dataclass
class LiveAggregate(SeriesAggregate):
    """The analyze aggregate, its per-second bandwidth sums limited to the latest seconds."""
    trimmed_before: int | None = None
    _widens = False

    def add_message(self, file: str, m) -> None:
        super().add_message(file, m)
        if len(self.bandwidth) > BANDWIDTH_CELLS:
            seconds = sorted({t for t, _ in self.bandwidth})
            cut = seconds[len(seconds) // 10 or 1]
            for k in [k for k in self.bandwidth if k[0] < cut]:
                del self.bandwidth[k]
            self.trimmed_before = cut


DROPS = re.compile(r"Packets received/dropped on interface '[^']*': (\d+)/(\d+)")


@dataclass
class LiveTotals:
    """What the running capture adds up, shared with the metrics endpoint under `lock`.

    Every session of tshark's goes into one aggregate, as `p2pc analyze` reads the capture in
    one: the stream tap numbers each TCP connection once for the whole capture and counts its
    directions' segments and ACKs on over a reset (docs/tap-format.md), so a direction's key and
    TCP figures are those of the offline analysis, and so is the savings model's estimate."""
    agg: LiveAggregate = field(default_factory=LiveAggregate)
    lock: threading.Lock = field(default_factory=threading.Lock)
    epoch: int = 0                 # tshark session resets so far
    dropped: int = 0               # packets the capture itself dropped
    messages: int = 0              # P2P messages so far, and their wire bytes (live's status)
    wire_bytes: int = 0
    # direction key (stream, src, srcport) -> (proto, 4-tuple), for every direction that
    # carried P2P messages
    p2p_dirs: dict = field(default_factory=dict)
    # 4-tuple -> the epochs at whose end (reset) the plugin carried its connection's state over
    carried: dict = field(default_factory=lambda: defaultdict(set))
    # direction key -> [first, last] epoch with a T line of it, and -> decoded wire bytes
    epochs: dict = field(default_factory=dict)
    wire: dict = field(default_factory=lambda: defaultdict(int))
    metrics: object = None         # metrics.Metrics: told of each record, under lock

    # The aggregate's file: one, whatever the resets.
    source = "live"

    @cached_property
    def _handlers(self) -> dict:
        """What each record line is handed to (records.dispatch, the one dispatch of the dump)."""
        return {"M": self._message, "T": self._tcp, "B": self._budget,
                "I": lambda p: self._locked(self.agg.add_peer, self.source, p),
                "S": lambda v: self._locked(self.agg.add_violation, self.source, v),
                "G": lambda g: self._locked(self.agg.add_gossip, g)}

    def _locked(self, f, *args) -> None:
        with self.lock:
            f(*args)

    def _message(self, m) -> None:
        with self.lock:
            self.agg.add_message(self.source, m)
            self.p2p_dirs.setdefault(m.key, (m.proto, (m.src, m.srcport, m.dst, m.dstport)))
            self.wire[m.key] += m.wire_len
            self.messages += 1
            self.wire_bytes += m.wire_len
            if self.metrics:
                self.metrics.message(m)

    def _tcp(self, t) -> None:
        with self.lock:
            self.agg.add_tcp(self.source, t)
            span = self.epochs.setdefault(t.key, [self.epoch, self.epoch])
            span[1] = self.epoch
            if self.metrics:
                self.metrics.tcp(t)

    def _budget(self, b) -> None:
        with self.lock:
            self.agg.add_budget(b)
            if self.metrics:
                self.metrics.budget(b)

    def line(self, line: str) -> None:
        if dispatch(line, self._handlers):
            return
        if (conn := carried_connection(line)) is not None:
            a, pa, b, pb = conn
            with self.lock:
                self.carried[(a, pa, b, pb)].add(self.epoch)
                self.carried[(b, pb, a, pa)].add(self.epoch)
        elif line.startswith("#RESET"):
            with self.lock:
                if self.metrics:
                    self.metrics.settled()
                self.epoch += 1

    def undecoded_of(self, key: tuple) -> int:
        """The undecoded bytes of a P2P connection direction (its key) open across a session
        reset whose state the plugin did not carry over every one of them: the TCP payload bytes
        it carried beyond the wire bytes of its records (for TLS, its record overhead counts
        too; for libp2p, its framing, and what its buffers held when a reset evicted it); else 0."""
        span = self.epochs.get(key)
        if key not in self.p2p_dirs or not span or span[0] == span[1]:
            return 0
        if set(range(*span)) <= self.carried.get(self.p2p_dirs[key][1], set()):
            return 0            # carried over every reset it was open across
        return max(0, self.agg.tcp[(self.source, *key)].data_bytes - self.wire.get(key, 0))

    def undecoded_directions(self) -> list[dict]:
        """The P2P connection directions with undecoded bytes (undecoded_of)."""
        out = []
        for key, (proto, (src, srcport, dst, dstport)) in self.p2p_dirs.items():
            n = self.undecoded_of(key)
            if n:
                tcp = self.agg.tcp[(self.source, *key)].data_bytes
                out.append({"proto": proto, "src": src, "srcport": srcport, "dst": dst,
                            "dstport": dstport, "tcp_bytes": tcp, "decoded_bytes": tcp - n,
                            "undecoded_bytes": n})
        return out

    def undecoded(self) -> dict[str, int]:
        """Per protocol, the undecoded bytes of undecoded_directions()."""
        out: dict = defaultdict(int)
        for d in self.undecoded_directions():
            out[d["proto"]] += d["undecoded_bytes"]
        return dict(out)


@dataclass
class LiveCapture:
    """dumpcap → (tee to -w) → tshark; records streamed to `totals`."""
    ws: Wireshark
    interface: str
    capture_filter: str | None
    write: str | None
    duration: int | None            # seconds, or None: until stop()
    reset_packets: int
    state_mib: int                  # p2pc.live_state_mib: what the plugin carries over a reset
    tshark_options: list
    tap_filter: str | None
    totals: LiveTotals
    buffer_mib: int = 64
    dumpcap: subprocess.Popen | None = None
    tshark: subprocess.Popen | None = None
    # Set by stop() (^C, SIGTERM, a -w write that failed), at any moment, startup included.
    stopping: threading.Event = field(default_factory=threading.Event)
    _stopped_at: float = 0.0        # when dumpcap last got SIGINT
    captured: int = 0               # bytes dumpcap wrote
    saved: int = 0                  # bytes of whole blocks in the -w file
    fault: P2pcError | None = None  # why the capture ended early, once it had begun
    _stderr: dict = field(default_factory=dict)
    _out: object = None             # the -w file
    _tee: threading.Thread | None = None
    _data_dir: str | None = None    # tshark's WIRESHARK_DATA_DIR, when it resets its session
    _blocks: PcapngBlocks = field(default_factory=PcapngBlocks)

    @property
    def packets(self) -> int:
        """The packets dumpcap captured so far (the packet blocks of its pcapng)."""
        return self._blocks.packets

    def start(self) -> None:
        """tshark and the capture together: while tshark loads (it starts its taps once it
        has read the capture's header), packets wait in the capture buffer (-B). Nothing is
        started once stop() was called."""
        try:
            # 0600, as dumpcap's own -w makes it: the packets are the operator's, not the machine's.
            self._out = os.fdopen(os.open(self.write, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                                  "wb", buffering=0) if self.write else None
        except OSError as e:
            raise OutputError(f"cannot write {self.write}: {e.strerror}") from None
        if self.tap_filter:
            self._check_filter()
        tap = "p2pc,records,stream" + (f",{self.tap_filter}" if self.tap_filter else "")
        args = ["-n", "-q", "-r", "-", *ONE_PASS_PREFS, *self.tshark_options, "-z", tap]
        env = None
        if self.reset_packets:
            args[:0] = ["-M", str(self.reset_packets), "-o", f"p2pc.live_state_mib:{self.state_mib}"]
            self._data_dir = lean_data_dir(self.ws)
            if self._data_dir:
                env = dict(os.environ, WIRESHARK_DATA_DIR=self._data_dir)
        if self.stopping.is_set():
            return
        self.tshark = self.ws.popen("tshark", args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, env=env, bufsize=0)
        self._drainer("tshark", self.tshark)
        self._start_capture()

    def _check_filter(self) -> None:
        """tshark checks the tap's filter only once packets come: check it now, on a capture
        with no packets (an empty pcap's header)."""
        empty = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
        res = self.ws.run("tshark", ["-n", "-q", "-r", "-", "-z", f"p2pc,records,{self.tap_filter}"],
                          input=empty, text=False)
        refused = tshark_refusal(res.stderr.decode("utf-8", "replace"))
        if refused:
            raise refused

    def _start_capture(self) -> None:
        cmd = ["dumpcap", "-q", "-i", self.interface, "-w", "-", "-B", str(self.buffer_mib)]
        if self.capture_filter:
            cmd += ["-f", self.capture_filter]
        if self.duration:
            cmd += ["-a", f"duration:{self.duration}"]
        self.dumpcap = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True)
        if self.stopping.is_set():          # stop() came while dumpcap started
            self._stopped_at = time.monotonic()
            self.dumpcap.send_signal(signal.SIGINT)
        self._drainer("dumpcap", self.dumpcap)
        self._tee = threading.Thread(target=self._copy, daemon=True)
        self._tee.start()

    def _drainer(self, name: str, proc: subprocess.Popen) -> None:
        threading.Thread(target=self._drain, args=(name, proc.stderr), daemon=True).start()

    def _drain(self, name: str, pipe) -> None:
        chunks = []
        for chunk in iter(lambda: pipe.read(4096), b""):
            chunks.append(chunk)
            if len(chunks) > 64:            # "resetting session." lines, for days: keep the tail
                chunks = chunks[-32:]
        self._stderr[name] = b"".join(chunks).decode("utf-8", "replace")

    def _copy(self) -> None:
        """The capture's whole blocks to the -w file and to tshark, as they come, until dumpcap
        ends: once tshark has ended, to the file alone; once the file failed, nowhere."""
        src, dst = self.dumpcap.stdout.fileno(), self.tshark.stdin     # unbuffered
        blocks = self._blocks
        try:
            for chunk in iter(lambda: os.read(src, 1 << 20), b""):
                self.captured += len(chunk)
                data = blocks.whole(chunk)
                if not data or not self._save(data) or dst.closed:
                    continue
                try:
                    write_all(dst.fileno(), data)
                except BrokenPipeError:     # tshark ended: finish() says why
                    dst.close()
        finally:
            dst.close()

    def _save(self, data: bytes) -> bool:
        """`data` appended to the -w file, if any; False once writing it failed. Then the file is
        cut back to its last whole block, the capture stops, and tshark gets no more than the
        file holds, so the report is `p2pc analyze` of the file still."""
        if self._out is None:
            return self.fault is None
        try:
            write_all(self._out.fileno(), data)
        except OSError as e:
            try:
                os.ftruncate(self._out.fileno(), self.saved)
            except OSError:                 # not a file (/dev/full)
                pass
            self._out.close()
            self._out = None
            self.fault = WriteFailed(f"cannot write {self.write}: {e.strerror}: the capture stopped; "
                                     f"the file holds its first {self.saved:,} bytes, whole packets")
            self.stop()
            return False
        self.saved += len(data)
        return True

    def stop(self) -> None:
        """End the capture as dumpcap's own duration would: tshark reads to the end."""
        self.stopping.set()
        if self.dumpcap and self.dumpcap.poll() is None:
            self._stopped_at = time.monotonic()
            self.dumpcap.send_signal(signal.SIGINT)

    def _stop_again(self) -> None:
        """A dumpcap that got its SIGINT before it could handle it (just started) may not have
        heard it: once a second it gets another, until it ends."""
        if self.stopping.is_set() and self.dumpcap and self.dumpcap.poll() is None:
            now = time.monotonic()
            if now - self._stopped_at >= 1:
                self._stopped_at = now
                self.dumpcap.send_signal(signal.SIGINT)

    def close(self) -> None:
        """At the end, and after an error: end both processes, remove what the capture made."""
        for proc in (self.dumpcap, self.tshark):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
        if self._tee:
            self._tee.join()
        if self._out:
            self._out.close()
        if self._data_dir:
            shutil.rmtree(self._data_dir, ignore_errors=True)

    def records(self, tick: float, on_tick) -> None:
        """Feed tshark's lines to the totals until it ends; on_tick() every `tick` seconds."""
        if self.tshark is None:             # stopped before it started
            return
        sel = selectors.DefaultSelector()
        fd = self.tshark.stdout.fileno()
        sel.register(fd, selectors.EVENT_READ)
        rest = b""
        header = False
        next_tick = time.monotonic() + tick
        while True:
            timeout = max(0.0, next_tick - time.monotonic())
            if self.stopping.is_set():
                timeout = min(timeout, 1.0)     # _stop_again() below
            if sel.select(timeout):
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for raw in lines:
                    line = raw.decode("utf-8", "replace")
                    if line.startswith("#p2pc-records"):
                        check_version(line)
                        header = True
                    self.totals.line(line)
            if time.monotonic() >= next_tick:
                on_tick()
                next_tick += tick * (1 + int((time.monotonic() - next_tick) // tick))
            self._stop_again()
        sel.close()
        if self.dumpcap.poll() is None:     # tshark ended first
            self.dumpcap.send_signal(signal.SIGINT)
        self.finish(header)

    def finish(self, header: bool) -> None:
        """Once tshark ended: raise what kept the capture from starting; set `fault` to what
        ended it early (the report of what was decoded comes first)."""
        drc = self.dumpcap.wait()
        self._tee.join()
        trc = self.tshark.wait()
        for _ in range(50):                          # the stderr readers end with the pipes
            if len(self._stderr) == 2:
                break
            time.sleep(0.05)
        dstderr = self._stderr.get("dumpcap", "")
        drops = DROPS.findall(dstderr)
        with self.totals.lock:
            self.totals.dropped = sum(int(d) for _, d in drops)
            if self.totals.metrics:
                self.totals.metrics.ended(self.totals.dropped)
        if self.fault:                               # the -w file failed
            return
        saved = f"; {self.write} holds every packet captured" if self.write else ""
        if drc != 0 and not self.stopping.is_set() and not drops:
            if not self.captured:                    # it never began: the interface, a filter
                raise capture_error(self.interface, self.capture_filter, dstderr)
            lines = [l for l in dstderr.strip().splitlines() if l.strip()]
            self.fault = CaptureEnded(f"dumpcap ended while capturing ({ended_how(drc)}"
                                      + (f": {lines[-1]}" if lines and drc > 0 else "") + ")" + saved)
            return
        tstderr = self._stderr.get("tshark", "")
        if trc != 0 or not header:
            refused = tshark_refusal(tstderr)
            if refused:
                raise refused
            if "p2pc,records" in tstderr or "invalid -z" in tstderr.lower():
                raise PluginMissing("tshark did not load the p2pc plugin: run `p2pc doctor`")
            if self.stopping.is_set() and not self.captured:    # stopped before a packet came
                return
            lines = [l for l in tstderr.strip().splitlines() if l.strip() and "resetting session" not in l]
            self.fault = CaptureEnded(f"tshark ended while capturing ({ended_how(trc)}"
                                      + (f": {lines[0]}" if lines else "") + "): the report covers "
                                      "what it decoded" + saved)


def run(args) -> int:
    """`p2pc live` (args: its parsed command line, cli.py): one continuous capture; the analyze
    report of everything captured so far every --interval seconds (to --output, or to a terminal)
    and at the end (--duration, or ^C); how the capture is doing on stderr (livestatus)."""
    if not shutil.which("dumpcap"):
        raise InterfaceError("dumpcap not found: sudo apt-get install wireshark-common")
    stopping = threading.Event()
    cap = None

    def on_signal(*_) -> None:      # ^C, SIGTERM or SIGHUP, at any moment: the capture ends, not p2pc
        stopping.set()
        if cap:
            cap.stop()

    # SIGHUP too (the terminal or the SSH session gone): by default it killed p2pc with no report
    # and left dumpcap, in a session of its own, capturing.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    totals_ = LiveTotals()
    metrics = ws = None
    keys_done = threading.Event()       # ends the --keylog follower
    tracer = None                       # --keys-from's p2pc-keys
    try:
        if args.metrics:
            from .metrics import Metrics
            try:
                metrics = Metrics(args.metrics, totals_, args.interface, args.model)
            except OSError as e:
                raise UsageError("--metrics {}:{}: {}".format(*args.metrics, e.strerror or e)) from None
        local = None
        if args.by_peer:
            from .metrics import interface_addresses
            local = interface_addresses(args.interface) or None
        if args.output:     # found now, not at the first report with the capture running
            try:
                open(output_path(args.output), "a").close()
            except OSError as e:
                raise OutputError(f"cannot write {args.output}: {e.strerror}") from None
        ws = open_wireshark(args.plugin)
        if args.keys_from:      # probed before the capture starts: no connection's keys are missed
            tracer = keys.Tracer(args.keys_from, args.tshark.keylog.noise,
                                 lambda w: print(f"p2pc live: keys: {escape.text(w)}", file=sys.stderr))
            tracer.start()
        if args.tshark.keylog and args.tshark.keylog.source:    # --keylog: its parts follow it
            threading.Thread(target=follow, args=(args.tshark.keylog, keys_done,
                                                  lambda w: print(f"p2pc live: {w}", file=sys.stderr)),
                             daemon=True).start()
        cap = LiveCapture(ws, args.interface, args.capture_filter, args.write, args.duration,
                          args.session_reset, args.state_mib, list(args.tshark.args), args.tshark.display_filter,
                          totals_, args.buffer_size, stopping=stopping)
        cap.start()
        url = None
        if args.metrics:
            host, port = args.metrics
            url = f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"
        with LiveStatus(cap, totals_, url) as status:
            def tick() -> None:
                # Between reports, one goes to --output or a terminal; a pipe or a file on stdout
                # gets the final one only (a log would hold a whole report every --interval).
                if args.output:
                    show(args, totals_, local, False)
                elif sys.stdout.isatty() and args.format == "table" and totals_.messages:
                    with status.aside():        # the screen is cleared for the table
                        show(args, totals_, local, False)
                status.tick()
            cap.records(args.interval, tick)
            status.final(totals_.dropped)
        # The report of what was decoded, then what ended the capture early (if it did).
        if cap.fault is None or any(totals_.agg.by_dir.values()):
            show(args, totals_, local, True)
        if cap.fault:
            raise cap.fault
    finally:
        if tracer:
            tracer.stop()
        keys_done.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if cap:
            cap.close()
        if ws:
            ws.cleanup()
        if metrics:
            metrics.close()
    return 0


def show(args, totals_: LiveTotals, local: set[str] | None, final: bool) -> None:
    """live's report of everything captured so far (final: at the end), printed."""
    rep = live_report(totals_, args.interface, args.model, args.by_direction, args.by_peer, local, final)
    if rep is None:             # the status line says so (0 messages)
        return
    if sys.stdout.isatty() and args.format == "table" and not args.output and not final:
        sys.stdout.write("\x1b[2J\x1b[H")
    # Warnings on stderr at the end, and at each refresh of a terminal's table (the screen is
    # cleared for it); between reports written elsewhere they would repeat every --interval.
    try:
        emit(rep, args.format, args.section, args.output,
             warn=final or (sys.stdout.isatty() and args.format == "table" and not args.output))
    except OutputError as e:
        if final:
            raise
        # A full disk for --output: the capture and its -w file go on; the next report may fit.
        print(f"p2pc live: warning: {e}: the capture goes on", file=sys.stderr)
    sys.stdout.flush()
