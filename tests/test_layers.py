"""The layer contracts of pyproject.toml hold, and they fail when broken.

`lint-imports` (import-linter) checks the order models -> models.validation
-> figures -> book.  A contract that cannot fail checks nothing, so each
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
            "figures/wire.py",
            "import models.validation.simulator  # noqa",
            "Figures render",
        ),
        # a model importing a figure
        ("models/analytic/numbers.py", "import figures.tables  # noqa", "Layers"),
        # a model importing the comparisons
        (
            "models/sim/engine.py",
            "import models.validation  # noqa",
            "Models never import the comparisons",
        ),
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
