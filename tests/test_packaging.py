"""The package's declared dependencies match its code, its pins and its data.

* Every third-party module that ``models/`` or ``figures/`` imports (anywhere, inside functions too)
  belongs to a distribution that ``pyproject.toml`` declares, in ``dependencies`` or an extra.
* The simulator's extra, ``sim``, is empty, and so are the core ``dependencies``: ``models.sim``
  runs on the standard library (``tests/test_stdlib_only.py`` checks its imports).
* Every pin in ``requirements.txt`` of a declared distribution lies in the declared range, so
  ``pip install .[book]`` can resolve to exactly the tested environment.
* The wheel's build step (``tools/qd_build_py.py``) ships every dataset, and
  :func:`models._paths.bundled_data_dir` finds the installed copy when there is no checkout.
  (``make wheel-check`` builds and installs the real wheel.)
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
NAME = canonicalize_name(PROJECT["name"])

sys.path.insert(0, str(ROOT / "tools"))
import qd_build_py  # noqa: E402


def _requirements() -> list[Requirement]:
    reqs = [Requirement(r) for r in PROJECT.get("dependencies", [])]
    for extra in PROJECT.get("optional-dependencies", {}).values():
        reqs += [Requirement(r) for r in extra]
    return [r for r in reqs if canonicalize_name(r.name) != NAME]


DECLARED = {canonicalize_name(r.name): r for r in _requirements()}


def _imports(folder: Path) -> dict[str, str]:
    """Top-level module imported -> the first file importing it, over every .py under ``folder``."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for n in names:
                found.setdefault(n.split(".")[0], str(path.relative_to(ROOT)))
    return found


def _third_party(imports: dict[str, str]) -> dict[str, str]:
    ours = {"models", "figures"}
    return {m: f for m, f in imports.items() if m not in sys.stdlib_module_names and m not in ours}


def test_every_third_party_import_is_declared() -> None:
    dists = importlib.metadata.packages_distributions()
    undeclared = []
    for module, where in sorted(
        {
            **_third_party(_imports(ROOT / "figures")),
            **_third_party(_imports(ROOT / "models")),
        }.items()
    ):
        names = {canonicalize_name(d) for d in dists.get(module, [module])}
        if not names & DECLARED.keys():
            undeclared.append(f"{module} (imported by {where}; distribution {sorted(names)})")
    assert not undeclared, (
        "imports missing from pyproject.toml's dependencies/extras: " + ", ".join(undeclared)
    )


def test_the_simulator_needs_nothing() -> None:
    assert PROJECT.get("dependencies", []) == []
    assert PROJECT["optional-dependencies"]["sim"] == []
    assert _third_party(_imports(ROOT / "models" / "sim")) == {}


def test_extras_cover_what_each_part_imports() -> None:
    extras = PROJECT["optional-dependencies"]

    def closure(extra: str) -> set[str]:
        out: set[str] = set()
        for r in map(Requirement, extras[extra]):
            if canonicalize_name(r.name) == NAME:
                for e in r.extras:
                    out |= closure(e)
            else:
                out.add(canonicalize_name(r.name))
        return out

    assert closure("data") >= {"pandas"}
    assert closure("measure") >= {"dpkt"}
    assert closure("analysis") >= {"numpy", "pandas", "scipy", "sympy"}
    assert closure("book") >= {"jupyter-book", "matplotlib", "ipython", "dpkt", "sympy"}


def test_pins_lie_in_the_declared_ranges() -> None:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line.strip())
        if m:
            pins[canonicalize_name(m.group(1))] = m.group(2)
    outside = [
        f"{name}=={pins[name]} not in {req.specifier}"
        for name, req in DECLARED.items()
        if name in pins and not req.specifier.contains(pins[name], prereleases=True)
    ]
    unpinned = sorted(set(DECLARED) - set(pins))
    assert not outside, outside
    assert not unpinned, f"declared but not pinned in requirements.txt: {unpinned}"


def test_the_wheel_build_ships_every_dataset() -> None:
    files = set(qd_build_py.data_files(ROOT))
    for csv in (ROOT / "data").glob("*.csv"):
        assert f"data/{csv.name}" in files
        assert f"data/{csv.stem}.json" in files
    assert "data/datapackage.json" in files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


def test_bundled_data_dir_in_a_checkout() -> None:
    from models._paths import bundled_data_dir

    assert bundled_data_dir() == ROOT / "data"


def test_bundled_data_dir_when_installed(tmp_path: Path) -> None:
    """Laid out as a wheel installs it: models/_paths.py and models/_bundled_data/, no checkout."""
    site = tmp_path / "site-packages"
    (site / "models" / "_bundled_data").mkdir(parents=True)
    (site / "models" / "__init__.py").write_text("")
    (site / "models" / "_paths.py").write_text((ROOT / "models" / "_paths.py").read_text())
    (site / "models" / "_bundled_data" / "datapackage.json").write_text("{}")
    (site / "data").mkdir()  # someone else's top-level data/ folder: never taken for ours
    (site / "data" / "datapackage.json").write_text("{}")
    code = textwrap.dedent(
        """
        from models._paths import bundled_data_dir, checkout_data_dir
        print(checkout_data_dir()); print(bundled_data_dir())
        """
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    checkout, bundled = out.stdout.split()
    assert checkout == "None"
    assert Path(bundled) == site / "models" / "_bundled_data"

    (site / "models" / "_bundled_data" / "datapackage.json").unlink()
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode != 0 and "no bundled datasets" in out.stderr


@pytest.mark.parametrize("extra", sorted(PROJECT["optional-dependencies"]))
def test_extras_are_valid_requirements(extra: str) -> None:
    for r in PROJECT["optional-dependencies"][extra]:
        Requirement(r)
