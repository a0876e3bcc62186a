#!/usr/bin/env python3
"""Regenerate every committed capture (needs root): `sudo make captures`."""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENERATORS = ["make_bitcoin.py", "make_bip324.py", "make_fisco.py", "make_fisco3.py", "make_eth2.py", "make_compression.py",
              "make_bitswap.py", "make_lumen.py"]

for gen in GENERATORS:
    print(f"== {gen}", flush=True)
    subprocess.run([sys.executable, str(HERE / gen)], check=True)
