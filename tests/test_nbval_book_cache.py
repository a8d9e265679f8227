"""The nbval run's outputs kept for the book build (``tools/nbval_book_cache.py``).

The build must find what the plugin stores (the same jupyter-cache hash for every chapter), the
outputs must be what the build's own execution gives, and nothing may be stored from a chapter that
did not pass whole or from inputs that are not the current ones.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import pytest
import yaml
from jupyter_cache import get_cache
from jupyter_cache.executors.utils import single_nb_execution
from myst_nb.core.read import read_myst_markdown_notebook
from myst_parser.config.main import MdParserConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbval_book_cache as K  # noqa: E402
import sphinx_qd  # noqa: E402

CHAPTERS = sorted(
    p for p in (ROOT / "book").glob("*.md") if "format_name: myst" in p.read_text()[:400]
)


def _md_config() -> MdParserConfig:
    """The book's MyST settings (``_config.yml``), as the build reads the chapters with them."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return MdParserConfig(enable_extensions=set(config["parse"]["myst_enable_extensions"]))


def _as_built(path: Path) -> nbformat.NotebookNode:
    """A chapter as myst-nb reads it in the book build."""
    return read_myst_markdown_notebook(
        path.read_text(), _md_config(), add_source_map=True, path=str(path)
    )


def test_every_chapter_is_found_by_the_build(tmp_path: Path) -> None:
    """jupytext's notebook (what nbval runs and the plugin stores) and myst-nb's reading of the same
    chapter get the same jupyter-cache key, so the build matches the stored record."""
    cache = get_cache(str(tmp_path / "cache"))
    assert len(CHAPTERS) >= 15
    for path in CHAPTERS:
        tested = nbformat.reads(jupytext.writes(jupytext.read(path), fmt="ipynb"), as_version=4)
        assert (
            cache.create_hashed_notebook(tested)[1]
            == cache.create_hashed_notebook(_as_built(path))[1]
        ), path.name


