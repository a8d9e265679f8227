"""What the built book was made from: content digests that decide when the book must be built again.

Two digests, over files' paths and bytes (caches such as ``__pycache__`` aside):

* :data:`EXECUTION_INPUTS` -- what the chapters' cells read besides their own code: ``data/``,
  ``models/``, ``figures/`` and the pinned environment.  jupyter-cache keys a notebook on its code
  only, so ``tools/sphinx_qd.py`` empties the cache and re-reads every page whenever this digest
  differs from the one recorded in the cache (``<cache>/qd-inputs.json``).
* :data:`BOOK_INPUTS` -- everything the HTML is built from.  ``make book`` records it in
  :data:`STAMP` after a build that passed (strict build and ``tools/html_report.py``), and skips the
  build when the stamp matches and ``_build/html/index.html`` exists; ``make test`` therefore reuses
  a book that ``make book`` just built.

Command line (the Makefile's)::

    python tools/book_state.py fresh     # exit 0 if _build/html is up to date with BOOK_INPUTS
    python tools/book_state.py begin     # before a build: note the inputs, forget the stamp
    python tools/book_state.py done      # after a build that passed: write the stamp
    python tools/book_state.py show      # the digests and the files they cover
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Read by the chapters' cells: a change here must re-execute them.
EXECUTION_INPUTS = ("data", "models", "figures", "requirements.txt", "package.json")

#: The book's HTML is built from these (the generated assets under static/ come from package.json,
#: package-lock.json, requirements.txt, models/ and figures/, all listed).
BOOK_INPUTS = EXECUTION_INPUTS + (
    "book",
    "_config.yml",
    "_toc.yml",
    "package-lock.json",
    "Makefile",
    "static/qd",
    "static/favicon.svg",
    "tools/book_state.py",
    "tools/sphinx_qd.py",
    "tools/build_live_bundle.py",
    "tools/html_report.py",
)

#: Written after a successful ``make book``: the digest of :data:`BOOK_INPUTS` it was built from.
STAMP = ROOT / "_build" / ".qd-book-inputs"
_PENDING = ROOT / "_build" / ".qd-book-inputs.pending"
HTML_INDEX = ROOT / "_build" / "html" / "index.html"

_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo", "~", ".swp", ".swo", ".tmp")


def input_files(paths: Iterable[str], root: Path = ROOT) -> list[str]:
    """Every file under ``paths`` (files or folders, relative to ``root``), sorted, caches and
    editor droppings aside.  A path that does not exist contributes nothing."""
    out: list[str] = []
    for rel in paths:
        p = root / rel
        if p.is_file():
            out.append(rel)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
            for name in filenames:
                if name.startswith((".#", ".~")) or name.endswith(_SKIP_SUFFIXES):
                    continue
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(set(out))


def file_digests(paths: Iterable[str], root: Path = ROOT) -> dict[str, str]:
    """``{relative path: sha256 of its bytes}`` for :func:`input_files`."""
    return {
        f: hashlib.sha256((root / f).read_bytes()).hexdigest() for f in input_files(paths, root)
    }


def digest(files: dict[str, str]) -> str:
    """One sha256 over every path and its content's digest (so a rename or a deletion counts)."""
    h = hashlib.sha256()
    for name, sha in sorted(files.items()):
        h.update(f"{name}\0{sha}\n".encode())
    return h.hexdigest()


def changed(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Paths added, removed or modified between two :func:`file_digests`."""
    return sorted(f for f in old.keys() | new.keys() if old.get(f) != new.get(f))


def book_is_fresh(root: Path = ROOT) -> bool:
    stamp = root / STAMP.relative_to(ROOT)
    index = root / HTML_INDEX.relative_to(ROOT)
    if not (stamp.is_file() and index.is_file()):
        return False
    return stamp.read_text().strip() == digest(file_digests(BOOK_INPUTS, root))


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "show"
    if cmd == "fresh":
        if book_is_fresh():
            print(f"book up to date: {HTML_INDEX.relative_to(ROOT)} was built from these sources")
            return 0
        return 1
    if cmd == "begin":
        STAMP.unlink(missing_ok=True)
        _PENDING.parent.mkdir(parents=True, exist_ok=True)
        _PENDING.write_text(digest(file_digests(BOOK_INPUTS)) + "\n")
        return 0
    if cmd == "done":
        if not _PENDING.is_file():
            print("book_state done: no build was begun", file=sys.stderr)
            return 2
        # The digest noted before the build: an edit made during the build leaves the stamp stale.
        os.replace(_PENDING, STAMP)
        return 0
    if cmd == "show":
        for name, paths in (("execution", EXECUTION_INPUTS), ("book", BOOK_INPUTS)):
            files = file_digests(paths)
            print(f"{name} inputs: {digest(files)} over {len(files)} files ({', '.join(paths)})")
        print(f"book stamp: {STAMP.read_text().strip() if STAMP.is_file() else 'none'}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
