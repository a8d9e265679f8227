"""The layer contracts of pyproject.toml hold, and they fail when broken.

`lint-imports` (import-linter) checks the order models -> models.validation
-> figures -> book, and keeps NumPy, SymPy and pandas out of what runs in the
reader's browser.  A contract that cannot fail checks nothing, so each
test below copies the two packages to a temporary folder, adds one
forbidden import and expects `lint-imports` to name the broken contract.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The packages and the configuration, as a throwaway tree."""
    for pkg in ("models", "figures"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_the_repository_keeps_every_contract():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "broken" in out.stdout and " 0 broken" in out.stdout


@pytest.mark.parametrize(
    "module, line, contract",
    [
        # a figure reaching into a comparison module's internals
        (
            "figures/tables.py",
            "import models.validation.simulator  # noqa",
            "Figures render",
        ),
        # a model importing a figure (a model outside the browser's: figures.tables imports pandas)
        ("models/control/thesis.py", "import figures.tables  # noqa", "Layers"),
        # a model importing the comparisons (again outside the browser's: they import pandas)
        (
            "models/kernel/calibrate.py",
            "import models.validation  # noqa",
            "Models never import the comparisons",
        ),
        # a model that runs in the browser importing NumPy
        ("models/ring.py", "import numpy  # noqa", "Browser-side code"),
        # a live figure importing pandas inside its function (function-level imports count)
        (
            "figures/chapters/wire.py",
            "def _table():\n    import pandas  # noqa",
            "Browser-side code",
        ),
        # a live figure reaching pandas through a model that imports it (chains count)
        ("figures/chapters/flight.py", "import models.data  # noqa", "Browser-side code"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(copy, module, line, contract):
    assert _lint(copy).returncode == 0  # the untouched copy passes
    _append(copy / module, line)
    out = _lint(copy)
    assert out.returncode != 0, out.stdout
    assert "1 broken" in out.stdout, out.stdout
    report = out.stdout.split("Broken contracts", 1)[1]  # the details
    assert contract in report, out.stdout
