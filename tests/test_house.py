"""The house's shape (issue #42): tools/house-check.py holds the plugin's includes and the
analyzer's imports to no circle and no arrow running back up, from the code itself."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.once
def test_no_circle_and_no_arrow_back_up():
    res = subprocess.run([sys.executable, str(REPO / "tools" / "house-check.py")], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no circle, no arrow back up" in res.stdout
