"""`p2pc live` on real traffic: bundled captures replayed with tcpreplay onto a veth pair in a
private network namespace, captured by live, checked against the offline analysis of the same
packets (its -w file) and of the bundled captures; the metrics endpoint scraped over HTTP while
the capture runs; each capture error one line with its own exit code."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import CAPTURES, REPO, p2pc_report, per_capture_kind, run_p2pc, same_figures
from p2pc.wsenv import built_plugin

needs_netns = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tcpreplay")
    or not shutil.which("dumpcap"),
    reason="needs root (network namespaces), ip, tcpreplay and dumpcap")

BTC = CAPTURES / "bitcoin/btc-compressed.pcapng"
ETH2 = CAPTURES / "eth2/eth2-yamux.pcapng"
PORT = 9464


@pytest.fixture(scope="module")
def netns():
    """A private namespace with a veth pair: tcpreplay sends on va, live captures on vb."""
    name = f"p2pclive{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {made.stderr.strip()}")
    try:
        for cmd in (["link", "add", "va", "type", "veth", "peer", "name", "vb"],
                    ["link", "set", "va", "up"], ["link", "set", "vb", "up"], ["link", "set", "lo", "up"]):
            res = subprocess.run(["ip", "-n", name, *cmd], capture_output=True, text=True)
            if res.returncode != 0:     # a chroot or container without veth
                pytest.skip(f"cannot make a veth pair here: {res.stderr.strip()}")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name])


def in_ns(ns: str, *cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True, **kw)


def probe_pcap(path: Path) -> Path:
    """One UDP datagram (not P2P) in a pcap: sent until the capture has begun."""
    payload = b"p2pc live probe"
    udp = struct.pack("!HHHH", 40000, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes([198, 51, 100, 1]), bytes([198, 51, 100, 2]))
    frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp
    path.write_bytes(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
                     + struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
    return path


class Live:
    """`p2pc live` running in the namespace, its report and -w file in tmp."""

    def __init__(self, ns: str, tmp: Path, *extra: str, pcap: Path | None = None, output: bool = True,
                 stderr=subprocess.PIPE):
        """output: the report to --output (else stdout); stderr: where live's stderr goes."""
        self.ns, self.tmp = ns, tmp
        self.pcap, self.report = pcap or tmp / "live.pcapng", tmp / "live.json"
        env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "p2pc", "live", "-i", "vb",
             "--interval", "1", "-w", str(self.pcap), "--format", "json",
             *(["--output", str(self.report)] if output else []), *extra],
            env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        self.out = ""
        probe = probe_pcap(tmp / "probe.pcap")
        for _ in range(300):            # the -w file gets its first bytes once dumpcap captures
            assert self.proc.poll() is None, self.proc.communicate()
            self.replay(probe)
            if self.pcap.exists() and self.pcap.stat().st_size > 0:
                return
            time.sleep(0.2)
        raise AssertionError("live never started capturing")

    def replay(self, capture: Path) -> None:
        res = in_ns(self.ns, "tcpreplay", "-q", "--mbps=50", "-i", "va", str(capture))
        assert res.returncode == 0, res.stderr

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)        # ^C: the final report, exit 0
        self.out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, err


def said(err: str) -> list[str]:
    """live's stderr lines but its status (JSON lines, test_off_a_terminal_live_says_how_it_is_doing…)."""
    return [l for l in err.splitlines() if not l.startswith('{"p2pc_live": ')]


def rows_by_type(report: dict) -> dict:
    return {(r["proto"], r["msg_type"]): r for r in report["rows"]}


def scrape(ns: str) -> str:
    res = in_ns(ns, "curl", "-sf", f"http://127.0.0.1:{PORT}/metrics")
    assert res.returncode == 0, res.stderr
    return res.stdout


def samples(text: str, name: str, **labels: str) -> list[tuple[dict, float]]:
    """The samples of metric `name` (labels, value) whose labels include `labels`."""
    out = []
    for m in re.finditer(rf"^{name}\{{([^}}]*)\}} (\S+)$", text, re.M):
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if all(got.get(k) == v for k, v in labels.items()):
            out.append((got, float(m.group(2))))
    return out


def metric_sum(text: str, name: str, **labels: str) -> float:
    return sum(v for _, v in samples(text, name, **labels))


