#!/usr/bin/env python3
"""Fuzz gate: the committed captures, mutated with `editcap -E RATE --seed N`, through an
AddressSanitizer+UBSan build of the plugin (build-asan/) loaded into the distribution's tshark.

Each mutant goes through three consumers, each under a timeout:
  tshark -2 -V -x          (two passes, the whole tree and every data source)
  tshark -z p2pc,records,stream -M 61 -o p2pc.live_state_mib:64
                           (one pass as p2pc live runs it: a session reset every 61 packets,
                            the libp2p connections' state carried over each, docs/live-state.md)
  p2pc analyze --plugin build-asan/...   (one pass, -z p2pc,records)
A run fails on a crash (signal / unexpected exit status), a hang (timeout), any ASan or UBSan
report, a "Dissector bug" in the output, a GLib critical/error, or a Python traceback.
"[Malformed Packet]" is an accepted outcome for a mutant.  So is a failed assertion in one of
Wireshark's own dissectors that stock tshark, without p2pc, hits on the same mutant (that
dissector decoding the capture's TCP ports, `-d tcp.port==P,PROTO`): it is printed as UPSTREAM,
with the stock command, and does not fail the gate (Wireshark 4.0's TLS handshake reassembly
asserts on some mutated TLS captures; 4.4 and 4.6 do not).

    make fuzz                      # the short profile (CI): the captures fuzz/short-skip.txt leaves, cut
    FUZZ_PROFILE=long make fuzz    # on demand: every packet of every capture, 3 rates x 20 seeds
    tools/fuzz.py --seeds 1-2 --rates 0.01 captures/fisco/fisco-tls.pcapng   # one reproducer

Captures with TLS secrets (a pcapng Decryption Secrets Block) cannot be rewritten by editcap 4.0,
so the secrets are taken out in Python, the packets mutated, and the same secrets put back with
`editcap --inject-secrets`: the decrypted payloads are fuzzed too.  Failing mutants are kept in
build-asan/fuzz-failures/ with a .txt naming the exact editcap command that recreates them.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build-asan"

# rates are editcap -E byte error probabilities; seeds are editcap --seed values.
# Even seeds keep the first HDR bytes of each frame (Ethernet+IPv4+TCP with timestamps) intact
# (editcap -o), so the TCP streams survive and the errors land in the P2P payloads; odd seeds
# mutate whole frames (TCP sequence numbers, lengths, flags: the gap and reassembly paths).
HDR = 66
PROFILES = {
    # Big captures cut to their first packets; the captures in fuzz/short-skip.txt left out: the
    # others reach every plugin line those reach, twice (tools/fuzz-cover.py).  A capture not
    # listed there, a new one, is mutated.
    "short": dict(rates=[0.001, 0.005, 0.02], seeds=range(1, 3), max_packets=300, timeout=60,
                  skip=REPO / "fuzz" / "short-skip.txt"),
    "long": dict(rates=[0.001, 0.005, 0.02], seeds=range(1, 21), max_packets=0, timeout=300, skip=None),
}
BAD_OUTPUT = ("Dissector bug",)
# A DISSECTOR_ASSERT that WIRESHARK_ABORT_ON_DISSECTOR_BUG turned into an abort, in a file of
# Wireshark's own: "./epan/dissectors/packet-tls.c:2386: failed assertion "fh"".
WS_ASSERT = re.compile(r"\./epan/dissectors/packet-([a-z0-9_]+)\.c:\d+: failed assertion .*")
# p2pc analyze exit statuses that are a clean answer about a mutant: 6 = no P2P messages left.
# (9, a malformed p2pc record, is a plugin bug; 5, an unreadable capture, a harness bug.)
ANALYZE_OK = {6}
BAD_STDERR = ("Dissector bug", "CRITICAL **", "ERROR **", "Traceback (most recent call last)",
              "AddressSanitizer", "runtime error:", "LeakSanitizer", "UndefinedBehaviorSanitizer")


def rel(p: Path) -> str:
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p)


def log(msg: str) -> None:
    print(msg, flush=True)


def parse_seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


# ---------------------------------------------------------------- pcapng secrets (DSB)

DSB = 0x0000000A
SECRET_TYPES = {0x544C534B: "tls", 0x57474B4C: "wg"}


def split_secrets(src: Path, dst: Path) -> list[tuple[str, bytes]]:
    """Copy pcapng `src` to `dst` without its Decryption Secrets Blocks; return the secrets."""
    data = src.read_bytes()
    if data[:4] != b"\x0a\x0d\x0d\x0a":
        shutil.copyfile(src, dst)
        return []
    bo = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    out, secrets, i = bytearray(), [], 0
    while i + 12 <= len(data):
        btype, blen = struct.unpack_from(bo + "II", data, i)
        if blen < 12 or i + blen > len(data):
            out += data[i:]  # a cut-short tail: let editcap see it as it is
            break
        if btype == DSB:
            stype, slen = struct.unpack_from(bo + "II", data, i + 8)
            secrets.append((SECRET_TYPES.get(stype, hex(stype)), data[i + 16:i + 16 + slen]))
        else:
            out += data[i:i + blen]
        i += blen
    else:
        out += data[i:]
    dst.write_bytes(bytes(out))
    return secrets


# ---------------------------------------------------------------- running things


@dataclass
class Result:
    rc: int | None          # None: timed out
    out_hits: list[str]
    stderr: str
    seconds: float
    rss_mib: float = 0.0    # peak RSS of the process and the children it waited for (wait4)
    cpu: float = 0.0        # user + system CPU seconds, the same
    rss_killed: bool = False  # the group's RSS passed rss_cap_mib: killed


def _session_rss_kib(sid: int) -> int:
    """The RSS of every process in session `sid` (the consumer and its tshark), in KiB."""
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == sid:                       # field 6: session
                total += int(fields[21]) * (resource.getpagesize() // 1024)  # field 24: rss pages
        except (OSError, IndexError, ValueError):
            pass
    return total


def run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
        scan_stdout: bool = False, cpu_limit: float | None = None,
        rss_cap_mib: float | None = None) -> Result:
    """Run `cmd` in its own process group (a timeout kills the whole group, tshark under the
    analyzer included); stream stdout (it can be tens of MB) looking for BAD_OUTPUT.  With
    `cpu_limit`, each process of the group gets RLIMIT_CPU (SIGXCPU past it); with `rss_cap_mib`,
    the group is killed once its summed RSS passes it (the machine is shared)."""
    t0 = time.monotonic()
    err_f = tempfile.TemporaryFile()

    def limits() -> None:
        if cpu_limit:
            lim = int(cpu_limit) + 1
            resource.setrlimit(resource.RLIMIT_CPU, (lim, lim + 5))

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if scan_stdout else subprocess.DEVNULL,
                            stderr=err_f, env=env, start_new_session=True,
                            preexec_fn=limits if cpu_limit else None)
    hits: list[str] = []
    timed_out = threading.Event()
    rss_killed = threading.Event()
    done = threading.Event()
    seen_kib = 0   # the group's summed RSS at its highest sample (an analyzer killed with its
                   # tshark never waited for it: wait4 alone would not see the tshark)

    def watch_rss() -> None:
        nonlocal seen_kib
        while not done.wait(0.25):
            now = _session_rss_kib(proc.pid)
            seen_kib = max(seen_kib, now)
            if now > rss_cap_mib * 1024:
                rss_killed.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return

    watcher = threading.Thread(target=watch_rss, daemon=True) if rss_cap_mib else None
    if watcher:
        watcher.start()
    usage = None

    def reap() -> None:
        nonlocal usage
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)

    def killer() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, killer)
    timer.start()
    try:
        if scan_stdout:
            tail = b""
            while chunk := proc.stdout.read(1 << 20):
                buf = tail + chunk
                for pat in BAD_OUTPUT:
                    at = buf.find(pat.encode())
                    if at >= 0 and len(hits) < 5:
                        s = buf.rfind(b"\n", 0, at) + 1
                        e = buf.find(b"\n", at)
                        hits.append(buf[s:e if e >= 0 else len(buf)].decode(errors="replace").strip())
                tail = buf[-200:]
                if len(hits) >= 5:
                    break
            # after 5 hits stop reading: drain the rest without keeping it
            while proc.stdout.read(1 << 20):
                pass
        reap()
    finally:
        timer.cancel()
        done.set()
        if proc.returncode is None:
            killer()
            reap()
    err_f.seek(0)
    stderr = err_f.read().decode(errors="replace")
    err_f.close()
    return Result(None if timed_out.is_set() else proc.returncode, hits, stderr,
                  time.monotonic() - t0,
                  rss_mib=max(usage.ru_maxrss if usage else 0, seen_kib) / 1024,
                  cpu=usage.ru_utime + usage.ru_stime if usage else 0.0,
                  rss_killed=rss_killed.is_set())


def build_asan() -> None:
    """The ASan+UBSan plugin in build-asan/ (incremental: a build made earlier costs a check)."""
    log("fuzz: building the ASan+UBSan plugin in build-asan/")
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(BUILD), "-DP2PC_SANITIZE=ON",
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DP2PC_ONLY=", "-DP2PC_WERROR=OFF",
                    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    subprocess.run(["cmake", "--build", str(BUILD), "-j", str(os.cpu_count() or 2)],
                   check=True, stdout=subprocess.DEVNULL, timeout=900)


class Env:
    """The sanitizer build, a tshark wrapper that preloads libasan, and a private HOME."""

    def __init__(self, tmp: Path, build: bool):
        self.tmp = tmp
        if build:
            build_asan()
        plugins = sorted(BUILD.glob("plugins/*/epan/p2pc.so"))
        if not plugins:
            sys.exit("fuzz: no build-asan/plugins/*/epan/p2pc.so (run without --no-build)")
        self.plugin = plugins[-1]
        libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                 text=True, timeout=30).stdout.strip()
        if not os.path.isabs(libasan):
            sys.exit("fuzz: gcc does not know libasan.so (apt-get install gcc)")
        real = self.real = shutil.which("tshark")
        if not real:
            sys.exit("fuzz: tshark not found (make deps)")
        # tshark runs as nobody (wsenv): everything it touches must be world-readable.
        os.chmod(tmp, 0o755)
        bindir = tmp / "bin"
        bindir.mkdir()
        # The wrapper is found first on PATH by wsenv (ours and the analyzer's), so every tshark
        # the three consumers start gets libasan and the sanitizer options; reports go to files
        # in $P2PC_FUZZ_LOG (per run), so they are found even when the analyzer eats stderr.
        asan = ("detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=86:"
                "print_stacktrace=1:symbolize=1:detect_odr_violation=0:"
                "log_path=${P2PC_FUZZ_LOG:-/tmp}/asan")
        ubsan = "halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=${P2PC_FUZZ_LOG:-/tmp}/ubsan"
        # As Wireshark's fuzz-test.sh: a dissector bug aborts instead of becoming a tree item.
        (bindir / "tshark").write_text(
            "#!/bin/sh\n"
            f'LD_PRELOAD="{libasan}" ASAN_OPTIONS="{asan}" UBSAN_OPTIONS="{ubsan}" '
            'WIRESHARK_ABORT_ON_DISSECTOR_BUG=1 '
            f'exec "{real}" "$@"\n')
        os.chmod(bindir / "tshark", 0o755)
        self.wrapper = str(bindir / "tshark")
        self.path = f"{bindir}:{os.environ.get('PATH', '')}"
        os.environ["PATH"] = self.path  # wsenv's shutil.which picks the wrapper
        sys.path.insert(0, str(REPO / "analyzer"))
        from p2pc.wsenv import Wireshark  # noqa: E402
        self.ws = Wireshark(plugin=self.plugin)

    def env(self, logdir: Path) -> dict[str, str]:
        e = dict(os.environ)
        e["PATH"] = self.path
        e["P2PC_FUZZ_LOG"] = str(logdir)
        e.pop("LD_PRELOAD", None)
        return e

    def tshark(self, args: list[str]) -> list[str]:
        return self.ws.command("tshark", args)


# ---------------------------------------------------------------- one mutant


@dataclass
class Job:
    cap: Path          # the committed capture
    prepared: Path     # secrets taken out, maybe cut to max_packets
    secrets: Path | None
    rate: float
    seed: int
    max_packets: int = 0
    keys: "Keys | None" = None   # the key log beside the capture (captures/eth2/NAME.keys)

    @property
    def offset(self) -> int:
        return HDR if self.seed % 2 == 0 else 0

    @property
    def name(self) -> str:
        return f"{self.cap.stem}-E{self.rate}-s{self.seed}"


def mutate(job: Job, dst: Path) -> str | None:
    cmd = ["editcap", "-E", str(job.rate), "--seed", str(job.seed), "-o", str(job.offset),
           str(job.prepared), str(dst)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not dst.exists():
        return f"editcap failed ({r.returncode}): {r.stderr.strip()[-300:]}"
    if job.secrets:
        plain = dst.with_suffix(".nosecrets.pcapng")
        dst.rename(plain)
        r = subprocess.run(["editcap", "--inject-secrets", f"tls,{job.secrets}", str(plain),
                            str(dst)], capture_output=True, text=True, timeout=120)
        plain.unlink()
        if r.returncode != 0:
            return f"editcap --inject-secrets failed ({r.returncode}): {r.stderr.strip()[-300:]}"
    os.chmod(dst, 0o644)
    return None


def gate_captures(skip: Path | None = None) -> list[Path]:
    """Every committed capture (the gate's list when none is given), QUIC ones included: those
    with a key log beside them are mutated with their keys (Keys.beside).  Less the ones `skip`
    lists (paths from the repository's root; # comments)."""
    left_out = set()
    if skip is not None:
        left_out = {REPO / l.strip() for l in skip.read_text().splitlines() if l.strip() and not l.startswith("#")}
    return sorted(c for c in (REPO / "captures").glob("**/*.pcapng") if c not in left_out)


@dataclass
class Keys:
    """A key log split the way `p2pc analyze --keylog` splits it (analyzer/p2pc/keylog.py): the
    tshark options that decrypt, and the analyzer's own option."""
    path: Path
    tshark: list[str]

    @classmethod
    def beside(cls, cap: Path, workdir: Path) -> "Keys | None":
        keys = cap.with_suffix(".keys")
        if not keys.exists():
            return None
        from p2pc import keylog, private  # noqa: E402 (Env put the analyzer on sys.path)
        # a private folder, as p2pc analyze's: tshark (nobody, in p2pc's group) reads it
        workdir.mkdir(exist_ok=True)
        os.chmod(workdir, 0o755)
        files = keylog.split(keys, private.make_dir("keys", dir=workdir))
        opts = []
        if files.noise:
            opts += ["-o", f"libp2p_noise.keylog_file:{files.noise}"]
        if files.tls:
            opts += ["-o", f"tls.keylog_file:{files.tls}"]
        return cls(keys, opts)


def consumers(env: Env, capture: Path, keys: Keys | None = None) -> list[tuple[str, list[str], bool]]:
    """The three consumers of a capture: (label, command, scan stdout)."""
    k = keys.tshark if keys else []
    return [
        ("tshark -2 -V -x", env.tshark(["-n", "-2", "-V", "-x", *k, "-r", str(capture)]), True),
        ("tshark -z p2pc,records,stream", env.tshark(["-n", "-q", "-z", "p2pc,records,stream", "-M", "61", "-o",
                                                      "p2pc.live_state_mib:64", *k, "-r", str(capture)]), False),
        ("p2pc analyze", [sys.executable, "-m", "p2pc", "analyze", "--plugin", str(env.plugin),
                          "-j", "1", *(["--keylog", str(keys.path)] if keys else []), str(capture)], False),
    ]


def consumer_env(env: Env, d: Path, label: str) -> tuple[Path, dict[str, str]]:
    logdir = d / label.split()[-1].replace(",", "_")
    logdir.mkdir()
    os.chmod(logdir, 0o777)
    e = env.env(logdir)
    if label == "p2pc analyze":
        e["PYTHONPATH"] = str(REPO / "analyzer") + os.pathsep + e.get("PYTHONPATH", "")
    return logdir, e


def check(env: Env, job: Job, work: Path, timeout: float) -> tuple[int, list[str]]:
    """Mutate, then run the three consumers; return (runs, problems)."""
    d = work / job.name
    d.mkdir()
    os.chmod(d, 0o777)
    mutant = d / "mutant.pcapng"
    err = mutate(job, mutant)
    if err:
        return 0, [f"setup: {err}"]
    problems: list[str] = []
    runs = 0
    for label, cmd, scan in consumers(env, mutant, job.keys):
        logdir, e = consumer_env(env, d, label)
        res = run(cmd, timeout, e, scan_stdout=scan)
        runs += 1
        problems += judge(label, res, logdir, d, timeout)
    return runs, problems


def judge(label: str, res: Result, logdir: Path, d: Path, timeout: float,
          extra: list[str] | None = None) -> list[str]:
    """What is wrong with one consumer's run (nothing: [])."""
    problems: list[str] = []
    why: list[str] = list(extra or [])
    if res.rc is None:
        why.append(f"hang: killed after {timeout:.0f} s")
    elif res.rss_killed:
        why.append(f"memory: killed past the RSS cap ({res.rss_mib:.0f} MiB peak seen)")
    elif res.rc == -signal.SIGXCPU:
        why.append(f"CPU: killed by RLIMIT_CPU ({res.cpu:.1f} s)")
    elif res.rc < 0:
        why.append(f"crash: signal {-res.rc}")
    elif res.rc == 86:
        why.append("AddressSanitizer report")
    elif res.rc == 87:
        why.append("UBSan report")
    elif res.rc != 0 and not (label == "p2pc analyze" and res.rc in ANALYZE_OK):
        why.append(f"exit status {res.rc}")
    for f in sorted(logdir.iterdir()):
        text = f.read_text(errors="replace")
        first = next((l for l in text.splitlines() if "ERROR" in l or "runtime error" in l),
                     text.strip().splitlines()[0] if text.strip() else f.name)
        why.append(f"sanitizer ({f.name.split('.')[0]}): {first.strip()[:300]}")
        (d / f"{label.split()[-1].replace(',', '_')}.{f.name}").write_text(text)
    why += [f"output: {h[:300]}" for h in res.out_hits]
    bad = [l for l in res.stderr.splitlines() if any(p in l for p in BAD_STDERR)]
    why += [f"stderr: {l.strip()[:300]}" for l in bad[:3]]
    if why:
        tail = res.stderr.strip()[-1500:]
        problems.append(f"{label}: " + "; ".join(why) + (f"\n    stderr tail:\n{tail}" if tail else ""))
    return problems


# ---------------------------------------------------------------- hostile captures (tools/craft.py)

# A hostile capture's run may use, over stock tshark (the distribution's, no p2pc, no libasan) on
# the same capture with the same kind of run (-2 -V -x for the first consumer, one quiet pass
# for the other two):
#   peak RSS  <= stock x ASAN_RSS_FACTOR + RSS_BUDGET_MIB
#   CPU       <= stock x CPU_FACTOR + CPU_BUDGET_S      (RLIMIT_CPU stops each process there)
# ASAN_RSS_FACTOR covers ASan's redzones and shadow on what tshark itself allocates.
# RSS_BUDGET_MIB = what a bounded plugin may hold at once: p2pc.max_replay_mib (256 MiB kept for
# re-dissection under -2) + one decompression at p2pc.max_decompressed_mib (128 MiB, its buffer
# grown by doubling: 256) + ASan's quarantine of freed blocks (256 MiB by default) + 256 MiB
# for the rest.  CPU_BUDGET_S: a per-capture decompression budget of ~256 MiB of yamux frames
# costs ~6 s of CPU without ASan (bomb-comp-brotli: 22.5 s for 1 GiB), ~12 s with it.
# Today's unbounded brotli bomb (1 GiB of yamux frames) peaks at ~2.2-2.5 GB and 42-45 s CPU under
# ASan against 198 MB and 0.3 s stock: it fails both.
ASAN_RSS_FACTOR = 2.0
RSS_BUDGET_MIB = 1024
CPU_FACTOR = 10
CPU_BUDGET_S = 20
RSS_KILL_FACTOR = 1.5
ASSERT_LINE = re.compile(r"\./epan/[\w/.-]+\.c:\d+: failed assertion .*")   # past limit x this the run is killed at once (the machine is shared)


@dataclass
class HostileResult:
    case: object
    runs: int
    problems: list[str]
    figures: str
    upstream: str = ""   # the assertion stock tshark aborts on too


def hostile(env: Env, case, work: Path, timeout: float) -> HostileResult:
    """Stock tshark's RSS and CPU on the case, then the three consumers under the limits."""
    from p2pc.wsenv import Wireshark  # noqa: E402 (Env put the analyzer on sys.path)
    d = work / f"hostile-{case.name}"
    d.mkdir()
    os.chmod(d, 0o777)
    cap = d / case.path.name
    shutil.copyfile(case.path, cap)
    os.chmod(cap, 0o644)
    stock = Wireshark()
    base: dict[str, Result] = {}
    try:
        for key, args in (("tree", ["-n", "-2", "-V", "-x", "-r", str(cap)]), ("pass", ["-n", "-q", "-r", str(cap)])):
            cmd = [env.real if c == env.wrapper else c for c in stock.command("tshark", args)]
            e = env.env(d)
            e["WIRESHARK_ABORT_ON_DISSECTOR_BUG"] = "1"   # as the consumers: an upstream abort shows
            base[key] = run(cmd, timeout, e)
    finally:
        stock.cleanup()
    stock_asserts = {m.group(0) for r in base.values() for m in ASSERT_LINE.finditer(r.stderr)}
    figures = [f"stock -2 -V {base['tree'].rss_mib:.0f} MiB {base['tree'].cpu:.2f} s, "
               f"one pass {base['pass'].rss_mib:.0f} MiB {base['pass'].cpu:.2f} s"]
    problems = [f"stock tshark: exit {r.rc}: {r.stderr.strip()[-300:]}" for r in base.values()
                if r.rc != 0 and not stock_asserts]
    runs = 0
    for label, cmd, scan in consumers(env, cap):
        b = base["tree" if label.startswith("tshark -2") else "pass"]
        rss_limit = b.rss_mib * ASAN_RSS_FACTOR + RSS_BUDGET_MIB
        cpu_limit = b.cpu * CPU_FACTOR + CPU_BUDGET_S
        wall = max(timeout, cpu_limit * 4 + 30)   # 2 busy cores: CPU is the limit, wall a hang guard
        logdir, e = consumer_env(env, d, label)
        res = run(cmd, wall, e, scan_stdout=scan, cpu_limit=cpu_limit, rss_cap_mib=rss_limit * RSS_KILL_FACTOR)
        runs += 1
        over = []
        if res.rss_mib > rss_limit or res.rss_killed:
            over.append(f"memory: peak RSS {res.rss_mib:.0f} MiB > {rss_limit:.0f} MiB "
                        f"(stock {b.rss_mib:.0f} x {ASAN_RSS_FACTOR:g} + {RSS_BUDGET_MIB})")
        if res.cpu > cpu_limit:
            over.append(f"CPU: {res.cpu:.1f} s > {cpu_limit:.1f} s (stock {b.cpu:.2f} x {CPU_FACTOR} + {CPU_BUDGET_S})")
        figures.append(f"{label.split()[-1]} {res.rss_mib:.0f} MiB {res.cpu:.1f} s")
        problems += judge(label, res, logdir, d, wall, extra=over)
    if problems and stock_asserts and all(set(ASSERT_LINE.findall(p)) & stock_asserts for p in problems):
        # every consumer stopped on an assertion stock tshark (no p2pc) stops on too
        return HostileResult(case, runs, [], "; ".join(figures), upstream=sorted(stock_asserts)[0])
    return HostileResult(case, runs, problems, "; ".join(figures))


def keep_hostile(r: HostileResult, work: Path, keep: Path) -> Path:
    keep.mkdir(parents=True, exist_ok=True)
    case = r.case
    dst = keep / f"hostile-{case.path.name}"
    shutil.copyfile(case.path, dst)
    for extra in (work / f"hostile-{case.name}").glob("*.[au][sb]san*"):
        shutil.copyfile(extra, keep / f"hostile-{case.name}.{extra.name}")
    (keep / f"hostile-{case.name}.txt").write_text(
        f"case: {case.name} ({case.family}, {case.kind}): {case.what}\n"
        f"made by: PYTHONPATH=analyzer python3 tools/craft.py DIR --family {case.family} --kind {case.kind}\n"
        f"rerun: tools/fuzz.py --hostile-only --hostile-case {case.name} --no-build\n"
        f"figures: {r.figures}\n\n" + "\n".join(r.problems) + "\n")
    return dst


def upstream(env: Env, job: Job, work: Path, problems: list[str], timeout: float) -> str | None:
    """When every consumer failed on the same assertion of one of Wireshark's own dissectors:
    the stock tshark command (no p2pc, that dissector on the capture's TCP ports) that fails the
    same way, or None."""
    found = {m.group(0) for p in problems for m in WS_ASSERT.finditer(p)}
    if len(found) != 1 or not all(WS_ASSERT.search(p) for p in problems):
        return None
    line = found.pop()
    proto = WS_ASSERT.match(line).group(1)
    ports = subprocess.run(["tshark", "-n", "-r", str(job.prepared), "-T", "fields", "-e", "tcp.srcport",
                            "-e", "tcp.dstport"], capture_output=True, text=True, timeout=120).stdout.split()
    mutant = work / job.name / "mutant.pcapng"
    cmd = ["tshark", "-n", "-q", "-r", str(mutant), "-z", "io,stat,0"]
    for port in sorted(set(ports), key=int)[:8]:
        cmd += ["-d", f"tcp.port=={port},{proto}"]
    from p2pc.wsenv import Wireshark  # noqa: E402 (Env put the analyzer on sys.path)
    stock = Wireshark()
    try:
        res = run(stock.command("tshark", cmd[1:]), timeout, env.env(work / job.name))
    finally:
        stock.cleanup()
    return " ".join(cmd) if res.rc is not None and res.rc < 0 and line in res.stderr else None


def keep_failure(job: Job, work: Path, problems: list[str], keep: Path) -> Path:
    keep.mkdir(parents=True, exist_ok=True)
    dst = keep / f"{job.name}.pcapng"
    shutil.copyfile(work / job.name / "mutant.pcapng", dst)
    for extra in (work / job.name).glob("*.asan*"):
        shutil.copyfile(extra, keep / f"{job.name}.{extra.name}")
    for extra in (work / job.name).glob("*.ubsan*"):
        shutil.copyfile(extra, keep / f"{job.name}.{extra.name}")
    how = [f"capture: {rel(job.cap)}",
           f"prepared: {'TLS secrets taken out (split_secrets), ' if job.secrets else ''}"
           f"{f'editcap -r CAPTURE PREPARED 1-{job.max_packets}' if job.max_packets else 'every packet'}",
           f"mutant: editcap -E {job.rate} --seed {job.seed} -o {job.offset} PREPARED MUTANT"
           f"{' then editcap --inject-secrets tls,KEYS' if job.secrets else ''}",
           f"rerun: tools/fuzz.py --rates {job.rate} --seeds {job.seed} --max-packets {job.max_packets} "
           f"{rel(job.cap)}",
           "", *problems]
    (keep / f"{job.name}.txt").write_text("\n".join(how) + "\n")
    return dst


HOSTILE_KINDS = ("bomb", "flood", "nest", "varint", "cardinality")


def hostile_stage(env: Env, tmp: Path, work: Path, args, timeout: float,
                  kinds: dict[str, int], failures: list[str], upstreams: list[str]) -> int:
    """tools/craft.py's captures, made into tmp, each through the three consumers under limits
    relative to stock tshark; returns the runs."""
    sys.path.insert(0, str(REPO / "tools"))
    import craft  # noqa: E402
    t0 = time.monotonic()
    cases = [c for c in craft.generate(tmp / "hostile")
             if not args.hostile_case or c.name in args.hostile_case]
    log(f"fuzz: hostile stage: {len(cases)} crafted captures ({time.monotonic() - t0:.1f} s to make) x 3 "
        f"consumers; limits: RSS <= stock x {ASAN_RSS_FACTOR:g} + {RSS_BUDGET_MIB} MiB, "
        f"CPU <= stock x {CPU_FACTOR} + {CPU_BUDGET_S} s")
    runs = 0
    # Bombs first: the slowest, so the pool ends evenly.
    cases.sort(key=lambda c: (c.kind != "bomb", -c.path.stat().st_size))
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(hostile, env, c, work, timeout): c for c in cases}
        for fut in cf.as_completed(futs):
            case = futs[fut]
            try:
                r = fut.result()
            except Exception as e:  # noqa: BLE001 - a harness error is a failure too
                r = HostileResult(case, 0, [f"harness: {type(e).__name__}: {e}"], "")
            runs += r.runs
            kinds[case.kind] = kinds.get(case.kind, 0) + 1
            if r.upstream:
                upstreams.append(f"hostile-{case.name}")
                log(f"UPSTREAM hostile {case.name}: {r.upstream}, stock tshark too")
            elif r.problems:
                kept = keep_hostile(r, work, args.keep)
                failures.append(f"hostile-{case.name}")
                log(f"FAIL hostile {case.name} ({case.family} {case.kind}; kept {rel(kept)}): {r.figures}")
                for p in r.problems:
                    log("  " + p.replace("\n", "\n  "))
            else:
                log(f"ok hostile {case.name}: {r.figures}")
            shutil.rmtree(work / f"hostile-{case.name}", ignore_errors=True)
    log(f"fuzz: hostile stage: {len(cases)} captures, {runs} runs, {len(failures)} failing, "
        f"{time.monotonic() - t0:.0f} s")
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="*", type=Path,
                    help="default: every captures/**/*.pcapng")
    ap.add_argument("--profile", choices=sorted(PROFILES),
                    default=os.environ.get("FUZZ_PROFILE") or "short")
    ap.add_argument("--rates", help="comma-separated editcap -E probabilities (overrides the profile)")
    ap.add_argument("--seeds", help="editcap --seed values, e.g. 1-4 or 1,7 (overrides the profile)")
    ap.add_argument("--max-packets", type=int,
                    help="cut each capture to its first N packets before mutating (0: all)")
    ap.add_argument("--timeout", type=float, help="seconds per consumer run")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--no-build", action="store_true", help="use build-asan/ as it is")
    ap.add_argument("--build-only", action="store_true", help="build build-asan/ and run nothing")
    ap.add_argument("--keep", type=Path, default=BUILD / "fuzz-failures")
    ap.add_argument("--no-hostile", action="store_true",
                    help="skip the hostile stage (tools/craft.py's captures under RSS/CPU limits)")
    ap.add_argument("--hostile-only", action="store_true", help="only the hostile stage, no mutants")
    ap.add_argument("--hostile-case", action="append", metavar="NAME",
                    help="only these hostile cases (tools/craft.py names; repeatable)")
    args = ap.parse_args()

    if args.build_only:
        build_asan()
        return 0
    prof = PROFILES[args.profile]
    rates = [float(r) for r in args.rates.split(",")] if args.rates else prof["rates"]
    seeds = parse_seeds(args.seeds) if args.seeds else list(prof["seeds"])
    max_packets = prof["max_packets"] if args.max_packets is None else args.max_packets
    timeout = args.timeout or prof["timeout"]
    # The profile's name, or what the options made of it.
    profile = args.profile if not (args.rates or args.seeds or args.max_packets is not None or args.timeout) \
        else f"{args.profile}+options"
    caps = [c.resolve() for c in args.captures] or gate_captures(prof["skip"])
    if not caps:
        sys.exit("fuzz: no captures")
    t0 = time.monotonic()
    failures: list[str] = []
    upstreams: list[str] = []
    runs = mutants = 0
    hostile_kinds: dict[str, int] = {}
    hostile_failures: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="p2pc-fuzz-"))
    try:
        env = Env(tmp, build=not args.no_build)
        work = tmp / "work"
        work.mkdir()
        os.chmod(work, 0o755)
        if not args.no_hostile:
            runs += hostile_stage(env, tmp, work, args, timeout, hostile_kinds, hostile_failures, upstreams)
            failures += hostile_failures
        jobs: list[Job] = []
        for i, cap in enumerate([] if args.hostile_only else caps):
            prep = tmp / f"prep-{i}-{cap.stem}.pcapng"
            secrets = split_secrets(cap, prep)
            keyfile = None
            if secrets:
                kinds = {k for k, _ in secrets}
                if kinds != {"tls"}:
                    sys.exit(f"fuzz: {cap}: secrets of type {kinds}: only TLS key logs are re-injected")
                keyfile = tmp / f"prep-{i}-{cap.stem}.keys"
                keyfile.write_bytes(b"\n".join(s.rstrip(b"\n\0") for _, s in secrets) + b"\n")
            if max_packets:
                cut = prep.with_suffix(".cut.pcapng")
                subprocess.run(["editcap", "-r", str(prep), str(cut), f"1-{max_packets}"],
                               capture_output=True, timeout=120)
                if cut.exists():
                    cut.replace(prep)
            os.chmod(prep, 0o644)
            keys = Keys.beside(cap, tmp / f"keys-{i}-{cap.stem}")
            jobs += [Job(cap, prep, keyfile, r, s, max_packets, keys) for r in rates for s in seeds]
        # Biggest captures first so the pool ends evenly.
        jobs.sort(key=lambda j: -j.prepared.stat().st_size)
        left = f" ({len(gate_captures()) - len(caps)} in {rel(prof['skip'])} left out)" \
            if prof["skip"] and not args.captures else ""
        log(f"fuzz: profile {profile}: {len(caps) if jobs else 0} captures{left} x {len(rates)} rates x "
            f"{len(seeds)} seeds = {len(jobs)} mutants x 3 consumers, {args.jobs} jobs, "
            f"timeout {timeout:.0f} s, plugin {rel(env.plugin)}")
        done = 0
        with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futs = {pool.submit(check, env, j, work, timeout): j for j in jobs}
            for fut in cf.as_completed(futs):
                job = futs[fut]
                try:
                    n, problems = fut.result()
                except Exception as e:  # noqa: BLE001 - a harness error is a failure too
                    n, problems = 0, [f"harness: {type(e).__name__}: {e}"]
                runs += n
                mutants += 1
                done += 1
                stock = upstream(env, job, work, problems, timeout) if problems else None
                if stock:
                    upstreams.append(job.name)
                    log(f"UPSTREAM {job.name}: {WS_ASSERT.search(problems[0]).group(0)}, also without p2pc: {stock}")
                elif problems:
                    kept = keep_failure(job, work, problems, args.keep) \
                        if (work / job.name / "mutant.pcapng").exists() else None
                    failures.append(job.name)
                    log(f"FAIL {job.name} (kept {rel(kept) if kept else 'nothing'})")
                    for p in problems:
                        log("  " + p.replace("\n", "\n  "))
                shutil.rmtree(work / job.name, ignore_errors=True)
                if done % 50 == 0 or done == len(jobs):
                    log(f"fuzz: {done}/{len(jobs)} mutants, {runs} runs, {len(failures)} failing, "
                        f"{time.monotonic() - t0:.0f} s")
    finally:
        try:
            env.ws.cleanup()  # type: ignore[possibly-undefined]
        except Exception:  # noqa: BLE001
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    secs = time.monotonic() - t0
    seed_txt = f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds))
    kinds = ",".join(f"{k}:{hostile_kinds.get(k, 0)}" for k in HOSTILE_KINDS)
    print(f"fuzz summary: profile={profile} runs={runs} mutants={mutants} "
          f"captures={0 if args.hostile_only else len(caps)} "
          f"rates={','.join(map(str, rates))} seeds={seed_txt} "
          f"hostile={kinds if not args.no_hostile else 'off'} hostile_failures={len(hostile_failures)} "
          f"failures={len(failures)} upstream={len(upstreams)} seconds={secs:.0f}", flush=True)
    if failures:
        print(f"fuzz: failing mutants kept in {args.keep}: " + " ".join(sorted(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