def test_the_tests_store_where_the_build_reads():
    """make test's --book-cache is the folder the build opens: no cache path is configured, so
    myst-nb's (and tools/sphinx_qd.py's) default, .jupyter_cache beside the HTML's _build/html."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "cache" not in config["execute"]
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^BOOK_CACHE := _build/\.jupyter_cache$", make, re.M)
    assert "--book-cache $(BOOK_CACHE)" in make
    for target in ("test", "nbtest"):  # both runs of the chapters keep their outputs
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", make, re.M)
        assert recipe and "$(KEEP_OUTPUTS) --nbval-lax" in recipe.group(1), target


def test_a_changed_cell_is_not_found(tmp_path: Path) -> None:
    """The key would catch a difference: one tag more on one code cell is another notebook."""
    cache = get_cache(str(tmp_path / "cache"))
    nb = _as_built(ROOT / "book" / "01_operations_in_flight.md")
    other = copy.deepcopy(nb)
    code = next(c for c in other.cells if c.cell_type == "code")
    code.metadata.setdefault("tags", []).append("remove-output")
    assert cache.create_hashed_notebook(nb)[1] != cache.create_hashed_notebook(other)[1]


GOOD = [
    "x = 6 * 7",
    "print('x is', x)\nprint('twice', 2 * x)",
    "from IPython.display import Markdown, display\ndisplay(Markdown('**bold**'))",
    "x",
    "import sys\nprint('to stderr', file=sys.stderr)",
]


def _notebook(sources: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.cells = [nbformat.v4.new_markdown_cell("# A page")]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def _normal(outputs: list) -> list[str]:
    """Outputs as text, without what differs between any two executions (object addresses)."""
    out = []
    for o in outputs:
        o = {k: v for k, v in o.items() if k != "execution_count"}
        out.append(re.sub(r" at 0x[0-9a-f]+", " at 0x", json.dumps(o, sort_keys=True)))
    return out


def _run(folder: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tools.nbval_book_cache", "--book-cache", str(cache), "--nbval-lax",
         "--nbval-current-env", "--rootdir", str(folder), str(folder)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_passing_notebook_is_stored_as_the_build_would_run_it(tmp_path: Path) -> None:
    folder, cache = tmp_path / "nb", tmp_path / "cache"
    folder.mkdir()
    nbformat.write(_notebook(GOOD), folder / "good.ipynb")
    nbformat.write(_notebook(["y = 1", "1 / 0", "y"]), folder / "bad.ipynb")
    # A record from other inputs: emptied before the first store, as the build would empty it.
    cache.mkdir()
    (cache / sphinx_qd.CACHE_RECORD).write_text(json.dumps({"digest": "other", "files": {}}))
    (cache / "stale.txt").write_text("left by another build")

    run = _run(folder, cache)
    assert run.returncode == 1, run.stdout  # the bad notebook fails its cell
    assert "1 failed" in run.stdout and f"{len(GOOD) + 2} passed" in run.stdout
    assert not (cache / "stale.txt").exists()
    digest = json.loads((cache / sphinx_qd.CACHE_RECORD).read_text())["digest"]
    assert digest == sphinx_qd.execution_inputs(ROOT)[0]

    jc = get_cache(str(cache))
    records = jc.list_cache_records()
    assert [Path(r.uri).name for r in records] == ["good.ipynb"]  # not the bad one
    assert records[0].data["execution_seconds"] > 0
    with pytest.raises(KeyError):
        jc.match_cache_notebook(nbformat.read(folder / "bad.ipynb", as_version=4))

    # What the build does with it: matched on the code, outputs merged; the same outputs as the
    # build's own execution of the notebook (jupyter-cache's executor, which myst-nb calls).
    page = _notebook(GOOD)
    _, merged = jc.merge_match_into_notebook(page)
    executed = copy.deepcopy(page)
    result = single_nb_execution(executed, cwd=str(folder), timeout=120, allow_errors=False)
    assert result.err is None
    kept = [c.outputs for c in merged.cells if c.cell_type == "code"]
    ran = [c.outputs for c in executed.cells if c.cell_type == "code"]
    assert [_normal(o) for o in kept] == [_normal(o) for o in ran]
    assert kept[1][0]["text"] == "x is 42\ntwice 84\n"
    assert kept[4][0]["name"] == "stderr"
    assert merged.metadata["language_info"]["name"] == "python"


def _parent(nb: nbformat.NotebookNode, path: Path) -> SimpleNamespace:
    return SimpleNamespace(nodeid=path.name, nb=nb, fspath=path)


def test_nothing_is_stored_when_an_input_changed_during_the_run(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.csv").write_text("x\n1\n")
    nb = _notebook(["1 + 1"])
    cells = [c for c in nb.cells if c.cell_type == "code"]
    keeper = K.Keeper(tmp_path / "cache", root=root)
    keeper.outputs["p.ipynb"] = {0: []}
    (root / "data" / "a.csv").write_text("x\n2\n")  # a test edited an input meanwhile
    keeper._finish(_parent(nb, tmp_path / "p.ipynb"), cells)
    assert keeper.stored == [] and not (tmp_path / "cache").exists()

    keeper = K.Keeper(tmp_path / "cache", root=root)  # the same, inputs left alone
    keeper.outputs["p.ipynb"] = {0: []}
    keeper._finish(_parent(nb, tmp_path / "p.ipynb"), cells)
    assert keeper.stored == ["p"]
    assert len(get_cache(str(tmp_path / "cache")).list_cache_records()) == 1


def test_nothing_is_stored_for_a_cell_missing_or_spoiled(tmp_path: Path) -> None:
    nb = _notebook(["1", "2"])
    cells = [c for c in nb.cells if c.cell_type == "code"]
    keeper = K.Keeper(tmp_path / "cache")
    keeper.outputs["p.ipynb"] = {0: []}  # the second cell never ran (deselected)
    keeper._finish(_parent(nb, tmp_path / "p.ipynb"), cells)
    keeper.outputs["q.ipynb"] = {0: [], 1: []}
    keeper.spoiled.add("q.ipynb")  # a cell was skipped or failed
    keeper._finish(_parent(nb, tmp_path / "q.ipynb"), cells)
    assert keeper.stored == [] and not (tmp_path / "cache").exists()
