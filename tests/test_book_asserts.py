"""The page shows claims and results; the checks run in folded cells.

A chapter's asserts stay in the notebook, so nbval still runs every one of them, but a check the
reader does not need to read sits in a cell tagged ``hide-cell`` (folded under a "Show code"
button) or ``remove-input``.  This test counts the ``assert`` statements in code cells that carry
neither tag (nor ``hide-input`` or ``remove-cell``), over every ``book/*.md``, and fails at
:data:`LIMIT` or more.  ``python tests/test_book_asserts.py`` prints the count per chapter.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The most visible assert lines the whole book may show, exclusive.
LIMIT = 100
#: Cell tags that fold or remove a cell's source.
FOLDED = ("hide-cell", "hide-input", "remove-input", "remove-cell")

_CELL = re.compile(r"^```{code-cell}")
_ASSERT = re.compile(r"^\s*assert\b")


def visible_asserts(text: str) -> int:
    """The ``assert`` statements in the code cells of a MyST chapter whose source the page shows."""
    lines = text.splitlines()
    count = 0
    i = 0
    while i < len(lines):
        if not _CELL.match(lines[i]):
            i += 1
            continue
        j = i + 1
        tags = ""
        while j < len(lines) and not lines[j].startswith("```"):
            if lines[j].startswith(":tags:"):
                tags = lines[j]
            elif _ASSERT.match(lines[j]):
                count += 1
            j += 1
        if any(t in tags for t in FOLDED):
            count -= sum(1 for line in lines[i + 1 : j] if _ASSERT.match(line))
        i = j + 1
    return count


def per_chapter() -> dict[str, int]:
    return {p.name: visible_asserts(p.read_text()) for p in sorted((ROOT / "book").glob("*.md"))}


def test_counter_sees_visible_and_folded_cells():
    text = (
        "```{code-cell} ipython3\nx = 1\nassert x == 1\n```\n"
        "```{code-cell} ipython3\n:tags: [hide-cell]\nassert x\n```\n"
        "```{code-cell} ipython3\n:tags: [remove-input]\nassert x\n```\n"
        "```python\nassert shown_as_text\n```\n"
        "```{code-cell} ipython3\nfor y in [1]:\n    assert y\n```\n"
    )
    assert visible_asserts(text) == 2


def test_fewer_than_limit_visible_asserts_in_the_book():
    counts = per_chapter()
    total = sum(counts.values())
    listing = "\n".join(f"  {name}: {n}" for name, n in counts.items() if n)
    assert total < LIMIT, f"{total} visible assert lines (limit {LIMIT}):\n{listing}"


if __name__ == "__main__":
    counts = per_chapter()
    for name, n in counts.items():
        print(f"{name}: {n}")
    print(f"total: {sum(counts.values())}")
