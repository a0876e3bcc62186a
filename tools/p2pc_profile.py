#!/usr/bin/env python3
"""The p2pc configuration profile as it is installed: profiles/p2pc/'s files as they are, and a
colorfilters file that holds p2pc's rules (profiles/p2pc.colorfilters) first and then the
installed Wireshark's own default rules.

Wireshark reads a profile's colorfilters file as the whole list of colouring rules: a profile
that ships only its own rules turns TCP, ARP and ICMP rows white.  The defaults are taken, at
install time, from the global colorfilters file of the Wireshark that will read the profile
(`tshark -G folders`: "Global configuration"), not copied into this repository: they differ
between Wireshark versions (4.0, 4.4, 4.6), and a copy would give one version's defaults to all.

  tools/p2pc_profile.py DEST [--global-config DIR]
      writes the profile's files into DEST (e.g. ~/.config/wireshark/profiles/p2pc, or the
      global profiles folder a package installs); DIR (default: tshark's global configuration
      folder) holds the Wireshark defaults' colorfilters.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "p2pc"
RULES = REPO / "profiles" / "p2pc.colorfilters"


def global_config(tshark: str = "tshark") -> Path:
    """Wireshark's global configuration folder, as `tshark -G folders` names it."""
    out = subprocess.run([tshark, "-G", "folders"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "Global configuration":
            return Path(value.strip())
    raise RuntimeError("tshark -G folders names no global configuration folder")


def colorfilters(defaults: Path) -> str:
    """p2pc's rules, then the rules of Wireshark's default colorfilters file `defaults` (its
    comment lines left out: the file's "DO NOT EDIT" header is about that file)."""
    if not defaults.is_file():
        raise RuntimeError(f"{defaults}: no such file (Wireshark's default colouring rules)")
    rules = [line for line in defaults.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return (RULES.read_text().rstrip("\n") + "\n"
            + f"# Wireshark's default colouring rules, from {defaults}:\n"
            + "\n".join(rules) + "\n")


def profile_files(global_dir: Path) -> dict[str, str]:
    """{file name: text} of the installed profile."""
    files = {f.name: f.read_text() for f in sorted(PROFILE.iterdir()) if f.is_file()}
    files["colorfilters"] = colorfilters(global_dir / "colorfilters")
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path, help="the profile folder to write")
    ap.add_argument("--global-config", type=Path, help="Wireshark's global configuration folder")
    args = ap.parse_args()
    try:
        files = profile_files(args.global_config or global_config())
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"p2pc_profile: {e}", file=sys.stderr)
        return 1
    args.dest.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.dest / name).write_text(text)
    print(f"p2pc: profile p2pc written to {args.dest} (p2pc's colouring rules, then Wireshark's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
