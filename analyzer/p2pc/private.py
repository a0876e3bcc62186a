"""Temporary files that nobody else can read: the copies, key-log parts, shards and private
Wireshark HOMEs p2pc makes for tshark.

Every folder is made by ``tempfile.mkdtemp`` (mode 0700 from the start) and every file is
created with its final mode (0600), so there is no moment when another user could open one.
As root, tshark itself runs as ``nobody`` (root ignores personal plugins, see wsenv): it reaches
the files through a private group instead of world-readable modes. That group is a group ID no
account has, chosen once per p2pc run and inherited by its worker processes; folders are then
``root:<gid>`` 2750 (new entries inherit the group) and files 0640.

A folder's name carries the PID of the process that made it (``p2pc-KIND-PID-XXXX``): a run
killed with SIGKILL cannot clean up, so the next run removes the folders of dead PIDs.
"""
from __future__ import annotations

import functools
import grp
import os
import random
import re
import shutil
import tempfile
from pathlib import Path

_ENV_GID = "P2PC_RUNNER_GID"
_LEFTOVER = re.compile(r"^p2pc-[a-z]+-(\d+)-")
# Group IDs from here up are far above what account managers hand out (useradd stops at 60000,
# systemd's dynamic users at 65519) and below the 32-bit (gid_t)-1.
_GID_RANGE = (1 << 30, (1 << 31) - 2)


def runner_gid() -> int | None:
    """As root, the private group tshark runs with (as nobody) to read p2pc's temporary files;
    None when p2pc does not run as root (tshark then runs as the same user)."""
    if os.geteuid() != 0:
        return None
    known = os.environ.get(_ENV_GID)
    if known and known.isdigit():
        return int(known)
    while True:
        gid = random.randint(*_GID_RANGE)
        try:
            grp.getgrgid(gid)
        except KeyError:
            break
    os.environ[_ENV_GID] = str(gid)          # worker processes share it
    return gid


def _modes() -> tuple[int, int]:
    """(folder mode, file mode) for this process."""
    return (0o2750, 0o640) if runner_gid() is not None else (0o700, 0o600)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@functools.lru_cache(maxsize=None)
def sweep(where: str | None = None) -> list[str]:
    """Remove what runs killed before they could clean up: this user's p2pc folders in the
    temporary folder whose process is gone. Once per process; returns what it removed."""
    base = Path(where or tempfile.gettempdir())
    removed = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _LEFTOVER.match(entry.name)
        if not m or _alive(int(m.group(1))):
            continue
        try:
            st = entry.lstat()
        except OSError:
            continue
        if st.st_uid != os.geteuid() or not entry.is_dir() or entry.is_symlink():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(str(entry))
    return removed


def make_dir(kind: str, dir: str | os.PathLike | None = None) -> Path:
    """A new private folder `p2pc-KIND-PID-XXXX` (in `dir`, default the temporary folder)."""
    sweep()
    path = Path(tempfile.mkdtemp(prefix=f"p2pc-{kind}-{os.getpid()}-", dir=dir))
    gid = runner_gid()
    if gid is not None:
        os.chown(path, -1, gid)
        os.chmod(path, _modes()[0])
    return path


def make_subdirs(path: Path) -> Path:
    """`path` and its missing parents, inside a private folder, with the private mode."""
    missing = []
    p = Path(path)
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir()
        os.chmod(d, _modes()[0])
    return Path(path)


def open_file(path: str | os.PathLike, mode: str = "wb", buffering: int = -1):
    """A new file opened for writing, created with the private mode; an existing file is
    replaced, never written through."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, _modes()[1])
    os.fchmod(fd, _modes()[1])              # the umask may have dropped the group's bit
    return os.fdopen(fd, mode, buffering)


def write_text(path: str | os.PathLike, text: str) -> Path:
    with open_file(path, "w") as f:
        f.write(text)
    return Path(path)


def copy_file(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Copy `src`'s bytes to the new private file `dst` (modes are not copied)."""
    with open(src, "rb") as fin, open_file(dst) as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
    return Path(dst)


def copy_tree(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy the folder `src` into the new private folder `dst`; what cannot be read, and links,
    are left out."""
    make_subdirs(Path(dst))
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        for d in dirnames:
            if not os.path.islink(os.path.join(dirpath, d)):
                make_subdirs(Path(dst) / rel / d)
        for f in filenames:
            s = os.path.join(dirpath, f)
            if os.path.islink(s) or not os.path.isfile(s):
                continue
            try:
                copy_file(s, Path(dst) / rel / f)
            except OSError:
                pass
