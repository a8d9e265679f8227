"""Which module reads each bundled dataset, and which datasets are context.

Every dataset in ``data/`` must either feed a model or a comparison (a
module of ``models`` names it) or say in its sidecar why it is shown only
as context (a ``role`` that starts with ``context:``).  The datasets
appendix shows the answer for each; ``tests/test_data.py`` requires one.
"""

from __future__ import annotations

import functools
from pathlib import Path

from models import data

__all__ = ["readers", "role", "uncovered"]

_MODELS = Path(__file__).resolve().parents[1]


@functools.cache
def _sources() -> dict:
    out = {}
    for path in sorted(_MODELS.rglob("*.py")):
        if path.name == "data.py" or path == Path(__file__).resolve():
            continue
        mod = ".".join(path.relative_to(_MODELS.parent).with_suffix("").parts)
        out[mod.removesuffix(".__init__")] = path.read_text()
    return out


def readers(name: str) -> list:
    """Modules of ``models`` that name the dataset ``name`` (a table of a
    kernel sweep is named by its prefix and its table, as
    :mod:`models.kernel` loads them)."""
    prefix, _, table = name.partition("_")
    found = []
    for mod, text in _sources().items():
        if f'"{name}"' in text or (f'"{prefix}"' in text and f'"{table}"' in text):
            found.append(mod)
    return found


def role(name: str) -> str:
    """The sidecar's ``role`` of a context dataset ('' if none)."""
    return str(data.describe(name).get("role", ""))


def uncovered() -> list:
    """Datasets that no model reads and that do not say they are context."""
    return [
        n for n in data.list_datasets() if not readers(n) and not role(n).startswith("context:")
    ]
