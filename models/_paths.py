"""Where the bundled datasets are: the checkout's ``data/``, or the copy installed with the package.

In a checkout (``pip install -e .`` or ``PYTHONPATH=.``) the datasets are read from ``data/`` beside
``models/``, so an edit there is seen at once.  A wheel has no ``data/`` folder: the build copies it into
the package as ``models/_bundled_data/`` (``tools/qd_build_py.py``, named in ``pyproject.toml``), and
:func:`bundled_data_dir` finds it there with :mod:`importlib.resources`.  Standard library only.

>>> (bundled_data_dir() / "datapackage.json").is_file()
True
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["BUNDLED_DATA", "bundled_data_dir", "checkout_data_dir"]

#: Name of the datasets' folder inside the installed ``models`` package.
BUNDLED_DATA = "_bundled_data"

#: A data folder is recognised by this file (the generated Frictionless package descriptor).
_MARKER = "datapackage.json"


def checkout_data_dir() -> Path | None:
    """The checkout's ``data/`` folder, or ``None`` when ``models`` is not imported from a checkout.

    A checkout is recognised by ``pyproject.toml`` beside ``models/`` (an installed package has none,
    so an unrelated ``data`` folder in ``site-packages`` is never taken for ours).
    """
    root = Path(__file__).resolve().parent.parent
    data = root / "data"
    if (root / "pyproject.toml").is_file() and (data / _MARKER).is_file():
        return data
    return None


def bundled_data_dir() -> Path:
    """The folder holding the datasets (``<name>.csv`` + ``<name>.json``, ``datapackage.json``).

    The checkout's ``data/`` if ``models`` runs from a checkout, else the copy installed inside the
    package (``models/_bundled_data``).  Raises ``FileNotFoundError`` naming both places if neither
    holds the datasets (a wheel built without them).
    """
    checkout = checkout_data_dir()
    if checkout is not None:
        return checkout
    installed = resources.files("models").joinpath(BUNDLED_DATA)
    if isinstance(installed, Path) and (installed / _MARKER).is_file():
        return installed
    raise FileNotFoundError(
        f"no bundled datasets: neither a checkout's data/ beside {Path(__file__).resolve().parent} "
        f"nor an installed copy at {installed} (was the wheel built with tools/qd_build_py.py?)"
    )
