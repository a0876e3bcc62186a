"""What the generators built on Go libp2p peers share: building the peer program, and reading
the listener's multiaddr once it has written it."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"


def go_build(src: str, name: str, patches: list[tuple[str, str, Path]] | None = None,
             flags: tuple[str, ...] = (), modfile: str | None = None, toolchain: str | None = None) -> Path:
    """Build the Go module in captures/gen/<src> into _work/<name> (never committed).
    flags: more `go build` flags (-tags, -ldflags); modfile: another go.mod of <src>'s, for other
    pinned versions (its go.sum beside it); toolchain: a Go release the go command fetches from
    the module proxy (GOTOOLCHAIN), else the machine's.
    patches: (module@version, file in it, unified diff) each: the module is copied into _work,
    the file patched there, and the build points at the copy with a replace directive in a
    go.mod of its own (-modfile): the module cache and captures/gen/<src>/go.mod stay as they are.
    So patches and modfile exclude each other: the patched build's go.mod is made from go.mod."""
    if patches and modfile:
        raise ValueError(f"go_build {name}: patches are applied to {src}/go.mod's versions, not to {modfile}'s")
    WORK.mkdir(exist_ok=True)
    exe = WORK / name
    env = dict(os.environ, GOFLAGS="-mod=mod", **({"GOTOOLCHAIN": toolchain} if toolchain else {}))
    cmd = ["go", "build", *flags, "-o", str(exe)]
    if modfile:
        cmd.append(f"-modfile={HERE / src / modfile}")
    if patches:
        modcache = Path(subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                                       check=True).stdout.strip())
        modules = sorted({m for m, _, _ in patches})
        subprocess.run(["go", "mod", "download", *modules], cwd=HERE / src, check=True, env=env)
        gomod = (HERE / src / "go.mod").read_text()
        for module in modules:
            copy = WORK / "patched" / module
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(modcache / module, copy)
            subprocess.run(["chmod", "-R", "u+w", str(copy)], check=True)
            for m, file, diff in patches:
                if m == module:
                    subprocess.run(["patch", "-s", str(copy / file), str(diff)], check=True)
            gomod += f"\nreplace {module.split('@')[0]} => {copy}\n"
        modfile = WORK / f"{name}.go.mod"
        modfile.write_text(gomod)
        shutil.copy(HERE / src / "go.sum", WORK / f"{name}.go.sum")
        cmd.append(f"-modfile={modfile}")
    subprocess.run([*cmd, "."], cwd=HERE / src, check=True, env=env)
    return exe


def listener_addr(idfile: Path, host: str, timeout: float = 10.0) -> str:
    """The multiaddr the listener wrote to idfile, with its wildcard address made `host`."""
    deadline = time.monotonic() + timeout
    while not (idfile.exists() and idfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    addr = idfile.read_text()
    return addr.replace("/ip4/0.0.0.0/", f"/ip4/{host}/").replace("/ip4/127.0.0.1/", f"/ip4/{host}/")
