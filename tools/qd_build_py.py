"""setuptools ``build_py`` that ships the datasets (``data/``) inside the wheel as ``models/_bundled_data/``.

Named in ``pyproject.toml`` (``[tool.setuptools.cmdclass]``); setuptools loads it by path, so ``tools/``
needs no ``__init__.py``.  The datasets stay in ``data/`` at the top of the checkout (the chapters, the
tests and ``models.data`` read them there); a wheel has no such folder, so they are copied into the package
and :func:`models._paths.bundled_data_dir` finds them with :mod:`importlib.resources`.

* A regular build (``pip wheel .``, ``python -m build``) copies every file of ``data/`` (not caches).
* An editable install (``pip install -e .``) copies nothing: the checkout's ``data/`` is used.
* ``get_source_files`` names the data files too, so an sdist carries them and a wheel built from
  the sdist has them as well.
* Nothing else is added: no compiled harness (``models.measure`` compiles its C source at run time, into
  a per-user folder, never into the installed package).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from setuptools.command.build_py import build_py as _build_py

#: Source folder (relative to the project root) and its place inside the built package.
DATA_SOURCE = "data"
DATA_TARGET = ("models", "_bundled_data")

_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = (".pyc", "~", ".swp", ".tmp")


def data_files(root: str | os.PathLike[str] = ".") -> list[str]:
    """Every file of the datasets' folder, as paths relative to ``root``, sorted."""
    base = Path(root) / DATA_SOURCE
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith(_SKIP_SUFFIXES):
                continue
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


class build_py(_build_py):
    """``build_py`` plus the datasets, copied to ``<build_lib>/models/_bundled_data/``."""

    def get_source_files(self) -> list[str]:
        return list(super().get_source_files()) + data_files()

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's data/ itself
        files = data_files()
        if not any(Path(f).name == "datapackage.json" for f in files):
            raise RuntimeError(
                f"{DATA_SOURCE}/datapackage.json not found: cannot bundle the datasets"
            )
        target = Path(self.build_lib, *DATA_TARGET)
        if target.exists():
            shutil.rmtree(target)
        for rel in files:
            dest = target / Path(rel).relative_to(DATA_SOURCE)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(rel, dest)
