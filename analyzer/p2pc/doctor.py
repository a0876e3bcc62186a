"""`p2pc doctor`: checks what p2pc needs on this machine (tshark, the plugin and whether tshark
loads it, root's runner, dumpcap's capture rights, the what-if codecs, the report libraries) and
prints each missing part with the command that fixes it.
"""
from __future__ import annotations

import ctypes.util
import grp
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from .errors import Exit, P2pcError
from .keys import helper
from .records import open_wireshark, personal_plugin, plugin_error, tshark_has_plugin
from .whatif import CODEC_FIX
from .wsenv import Wireshark, built_plugin, ws_version


def run(args) -> int:
    """`p2pc doctor`: what p2pc needs, present or not, each missing part with its fix; exit 4
    when a needed part is missing, 3 without tshark."""
    ok = True

    def line(good: bool, text: str, fix: str = "", optional: bool = False) -> None:
        """[ok] present; [!!] missing and needed (exit 4); [--] missing, needed only by some."""
        nonlocal ok
        ok &= good or optional
        mark = "ok" if good else "--" if optional else "!!"
        print(f"[{mark}] {text}" + (f"\n     fix: {fix}" if fix and not good else ""))

    tshark = shutil.which("tshark")
    line(bool(tshark), f"tshark: {tshark or 'not found'}", "sudo apt-get install tshark")
    if not tshark:
        return Exit.TSHARK_MISSING
    major, minor, micro = ws_version()
    line(True, f"Wireshark version {major}.{minor}.{micro}")
    root = os.geteuid() == 0
    if root:
        line(True, "running as root: tshark ignores personal plugin folders; p2pc runs it as "
                   "'nobody' with a private HOME holding the plugin")
    picked = plugin_check(line, args.plugin)
    plain = Wireshark()
    if picked != "installed" and not tshark_has_plugin(plain):
        personal = personal_plugin()
        line(False, "Wireshark and plain tshark: p2pc is not installed for them" +
             (f" ({personal}, a personal folder, which root's tshark ignores)" if root and personal else
              f" (p2pc hands tshark {picked} itself)" if picked else ""),
             "make install-user   (in the p2pc repository)", optional=True)
    personal, built = personal_plugin(), built_plugin()
    if personal and built and personal.read_bytes() != built.read_bytes():
        line(False, f"the installed plugin ({personal}) differs from this repository's build ({built})",
             "make install-user   (to install the build)", optional=True)
    if root and not shutil.which("setpriv"):
        line(False, "setpriv not found (needed to run tshark as nobody)", "sudo apt-get install util-linux")
    optional(line)
    return 0 if ok else Exit.PLUGIN_MISSING


def plugin_check(line, plugin: str | None) -> str | Path | None:
    """The plugin p2pc hands tshark (open_wireshark: --plugin, $P2PC_PLUGIN, the installed one,
    the personal installation, this repository's build), and whether tshark loads it: one
    verdict, with tshark's own reason when it does not.  Returns its path, "installed" when
    tshark loads one on its own, None when there is none."""
    try:
        ws = open_wireshark(plugin)
    except P2pcError as e:          # none found, or built for another Wireshark version
        line(False, f"p2pc plugin: {e}", "make build; make install-user   (in the p2pc repository)")
        return None
    try:
        res = ws.run("tshark", ["-G", "plugins"])
    finally:
        ws.cleanup()
    what = (f"{ws.plugin} (" + ("--plugin" if plugin else "$P2PC_PLUGIN" if os.environ.get("P2PC_PLUGIN")
                                else "the personal installation" if ws.plugin == (personal_plugin() or Path()).resolve()
                                else "this repository's build") + ")") if ws.plugin else "installed"
    got = [l for l in res.stdout.splitlines() if l.startswith("p2pc.so")]
    if got:
        line(True, f"p2pc plugin: {what}, version {got[0].split()[1]}: tshark loads it")
    else:
        why = plugin_error(res.stderr)
        line(False, f"p2pc plugin: {what}: " + (str(why) if why else "tshark does not load it"),
             "make build; make install-user   (in the p2pc repository)")
    return ws.plugin or "installed"


