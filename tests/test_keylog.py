"""analyzer/p2pc/keylog.py: one key log with Noise and TLS lines, split for tshark's two
preferences, decrypts both kinds of committed captures; bad lines are one-line errors."""
from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest

from conftest import CAPTURES
from p2pc.keylog import KEYLOG_MAX, KeylogInvalid, follow, split

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


def test_a_key_log_over_the_bound_is_refused_unread(tmp_path):
    """A regular key log larger than KEYLOG_MAX (sparse: nothing is written) is one line."""
    big = tmp_path / "big.keys"
    with open(big, "wb") as f:
        f.truncate(KEYLOG_MAX + 1)
    with pytest.raises(KeylogInvalid) as e:
        split(big, tmp_path)
    assert str(e.value) == f"{big} is {KEYLOG_MAX + 1} bytes, more than a key log's 256 MiB: not read"


def test_a_followed_key_log_replaced_by_a_fifo_is_not_opened(tmp_path):
    """live's follower: the key log replaced by a FIFO no one writes to ends the following with
    one warning instead of blocking in open() (the join timeout is a hang guard only)."""
    src = tmp_path / "node.keys"
    src.write_text((ETH / "eth2-noise-yamux.keys").read_text())
    files = split(src, tmp_path, both=True)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.replace(fifo, src)
    said: list[str] = []
    stop = threading.Event()
    t = threading.Thread(target=follow, args=(files, stop, said.append, 0.01))
    t.start()
    t.join(30)
    stop.set()
    assert not t.is_alive()
    assert said == [f"--keylog: {src} is not a regular file (a FIFO, a device or a folder): not read; "
                    "keys added later are not read"]
