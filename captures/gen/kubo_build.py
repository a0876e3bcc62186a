"""kubo's `ipfs`, built from the Go module proxy's release source with nothing changed
(make_kubo.py imports this).

`go install github.com/ipfs/kubo/cmd/ipfs@v0.42.0` refuses the module: its go.mod has exclude
directives (of two pre-modules versions).  So, as kubo's own `make build` does from a checkout,
the release's module is downloaded as its source zip, copied into captures/gen/_work/kubo/src
and built there with its own go.mod and go.sum, untouched: `go build -trimpath` with the
release's ldflags (kubo's cmd/ipfs/Rules.mk: CurrentCommit, taggedRelease).

v0.42.0 is the newest release whose go.mod resolves from the proxy as it stands: v0.43.1's
replaces go-libp2p by a fork (github.com/lidel/go-libp2p) the proxy does not serve.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work" / "kubo"
KUBO = "github.com/ipfs/kubo"
VERSION = "v0.42.0"
ENV = dict(os.environ, GOFLAGS="-mod=mod")


def build() -> Path:
    """The ipfs program, in _work/kubo/bin (kept between runs: the build takes minutes)."""
    exe = WORK / "bin" / "ipfs"
    if exe.exists():
        return exe
    release = json.loads(subprocess.run(["go", "mod", "download", "-json", f"{KUBO}@{VERSION}"],
                                        capture_output=True, text=True, check=True, env=ENV, cwd="/").stdout)
    src = WORK / "src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(release["Dir"], src)
    subprocess.run(["chmod", "-R", "u+w", str(src)], check=True)
    ldflags = f"-X {KUBO}.CurrentCommit={release['Origin']['Hash'][:7]} -X {KUBO}.taggedRelease={VERSION}"
    subprocess.run(["nice", "-n", "10", "go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(exe),
                    "./cmd/ipfs"], cwd=src, check=True, env=ENV)
    return exe


if __name__ == "__main__":
    print(build())
