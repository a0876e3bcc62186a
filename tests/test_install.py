"""Installing p2pc: `make install-system` (the global folders, which root's Wireshark loads),
checked into temporary folders only (a global copy would be loaded by every tshark the tests run,
before the build they name), and tools/install-deps.sh saying when pip breaks system packages."""
from __future__ import annotations

import filecmp
import os
import stat
import subprocess
import sys

import pytest

from conftest import REPO
from p2pc.wsenv import built_plugin, ws_version


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "--no-print-directory", "-C", str(REPO), *args],
                          capture_output=True, text=True, timeout=600)


def tshark_folders() -> dict[str, str]:
    out = subprocess.run(["tshark", "-G", "folders"], capture_output=True, text=True).stdout
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}


def test_install_system_defaults_to_the_folders_tshark_names():
    """With no override the destinations are tshark's "Global Plugins" (already per
    major.minor) and "Global Lua Plugins", which root's tshark loads."""
    res = make("--eval", 'show-dirs: ; @echo "$(GLOBAL_PLUGIN_DIR)|$(GLOBAL_LUA_DIR)"', "show-dirs")
    assert res.returncode == 0, res.stderr
    folders = tshark_folders()
    major, minor, _ = ws_version()
    assert folders["Global Plugins"].endswith(f"/{major}.{minor}")
    assert res.stdout.strip() == f"{folders['Global Plugins']}|{folders['Global Lua Plugins']}"


def test_install_system_layout_and_uninstall(tmp_path):
    """The plugin in DIR/epan/p2pc.so and each Lua part in the Lua folder, readable by every
    user; uninstall-system removes those and nothing else."""
    if built_plugin() is None:
        pytest.fail("the plugin is not built: run `make build`")
    plugins, lua = tmp_path / "plugins" / "4.x", tmp_path / "lua"
    lua.mkdir()
    (lua / "someone-else.lua").write_text("-- not ours\n")
    dirs = [f"GLOBAL_PLUGIN_DIR={plugins}", f"GLOBAL_LUA_DIR={lua}", "JOBS=1"]
    res = make("install-system", *dirs)
    assert res.returncode == 0, res.stderr
    assert f"plugin installed in {plugins}/epan" in res.stdout
    so = plugins / "epan" / "p2pc.so"
    assert filecmp.cmp(so, built_plugin(), shallow=False)
    ours = sorted(p.name for p in (REPO / "lua").glob("*.lua"))
    assert ours and sorted(p.name for p in lua.iterdir()) == sorted(ours + ["someone-else.lua"])
    for f in [so, *(lua / n for n in ours)]:
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f
    for n in ours:
        assert filecmp.cmp(lua / n, REPO / "lua" / n, shallow=False)

    res = make("uninstall-system", *dirs)
    assert res.returncode == 0, res.stderr
    assert not so.exists() and [p.name for p in lua.iterdir()] == ["someone-else.lua"]


def fake_tools(tmp_path, pip_refuses: bool) -> dict:
    """A PATH where every Debian package is installed (dpkg-query says so) and a python3 whose pip
    refuses a plain install when pip_refuses (an externally managed Python), logging its calls."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "dpkg-query").write_text("#!/bin/sh\nprintf 'install ok installed'\n")
    log = tmp_path / "pip.log"
    (bin_ / "python3").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        + ('case "$*" in *--break-system-packages*) exit 0;; *) '
           'echo "error: externally-managed-environment" >&2; exit 1;; esac\n' if pip_refuses else "exit 0\n"))
    for f in bin_.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{bin_}:{os.environ['PATH']}", "PYTHON": str(bin_ / "python3"), "log": log}


@pytest.mark.parametrize("pip_refuses", [False, True])
def test_install_deps_says_when_it_breaks_system_packages(tmp_path, pip_refuses):
    env = fake_tools(tmp_path, pip_refuses)
    log = env.pop("log")
    res = subprocess.run(["bash", str(REPO / "tools" / "install-deps.sh")], capture_output=True, text=True,
                         env=dict(os.environ, **env), cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr
    said = [l for l in res.stdout.splitlines() if "--break-system-packages" in l]
    calls = log.read_text().splitlines()
    if pip_refuses:
        assert len(said) == 1 and said[0].startswith("p2pc: "), res.stdout
        assert len(calls) == 2 and "--break-system-packages" in calls[1]
    else:
        assert said == [] and len(calls) == 1 and "--break-system-packages" not in calls[0]


def test_tests_never_touch_the_users_home():
    """conftest gives the tests and every process they start a private HOME: the analyzer's
    ws-version cache lands there, and a personal plugin installed by the user (or by another
    clone) is not seen."""
    import pwd
    from conftest import TEST_HOME, run_p2pc
    real = pwd.getpwuid(os.getuid()).pw_dir
    assert os.environ["HOME"] == str(TEST_HOME) != real
    res = run_p2pc("doctor")
    assert res.returncode == 0, res.stdout
    assert (TEST_HOME / ".cache" / "p2pc" / "ws-version.json").is_file()
    env = subprocess.run([sys.executable, "-c", "import os, pathlib; print(pathlib.Path.home(), "
                          "os.environ['XDG_CACHE_HOME'])"], capture_output=True, text=True).stdout.split()
    assert env == [str(TEST_HOME), str(TEST_HOME / ".cache")]
