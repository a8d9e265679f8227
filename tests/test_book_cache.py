"""A stale book never passes: a changed input re-executes the notebooks that read it.

jupyter-cache matches a notebook by its code only.  Without ``tools/sphinx_qd.py`` a cached build
shows the outputs computed from the old ``data/`` and passes after a CSV is corrupted.  These tests
build a one-page book with the real toolchain (Sphinx, myst-nb, jupyter-cache, the book's extension)
in a temporary folder, so they take seconds, not a book build:

* cached builds pass and execute the notebook once;
* a corrupted CSV makes the next build fail (the cache is emptied, the notebook re-runs and its assert
  fails), and the one after it too; the restored CSV passes again;
* a build that warned under ``-W --keep-going`` fails again when repeated unchanged (Sphinx would
  otherwise not re-read the page and pass);
* ``make book``'s stamp (``tools/book_state.py``) goes stale when any input changes;
* the unused MathJax bundles are pruned, the one in use is kept;
* ``{{ repository_link }}`` on a page is the one repository setting.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
sys.path.insert(0, str(TOOLS))

import book_state  # noqa: E402
import sphinx_qd  # noqa: E402

NOTEBOOK = textwrap.dedent(
    """\
    ---
    jupytext:
      text_representation: {extension: .md, format_name: myst, format_version: 0.13}
    kernelspec: {display_name: Python 3, language: python, name: python3}
    ---
    # A page that reads the data

    ```{code-cell} ipython3
    import csv
    with open("../runs.txt", "a") as log:  # counts executions, outside the inputs
        log.write("run\\n")
    rows = list(csv.DictReader(open("data/rates.csv")))
    assert rows[0]["rate"] == "42", rows
    print("rate", rows[0]["rate"])
    ```
    """
)

CONF = textwrap.dedent(
    f"""\
    import sys
    sys.path.insert(0, {str(TOOLS)!r})
    project = "cache test"
    extensions = ["myst_nb", "sphinx_qd"]
    nb_execution_mode = "cache"
    nb_execution_raise_on_error = True
    nb_execution_timeout = 120
    exclude_patterns = ["_build", "data"]
    """
)


def _kernel_available() -> bool:
    try:
        from jupyter_client.kernelspec import find_kernel_specs
    except ImportError:
        return False
    return "python3" in find_kernel_specs()


needs_kernel = pytest.mark.skipif(
    not _kernel_available(), reason="no python3 Jupyter kernel (make setup installs it)"
)


@pytest.fixture
def book(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    (src / "conf.py").write_text(CONF)
    (src / "index.md").write_text(NOTEBOOK)
    (src / "data" / "rates.csv").write_text("name,rate\nx,42\n")
    return src


def build(src: Path, strict: bool = True) -> subprocess.CompletedProcess:
    out = src.parent / "_build" / "html"
    flags = ["-W", "--keep-going"] if strict else []
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", *flags, str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def runs(src: Path) -> int:
    log = src.parent / "runs.txt"
    return len(log.read_text().splitlines()) if log.exists() else 0


@needs_kernel
def test_corrupted_csv_fails_the_cached_build(book: Path) -> None:
    first = build(book)
    assert first.returncode == 0, first.stdout + first.stderr
    assert runs(book) == 1
    again = build(book)
    assert again.returncode == 0, again.stdout + again.stderr
    assert runs(book) == 1, "an unchanged book re-executed its notebook: the cache is not used"
    html = (book.parent / "_build" / "html" / "index.html").read_text()
    assert "rate 42" in html

    csv = book / "data" / "rates.csv"
    csv.write_text("name,rate\nx,24\n")  # corrupted: the cell's assert must fail
    broken = build(book)
    assert broken.returncode != 0, "a corrupted CSV passed the cached build:\n" + broken.stdout
    assert "jupyter-cache emptied" in broken.stdout and "data/rates.csv" in broken.stdout
    assert runs(book) == 2
    still = build(book)
    assert still.returncode != 0, "the second build after a corrupted CSV passed"

    csv.write_text("name,rate\nx,42\n")
    fixed = build(book)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert runs(book) == 4

    # Any file under models/ (or figures/) counts, a new one too.
    (book / "models").mkdir()
    (book / "models" / "m.py").write_text("X = 1\n")
    assert build(book).returncode == 0
    assert runs(book) == 5, "a new file under models/ did not re-execute the notebook"


def test_warnings_fail_every_build_until_fixed(book: Path) -> None:
    # A plain page (no code) with a broken cross-reference: a warning, so -W fails the build.
    (book / "index.md").write_text("# Page\n\nSee {ref}`no-such-label`.\n")
    first = build(book)
    assert first.returncode != 0 and "no-such-label" in first.stderr
    second = build(book)
    assert second.returncode != 0, "an unchanged page that warned passed the second build"


def test_the_repository_url_comes_from_one_setting(book: Path) -> None:
    """``repository.url`` (``html_theme_options["repository_url"]`` once Jupyter Book has translated
    _config.yml) is what ``{{ repository_link }}`` on a page shows."""
    url = "https://git.invalid/someone/queue-depth"
    conf = book / "conf.py"
    conf.write_text(conf.read_text() + f"html_theme_options = {{'repository_url': {url!r}}}\n")
    conf.write_text(conf.read_text() + "myst_enable_extensions = ['substitution']\n")
    (book / "index.md").write_text(
        "# Page\n\nClone {{ repository_link }} ({{ repository_url }}).\n"
    )
    out = build(book, strict=False)  # the test theme has no repository_url option: a warning
    assert out.returncode == 0, out.stdout + out.stderr
    html = (book.parent / "_build" / "html" / "index.html").read_text()
    assert f'href="{url}"' in html and f"({url})" in html


def test_refresh_cache_empties_on_any_change(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.csv").write_text("x\n1\n")
    (root / "models").mkdir()
    (root / "models" / "m.py").write_text("A = 1\n")
    (root / "models" / "__pycache__").mkdir()
    cache = tmp_path / "cache"

    def state():
        files = book_state.file_digests(book_state.EXECUTION_INPUTS, root)
        return book_state.digest(files), files

    assert sphinx_qd.refresh_cache(cache, *state()) == ["(no record)"]
    (cache / "entry").write_text("an executed notebook")
    assert sphinx_qd.refresh_cache(cache, *state()) is None
    assert (cache / "entry").exists(), "an unchanged input emptied the cache"

    # Caches do not count as inputs.
    (root / "models" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    assert sphinx_qd.refresh_cache(cache, *state()) is None

    (root / "data" / "a.csv").write_text("x\n2\n")
    assert sphinx_qd.refresh_cache(cache, *state()) == ["data/a.csv"]
    assert not (cache / "entry").exists(), "a changed CSV left the cached outputs"

    (root / "data" / "a.csv").rename(root / "data" / "b.csv")
    assert sphinx_qd.refresh_cache(cache, *state()) == ["data/a.csv", "data/b.csv"]


def test_book_stamp_goes_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    for rel in ("data/a.csv", "book/ch.md", "_build/html/index.html"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    digest = book_state.digest(book_state.file_digests(book_state.BOOK_INPUTS, root))
    (root / "_build" / ".qd-book-inputs").write_text(digest + "\n")
    assert book_state.book_is_fresh(root)
    (root / "data" / "a.csv").write_text("corrupted")
    assert not book_state.book_is_fresh(root)
    (root / "data" / "a.csv").write_text("data/a.csv")
    assert book_state.book_is_fresh(root)
    (root / "_build" / "html" / "index.html").unlink()
    assert not book_state.book_is_fresh(root)


def test_prune_mathjax_keeps_the_bundle_in_use(tmp_path: Path) -> None:
    mj = tmp_path / "_static" / "mathjax"
    (mj / "output" / "chtml").mkdir(parents=True)
    names = ["tex-chtml.js", "tex-svg.js", "tex-mml-chtml.js", "mml-svg.js", "node-main.js"]
    for name in names + ["core.js", "startup.js", "output/chtml.js"]:
        (mj / name).write_text("//")
    removed = sphinx_qd.prune_mathjax(tmp_path, "mathjax/tex-chtml.js")
    assert removed == ["mml-svg.js", "node-main.js", "tex-mml-chtml.js", "tex-svg.js"]
    left = sorted(str(p.relative_to(mj)) for p in mj.rglob("*.js"))
    assert left == ["core.js", "output/chtml.js", "startup.js", "tex-chtml.js"]
    shutil.rmtree(mj)
    assert sphinx_qd.prune_mathjax(tmp_path, "https://cdn.example/tex-chtml.js") == []
