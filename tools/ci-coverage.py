#!/usr/bin/env python3
"""What each Wireshark version's runs in CI covered, test by test, from their JUnit reports.

    tools/ci-coverage.py LABEL=REPORT.xml[,REPORT.xml...] ...

Every test of the suite (`pytest --collect-only` here) is looked up in each label's reports (for
4.0: the bare Debian 12 chroot's whole suite and the host's `host` tests; for 4.4 and 4.6 their
chroot's suite): passed in one of them, skipped in all that ran it, failed, or in none of them
(not run).  A test skipped as `once` (tests/conftest.py: P2PC_TESTS=versioned skips the tests
that check nothing a Wireshark version changes) counts on a label only if it passed on the first
label (4.0, whose runs skip nothing so), and is not run otherwise.  One line per label; exit 1
when a test failed or was not run on some label, so a split of the suite can never drop a test
silently.
"""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ONCE = "once:"      # the start of the reason tests/conftest.py gives a `once` skip (ONCE there)


def collected() -> list[str]:
    """The suite's test ids, as JUnit names them (tests.test_x::name[param])."""
    env = dict(os.environ, P2PC_TESTS="all")
    env.pop("PYTEST_ADDOPTS", None)
    # The interpreter `make test` runs the suite with (its .venv holds the tests' imports: dpkt,
    # protobuf, ...), not whichever python3 runs this script.
    python = REPO / ".venv" / "bin" / "python"
    out = subprocess.run([str(python) if python.exists() else sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "tests"], cwd=REPO, env=env, capture_output=True, text=True,
                         check=True).stdout
    ids = []
    for line in out.splitlines():
        if "::" in line:
            head, bracket, param = line.partition("[")
            path, *classes, name = head.split("::")
            module = path.removesuffix(".py").replace("/", ".")
            ids.append(".".join([module, *classes]) + "::" + name + bracket + param)
    return ids


def outcomes(report: Path) -> dict[str, str]:
    """Test id -> passed, skipped, once (skipped by the `once` marker) or failed, from one JUnit
    report."""
    got = {}
    for case in ET.parse(report).iter("testcase"):
        tags = {child.tag for child in case}
        skip = case.find("skipped")
        once = skip is not None and (skip.get("message") or "").startswith(ONCE)
        state = ("failed" if tags & {"failure", "error"} else "once" if once else "skipped" if skip is not None
                 else "passed")
        key = f"{case.get('classname')}::{case.get('name')}"
        # A teardown error is a second record of the same test: the worst state stands.
        if got.get(key) != "failed":
            got[key] = state
    return got


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    ids = collected()
    status = 0
    first: dict[str, str] = {}      # the first label's state of each test
    for n, arg in enumerate(argv):
        label, _, files = arg.partition("=")
        runs = []
        for f in filter(None, files.split(",")):
            try:
                runs.append(outcomes(Path(f)))
            except (OSError, ET.ParseError) as e:
                print(f"coverage {label}: no report {f} ({e})")
        count = {"passed": 0, "skipped": 0, "once": 0, "failed": 0, "not run": 0}
        missing = []
        for t in ids:
            states = {r[t] for r in runs if t in r}
            state = ("failed" if "failed" in states else "passed" if "passed" in states
                     else "skipped" if "skipped" in states else "once" if states else "not run")
            if state == "once" and (n == 0 or first.get(t) != "passed"):
                state = "not run"
            if n == 0:
                first[t] = state
            count[state] += 1
            if state in ("failed", "not run"):
                missing.append(f"{t} ({state})")
        once = f", {count['once']} version-independent (passed on the first)" if n else ""
        print(f"coverage {label}: {len(ids)} tests: {count['passed']} passed, {count['skipped']} skipped "
              f"in every run{once}, {count['failed']} failed, {count['not run']} not run")
        for m in missing[:10]:
            print(f"  {m}")
        if len(missing) > 10:
            print(f"  ... and {len(missing) - 10} more")
        if missing:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
