"""Code the reader sees fits its column, checked from the sources in a second.

The browser test (browser_tests/test_layout.py) measures every rendered ``<pre>`` at
1280 px, but it runs after the whole book is built, late in CI.  These limits come
from its failures: a visible code-cell line of 88 characters overflowed a chapter's
column by 34 px and a doctest line of 86 characters the API page's by 40 px, about
8.4 px a character, so a chapter's column holds 84 and a docstring's 81.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_MAX = 84  # characters in a visible code-cell line of a chapter
DOCTEST_MAX = 81  # characters in a docstring's example line on the API pages
HIDDEN = ("hide-cell", "hide-input", "remove-cell", "remove-input")


def visible_code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every code-cell line a reader sees folded open.

    >>> md = "```{code-cell} ipython3\\nx = 1\\n```\\n```{code-cell} ipython3\\n"
    >>> md += ":tags: [hide-cell]\\ny = 2\\n```\\n"
    >>> visible_code_lines(md)
    [(2, 'x = 1')]
    """
    out: list[tuple[int, str]] = []
    cell: list[tuple[int, str]] | None = None
    hidden = False
    for number, line in enumerate(text.splitlines(), 1):
        if cell is None:
            if line.startswith("```{code-cell}"):
                cell, hidden = [], False
            continue
        if line.startswith("```"):
            if not hidden:
                out += cell
            cell = None
        elif line.startswith(":tags:"):
            hidden = any(tag in line for tag in HIDDEN)
        elif not (line.startswith(":") and not cell):
            cell.append((number, line))
    return out


def doctest_lines(source: str) -> list[tuple[str, str]]:
    """(owner, line) of every example line (``>>>``, ``...`` and output) in docstrings.

    >>> doctest_lines('def f():\\n    \"\"\"Doc.\\n\\n    >>> f()\\n    1\\n    \"\"\"')
    [('f', '>>> f()'), ('f', '1')]
    """
    out: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
            continue
        doc = ast.get_docstring(node)
        in_example = False
        for line in (doc or "").splitlines():
            if line.strip().startswith(">>>"):
                in_example = True
            elif not line.strip():
                in_example = False
            if in_example:
                out.append((getattr(node, "name", "module"), line))
    return out


def api_modules() -> list[str]:
    names: list[str] = []
    for page in ("api.md", "api_sim.md"):
        names += re.findall(r"automodule:: (\S+)", (ROOT / "book" / page).read_text())
    return names


def module_file(name: str) -> Path:
    base = ROOT / name.replace(".", "/")
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"


@pytest.mark.parametrize("chapter", sorted((ROOT / "book").glob("*.md")), ids=lambda p: p.name)
def test_visible_code_fits_a_chapter_column(chapter: Path) -> None:
    wide = [
        f"{chapter.name}:{n} ({len(line)} chars)"
        for n, line in visible_code_lines(chapter.read_text())
        if len(line) > CHAPTER_MAX
    ]
    assert not wide, f"code lines longer than {CHAPTER_MAX} characters: {wide}"


def test_api_pages_list_modules() -> None:
    assert "models.sim.own_code" in api_modules()


@pytest.mark.parametrize("module", api_modules())
def test_doctest_lines_fit_the_api_column(module: str) -> None:
    source = module_file(module).read_text()
    wide = [
        f"{owner}: {line[:60]}... ({len(line)} chars)"
        for owner, line in doctest_lines(source)
        if len(line) > DOCTEST_MAX
    ]
    assert not wide, f"{module}: example lines longer than {DOCTEST_MAX} characters: {wide}"


def test_the_checks_catch_the_lines_that_overflowed_in_ci() -> None:
    """The two lines the browser test found too wide (CI at 6fe391f) fail here."""
    wide = (
        '    "2 KiB responses, QD 8, TCP_NODELAY both ends, 1 Gb/s: simulated over kernel rate, "'
    )
    chapter = "```{code-cell} ipython3\ncontrast = F6.bucket_contrast()\n" + wide + "\n```\n"
    assert [len(line) for _, line in visible_code_lines(chapter)][-1] > CHAPTER_MAX
    doc = (
        '"""Doc.\n\n>>> Sub().twice(4), Sub.twice is Base.twice, '
        'Sub.twice.__code__ is Base.twice.__code__\n"""\n'
    )
    assert max(len(line) for _, line in doctest_lines(doc)) > DOCTEST_MAX
