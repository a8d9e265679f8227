"""Whether a measuring tool's columns are its bundled dataset's (a helper of the tests)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tool_writes_dataset_columns(tool: str, dataset: str) -> bool:
    """Whether ``tools/TOOL.py``'s ``FIELDS`` (name, type, unit, description) are the columns of
    ``data/DATASET.json``'s schema, in order (a tool changed after its dataset was measured
    fails)."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    fields = importlib.import_module(tool).FIELDS
    desc = json.loads((ROOT / "data" / f"{dataset}.json").read_text())
    stored = [
        (f["name"], f["type"], f.get("unit", ""), f["description"])
        for f in desc["schema"]["fields"]
    ]
    return stored == [tuple(f) for f in fields]
