"""Run Wireshark's command-line tools with a chosen p2pc plugin, and nothing stale.

Wireshark loads personal plugins from ``$HOME/.local/lib/wireshark/plugins/<major.minor>/epan``
but ignores that folder (and ``WIRESHARK_PLUGIN_DIR``) when it runs as root.  So to load a given
``p2pc.so`` we build a private HOME holding just that plugin (and the Lua parts) and, as root,
drop to the unprivileged ``nobody`` user with ``setpriv`` for the tshark process itself.
Without an explicit plugin the user's own installation is used as it is. The private HOME
holds a copy of the invoking user's Wireshark configuration (their preferences and profiles, for
-C; under sudo, SUDO_USER's), so it applies as root too. Only the tshark it runs can read it
(see private.py).
"""
from __future__ import annotations

import functools
import json
import os
import pwd
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import private

REPO = Path(__file__).resolve().parents[2]


class ToolMissing(RuntimeError):
    """A Wireshark program is not installed."""


def ws_version(program: str = "tshark") -> tuple[int, int, int]:
    """The installed Wireshark's version, read once per process (and per executable): every
    caller (plugin lookup, version check, private HOME) shares one `tshark --version` run."""
    exe = shutil.which(program)
    if not exe:
        raise ToolMissing(program)
    return _ws_version_of(exe, program)


def _version_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "p2pc" / "ws-version.json"


@functools.lru_cache(maxsize=None)
def _ws_version_of(exe: str, program: str) -> tuple[int, int, int]:
    """`program --version`, remembered on disk keyed by the executable's path, size and mtime
    (an upgrade replaces the file, so the key changes): later runs start no extra process."""
    try:
        st = os.stat(exe)
        key = f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        key = None
    cache = _version_cache()
    if key:
        try:
            known = json.loads(cache.read_text())
            if key in known:
                return tuple(known[key])  # type: ignore[return-value]
        except (OSError, ValueError):
            pass
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    if not m:
        raise ToolMissing(f"{program}: cannot read its version")
    version = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if key:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            known = {}
            try:
                known = json.loads(cache.read_text())
            except (OSError, ValueError):
                pass
            known[key] = list(version)
            tmp.write_text(json.dumps(known))
            os.replace(tmp, cache)
        except OSError:
            pass
    return version


_BUILT_FOR = re.compile(rb"p2pc-built-for-wireshark=(\d+)\.(\d+)")


def plugin_built_for(plugin: str | os.PathLike) -> tuple[int, int] | None:
    """The Wireshark major.minor a p2pc.so was built for (the plugin carries it as a string);
    None for a file without the marker."""
    try:
        m = _BUILT_FOR.search(Path(plugin).read_bytes())
    except OSError:
        return None
    return (int(m.group(1)), int(m.group(2))) if m else None


def version_mismatch(plugin: str | os.PathLike) -> str | None:
    """Why `plugin` cannot load into the installed tshark, as one line with the fix; None if it can."""
    built = plugin_built_for(plugin)
    try:
        running = ws_version()[:2]
    except ToolMissing:
        return None
    if built is None or built == running:
        return None
    return (f"{plugin}: built for Wireshark {built[0]}.{built[1]}, tshark is "
            f"{running[0]}.{running[1]}: run make install-user (in the p2pc repository)")


def built_plugin() -> Path | None:
    """The plugin the repository's build produced for the installed Wireshark (else any build it
    made), if any; P2PC_PLUGIN overrides the path."""
    if os.environ.get("P2PC_PLUGIN"):
        return Path(os.environ["P2PC_PLUGIN"])
    builds = sorted((REPO / "build" / "plugins").glob("*/epan/p2pc.so"))
    try:
        major, minor, _ = ws_version()
    except ToolMissing:
        return builds[0] if builds else None
    for cand in builds:
        if cand.parent.parent.name == f"{major}.{minor}":
            return cand
    return builds[0] if builds else None


def user_config_dir() -> Path | None:
    """The invoking user's Wireshark configuration folder: SUDO_USER's under sudo, else the
    running user's ($XDG_CONFIG_HOME/wireshark, else the older ~/.wireshark)."""
    sudo_user = os.environ.get("SUDO_USER") if os.geteuid() == 0 else None
    if sudo_user:
        try:
            home = Path(pwd.getpwnam(sudo_user).pw_dir)
        except KeyError:
            home = None
        cands = [home / ".config/wireshark", home / ".wireshark"] if home else []
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        cands = [Path(xdg) / "wireshark", Path.home() / ".wireshark"]
    return next((c for c in cands if c.is_dir()), None)


def _world_readable(path: Path) -> bool:
    try:
        if not os.stat(path).st_mode & 0o004:
            return False
        return all(os.stat(p).st_mode & 0o001 for p in path.parents)
    except OSError:
        return False


@dataclass
class Wireshark:
    """Command prefix for running tshark/dumpcap with a specific p2pc plugin."""

    plugin: Path | None = None
    lua_dir: Path | None = None
    _home: Path | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.plugin is not None:
            self.plugin = Path(self.plugin).resolve()
            if not self.plugin.is_file():
                raise FileNotFoundError(f"plugin not found: {self.plugin}")
            self._home = self._make_home()

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    def _make_home(self) -> Path:
        major, minor, _ = ws_version()
        home = private.make_dir("wshome")
        plugins = home / ".local/lib/wireshark/plugins"
        epan = private.make_subdirs(plugins / f"{major}.{minor}" / "epan")
        private.copy_file(self.plugin, epan / "p2pc.so")
        lua_dir = self.lua_dir or (REPO / "lua")
        if lua_dir.is_dir():
            for lua in lua_dir.glob("*.lua"):
                private.copy_file(lua, plugins / lua.name)
        config = home / ".config/wireshark"
        src = user_config_dir()
        if src is not None:
            # The user's preferences and profiles; files it cannot read are left out.
            private.copy_tree(src, config)
        private.make_subdirs(config)
        return home

    def command(self, program: str, args: list[str]) -> list[str]:
        exe = shutil.which(program)
        if not exe:
            raise ToolMissing(program)
        if self._home is None:
            src = user_config_dir() if self.as_root and os.environ.get("SUDO_USER") else None
            if src is not None and src.name == "wireshark":     # under sudo: SUDO_USER's prefs
                return ["env", f"XDG_CONFIG_HOME={src.parent}", exe, *args]
            return [exe, *args]
        env = ["env", f"HOME={self._home}", "XDG_CONFIG_HOME=" + str(self._home / ".config")]
        if self.as_root:
            # Root ignores personal plugins: run the tool itself as nobody, in the private group
            # that alone may read p2pc's temporary files.
            return ["setpriv", "--reuid=nobody", "--regid=nogroup",
                    f"--groups={private.runner_gid()}", *env, exe, *args]
        return [*env, exe, *args]

    def readable(self, path: str | os.PathLike) -> str:
        """A path to `path` that the tool can open: as root the tool runs as nobody, so a file
        it could not read (in pytest's tmp_path, say, or mode 0600) is copied into the private
        HOME first, readable by the private group only."""
        path = Path(path).resolve()
        if self._home is None or not self.as_root or _world_readable(path):
            return str(path)
        dst = private.make_dir("in", dir=self._home)
        return str(private.copy_file(path, dst / path.name))

    def run(self, program: str, args: list[str], **kw) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(self.command(program, args), **kw)

    def popen(self, program: str, args: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(self.command(program, args), **kw)

    def cleanup(self) -> None:
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def __enter__(self) -> "Wireshark":
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()