@needs_netns
def test_live_equals_offline_analysis_and_serves_metrics(netns, tmp_path):
    btc = p2pc_report("analyze", str(BTC))
    eth2 = p2pc_report("analyze", str(ETH2))
    live = Live(netns, tmp_path, "--metrics", f"127.0.0.1:{PORT}")
    try:
        live.replay(BTC)
        # The endpoint while the capture runs: the Bitcoin capture's messages, bytes and
        # savings, as the offline analysis of the bundled capture has them.
        want = btc["totals"]
        budget = sum(r["bytes"] for r in next(s for s in btc["sections"] if s["name"] == "budget")["rows"])
        for _ in range(150):
            text = scrape(netns)
            if metric_sum(text, "p2pc_messages_total") >= want["messages"] and \
                    metric_sum(text, "p2pc_bytes_total") >= budget:
                break
            time.sleep(0.2)
        assert metric_sum(text, "p2pc_messages_total") == want["messages"]
        assert metric_sum(text, "p2pc_wire_bytes_total") == want["wire_bytes"]
        assert metric_sum(text, "p2pc_payload_bytes_total") == want["payload_bytes"]
        assert metric_sum(text, "p2pc_raw_bytes_total") == want["raw_bytes"]
        assert metric_sum(text, "p2pc_saved_bytes", kind="payload") == want["payload_saved"]
        # The byte budget: Bitcoin's stream bytes are its messages', the rest its frames' transport
        # bytes, as the offline analysis has them.
        assert metric_sum(text, "p2pc_bytes_total", layer="messages") == want["wire_bytes"]
        assert metric_sum(text, "p2pc_bytes_total") == budget
        # Header and ACK savings: the model's figure, which the report rounds.
        for kind in ("header", "ack"):
            assert abs(metric_sum(text, "p2pc_saved_bytes", kind=kind) - want[f"{kind}_saved"]) <= 0.5, kind
        # Every metric the Grafana dashboard plots is one the endpoint serves, with every label
        # the dashboard sums by.
        dashboard = json.loads((REPO / "docs/grafana/p2pc.json").read_text())
        served = set(re.findall(r"^(p2pc_\w+)[{ ]", text, re.M))
        for expr in (t["expr"] for p in dashboard["panels"] for t in p["targets"]):
            for by, names in re.findall(r"by \(([^)]*)\) \(([^{]*)", expr):
                for name in re.findall(r"p2pc_\w+", names):
                    assert name in served, expr
                    assert {l.strip() for l in by.split(",")} <= set(samples(text, name)[0][0]), expr
            assert set(re.findall(r"p2pc_\w+", expr)) <= served, expr
        # The codec label: what the generator sent, per command and codec (its own record), in
        # the message counters and the payload savings.
        sent: dict = {}
        for m in json.loads((CAPTURES / "bitcoin/btc-compressed.truth.json").read_text())["messages"]:
            sent.setdefault((m["command"], m["codec"]), []).append(m)
        for (command, codec), ms in sent.items():
            got = lambda name, **kw: metric_sum(text, name, proto="bitcoin", msg_type=command, codec=codec, **kw)  # noqa: E731
            assert got("p2pc_messages_total") == len(ms), (command, codec)
            assert got("p2pc_raw_bytes_total") == sum(m["raw_len"] for m in ms), (command, codec)
            assert got("p2pc_saved_bytes", kind="payload") == \
                sum(m["raw_len"] - m["payload_len"] for m in ms), (command, codec)
            for name in ("p2pc_messages_total", "p2pc_saved_bytes"):
                assert {l["codec"] for l, _ in samples(text, name, proto="bitcoin", msg_type=command)} \
                    == {c for k, c in sent if k == command}, (name, command)
        assert metric_sum(text, "p2pc_capture_dropped_packets_total") == 0
        assert metric_sum(text, "p2pc_undecoded_bytes_total", proto="bitcoin") == 0
        assert {l["reason"] for l, _ in samples(text, "p2pc_undecoded_bytes_total", proto="bitcoin")} == \
            {"evicted", "reset", "bound", "undecodable"}
        live.replay(ETH2)                   # a second connection, later in the same capture
        time.sleep(2)
    finally:
        rc, err = live.stop()
    assert rc == 0, err
    assert "Traceback" not in err
    final = json.loads(live.report.read_text())
    offline = p2pc_report("analyze", str(live.pcap))
    for key in ("rows", "totals", "sections", "warnings"):
        assert final[key] == offline[key], key
    assert same_figures(final, offline)
    # Every message of both bundled captures, once.
    want = Counter()
    for rep in (btc, eth2):
        for r in rep["rows"]:
            want[(r["proto"], r["msg_type"])] += r["messages"]
    assert Counter({k: r["messages"] for k, r in rows_by_type(final).items()}) == want
    # The generator's own record of what it sent: every one once, uncompressed size and all.
    truth = json.loads((CAPTURES / "bitcoin/btc-compressed.truth.json").read_text())["messages"]
    rows = rows_by_type(final)
    for command in {m["command"] for m in truth}:
        sent = [m["raw_len"] for m in truth if m["command"] == command]
        assert rows[("bitcoin", command)]["messages"] == len(sent), command
        assert rows[("bitcoin", command)]["raw_bytes"] == sum(sent), command


