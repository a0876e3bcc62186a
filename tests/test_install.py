"""Installing p2pc: `make install-system` (the global folders, which root's Wireshark loads),
checked into temporary folders only (a global copy would be loaded by every tshark the tests run,
before the build they name); tools/install-deps.sh putting the analyzer in the checkout's virtual
environment, never in the system's Python; the analyzer's wheel.  The Debian package is checked
on a bare Debian 12 by tools/deb-check.sh (CI)."""
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
    plugins, lua, profiles = tmp_path / "plugins" / "4.x", tmp_path / "lua", tmp_path / "profiles"
    lua.mkdir()
    (lua / "someone-else.lua").write_text("-- not ours\n")
    dirs = [f"GLOBAL_PLUGIN_DIR={plugins}", f"GLOBAL_LUA_DIR={lua}", f"GLOBAL_PROFILE_DIR={profiles}", "JOBS=1"]
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
    profile = sorted({p.name for p in (REPO / "profiles" / "p2pc").iterdir()} | {"colorfilters"})
    assert sorted(p.name for p in (profiles / "p2pc").iterdir()) == profile
    rules = (profiles / "p2pc" / "colorfilters").read_text()
    assert rules.startswith((REPO / "profiles" / "p2pc.colorfilters").read_text())

    res = make("uninstall-system", *dirs)
    assert res.returncode == 0, res.stderr
    assert not so.exists() and [p.name for p in lua.iterdir()] == ["someone-else.lua"]
    assert list(profiles.iterdir()) == []


def fake_python(tmp_path) -> dict:
    """A PATH where every Debian package is installed (dpkg-query says so), and a python3 that
    logs its calls and makes a "venv" whose python logs its calls too and names its prefix."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "dpkg-query").write_text("#!/bin/sh\nprintf 'install ok installed'\n")
    log = tmp_path / "python.log"
    (bin_ / "python3").write_text(
        "#!/bin/sh\n"
        f'echo "$0 $*" >> {log}\n'
        'case "$1 $2" in\n'
        '  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && : > "$3/bin/p2pc";;\n'
        '  "-c "*) cd "$(dirname "$0")/.." && pwd;;\n'
        "esac\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{bin_}:{os.environ['PATH']}", "PYTHON": str(bin_ / "python3"),
            "P2PC_VENV": str(tmp_path / "venv"), "HOME": str(tmp_path / "home"), "log": log}


@pytest.mark.once
@pytest.mark.parametrize("profile, spec", [("", "analyzer"), ("--test", "analyzer[all,test]")])
def test_install_deps_puts_the_analyzer_in_the_checkouts_venv(tmp_path, profile, spec):
    """make demo's deps install the analyzer alone, make test's its extras, both into the venv
    (made from $PYTHON), never the system's Python; the p2pc command is linked in ~/.local/bin."""
    env = fake_python(tmp_path)
    log, venv = env.pop("log"), env["P2PC_VENV"]
    res = subprocess.run(["bash", str(REPO / "tools" / "install-deps.sh"), *([profile] if profile else [])],
                         capture_output=True, text=True, env=dict(os.environ, **env), cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == f"{env['PYTHON']} -m venv {venv}"
    pip = [c for c in calls if " -m pip " in c]
    assert pip == [f"{venv}/bin/python -m pip install -q --disable-pip-version-check -e {spec}"]
    assert "--break-system-packages" not in res.stdout + log.read_text()
    link = tmp_path / "home" / ".local" / "bin" / "p2pc"
    assert os.readlink(link) == f"{venv}/bin/p2pc"
    assert f"the p2pc command is {link}" in res.stdout


@pytest.mark.once
def test_install_deps_makes_again_a_venv_made_elsewhere(tmp_path):
    """A .venv copied from another path (its scripts name that path) is made again; one made here
    is kept."""
    env = fake_python(tmp_path)
    log, venv = env.pop("log"), tmp_path / "venv"
    run = lambda: subprocess.run(["bash", str(REPO / "tools" / "install-deps.sh")], capture_output=True,  # noqa: E731
                                 text=True, env=dict(os.environ, **env), cwd=REPO, timeout=60)
    assert run().returncode == 0
    assert run().returncode == 0
    assert sum(" -m venv " in c for c in log.read_text().splitlines()) == 1
    (venv / "bin" / "python").write_text("#!/bin/sh\necho /elsewhere/.venv\n")
    assert run().returncode == 0
    assert sum(" -m venv " in c for c in log.read_text().splitlines()) == 2


@pytest.mark.once
def test_the_analyzer_is_a_wheel_pip_installs(tmp_path):
    """`make wheel`'s command builds a wheel of the analyzer alone, and pip installs it with its
    templates, schema and vendored plotly.js: the installed copy runs."""
    wheels = tmp_path / "dist"
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                          "-w", str(wheels), str(REPO / "analyzer")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    whl, = wheels.glob("p2pc-*-py3-none-any.whl")
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                          "--target", str(site), str(whl)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for data in ("schema/p2pc-report-1.json", "templates/report.html.j2", "vendor/plotly-basic.min.js.gz"):
        assert filecmp.cmp(site / "p2pc" / data, REPO / "analyzer" / "p2pc" / data, shallow=False), data
    res = subprocess.run([sys.executable, "-m", "p2pc", "--version"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(site)), cwd=tmp_path, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("p2pc "), res.stdout + res.stderr
    assert (site / "bin" / "p2pc").is_file()


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


@pytest.mark.once
def test_readme_installing_by_hand_names_what_install_deps_installs():
    """README's "Installing by hand" Debian line names the packages make demo's
    tools/install-deps.sh installs (its default set), no more and no fewer."""
    import re
    readme = (REPO / "README.md").read_text().split("## Installing by hand")[1]
    line = re.search(r"sudo apt-get install (.*?)\n(?!\s)", readme.replace("\\\n", " "), re.S).group(1)
    said = set(line.split())
    script = (REPO / "tools" / "install-deps.sh").read_text()
    default = re.search(r"^APT_PKGS=\((.*?)\)", script, re.S | re.M).group(1)
    assert said == set(re.sub(r"#[^\n]*", "", default).split())
