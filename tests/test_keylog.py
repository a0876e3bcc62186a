"""analyzer/p2pc/keylog.py: one key log with Noise and TLS lines, split for tshark's two
preferences, decrypts both kinds of committed captures; bad lines are one-line errors."""
from __future__ import annotations

import hashlib
import json

import pytest

from conftest import CAPTURES
from p2pc.keylog import KeylogInvalid, split

ETH = CAPTURES / "eth2"


def blocks(tshark, capture, opts) -> list[str]:
    return [hashlib.sha256(raw).hexdigest() for _, mtype, raw in tshark.payloads(capture, extra=opts)
            if mtype == "beacon_blocks_by_range/2 response" and len(raw) > 1000]


def test_one_mixed_file_decrypts_noise_and_tls(tshark, tmp_path):
    mixed = tmp_path / "node.keys"
    mixed.write_text("# a node's keys\n\n" + (ETH / "eth2-noise-yamux.keys").read_text()
                     + (ETH / "eth2-tls-yamux.keys").read_text())
    files = split(mixed, tmp_path)
    assert files.noise.read_text() == (ETH / "eth2-noise-yamux.keys").read_text()
    assert files.tls.read_text() == (ETH / "eth2-tls-yamux.keys").read_text()
    opts = files.options(tshark.ws.readable)
    assert [opts[0], opts[2]] == ["-o", "-o"]
    assert opts[1].startswith("libp2p_noise.keylog_file:") and opts[3].startswith("tls.keylog_file:")
    for name in ("eth2-noise-yamux", "eth2-tls-yamux"):
        want = [b["sha256"] for b in json.loads((ETH / f"{name}.truth.json").read_text())["blocks_by_range"]]
        assert blocks(tshark, ETH / f"{name}.pcapng", opts) == want


def test_a_file_of_one_kind_gives_one_option(tmp_path):
    files = split(ETH / "eth2-tls-yamux.keys", tmp_path)
    assert files.noise is None and files.options() == ["-o", f"tls.keylog_file:{tmp_path / 'tls.keys'}"]


@pytest.mark.parametrize("line, says", [
    ("LOCAL_STATIC_PRIVATE_KEY = AAAA", "base64 of 32 bytes"),
    ("LOCAL_EPHEMERAL_PRIVATE_KEY", "base64 of 32 bytes"),
    ("REMOTE_STATIC_PUBLIC_KEY = " + "A" * 43 + "=", "neither a Noise key"),
])
def test_bad_lines_are_one_line_errors(tmp_path, line, says):
    bad = tmp_path / "bad.keys"
    bad.write_text("# ok\n" + line + "\n")
    with pytest.raises(KeylogInvalid) as e:
        split(bad, tmp_path)
    assert says in str(e.value) and f"{bad}:2" in str(e.value) and "\n" not in str(e.value)