def optional(line) -> None:
    """What only some commands need: dumpcap (live), the what-if codecs, the report libraries."""
    dumpcap = shutil.which("dumpcap")
    line(bool(dumpcap), f"dumpcap (p2pc live): {dumpcap or 'not found'}",
         "sudo apt-get install wireshark-common", optional=True)
    if dumpcap:
        capture(line, dumpcap)
    lzo = ctypes.util.find_library("lzo2")
    line(bool(lzo), f"liblzo2 (whatif lzo1x-1, lzo1x-999): {lzo or 'not found'}",
         CODEC_FIX["lzo1x-1"], optional=True)
    have = lambda mod: importlib.util.find_spec(mod) is not None
    for name, mods, fix in (("snappy", ("snappy", "cramjam"), CODEC_FIX["snappy"]),
                            ("zstd", ("zstandard",), CODEC_FIX["zstd"]),
                            ("brotli", ("brotli",), CODEC_FIX["brotli-2"])):
        found = [m for m in mods if have(m)]
        line(bool(found), f"whatif codec {name}: " + (f"python module {found[0]}" if found else "not installed"),
             fix + "   (or all codecs: pip install -e 'analyzer[codecs]' in the p2pc repository)",
             optional=True)
    keys(line)
    for mod, what in (("rich", "terminal tables"), ("jinja2", "HTML report"), ("plotly", "HTML figures"),
                      ("pyarrow", "p2pc records")):
        line(have(mod), f"{mod} ({what}): " + ("installed" if have(mod) else "not installed"),
             f"pip install {mod}   (a p2pc dependency: reinstall with pip install -e analyzer)",
             optional=True)


def keys(line) -> None:
    """p2pc keys and live --keys-from: the helper built, and a kernel with uprobes."""
    try:
        line(True, f"p2pc keys (eBPF helper): {helper()}", optional=True)
    except P2pcError as e:
        line(False, f"p2pc keys (eBPF helper): {e}", "make keys   (in the p2pc repository; needs Go 1.24+)",
             optional=True)
    uprobes = Path("/sys/bus/event_source/devices/uprobe").exists()
    line(uprobes, "kernel uprobes (p2pc keys): " + ("yes" if uprobes else "no"),
         "a kernel built with CONFIG_UPROBE_EVENTS (every distribution kernel has it)", optional=True)


def capture(line, dumpcap: str) -> None:
    """Whether this user may capture (p2pc live): root, or dumpcap with the capture
    capabilities that this user may run (Debian: the wireshark group)."""
    if os.geteuid() == 0:
        eff = next((int(l.split()[1], 16) for l in Path("/proc/self/status").read_text().splitlines()
                    if l.startswith("CapEff:")), 0)
        raw_admin = eff & (1 << 13) and eff & (1 << 12)        # CAP_NET_RAW, CAP_NET_ADMIN
        line(bool(raw_admin), "capture privileges (p2pc live): running as root" +
             ("" if raw_admin else " without CAP_NET_RAW/CAP_NET_ADMIN"),
             "run with those capabilities (a container: --cap-add NET_RAW --cap-add NET_ADMIN)",
             optional=True)
        return
    res = subprocess.run(["getcap", dumpcap], capture_output=True, text=True) if shutil.which("getcap") else None
    caps = res.stdout if res else ""
    has_caps = "cap_net_raw" in caps and "cap_net_admin" in caps
    try:
        group = grp.getgrnam("wireshark")
        in_group = group.gr_gid in os.getgroups()
    except KeyError:
        group, in_group = None, False
    can_run = os.access(dumpcap, os.X_OK)
    fix = []
    if not has_caps:
        fix.append(f"sudo setcap cap_net_raw,cap_net_admin=eip {dumpcap}   (or: sudo dpkg-reconfigure "
                   "wireshark-common, answer Yes)")
    if not can_run:
        fix.append("sudo usermod -aG wireshark $USER, then log out and in again" if group else
                   f"sudo chmod o+x {dumpcap}")
    line(has_caps and can_run,
         "capture privileges (p2pc live): dumpcap " + ("has" if has_caps else "lacks") +
         " cap_net_raw,cap_net_admin; " + ("you may run it" if can_run else "you may not run it") +
         (" (wireshark group)" if in_group else ""),
         "\n     fix: ".join(fix), optional=True)
