"""`p2pc doctor` gives one verdict per check, the one that matches what tshark will load, and a
plugin tshark cannot load is named as such however it is found (issue 43, finding 4): each case
as a user met it, on the real tshark with this repository's build and copies of it made foreign."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CAPTURES, REPO
from p2pc.wsenv import built_plugin

BTC = CAPTURES / "bitcoin/btc-small.pcapng"


def tshark_version() -> tuple[str, str]:
    out = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout
    major, minor = out.split()[2].split(".")[:2]
    return major, minor


def p2pc(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    """p2pc with HOME `home` and no P2PC_PLUGIN unless given: it picks its plugin itself."""
    base = {k: v for k, v in os.environ.items() if k != "P2PC_PLUGIN"}
    base.update(PYTHONPATH=str(REPO / "analyzer"), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), **env)
    return subprocess.run([sys.executable, "-m", "p2pc", *args], capture_output=True, text=True, env=base)


def verdicts(out: str, about: str) -> list[str]:
    """doctor's check lines ([ok], [!!], [--]) that mention `about`."""
    return [l for l in out.splitlines() if re.match(r"\[(ok|!!|--)\] ", l) and about in l]


def marked_for(tmp_path: Path, version: str) -> Path:
    """The build, its built-for marker saying another Wireshark version."""
    major, minor = tshark_version()
    marker = f"p2pc-built-for-wireshark={major}.{minor}".encode()
    data = built_plugin().read_bytes()
    assert data.count(marker) == 1
    out = tmp_path / "marked" / "p2pc.so"
    out.parent.mkdir()
    out.write_bytes(data.replace(marker, f"p2pc-built-for-wireshark={version}".encode()))
    return out


def other_abi(tmp_path: Path) -> Path:
    """The build linked against a libwireshark soname this machine lacks, and without the
    built-for marker: a plugin of another Wireshark ABI that nothing but tshark's own loader
    can tell apart (an older p2pc's build, another distribution's)."""
    major, minor = tshark_version()
    data = built_plugin().read_bytes()
    soname = re.search(rb"libwireshark\.so\.(\d+)\x00", data)
    assert soname, "the build names no libwireshark soname"
    other = str(int(soname.group(1)) + 50).encode().rjust(len(soname.group(1)), b"0")[:len(soname.group(1))]
    data = data.replace(soname.group(0), b"libwireshark.so." + other + b"\x00")
    data = data.replace(f"p2pc-built-for-wireshark={major}.{minor}".encode(), b"x" * len(f"p2pc-built-for-wireshark={major}.{minor}"))
    out = tmp_path / "abi" / "p2pc.so"
    out.parent.mkdir()
    out.write_bytes(data)
    return out


def test_a_build_without_an_installation_is_one_ok_and_a_not_installed_note(tmp_path):
    """Issue 43: `[ok] p2pc plugin: built at … (not installed)`. The build p2pc hands tshark is
    one [ok] that says tshark loads it; that Wireshark itself lacks it is a [--] of its own."""
    res = p2pc("doctor", home=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    plugin = verdicts(res.stdout, "p2pc plugin")
    assert plugin == [f"[ok] p2pc plugin: {built_plugin()} (this repository's build), version "
                      f"{plugin[0].split('version ')[1].split(':')[0]}: tshark loads it"], res.stdout
    assert not [l for l in res.stdout.splitlines() if l.startswith("[ok]") and "not installed" in l], res.stdout
    assert verdicts(res.stdout, "not installed for them")[0].startswith("[--] Wireshark and plain tshark")


@pytest.mark.parametrize("how", ["P2PC_PLUGIN", "--plugin"])
def test_a_wrong_version_build_gets_one_verdict(tmp_path, how):
    """Issue 43: `[!!]` and `[ok]` for the same wrong-version build. Now one [!!] line names it,
    with both versions, and no line calls it ok."""
    major, minor = tshark_version()
    foreign = marked_for(tmp_path, f"{major}.{int(minor) + 2}")
    args, env = (["--plugin", str(foreign)], {}) if how == "--plugin" else ([], {"P2PC_PLUGIN": str(foreign)})
    res = p2pc("doctor", *args, home=tmp_path, **env)
    assert res.returncode == 4, res.stdout + res.stderr
    about = verdicts(res.stdout, str(foreign))
    assert [l for l in about if not l.startswith("[--] Wireshark and plain tshark")] == [
        f"[!!] p2pc plugin: {foreign}: built for Wireshark {major}.{int(minor) + 2}, tshark is "
        f"{major}.{minor}: run make install-user (in the p2pc repository)"], res.stdout
    assert not [l for l in res.stdout.splitlines() if l.startswith("[ok] p2pc plugin")]


@pytest.mark.parametrize("how", ["P2PC_PLUGIN", "--plugin", "personal"])
def test_a_plugin_of_another_abi_is_named_by_tsharks_own_reason(tmp_path, how):
    """Issue 43: a plugin of another ABI passed with --plugin gave "unknown preference
    p2pc.keep_replay". tshark's loader says why it did not load it; doctor and analyze say that,
    one line, exit 4, whichever way the plugin was found (as root the personal installation is
    handed to tshark by p2pc, as for any user tshark finds it itself)."""
    foreign = other_abi(tmp_path)
    major, minor = tshark_version()
    args, env = [], {}
    if how == "--plugin":
        args = ["--plugin", str(foreign)]
    elif how == "P2PC_PLUGIN":
        env = {"P2PC_PLUGIN": str(foreign)}
    else:
        personal = tmp_path / ".local/lib/wireshark/plugins" / f"{major}.{minor}" / "epan"
        personal.mkdir(parents=True)
        (personal / "p2pc.so").write_bytes(foreign.read_bytes())
    why = f"tshark {major}.{minor} cannot load the p2pc plugin: Couldn't load plugin 'p2pc.so': libwireshark.so."
    res = p2pc("doctor", *args, home=tmp_path, **env)
    assert res.returncode == 4, res.stdout + res.stderr
    plugin = verdicts(res.stdout, "p2pc plugin")
    assert len(plugin) == 1 and plugin[0].startswith("[!!] p2pc plugin: ") and why in plugin[0], res.stdout
    res = p2pc("analyze", *args, str(BTC), home=tmp_path, **env)
    assert res.returncode == 4, res.stderr
    assert res.stderr.count("\n") == 1 and why in res.stderr and "keep_replay" not in res.stderr, res.stderr
