#!/usr/bin/env python3
"""Fuzz the plugin the way Wireshark's own fuzz-test.sh does: mutate the committed captures with
`editcap -E` and dissect each mutant with an AddressSanitizer/UBSan build of the plugin, loaded
into the distribution's tshark with libasan preloaded.  Reports any sanitizer error or crash.

    make fuzz              # or: tools/fuzz.py [--rounds N] [--prob P] [CAPTURE...]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
from p2pc.wsenv import Wireshark  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=5, help="mutants per capture")
    ap.add_argument("--prob", type=float, default=0.02, help="editcap -E byte error probability")
    args = ap.parse_args()
    caps = args.captures or sorted((REPO / "captures").glob("*/*.pcap*"))
    build = REPO / "build-asan"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), "-DP2PC_SANITIZE=ON",
                    "-DCMAKE_BUILD_TYPE=Debug"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, stdout=subprocess.DEVNULL)
    plugin = next(build.glob("plugins/*/epan/p2pc.so"))
    libasan = subprocess.check_output(["gcc", "-print-file-name=libasan.so"], text=True).strip()
    failures = 0
    with Wireshark(plugin=plugin) as ws, tempfile.TemporaryDirectory() as tmp:
        for cap in caps:
            for i in range(args.rounds):
                mutant = Path(tmp) / f"{cap.stem}-{i}.pcapng"
                subprocess.run(["editcap", "-E", str(args.prob), str(cap), str(mutant)],
                               check=True, capture_output=True)
                cmd = ws.command("tshark", ["-n", "-V", "-r", ws.readable(mutant)])
                at = cmd.index("env") + 1 if "env" in cmd else 0
                cmd[at:at] = [f"LD_PRELOAD={libasan}", "ASAN_OPTIONS=detect_leaks=0",
                              "UBSAN_OPTIONS=print_stacktrace=1"]
                res = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
                bad = [l for l in res.stderr.splitlines()
                       if "ERROR: AddressSanitizer" in l or "runtime error" in l]
                if res.returncode != 0 or bad:
                    failures += 1
                    keep = REPO / "build-asan" / mutant.name
                    keep.write_bytes(mutant.read_bytes())
                    print(f"FAIL {cap.name} #{i}: exit {res.returncode}; kept {keep}")
                    print("\n".join(bad[:5]) or res.stderr[-2000:])
                else:
                    print(f"ok   {cap.name} #{i}")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