def packets_in(capture: Path) -> int:
    """The packets of a capture, as capinfos counts them."""
    res = subprocess.run(["capinfos", "-T", "-r", "-c", "-M", str(capture)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.split("\t")[-1])


def test_a_duration_of_0_is_refused():
    """--duration 0 ran forever (issue 43): refused, one line, the usage exit code."""
    res = run_p2pc("live", "-i", "lo", "--duration", "0")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "argument --duration: 0 is less than 1" in res.stderr


@needs_netns
def test_off_a_terminal_live_says_how_it_is_doing_in_json_lines_and_stdout_gets_the_final_report(
        netns, tmp_path):
    """stderr not a terminal: one JSON line per --interval and one at the end (documented in
    docs/analyzer.md); stdout, a pipe without --output, gets the final report only, not one
    report per --interval. The figures: the -w file's packets as capinfos counts them, and the
    final report's messages and bytes."""
    port = PORT + 3
    live = Live(netns, tmp_path, "--metrics", f"127.0.0.1:{port}", output=False)
    try:
        live.replay(BTC)
        time.sleep(3.5)                     # several intervals
    finally:
        rc, err = live.stop()
    assert rc == 0, err
    status = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
    assert len(status) >= 4, err
    running, final = status[:-1], status[-1]
    report = json.loads(live.out)           # one document: the final report, nothing before it
    assert report["title"].endswith("(final)")
    assert final == {"p2pc_live": "vb", "elapsed_s": final["elapsed_s"], "packets": packets_in(live.pcap),
                     "dropped": 0, "messages": report["totals"]["messages"],
                     "wire_bytes": report["totals"]["wire_bytes"], "resets": 0,
                     "metrics": f"http://127.0.0.1:{port}/metrics", "final": True}
    assert report["totals"]["messages"] == p2pc_report("analyze", str(BTC))["totals"]["messages"]
    # While it runs dumpcap has no drop count yet (test_dumpcap_tells_its_drops_only_when_it_stops).
    assert all(s["dropped"] is None and not s["final"] for s in running)
    # One line per --interval, so the running ones are apart in time; the final one may come within
    # the 0.1 s they are rounded to after the last (CI met 4.0 and 4.0).
    assert all(a["elapsed_s"] < b["elapsed_s"] for a, b in zip(running, running[1:]))
    for a, b in zip(running, running[1:] + [final]):
        assert a["elapsed_s"] <= b["elapsed_s"] and a["packets"] <= b["packets"] and a["messages"] <= b["messages"]


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@needs_netns
def test_on_a_terminal_live_refreshes_one_status_line(netns, tmp_path):
    """stderr a terminal (a pty 200 columns wide): one line rewritten in place (no new line
    between refreshes), no JSON; at the end it stays, with dumpcap's drops and the -w file's
    packets."""
    import fcntl
    import termios
    import threading
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    got = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:                 # the pty closed
                return
            if not chunk:
                return
            got.extend(chunk)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        live = Live(netns, tmp_path, "--metrics", f"127.0.0.1:{PORT + 4}", stderr=slave)
        try:
            live.replay(BTC)
            time.sleep(3.5)
        finally:
            rc, _ = live.stop()
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    text = got.decode("utf-8", "replace")
    assert rc == 0, text
    renders = [ANSI.sub("", r).strip() for r in re.split(r"[\r\n]", text)]
    line = re.compile(r"p2pc live on vb: \d+:\d\d:\d\d  ([\d,]+) packets  (\S+) dropped  ([\d,]+) messages  "
                      r"([\d,]+) bytes  (\d+) resets  http://127\.0\.0\.1:%d/metrics$" % (PORT + 4))
    shown = [line.match(r) for r in renders if r.startswith("p2pc live on")]
    assert len(shown) >= 3 and all(shown), renders
    assert "{" not in text
    # Refreshed in place: the renders while it ran are separated by carriage returns, not lines.
    assert text.count("\n") <= 2, text
    report = json.loads(live.report.read_text())
    last = shown[-1]
    assert [int(last.group(i).replace(",", "")) for i in (1, 3, 4)] == [
        packets_in(live.pcap), report["totals"]["messages"], report["totals"]["wire_bytes"]]
    assert last.group(2) == "0" and all(m.group(2) == "?" for m in shown[:-1])


def every_sample(text: str) -> dict:
    """Every sample of the p2pc counters: (name, labels) -> value."""
    return {(m.group(1), m.group(2) or ""): float(m.group(3))
            for m in re.finditer(r"^(p2pc_\w+_total)(\{[^}]*\})? (\S+)$", text, re.M)}


@needs_netns
def test_no_counter_ever_decreases(netns, tmp_path):
    """Scraped as fast as it answers while two captures replay slowly (and sessions reset every
    1,000 packets): no sample of any counter is ever lower than it was (the saved bytes are a
    gauge, the model's estimate, docs/metrics.md)."""
    port = PORT + 2
    live = Live(netns, tmp_path, "--metrics", f"127.0.0.1:{port}", "--session-reset", "1000")
    replay = subprocess.Popen(
        ["ip", "netns", "exec", netns, "sh", "-c",
         f"tcpreplay -q --mbps=4 -i va {ETH2} && tcpreplay -q --mbps=4 -i va {BTC}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    highest: dict = {}
    scrapes = lowered = 0
    try:
        while replay.poll() is None or scrapes < 5:
            res = in_ns(netns, "curl", "-sf", f"http://127.0.0.1:{port}/metrics")
            assert res.returncode == 0, res.stderr
            scrapes += 1
            for key, v in every_sample(res.stdout).items():
                lowered += v < highest.get(key, 0.0)
                highest[key] = max(v, highest.get(key, 0.0))
    finally:
        replay.wait()
        rc, err = live.stop()
    assert rc == 0, err
    assert scrapes > 20 and any(k[0] == "p2pc_wire_bytes_total" and v > 0 for k, v in highest.items())
    assert lowered == 0


@needs_netns
def test_metrics_listen_on_loopback_unless_a_host_is_given(netns, tmp_path):
    """--metrics PORT (and :PORT) serve on 127.0.0.1 only; a host given is the one used."""
    for arg, want in (("9470", "127.0.0.1"), (":9471", "127.0.0.1"), ("0.0.0.0:9472", "0.0.0.0")):
        port = arg.rsplit(":", 1)[-1]
        (tmp_path / port).mkdir()
        live = Live(netns, tmp_path / port, "--metrics", arg)
        try:        # the namespace's listening sockets on that port: "127.0.0.1:9470"
            got = in_ns(netns, "ss", "-Hltn", f"sport = :{port}").stdout.split()[3::5]
        finally:
            rc, err = live.stop()
        assert got == [f"{want}:{port}"], arg
        assert rc == 6, err        # no P2P traffic: exit 6, as ever


@pytest.mark.parametrize("arg", ["notaport", "127.0.0.1:99999", ":0", "host:"])
def test_a_bad_metrics_address_is_one_line_exit_2(arg):
    res = run_p2pc("live", "-i", "lo", "--metrics", arg, "--duration", "1")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        f"p2pc live: error: argument --metrics: {arg!r}: PORT must be a number from 1 to 65535 "
        "([HOST:]PORT, e.g. 127.0.0.1:9464) (see p2pc live --help)"]


@needs_netns
def test_live_interval_reports_stream_before_the_end(netns, tmp_path):
    """The report file is rewritten every --interval while the capture runs."""
    live = Live(netns, tmp_path)
    try:
        live.replay(BTC)
        for _ in range(100):
            if live.report.exists() and json.loads(live.report.read_text() or "{}").get("totals", {}) \
                    .get("messages") == p2pc_report("analyze", str(BTC))["totals"]["messages"]:
                break
            time.sleep(0.3)
        running = json.loads(live.report.read_text())
        assert "(final)" not in running["title"] and live.proc.poll() is None
    finally:
        rc, err = live.stop()
    assert rc == 0, err
    assert json.loads(live.report.read_text())["rows"] == running["rows"]


@needs_netns
@pytest.mark.parametrize("case, code, words", [
    ("interface", 7, "no interface named 'nosuch0'"),
    ("privileges", 10, "no permission to capture on vb"),
    ("filter", 11, "invalid capture filter 'tcp prt 8333'"),
    ("nothing", 6, "no P2P messages captured on vb"),
    ("preference", 2, 'tshark: -o flag "nosuch.pref:1" specifies unknown preference'),
    ("display filter", 2, "Couldn't register p2pc,records tap"),
    ("write", 2, "cannot write /nonexistent/live.pcapng"),
    ("output", 2, "cannot write /dev/null/live.json"),     # before: found at the first report
    ("full device", 13, "cannot write /dev/full: No space left on device: the capture stopped; "
                        "the file holds its first 0 bytes, whole packets"),
])
def test_live_errors_are_one_line_with_their_own_exit_code(netns, case, code, words):
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
    live = [sys.executable, "-m", "p2pc", "live", "--duration", "2"]
    cmd = {"interface": [*live, "-i", "nosuch0"],
           # root without the capture capabilities, as in a container that lacks them
           "privileges": ["setpriv", "--inh-caps=-net_raw,-net_admin",
                          "--bounding-set=-net_raw,-net_admin", *live, "-i", "vb"],
           "filter": [*live, "-i", "vb", "-f", "tcp prt 8333"],
           "nothing": [*live, "-i", "vb"],
           "preference": [*live, "-i", "vb", "-o", "nosuch.pref:1"],
           "display filter": [*live, "-i", "vb", "-Y", "tcp.port=1"],
           "write": [*live, "-i", "vb", "-w", "/nonexistent/live.pcapng"],
           "output": [*live, "-i", "vb", "--output", "/dev/null/live.json"],
           "full device": [*live, "-i", "vb", "-w", "/dev/full"]}[case]
    res = in_ns(netns, *cmd, env=env, timeout=120)
    assert res.returncode == code, res.stderr
    assert len(said(res.stderr)) == 1 and said(res.stderr)[0].startswith("p2pc: "), res.stderr
    assert words in res.stderr


def descendant(proc: subprocess.Popen, *words: str):
    """The process under `proc` running the program words[0] with the arguments words[1:]
    (psutil), once it runs."""
    import psutil
    for _ in range(500):
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                cmd = child.cmdline()
                if cmd and os.path.basename(cmd[0]) == words[0] and all(w in cmd for w in words[1:]):
                    return child
            except psutil.NoSuchProcess:
                pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"no {words} under p2pc")


def leftovers(pid: int) -> list:
    """What p2pc run `pid` left: its temporary folders (private.py names them by its PID)."""
    import tempfile
    return sorted(Path(tempfile.gettempdir()).glob(f"p2pc-*-{pid}-*"))


@needs_netns
def test_a_full_disk_stops_live_with_the_report_of_the_packets_saved(netns, tmp_path):
    """-w on a 1 MiB tmpfs, 2.2 MB replayed: live stops on its own, the file cut back to its last
    whole block, the report of exactly those packets printed, then one line and exit 13."""
    small = tmp_path / "small"
    small.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        live = Live(netns, tmp_path, pcap=small / "live.pcapng")
        live.replay(BTC)
        out, err = live.proc.communicate(timeout=120)
        assert live.proc.returncode == 13, err
        data = live.pcap.read_bytes()
        assert said(err) == [f"p2pc: cannot write {live.pcap}: No space left on device: the "
                                    f"capture stopped; the file holds its first {len(data):,} bytes, "
                                    "whole packets"]
        types = pcapng_block_types(data)
        assert 6 in types and len(data) > 500_000
        final = json.loads(live.report.read_text())
        offline = p2pc_report("analyze", str(live.pcap))
        assert "(final)" in final["title"] and final["totals"]["messages"] > 0
        for key in ("rows", "totals", "sections", "warnings"):
            assert final[key] == offline[key], key
    finally:
        subprocess.run(["umount", "-l", str(small)])


@needs_netns
def test_a_report_that_cannot_be_written_is_a_warning_and_the_capture_goes_on(netns, tmp_path):
    """--output on a full device: each report that cannot be written is a warning, and the
    capture and its -w file go on (before: exit 2 at the first report, the capture stopped);
    the last report's failure is the one error, exit 2.  The -w file is made 0600 under umask
    022, as dumpcap's own -w makes it (before: 0644)."""
    want = p2pc_report("analyze", str(BTC))["totals"]["messages"]
    umask = os.umask(0o022)
    try:
        live = Live(netns, tmp_path, "--output", "/dev/full")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(live.pcap.stat().st_mode) == 0o600
    time.sleep(2)                   # a report or two that cannot be written
    live.replay(BTC)
    time.sleep(2)
    code, err = live.stop()
    lines = said(err)
    warning = "p2pc live: warning: cannot write /dev/full: No space left on device: the capture goes on"
    assert code == 2 and lines[-1] == "p2pc: cannot write /dev/full: No space left on device", err
    assert warning in lines and set(lines[:-1]) == {warning}, err
    assert p2pc_report("analyze", str(live.pcap))["totals"]["messages"] == want


@needs_netns
@pytest.mark.parametrize("name, sig", [("dumpcap", signal.SIGKILL), ("tshark", signal.SIGSEGV)])
def test_a_dead_dumpcap_or_tshark_ends_live_after_its_report(netns, tmp_path, name, sig):
    """dumpcap killed, or tshark crashing, mid-capture: live prints the report of what was
    decoded, then one line and exit 14; the -w file holds whole packets, every one captured."""
    want = p2pc_report("analyze", str(BTC))["totals"]["messages"]
    live = Live(netns, tmp_path, "--session-reset", "0")
    live.replay(BTC)
    for _ in range(150):
        if live.report.exists() and json.loads(live.report.read_text() or "{}").get("totals", {}) \
                .get("messages") == want:
            break
        time.sleep(0.2)
    proc = descendant(live.proc, name)
    proc.send_signal(sig)
    out, err = live.proc.communicate(timeout=120)
    assert live.proc.returncode == 14, err
    assert said(err) == [f"p2pc: {name} ended while capturing (killed by {sig.name})"
                                + (": the report covers what it decoded" if name == "tshark" else "")
                                + f"; {live.pcap} holds every packet captured"]
    final = json.loads(live.report.read_text())
    assert "(final)" in final["title"] and final["totals"]["messages"] == want
    data = live.pcap.read_bytes()
    assert sum(struct.unpack_from("<I", data, off)[0] for off in block_offsets(data)) == len(data)
    assert p2pc_report("analyze", str(live.pcap))["totals"]["messages"] == want
    assert not leftovers(live.proc.pid)


def block_offsets(data: bytes) -> list[int]:
    """Where each block of a little-endian pcapng stream begins (+4: its length)."""
    offs, off = [], 0
    while off + 12 <= len(data):
        offs.append(off + 4)
        off += struct.unpack_from("<I", data, off + 4)[0]
    return offs


@needs_netns
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("moment", [("tshark", "-G", "folders"), ("dumpcap",)], ids=["tshark -G", "dumpcap"])
def test_a_signal_at_startup_stops_live(netns, tmp_path, sig, moment):
    """^C, SIGTERM or SIGHUP (before: p2pc killed, dumpcap left capturing) while live starts up (Wireshark's folders asked, dumpcap just started): the
    capture ends there, no process or temporary folder is left, and nothing P2P was captured:
    one line, exit 6."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
    proc = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-m", "p2pc", "live",
                             "-i", "vb", "-w", str(tmp_path / "live.pcapng")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import psutil
    descendant(proc, *moment)
    everyone = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 6, err
    assert said(err) == ["p2pc: no P2P messages captured on vb"]
    assert not [p for p in everyone if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not leftovers(proc.pid)


@pytest.mark.parametrize("capture", [BTC, CAPTURES / "eth2/eth2-mplex.pcapng"])
def test_stream_tap_prints_the_records_tap_lines(capture):
    """-z p2pc,records,stream: the same M, I and G lines as -z p2pc,records, and T lines whose
    last one per direction equals the end-of-run T line."""
    from p2pc.wsenv import Wireshark
    ws = Wireshark(plugin=built_plugin())
    try:
        lines = {}
        for tap in ("p2pc,records", "p2pc,records,stream"):
            res = ws.run("tshark", ["-n", "-q", "-r", str(capture), "-o", "p2pc.keep_replay:FALSE", "-z", tap])
            assert res.returncode == 0, res.stderr
            lines[tap] = res.stdout.splitlines()
    finally:
        ws.cleanup()
    for kind in ("M\t", "I\t", "G\t"):
        got = {tap: [l for l in ls if l.startswith(kind)] for tap, ls in lines.items()}
        assert got["p2pc,records"] == got["p2pc,records,stream"]
        assert got["p2pc,records"] or (kind in ("I\t", "G\t") and capture == BTC)
    last = {}
    for l in lines["p2pc,records,stream"]:
        if l.startswith("T\t"):
            last[tuple(l.split("\t")[1:4])] = l
    assert sorted(last.values()) == sorted(l for l in lines["p2pc,records"] if l.startswith("T\t"))


def pcapng_block_types(data: bytes) -> list[int]:
    """The block types of a little-endian pcapng stream, whole blocks only."""
    types, off = [], 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or off + blen > len(data):
            break
        types.append(btype)
        off += blen
    return types


def sync_messages(data: bytes) -> list[tuple[str, bytes]]:
    """dumpcap's sync-pipe messages (-Z): an indicator byte, a 24-bit length, the payload."""
    out, off = [], 0
    while off + 4 <= len(data):
        n = int.from_bytes(data[off + 1:off + 4], "big")
        out.append((chr(data[off]), data[off + 4:off + 4 + n]))
        off += 4 + n
    return out


@needs_netns
def test_dumpcap_tells_its_drops_only_when_it_stops(netns, tmp_path):
    """Why p2pc_capture_dropped_packets_total reads 0 until the capture ends (docs/metrics.md):
    while dumpcap captures into a pipe it sends packet counts every second on its sync pipe but
    no drop count (SP_DROPS, 'D') and writes no Interface Statistics Block (type 5); both come
    only as it stops."""
    import threading
    probe = probe_pcap(tmp_path / "probe.pcap")
    proc = subprocess.Popen(["ip", "netns", "exec", netns, "dumpcap", "-i", "vb", "-w", "-", "-Z", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = {"out": b"", "err": b""}

    def read(name, pipe):
        for chunk in iter(lambda: pipe.read1(65536), b""):
            got[name] += chunk

    readers = [threading.Thread(target=read, args=(n, p), daemon=True)
               for n, p in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    try:
        for _ in range(100):                        # until dumpcap has counted packets twice
            in_ns(netns, "tcpreplay", "-q", "--mbps=50", "-i", "va", str(probe))
            if sum(k == "P" for k, _ in sync_messages(got["err"])) >= 2:
                break
            time.sleep(0.3)
        running = sync_messages(got["err"])
        assert sum(k == "P" for k, _ in running) >= 2, got["err"]
        assert "D" not in {k for k, _ in running}
        assert 5 not in pcapng_block_types(got["out"]) and 6 in pcapng_block_types(got["out"])
    finally:
        proc.send_signal(signal.SIGINT)             # `ip netns exec` became dumpcap itself
        proc.wait(timeout=30)
        for r in readers:
            r.join(timeout=10)
    assert [k for k, _ in sync_messages(got["err"])][-1] == "D"
    assert pcapng_block_types(got["out"])[-1] == 5


@needs_netns
def live_with_resets(netns, tmp_path, capture: Path, proto: str, *extra: str) -> tuple[dict, dict, Path, str]:
    """`p2pc live --session-reset 300` over a replay of `capture`: the final report, the last
    p2pc_undecoded_bytes_total{proto} per reason scraped once the replayed bytes are all read
    (p2pc_messages_total the same over four scrapes), the capture live wrote, and that scrape."""
    live = Live(netns, tmp_path, "--session-reset", "300", "--metrics", f"127.0.0.1:{PORT + 1}", *extra)
    try:
        live.replay(capture)
        seen = []
        for _ in range(150):                # until the replayed bytes are all read
            res = in_ns(netns, "curl", "-sf", f"http://127.0.0.1:{PORT + 1}/metrics")
            seen.append(metric_sum(res.stdout, "p2pc_messages_total", proto=proto))
            if len(seen) > 3 and seen[-1] > 0 and len(set(seen[-4:])) == 1:
                break
            time.sleep(0.3)
        undecoded = {s["reason"]: v for s, v in samples(res.stdout, "p2pc_undecoded_bytes_total", proto=proto)}
    finally:
        rc, err = live.stop()
    assert rc == 0, err
    return json.loads(live.report.read_text()), undecoded, live.pcap, res.stdout


# The metric of each column of the report's rows ("p2pc_saved_bytes" with its kind).
METRIC_OF = {"messages": ("p2pc_messages_total", {}), "wire_bytes": ("p2pc_wire_bytes_total", {}),
             "payload_bytes": ("p2pc_payload_bytes_total", {}), "raw_bytes": ("p2pc_raw_bytes_total", {}),
             "payload_saved": ("p2pc_saved_bytes", {"kind": "payload"}),
             "header_saved": ("p2pc_saved_bytes", {"kind": "header"}),
             "ack_saved": ("p2pc_saved_bytes", {"kind": "ack"})}

# (capture, proto of its records, key log): Bitcoin, FISCO 2.x, eth2 over Noise, the
# compression transport.
ACROSS_RESETS = [(BTC, "bitcoin", None), (CAPTURES / "fisco/fisco-parallel-off.pcapng", "fisco", None),
                 (CAPTURES / "eth2/eth2-noise-yamux.pcapng", "libp2p", CAPTURES / "eth2/eth2-noise-yamux.keys"),
                 (CAPTURES / "libp2p-compression/comp-gzip.pcapng", "libp2p", None)]


@pytest.mark.parametrize("capture,proto,keylog", ACROSS_RESETS, ids=[c.stem for c, _, _ in ACROSS_RESETS])
def test_live_equals_analyze_across_session_resets(netns, tmp_path, capture, proto, keylog):
    """live's default state budget: tshark forgets its connections every 300 packets, in the
    middle of handshakes, muxer frames and blocks TCP is reassembling; each connection goes on
    decoding in the next session (docs/live-state.md) and keeps its TCP figures, so live's
    final report is the offline analysis of the packets it captured, every column of every row
    (the header and ACK savings included), with no byte undecoded for it, and the metrics scraped once
    the replay is read say the same, row for row."""
    keys = ["--keylog", str(keylog)] if keylog else []
    final, undecoded, pcap, text = live_with_resets(netns, tmp_path, capture, proto, *keys)
    offline = p2pc_report("analyze", str(pcap), *keys)
    for key in ("rows", "totals", "sections", "warnings"):
        assert final[key] == offline[key], key
    assert same_figures(final, offline)
    # Nothing undecoded because of a reset (the compression capture's own tails are the
    # offline analysis's too).
    assert undecoded.get("evicted", 0) + undecoded.get("reset", 0) == 0
    assert not [s for s in final["sections"] if s["name"] == "undecoded"]
    # The plugin's tails (bytes a direction still holds) come once the capture ends, after the
    # last scrape: every other row.
    for r in (r for r in offline["rows"] if r["msg_type"] != "undecoded"):
        for column, (name, labels) in METRIC_OF.items():
            got = metric_sum(text, name, proto=r["proto"], msg_type=r["msg_type"], **labels)
            assert abs(got - r[column]) <= 0.5, (r["msg_type"], column)     # the report rounds


def test_without_a_state_budget_a_reset_in_a_bitcoin_stream_is_counted_by_the_plugin(netns, tmp_path):
    """--state-mib 0: what TCP held at each reset (the message it cut) is printed as the
    session's tails before the reset, reason "reset", and Bitcoin resumes after it (its
    continuation bytes an undecoded record too).  So every byte is in a record: the undecoded
    row equals the metric, the totals equal the offline analysis's, fewer messages decode, and
    no direction is left for the "undecoded" section."""
    final, undecoded, pcap, _ = live_with_resets(netns, tmp_path, BTC, "bitcoin", "--state-mib", "0")
    offline = p2pc_report("analyze", str(pcap))
    row = rows_by_type(final)[("bitcoin", "undecoded")]
    assert row["wire_bytes"] == sum(undecoded.values()) > 0 and undecoded.get("reset", 0) > 0
    assert final["totals"]["wire_bytes"] == offline["totals"]["wire_bytes"]
    decoded = final["totals"]["messages"] - sum(r["messages"] for r in final["rows"] if r["msg_type"] == "undecoded")
    assert decoded < offline["totals"]["messages"]
    assert not [s for s in final["sections"] if s["name"] == "undecoded"]


def test_without_a_state_budget_a_reset_cuts_libp2p_and_reports_what_it_cut(netns, tmp_path, tshark):
    """--state-mib 0: libp2p connections are not decoded again after a reset: what the lost
    state hides is the "undecoded" row and warning (and metric, reason "reset"), and the
    "undecoded" section names each direction cut, with its TCP payload bytes (those of the
    packets captured) = decoded + undecoded."""
    final, undecoded, pcap, _ = live_with_resets(netns, tmp_path, ETH2, "libp2p", "--state-mib", "0")
    row = rows_by_type(final)[("libp2p", "undecoded")]
    assert row["wire_bytes"] > 0 and undecoded.get("reset", 0) > 0
    assert any("not decoded" in w for w in final["warnings"])
    assert [(r["proto"], r["msg_type"]) for r in final["rows"]].count(("libp2p", "undecoded")) == 1
    cut = next(s["rows"] for s in final["sections"] if s["name"] == "undecoded")
    assert cut and 0 < sum(d["undecoded_bytes"] for d in cut) <= row["wire_bytes"]
    for d in cut:
        sent = tshark.fields(pcap, ["tcp.len"], dfilter=f"ip.src == {d['src']} && tcp.srcport == {d['srcport']} "
                                                        f"&& ip.dst == {d['dst']} && tcp.dstport == {d['dstport']}")
        assert d["proto"] == "libp2p" and d["tcp_bytes"] == sum(int(n) for n, in sent)
        assert d["tcp_bytes"] == d["decoded_bytes"] + d["undecoded_bytes"]


# ---- tshark's options on every command ----
def pcapng_secrets(path: Path, bare: Path) -> bytes:
    """The TLS key log a (little-endian) pcapng carries in its Decryption Secrets Blocks
    (type 0x0A); `bare` gets the capture without them."""
    data, keys, rest, off = path.read_bytes(), b"", b"", 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if btype == 0x0A:
            stype, slen = struct.unpack_from("<II", data, off + 8)
            if stype == 0x544C534B:         # "TLSK": an NSS key log
                keys += data[off + 16:off + 16 + slen]
        else:
            rest += data[off:off + blen]
        off += blen
    bare.write_bytes(rest)
    return keys


def test_keylog_decrypts_tls_as_the_embedded_secrets_do(tmp_path):
    """--keylog FILE: the FISCO TLS capture, its secrets removed, decodes with the key log given
    on the command line exactly as with the secrets inside it."""
    cap = CAPTURES / "fisco/fisco-tls.pcapng"
    keys, bare = tmp_path / "keys.log", tmp_path / "bare.pcapng"
    keys.write_bytes(pcapng_secrets(cap, bare))
    assert b"CLIENT_RANDOM" in keys.read_bytes() or b"TRAFFIC_SECRET" in keys.read_bytes()
    bare.chmod(0o644)
    keys.chmod(0o644)
    tmp_path.chmod(0o755)
    with_secrets = p2pc_report("analyze", str(cap))
    without = p2pc_report("analyze", str(bare))
    assert {r["msg_type"] for r in without["rows"]} == {"tls (encrypted)"}
    given = p2pc_report("analyze", "--keylog", str(keys), str(bare))
    assert given["rows"] == with_secrets["rows"] and given["totals"] == with_secrets["totals"]


def test_noise_keylog_goes_to_the_noise_preference():
    """--keylog with a Noise key log (the generator's own key file): the connection decrypts, and
    the eth2 messages inside it are reported; without it, only the encrypted frames."""
    cap = CAPTURES / "eth2/eth2-noise-yamux.pcapng"
    given = p2pc_report("analyze", "--keylog", str(CAPTURES / "eth2/eth2-noise-yamux.keys"), str(cap))
    without = p2pc_report("analyze", str(cap))
    types = lambda rep: {r["msg_type"] for r in rep["rows"]}  # noqa: E731
    assert "beacon_blocks_by_range/2 response" in types(given)
    assert types(without) == {"noise (encrypted)"}


def test_keys_a_node_adds_while_live_runs_decrypt_its_new_connections(netns, tmp_path):
    """live --keylog with a key log that holds no key yet: mid-capture (after a Bitcoin
    connection), the node appends a Noise connection's keys, then that connection comes: it
    decrypts, to the messages the offline analysis with its keys finds."""
    noise = CAPTURES / "eth2/eth2-noise-yamux.pcapng"
    keys = tmp_path / "node.keys"
    keys.write_text("# keys this node writes as it connects\n")
    want = p2pc_report("analyze", "--keylog", str(CAPTURES / "eth2/eth2-noise-yamux.keys"), str(noise))
    live = Live(netns, tmp_path, "--keylog", str(keys))
    try:
        live.replay(BTC)
        with keys.open("a") as f:
            f.write((CAPTURES / "eth2/eth2-noise-yamux.keys").read_text())
        time.sleep(1.5)                 # the follower reads twice a second
        live.replay(noise)
        time.sleep(2)
    finally:
        rc, err = live.stop()
    assert rc == 0, err
    got = json.loads(live.report.read_text())
    rows = {(r["proto"], r["msg_type"]): r["messages"] for r in got["rows"] if r["proto"] == "eth2"}
    assert rows == {(r["proto"], r["msg_type"]): r["messages"] for r in want["rows"] if r["proto"] == "eth2"}
    assert ("eth2", "beacon_blocks_by_range/2 response") in rows


@pytest.mark.parametrize("option", [["-Y", "tcp.srcport=8333"], ["-o", "nosuch.pref:1"],
                                    ["-C", "nosuch-profile"], ["-d", "tcp.port==1,nosuchproto"]])
def test_tshark_options_tshark_refuses_are_one_line_exit_2(option):
    res = run_p2pc("analyze", *option, str(BTC))
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr


def test_display_filter_and_decode_as_take_tshark_meanings():
    """-Y keeps the messages of the frames it matches (here: the ones the server, port 8333,
    sent); -d decodes a port as tshark's Decode As does (here: no Bitcoin at all on 8333 once
    it is handed to another dissector)."""
    every = p2pc_report("analyze", "--by-direction", str(BTC))
    sent = [r for r in every["rows"] if r["direction"].split(">")[0].endswith(":8333")]
    server = p2pc_report("analyze", "-Y", "tcp.srcport==8333", str(BTC))
    assert server["totals"]["messages"] == sum(r["messages"] for r in sent) > 0
    res = run_p2pc("analyze", "-d", "tcp.port==8333,http", "-o", "btcc.tcp.port:1", str(BTC))
    assert res.returncode == 6 and "no P2P messages found" in res.stderr, res.stderr


def test_root_uses_its_own_profile(tmp_path):
    """As root, tshark runs as nobody in a private HOME holding a copy of the invoking user's
    Wireshark configuration: -C PROFILE finds the user's profile and its Decode As applies
    (here it hands port 8333 to HTTP: no Bitcoin message is left)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    config = tmp_path / "config"
    prof = config / "wireshark/profiles/p2pc-test"
    prof.mkdir(parents=True)
    (prof / "decode_as_entries").write_text("decode_as_entry: tcp.port,8333,(none),HTTP\n")
    plain = p2pc_report("analyze", str(BTC))
    assert any(r["proto"] == "bitcoin" for r in plain["rows"])
    res = run_p2pc("analyze", "-C", "p2pc-test", "--format", "json", str(BTC),
                   env_extra={"XDG_CONFIG_HOME": str(config)})
    # The capture holds Bitcoin only, so with the profile's Decode As no P2P message is left.
    assert res.returncode == 6 and "no P2P messages found" in res.stderr, (res.returncode, res.stderr)


def test_by_peer_rows_add_up_to_the_totals():
    """--by-peer: one row per protocol, message type and remote address; they add up to the
    same totals, and each peer is an address of the capture's connections."""
    every = p2pc_report("analyze", "--by-direction", str(ETH2))
    peers = p2pc_report("analyze", "--by-peer", str(ETH2))
    assert peers["totals"] == every["totals"]
    addrs = {e.rsplit(":", 1)[0] for r in every["rows"] for e in r["direction"].split(">")}
    assert {r["peer"] for r in peers["rows"]} <= addrs
    for key in ("messages", "wire_bytes", "raw_bytes"):
        assert sum(r[key] for r in peers["rows"]) == every["totals"][key]


# ---- --by-peer: remote addresses and peer IDs ----
# Captures whose handshakes state both peers' IDs: plaintext Exchange, Noise (decrypted with the
# generator's key log), TLS (certificate extension; key log, or secrets inside the pcapng).
PEER_CAPTURES = {"eth2-yamux": [], "eth2-mplex": [],
                 "eth2-noise-yamux": ["--keylog", "eth2-noise-yamux.keys"],
                 "eth2-noise-mplex": ["--keylog", "eth2-noise-mplex.keys"],
                 "eth2-noise-secp256k1": ["--keylog", "eth2-noise-secp256k1.keys"],
                 "eth2-tls-yamux": ["--keylog", "eth2-tls-yamux.keys"],
                 "eth2-tls-embedded": []}


def truth_peer_ids(name: str) -> dict:
    """Address -> the peer ID of the generator's identity key for that side (its seed)."""
    from test_decrypt import secp256k1_public
    from test_libp2p import base58btc, ed25519_public
    t = json.loads((CAPTURES / f"eth2/{name}.truth.json").read_text())
    out = {}
    for side in ("a", "b"):
        if t.get("key_type") == "secp256k1":
            pb = b"\x08\x02\x12\x21" + secp256k1_public(t["seeds"][side])
        else:
            pb = b"\x08\x01\x12\x20" + ed25519_public(t["seeds"][side])
        out[t["link"][f"addr_{side}"]] = base58btc(b"\x00" + bytes([len(pb)]) + pb)
    return out


def by_peer_args(name: str) -> list[str]:
    extra = PEER_CAPTURES[name]
    return [*extra[:1], *(str(CAPTURES / "eth2" / x) for x in extra[1:]), str(CAPTURES / f"eth2/{name}.pcapng")]


@pytest.mark.parametrize("name", sorted(PEER_CAPTURES))
def test_by_peer_names_each_peer_by_the_id_its_handshake_states(name):
    """Every --by-peer row of a libp2p capture carries its peer's ID: the one the generator's
    seed for that address makes (12D3KooW... Ed25519, 16Uiu2... secp256k1), in JSON, CSV and
    the table alike."""
    import csv
    import io
    want = truth_peer_ids(name)
    rep = p2pc_report("analyze", "--by-peer", *by_peer_args(name))
    assert rep["rows"] and {r["peer"] for r in rep["rows"]} == set(want)
    for r in rep["rows"]:
        assert r["peer_id"] == want[r["peer"]], r
    res = run_p2pc("analyze", "--by-peer", "--format", "csv", *by_peer_args(name))
    assert res.returncode == 0, res.stderr
    assert {(r["peer"], r["peer_id"]) for r in csv.DictReader(io.StringIO(res.stdout)) if r["proto"] != "ALL"} \
        == set(want.items())
    res = run_p2pc("analyze", "--by-peer", *by_peer_args(name), env_extra={"COLUMNS": "400"})
    assert res.returncode == 0, res.stderr
    for addr, pid in want.items():
        assert re.search(rf"{re.escape(addr)}\s+{pid}\s", res.stdout), (addr, pid)


@pytest.mark.parametrize("name", per_capture_kind(["comp-cbrotli", "comp-fallback", "comp-gzip", "comp-none"]))
def test_by_peer_names_the_compression_listener_by_its_recorded_id(name):
    """The compression-transport captures' generator recorded the listener's peer ID itself
    (truth `peers.b_id`): --by-peer names the listener's address with it."""
    t = json.loads((CAPTURES / f"libp2p-compression/{name}.truth.json").read_text())
    rep = p2pc_report("analyze", "--by-peer", str(CAPTURES / f"libp2p-compression/{name}.pcapng"))
    listener = [r for r in rep["rows"] if r["peer"] == t["link"]["addr_b"]]
    assert listener and {r["peer_id"] for r in listener} == {t["peers"]["b_id"]}


def test_by_peer_has_no_peer_id_where_no_handshake_stated_one():
    """Bitcoin states no libp2p identity, and undecrypted Noise hides it: those rows' peer_id
    is null (an empty CSV cell)."""
    for cap in (BTC, CAPTURES / "eth2/eth2-noise.pcapng"):
        rep = p2pc_report("analyze", "--by-peer", str(cap))
        assert rep["rows"] and all(r["peer_id"] is None for r in rep["rows"])


def test_live_reads_the_peer_ids_of_the_stream_tap():
    """What `p2pc live` does with the streaming tap's lines (I lines included), without a
    capture interface: the by-peer report names each peer by its ID."""
    from p2pc.report import analyze_report
    from p2pc.live import LiveTotals
    from p2pc.wsenv import Wireshark
    totals_ = LiveTotals()
    ws = Wireshark(plugin=built_plugin())
    try:
        res = ws.run("tshark", ["-n", "-q", "-r", str(CAPTURES / "eth2/eth2-mplex.pcapng"),
                                "-o", "p2pc.keep_replay:FALSE", "-z", "p2pc,records,stream"])
    finally:
        ws.cleanup()
    assert res.returncode == 0, res.stderr
    assert sum(l.startswith("I\t") for l in res.stdout.splitlines()) == 2
    for line in res.stdout.splitlines():
        totals_.line(line)
    rows = analyze_report(totals_.agg, "capture", False, False, by_peer=True)["rows"]
    want = truth_peer_ids("eth2-mplex")
    assert rows and all(r["peer_id"] == want[r["peer"]] for r in rows)


@pytest.mark.parametrize("line, why", [
    ("I\t24\t0\t192.0.2.2\t9000\t192.0.2.1\t51298\tnoise", "8 columns, 9 expected"),
    ("I\t24\tzero\t192.0.2.2\t9000\t192.0.2.1\t51298\tnoise\t12D3KooW", "invalid literal"),
])
def test_a_malformed_peer_line_is_a_one_line_error(line, why):
    from p2pc.records import MalformedRecord, parse_record
    with pytest.raises(MalformedRecord) as e:
        parse_record(line)
    assert e.value.exit_code == 9 and "frame 24" in str(e.value) and why in str(e.value)
    assert "\n" not in str(e.value)


def test_peer_line_strings_are_unescaped():
    from p2pc.records import parse_record
    p = parse_record("I\t7\t-1\t192.0.2.2\t9000\t192.0.2.1\t51298\tno\\tise\tid\\x0a\\\\")
    assert (p.stream, p.via, p.peer_id, p.key) == (-1, "no\tise", "id\n\\", (-1, "192.0.2.2", 9000))


@needs_netns
def test_the_audit_guides_service_recipe_runs_as_written(netns, tmp_path):
    """docs/audit-your-node.md, "For days, step by step", step 2: its `p2pc live` command run as
    written (interface eth0, the key log at /var/lib/beacon/node.keys, --output in
    /var/log/p2pc/, a folder that does not exist yet) and stopped as a service manager stops it
    (SIGTERM): the report it leaves is that of the node's traffic, decrypted with its key log.
    /var/log and /var/lib are this test's folders, bound over the real ones in a mount
    namespace of its own; eth0 is a veth in the test's network namespace."""
    import shlex
    doc = (REPO / "docs/audit-your-node.md").read_text()
    step = doc.split("For days, step by step")[1].split("\n  3. ")[0]
    (cmd,) = re.findall(r"`(p2pc live [^`]*)`", " ".join(step.split()))
    argv = shlex.split(cmd)
    assert argv[argv.index("--output") + 1] == "/var/log/p2pc/cl.json"
    capture, keys = CAPTURES / "eth2/eth2-noise-yamux.pcapng", CAPTURES / "eth2/eth2-noise-yamux.keys"
    log, lib, bin_ = tmp_path / "log", tmp_path / "lib", tmp_path / "bin"
    for d in (log, lib / "beacon", bin_):
        d.mkdir(parents=True)
    shutil.copy(keys, lib / "beacon/node.keys")
    (bin_ / "p2pc").write_text(f'#!/bin/sh\nexec {sys.executable} -m p2pc "$@"\n')
    (bin_ / "p2pc").chmod(0o755)
    for c in (["link", "add", "eth0", "type", "veth", "peer", "name", "eth0peer"],
              ["link", "set", "eth0", "up"], ["link", "set", "eth0peer", "up"]):
        subprocess.run(["ip", "-n", netns, *c], check=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()),
               PATH=f"{bin_}:{os.environ['PATH']}")
    script = f"mount --bind {log} /var/log && mount --bind {lib} /var/lib && exec ip netns exec {netns} \"$@\""
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *argv],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ifindex = in_ns(netns, "cat", "/sys/class/net/eth0/ifindex").stdout.strip()
        for _ in range(300):        # until dumpcap's packet socket is bound to eth0
            assert proc.poll() is None, proc.communicate()
            sockets = in_ns(netns, "cat", "/proc/net/packet").stdout.splitlines()[1:]
            if any(l.split()[4] == ifindex for l in sockets):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("live never began capturing on eth0")
        res = in_ns(netns, "tcpreplay", "-q", "--mbps=50", "-i", "eth0peer", str(capture))
        assert res.returncode == 0, res.stderr
        want = p2pc_report("analyze", "--keylog", str(keys), str(capture))
        for _ in range(150):        # until every message is decoded (the endpoint says so)
            got = in_ns(netns, "curl", "-sf", "http://127.0.0.1:9464/metrics").stdout
            if metric_sum(got, "p2pc_messages_total") >= want["totals"]["messages"]:
                break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert not any(r["msg_type"].endswith("(encrypted)") for r in want["rows"])
    # The recipe writes the table (the default format): analyze's table of the same traffic,
    # under live's title.
    table = run_p2pc("analyze", "--keylog", str(keys), str(capture)).stdout.splitlines()
    written = (log / "p2pc/cl.json").read_text().splitlines()
    assert written[0] == "p2pc live on eth0 (final)"
    assert written[1:] == table[1:]
