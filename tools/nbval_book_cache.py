"""pytest plugin: the strict book build shows the outputs that the nbval run produced, instead of
running every chapter a second time.

    python -m pytest -p tools.nbval_book_cache --book-cache _build/.jupyter_cache \\
        --nbval-lax --nbval-current-env .nbtest

``make test`` runs every chapter under nbval (each cell must run without error) and then builds the
book strictly, and the build (myst-nb, ``execute_notebooks: cache``) ran every chapter again, one
after another on one CPU: about ten minutes of the CI on two CPUs, for outputs nbval's kernel had
just produced from the same code and the same inputs.

With this plugin, a chapter of ``.nbtest/`` whose every code cell passed under nbval is stored in
the book's jupyter-cache (``--book-cache``), each code cell with the outputs nbval's kernel sent for
it and the record with the seconds its cells took (the build-status page shows them).  jupyter-cache
keys a notebook on its kernel and its code cells (source and metadata), which jupytext's notebook
and myst-nb's reading of ``book/NAME.md`` share (``tests/test_nbval_book_cache.py`` holds every
chapter to it), so the build finds the record and uses it, as it would a record of its own.

What keeps that honest:

* Before the first store the cache is refreshed against the digest of what the cells read
  (``sphinx_qd.refresh_cache``: ``data/``, ``models/``, ``figures/``, the pinned environment),
  exactly as the build does at its start: a cache filled from other inputs is emptied first, and
  the build keeps these records only while those inputs are unchanged.
* The digest is taken when the session starts and again at each store; if an input changed during
  the run, nothing more is stored.
* A chapter with a cell that failed or was skipped, or with a cell nbval did not run, is not stored:
  the build runs it itself (and, strict, fails on the failing cell).

Two pytest-xdist workers may store at once; each store holds a lock file next to the cache.
"""

from __future__ import annotations

import copy
import fcntl
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import sphinx_qd  # noqa: E402

#: The chapters' sources: ``.nbtest/NAME.ipynb`` was written from ``book/NAME.md``.
BOOK = ROOT / "book"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--book-cache",
        metavar="DIR",
        default=None,
        help="store every notebook whose cells all passed, with its outputs, in this jupyter-cache "
        "folder (the book build's, _build/.jupyter_cache) for the build to use",
    )


def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("--book-cache")
    if folder:
        config.pluginmanager.register(Keeper(Path(folder)), "qd-book-cache")


def language_info() -> dict[str, Any]:
    """The kernel's ``language_info`` (as in its ``kernel_info`` reply, which nbclient copies into
    an executed notebook's metadata; myst-nb picks the code lexer from it)."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.parent / f".{cache.name.lstrip('.')}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Keeper:
    """Collects each nbval cell's outputs and stores a notebook once its last cell has passed."""

    def __init__(self, cache: Path, root: Path = ROOT) -> None:
        self.cache = cache.resolve()
        self.root = root
        self.digest, self.files = sphinx_qd.execution_inputs(root)
        #: per notebook: each passed cell's outputs by cell number, and the seconds they took
        self.outputs: dict[str, dict[int, list]] = {}
        self.seconds: dict[str, float] = {}
        self.spoiled: set[str] = set()
        self.stored: list[str] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        from nbval.plugin import IPyNbCell

        if not isinstance(item, IPyNbCell):
            return report
        key = item.parent.nodeid
        if report.failed or report.skipped:
            self.spoiled.add(key)
        elif report.when == "call":
            self.outputs.setdefault(key, {})[item.cell_num] = list(item.test_outputs or [])
            self.seconds[key] = self.seconds.get(key, 0.0) + report.duration
        if report.when == "teardown":
            cells = [c for c in item.parent.nb.cells if c.cell_type == "code"]
            if item.cell_num == len(cells) - 1:
                self._finish(item.parent, cells)
        return report

    def _finish(self, parent: Any, cells: list) -> None:
        key = parent.nodeid
        outs, seconds = self.outputs.pop(key, {}), self.seconds.pop(key, 0.0)
        if key in self.spoiled or len(outs) != len(cells):
            return
        if sphinx_qd.execution_inputs(self.root)[0] != self.digest:
            return
        nb = copy.deepcopy(parent.nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        for n, cell in enumerate(code):
            cell.outputs = outs[n]
            cell.execution_count = n + 1
            for out in cell.outputs:
                if out.get("output_type") == "execute_result":
                    out["execution_count"] = n + 1
        nb.metadata["language_info"] = language_info()
        path = Path(str(parent.fspath))
        source = BOOK / f"{path.stem}.md"
        self._store(nb, str(source if source.is_file() else path), seconds)
        self.stored.append(path.stem)

    def _store(self, nb: Any, uri: str, seconds: float) -> None:
        from jupyter_cache import get_cache
        from jupyter_cache.base import CacheBundleIn

        with _locked(self.cache):
            sphinx_qd.refresh_cache(self.cache, self.digest, self.files)
            get_cache(str(self.cache)).cache_notebook_bundle(
                CacheBundleIn(nb, uri, data={"execution_seconds": seconds, "run_by": "nbval"}),
                check_validity=False,
                overwrite=True,
            )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.stored:
            terminalreporter.write_line(
                f"nbval_book_cache: {len(self.stored)} notebook(s) stored in {self.cache} "
                "for the book build"
            )
