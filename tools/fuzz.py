#!/usr/bin/env python3
"""Fuzz gate: every committed capture, mutated with `editcap -E RATE --seed N`, through an
AddressSanitizer+UBSan build of the plugin (build-asan/) loaded into the distribution's tshark.

Each mutant goes through three consumers, each under a timeout:
  tshark -2 -V -x          (two passes, the whole tree and every data source)
  tshark -z p2pc,records   (one pass, the analyzer's input)
  p2pc analyze --plugin build-asan/...
A run fails on a crash (signal / unexpected exit status), a hang (timeout), any ASan or UBSan
report, a "Dissector bug" in the output, a GLib critical/error, or a Python traceback.
"[Malformed Packet]" is an accepted outcome for a mutant.  So is a failed assertion in one of
Wireshark's own dissectors that stock tshark, without p2pc, hits on the same mutant (that
dissector decoding the capture's TCP ports, `-d tcp.port==P,PROTO`): it is printed as UPSTREAM,
with the stock command, and does not fail the gate (Wireshark 4.0's TLS handshake reassembly
asserts on some mutated TLS captures; 4.4 and 4.6 do not).

    make fuzz                      # the short profile (CI): >= 1,000 runs, about 10 minutes
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
    # ~400 mutants x 3 consumers; big captures cut to their first packets (still every capture).
    "short": dict(rates=[0.001, 0.005, 0.02], seeds=range(1, 5), max_packets=300, timeout=60),
    "long": dict(rates=[0.001, 0.005, 0.02], seeds=range(1, 21), max_packets=0, timeout=300),
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


def run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
        scan_stdout: bool = False) -> Result:
    """Run `cmd` in its own process group (a timeout kills the whole group, tshark under the
    analyzer included); stream stdout (it can be tens of MB) looking for BAD_OUTPUT."""
    t0 = time.monotonic()
    err_f = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if scan_stdout else subprocess.DEVNULL,
                            stderr=err_f, env=env, start_new_session=True)
    hits: list[str] = []
    timed_out = threading.Event()

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
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            killer()
            proc.wait()
    err_f.seek(0)
    stderr = err_f.read().decode(errors="replace")
    err_f.close()
    return Result(None if timed_out.is_set() else proc.returncode, hits, stderr,
                  time.monotonic() - t0)


class Env:
    """The sanitizer build, a tshark wrapper that preloads libasan, and a private HOME."""

    def __init__(self, tmp: Path, build: bool):
        self.tmp = tmp
        if build:
            log("fuzz: building the ASan+UBSan plugin in build-asan/")
            subprocess.run(["cmake", "-S", str(REPO), "-B", str(BUILD), "-DP2PC_SANITIZE=ON",
                            "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DP2PC_ONLY=", "-DP2PC_WERROR=OFF",
                            "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g"],
                           check=True, stdout=subprocess.DEVNULL, timeout=300)
            subprocess.run(["cmake", "--build", str(BUILD), "-j", str(os.cpu_count() or 2)],
                           check=True, stdout=subprocess.DEVNULL, timeout=900)
        plugins = sorted(BUILD.glob("plugins/*/epan/p2pc.so"))
        if not plugins:
            sys.exit("fuzz: no build-asan/plugins/*/epan/p2pc.so (run without --no-build)")
        self.plugin = plugins[-1]
        libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                 text=True, timeout=30).stdout.strip()
        if not os.path.isabs(libasan):
            sys.exit("fuzz: gcc does not know libasan.so (apt-get install gcc)")
        real = shutil.which("tshark")
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


def check(env: Env, job: Job, work: Path, timeout: float) -> tuple[int, list[str]]:
    """Mutate, then run the three consumers; return (runs, problems)."""
    d = work / job.name
    d.mkdir()
    os.chmod(d, 0o777)
    mutant = d / "mutant.pcapng"
    err = mutate(job, mutant)
    if err:
        return 0, [f"setup: {err}"]
    consumers = [
        ("tshark -2 -V -x", env.tshark(["-n", "-2", "-V", "-x", "-r", str(mutant)]), True),
        ("tshark -z p2pc,records", env.tshark(["-n", "-q", "-z", "p2pc,records", "-r", str(mutant)]), False),
        ("p2pc analyze", [sys.executable, "-m", "p2pc", "analyze", "--plugin", str(env.plugin),
                          "-j", "1", str(mutant)], False),
    ]
    problems: list[str] = []
    runs = 0
    for label, cmd, scan in consumers:
        logdir = d / label.split()[-1].replace(",", "_")
        logdir.mkdir()
        os.chmod(logdir, 0o777)
        e = env.env(logdir)
        if label == "p2pc analyze":
            e["PYTHONPATH"] = str(REPO / "analyzer") + os.pathsep + e.get("PYTHONPATH", "")
        res = run(cmd, timeout, e, scan_stdout=scan)
        runs += 1
        why: list[str] = []
        if res.rc is None:
            why.append(f"hang: killed after {timeout:.0f} s")
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
    return runs, problems


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
    ap.add_argument("--keep", type=Path, default=BUILD / "fuzz-failures")
    args = ap.parse_args()

    prof = PROFILES[args.profile]
    rates = [float(r) for r in args.rates.split(",")] if args.rates else prof["rates"]
    seeds = parse_seeds(args.seeds) if args.seeds else list(prof["seeds"])
    max_packets = prof["max_packets"] if args.max_packets is None else args.max_packets
    timeout = args.timeout or prof["timeout"]
    # The profile's name, or what the options made of it.
    profile = args.profile if not (args.rates or args.seeds or args.max_packets is not None or args.timeout) \
        else f"{args.profile}+options"
    caps = [c.resolve() for c in args.captures] or sorted((REPO / "captures").glob("**/*.pcapng"))
    if not caps:
        sys.exit("fuzz: no captures")
    t0 = time.monotonic()
    failures: list[str] = []
    upstreams: list[str] = []
    runs = mutants = 0
    tmp = Path(tempfile.mkdtemp(prefix="p2pc-fuzz-"))
    try:
        env = Env(tmp, build=not args.no_build)
        work = tmp / "work"
        work.mkdir()
        os.chmod(work, 0o755)
        jobs: list[Job] = []
        for i, cap in enumerate(caps):
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
            jobs += [Job(cap, prep, keyfile, r, s, max_packets) for r in rates for s in seeds]
        # Biggest captures first so the pool ends evenly.
        jobs.sort(key=lambda j: -j.prepared.stat().st_size)
        log(f"fuzz: profile {profile}: {len(caps)} captures x {len(rates)} rates x "
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
    print(f"fuzz summary: profile={profile} runs={runs} mutants={mutants} captures={len(caps)} "
          f"rates={','.join(map(str, rates))} seeds={seed_txt} failures={len(failures)} "
          f"upstream={len(upstreams)} seconds={secs:.0f}", flush=True)
    if failures:
        print(f"fuzz: failing mutants kept in {args.keep}: " + " ".join(sorted(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
