"""Shared fixtures: every test drives the real tshark with the freshly built plugin."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# No test reads or writes the user's home: not their Wireshark plugins or preferences (another
# clone's `make install-user` there once made test_doctor fail), nor p2pc's caches.  HOME and
# the XDG folders point into a private folder for this process and every one it starts; the
# user's own Python packages stay importable (PYTHONUSERBASE is where they are, not HOME).
os.environ.setdefault("PYTHONUSERBASE", site.getuserbase())
TEST_HOME = Path(tempfile.mkdtemp(prefix="p2pc-test-home-"))
atexit.register(shutil.rmtree, TEST_HOME, True)
REAL_HOME = os.environ.get("HOME")
os.environ.update(HOME=str(TEST_HOME), XDG_CACHE_HOME=str(TEST_HOME / ".cache"),
                  XDG_CONFIG_HOME=str(TEST_HOME / ".config"), XDG_DATA_HOME=str(TEST_HOME / ".local/share"))
os.environ.pop("SUDO_USER", None)       # else wsenv copies SUDO_USER's Wireshark preferences


def remember_tshark_reads() -> None:
    """`tshark` on PATH is tests/tshark_memo.py for this session and every process it starts (the
    analyzer's runs too): a run that only reads a capture file runs once per set of inputs, and
    the same inputs again get its output (tshark_memo.py says what the inputs are).  The session's
    memory is a folder of its own, gone with it.  P2PC_TSHARK_MEMO=off runs tshark every time."""
    real = shutil.which("tshark")
    if real is None or os.environ.get("P2PC_TSHARK_MEMO") == "off" or "P2PC_TSHARK_REAL" in os.environ:
        return
    bin_ = Path(tempfile.mkdtemp(prefix="p2pc-tshark-memo-"))
    atexit.register(shutil.rmtree, bin_, True)
    memo = bin_ / "memo"
    memo.mkdir()
    # tshark runs as nobody when the suite runs as root (wsenv): the folder is everyone's to read
    # and the memory everyone's to add to, as a temporary folder is.
    bin_.chmod(0o755)
    memo.chmod(0o1777)
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    shim = bin_ / "tshark"
    shim.write_text(f"#!{python}\n# tshark with a memory: tests/tshark_memo.py\n"
                    f"import runpy, sys\nsys.argv[0] = {str(REPO / 'tests' / 'tshark_memo.py')!r}\n"
                    "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    shim.chmod(0o755)
    os.environ.update(P2PC_TSHARK_REAL=real, P2PC_TSHARK_MEMO=str(memo),
                      PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")


remember_tshark_reads()


def unremembered(cmd: list[str]) -> list[str]:
    """A command (Wireshark.command's) with the real tshark in place of the session's memory: for
    a run whose own cost (memory, CPU) is what a test measures."""
    memo = shutil.which("tshark")
    real = os.environ.get("P2PC_TSHARK_REAL", memo)
    return [real if c == memo else c for c in cmd]
# This checkout's analyzer, whatever another checkout installed (pip install -e) for the user.
sys.path.insert(0, str(REPO / "analyzer"))

from p2pc.records import M_FIELDS, parse_record  # noqa: E402
from p2pc.wsenv import Wireshark, built_plugin  # noqa: E402

# The project's one pcap writer (tools/craft.py, which also makes the fuzz gate's hostile
# captures); the tests import it from here.
sys.path.insert(0, str(REPO / "tools"))
from craft import tcp_pcap  # noqa: E402,F401


def run_p2pc(*args: str, env_extra: dict | None = None, timeout: float | None = None,
             cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """The p2pc command of this repository, with the freshly built plugin."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "p2pc", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=cwd)


def ports_rewritten(src, out, portmap: dict[int, int]):
    """The capture with its TCP ports mapped (tcprewrite --portmap), nothing else changed (a
    pcapng's embedded secrets are not kept)."""
    subprocess.run(["tcprewrite", "--portmap=" + ",".join(f"{a}:{b}" for a, b in portmap.items()),
                    f"--infile={src}", f"--outfile={out}"], check=True, capture_output=True)
    return out


def p2pc_report(*args: str) -> dict:
    """A p2pc command's JSON report (it must succeed)."""
    res = run_p2pc(*args, "--format", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def same_figures(live: dict, offline: dict) -> bool:
    """The figures' data (`series`) of live's report and of the offline analysis of the same
    packets: the same, but that the bandwidth lines are named by capture, live's one "live"."""
    def unnamed(rep: dict) -> dict:
        series = dict(rep["series"])
        series["bandwidth"] = list(series.get("bandwidth", {}).values())
        return series
    return unnamed(live) == unnamed(offline)


CAPTURES = REPO / "captures"
DATA = CAPTURES / "data"


def spec_checks() -> list[str]:
    """The conformance checks' filter names, from their table in plugin/core/spec.c
    ([P2PC_SPEC_X] = { "p2pc.spec.x", ... }), in its order."""
    import re
    return re.findall(r'\[P2PC_SPEC_\w+\] = \{\s*"([^"]+)"', (REPO / "plugin/core/spec.c").read_text())


def dialer_listener(truth: dict) -> tuple[str, str]:
    """A generator truth file's (dialer, listener) addresses; captures made before the generator
    named them had A dial.  The dialer's identity is always seed "a", the listener's seed "b"."""
    link = truth["link"]
    return link.get("dialer", link["addr_a"]), link.get("listener", link["addr_b"])


def truth_sent(peer: dict) -> list[tuple]:
    """(msg_type, raw_len, payload_len, sha256 of the SSZ) of what an eth2 peer says it sent (its
    generator's -truth: captures/gen/libp2p/truth.go and its twins), in order."""
    out = []
    for m in peer["messages"]:
        if m["dir"] != "sent":
            continue
        mtype = m["protocol"] if m["kind"] == "gossip" else f"{m['protocol']} {m['kind']}"
        out.append((mtype, m["ssz_len"], m["framed_len"] if m["kind"] != "gossip" else m["data_len"], m["ssz_sha256"]))
    return out


class Tshark:
    """Thin helpers over `tshark` running with the built plugin."""

    def __init__(self, ws: Wireshark):
        self.ws = ws
        self._booleans: set[str] | None = None

    def boolean_fields(self) -> set[str]:
        """The FT_BOOLEAN fields this tshark knows (`-G fields`), read once."""
        if self._booleans is None:
            out = self.run(["-G", "fields"]).stdout
            self._booleans = {p[2] for p in (line.split("\t") for line in out.splitlines())
                              if len(p) > 3 and p[0] == "F" and p[3] == "FT_BOOLEAN"}
        return self._booleans

    def run(self, args: list[str], check: bool = True):
        res = self.ws.run("tshark", args)
        if check and res.returncode != 0:
            raise AssertionError(f"tshark {args} exited {res.returncode}: {res.stderr}")
        return res

    def read(self, args: list[str]):
        """run() for a tshark that only reads a capture and prints (no -w): within this session
        the same inputs run once (remember_tshark_reads above).  Many tests read one capture the
        same way (records, then their own check on them); each still asserts on real tshark
        output."""
        assert "-w" not in args, args
        return self.run(args)

    def read_whole(self, capture, protocol: str) -> list[str]:
        """`tshark -n -r CAPTURE` as a user runs it, which bad input must never break: exit 0,
        nothing on stderr, one summary line per frame of the capture (capinfos counts them), no
        "Dissector bug" or exception text, and `protocol` in the Protocol column of some frame
        (the plugin did dissect).  The summary lines."""
        res = self.run(["-n", "-r", self.ws.readable(capture)])
        assert res.stderr == "", res.stderr
        lines = res.stdout.splitlines()
        frames = int(subprocess.run(["capinfos", "-M", "-c", "-T", "-r", str(capture)], capture_output=True,
                                    text=True, check=True).stdout.split()[-1])
        assert len(lines) == frames, (len(lines), frames)
        bad = [l for l in lines if "Dissector bug" in l or "Exception" in l or "unexpected" in l.lower()]
        assert not bad, bad[:3]
        assert any(len(l.split()) > 5 and l.split()[5] == protocol for l in lines), protocol
        return lines

    def fields(self, capture, fields: list[str], dfilter: str | None = None,
               two_pass: bool = False, extra: list[str] | None = None) -> list[list[str]]:
        """One row per frame (frames matching dfilter), one column per field; multiple
        occurrences of a field in a frame are joined with '|', booleans read 1/0."""
        args = ["-n", "-r", self.ws.readable(capture), "-T", "fields", "-E", "occurrence=a",
                "-E", "aggregator=|", "-E", "separator=\t"]
        if two_pass:
            args.append("-2")
        if dfilter:
            args += ["-Y", dfilter]
        for f in fields:
            args += ["-e", f]
        args += extra or []
        out = self.read(args).stdout
        rows = [line.split("\t") for line in out.splitlines()]
        # Booleans print as 1/0 up to 4.0 and as True/False from 4.2: read them as 1/0.
        booleans = [i for i, f in enumerate(fields) if f in self.boolean_fields()]
        for row in rows:
            for i in booleans:
                row[i] = "|".join({"True": "1", "False": "0"}.get(v, v) for v in row[i].split("|"))
        return rows

    def taps(self, capture, two_pass: bool = False, extra: list[str] | None = None) -> list[str]:
        """The lines of the plugin's records and payloads taps (`-z p2pc,records -z p2pc,payloads`)
        over the capture: one tshark run serves records() and payloads() alike (the session's
        memory answers the second)."""
        args = ["-n", "-q", "-r", self.ws.readable(capture), "-z", "p2pc,records", "-z", "p2pc,payloads",
                *(extra or [])]
        if two_pass:
            args.append("-2")
        return self.read(args).stdout.splitlines()

    def records(self, capture, two_pass: bool = False, extra: list[str] | None = None) -> list[dict]:
        """The plugin's `-z p2pc,records` message lines, read by the analyzer's own parser
        (p2pc.records.parse_record: its column count, numbers and unescaping), as dicts of the
        record's fields: the strings unescaped, the numbers as the dump prints them (the tests
        compare them as text)."""
        rows = []
        for line in self.taps(capture, two_pass, extra):
            if line.startswith("M\t"):
                m = parse_record(line)
                rows.append({f: v if isinstance(v, str) else col for f, v, col in
                             zip(M_FIELDS, (getattr(m, f) for f in M_FIELDS), line.split("\t")[1:])})
        return rows

    def payloads(self, capture, extra: list[str] | None = None) -> list[tuple[int, str, bytes]]:
        """(frame, msg_type, uncompressed payload) per record, from `-z p2pc,payloads`."""
        payloads = [parse_record(line) for line in self.taps(capture, extra=extra) if line.startswith("P\t")]
        return [(p.frame, p.msg_type, p.raw) for p in payloads]

    def expert(self, capture) -> list[str]:
        """Every expert message text in the capture."""
        rows = self.fields(capture, ["_ws.expert.message"], dfilter="_ws.expert")
        return [m for row in rows for m in row[0].split("|") if m]


@pytest.fixture(scope="session")
def ws():
    plugin = built_plugin()
    if plugin is None:
        pytest.fail("the plugin is not built: run `make build` (make test does it)")
    w = Wireshark(plugin=plugin)
    yield w
    w.cleanup()


@pytest.fixture(scope="session")
def tshark(ws):
    return Tshark(ws)


# Which tests run (.ci/README.md).  `make test` runs every test.  The tests that need a real
# machine, not a chroot (a network namespace with a veth pair: every test that uses test_live's
# `netns` fixture), carry the `host` marker, given here; a chroot skips them.
# P2PC_TESTS=host keeps only those (the others are deselected, and pytest's summary counts them):
# CI runs the whole suite on Wireshark 4.0 in a bare Debian 12 chroot, and on the host, which has
# the same Debian and Wireshark, only the tests that chroot cannot run.
# P2PC_TESTS=versioned skips the tests marked `once` (reason ONCE): CI's 4.4 and 4.6 chroots,
# beside the 4.0 run of every test; tools/ci-coverage.py counts such a skip only where 4.0 passed.
SCOPES = ("all", "host", "versioned")
ONCE = "once: no Wireshark version changes what it checks; CI runs it on 4.0"


def pytest_configure(config):
    config.addinivalue_line("markers", "host: needs a real machine, not a chroot (network namespaces, veth)")
    config.addinivalue_line("markers", "once: an expensive check of the analyzer's own work (formats, "
                            "rendering, models) on records other tests check on every version")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "netns" in item.fixturenames:
            item.add_marker(pytest.mark.host)
    scope = os.environ.get("P2PC_TESTS") or "all"
    if scope not in SCOPES:
        raise pytest.UsageError(f"P2PC_TESTS={scope}: expected one of {', '.join(SCOPES)}")
    if scope == "host":
        dropped = [i for i in items if i.get_closest_marker("host") is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i.get_closest_marker("host") is not None]
    if scope == "versioned":
        for item in items:
            if item.get_closest_marker("once") is not None:
                item.add_marker(pytest.mark.skip(reason=ONCE))


def once_beyond_first(values, kind=lambda v: None) -> list:
    """A parametrize list for a test whose Wireshark-dependent part depends only on kind(value):
    the first value of each kind runs on every version, the others are `once` (their other
    parts are the analyzer's own work).  A tuple is the values of several arguments.  Test IDs
    stay the values'."""
    seen, out = set(), []
    for v in values:
        k = kind(v)
        out.append(pytest.param(*v if isinstance(v, tuple) else (v,), marks=pytest.mark.once)
                   if k in seen else v)
        seen.add(k)
    return out


# The words of a capture's name that say which of Wireshark's paths reading it takes: the
# security below p2pc (Wireshark's TLS and QUIC, or p2pc's own Noise and BIP324 over Wireshark's
# TCP), the muxer whose frames p2pc's engine reassembles through Wireshark, and the conditions
# that take other paths through Wireshark's TCP reassembly and analysis (a gap, loss and
# reordering, one side only, a cut, bytes no peer could parse, both transports, negotiation
# written in other segments).  The rest of a
# name (implementations, codecs, message mixes, versions of the P2P protocol) changes only
# p2pc's own work, the same on every Wireshark version.
SECURITY_WORDS = ("quic", "tls", "noise", "bip324")
MUXER_WORDS = ("yamux", "mplex")
CONDITION_WORDS = frozenset({"gap", "lf", "oneside", "truncated", "badcrc", "broken", "malformed",
                             "corrupt", "embedded", "tcp", "v1fallback", "ms"})


def capture_kind(capture) -> tuple:
    """What a capture (a path or a name) asks of Wireshark: its protocol (the name's first
    word: btc, fisco, fisco3, eth2, interop, ...), its security, muxer and conditions."""
    words = Path(str(capture)).name.removesuffix(".pcapng").removesuffix(".pcap").split("-")
    security = next((w for w in SECURITY_WORDS if w in words), "none")
    muxer = next((w for w in MUXER_WORDS if w in words), "none")
    return words[0], security, muxer, tuple(sorted(CONDITION_WORDS.intersection(words)))


def per_capture_kind(values, capture=lambda v: v) -> list:
    """once_beyond_first by capture_kind: a parametrize list over captures (or values holding
    one, capture(value) gives it) whose test checks p2pc's work on each, run on every version
    for one capture of each kind and on 4.0 for all (.ci/README.md)."""
    return once_beyond_first(values, lambda v: capture_kind(capture(v)))


def configured_tshark(config: Path, profile: str, files: dict[str, str]):
    """A Tshark (generator, for a fixture) whose Wireshark configuration, in `config`, holds
    the profile `profile` with `files` (name -> text) in it."""
    folder = config / "wireshark" / "profiles" / profile
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CONFIG_HOME", str(config))
    ws = Wireshark(plugin=built_plugin())
    mp.undo()
    yield Tshark(ws)
    ws.cleanup()
