"""tools/html_report.py fails on a page or stylesheet that names a file the book does not have."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import html_report  # noqa: E402

PAGE = """<!DOCTYPE html><html><head>
<link rel="stylesheet" href="../_static/qd/book.css?v=1">
<script src="../_static/qd/live.js"></script>
<script>var s = "<script src='nowhere.js'></script>";</script>
</head><body>
<a href="#top">top</a> <a href="other.html#sec">other</a> <a href="https://example.org/">out</a>
<a href="../">home</a> <a href="mailto:a@b">mail</a> <img src="data:image/png;base64,AA==">
<img src="{img}"> <a href="ch%201.ipynb">download</a>
</body></html>"""


def _book(tmp_path: Path, img: str = "fig.png", font: str = "../fonts/a.woff2") -> Path:
    root = tmp_path / "html"
    for rel in ("index.html", "book/other.html", "book/fig.png", "book/ch 1.ipynb"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / "_static" / "qd").mkdir(parents=True)
    (root / "_static" / "fonts").mkdir()
    (root / "_static" / "fonts" / "a.woff2").write_text("x")
    (root / "_static" / "qd" / "live.js").write_text("x")
    (root / "_static" / "qd" / "book.css").write_text(
        f'@font-face {{ src: url("{font}") format("woff2"); }} a {{ background: url(data:x) }}'
    )
    (root / "book" / "page.html").write_text(PAGE.replace("{img}", img))
    return root


def test_a_complete_book_passes(tmp_path: Path) -> None:
    assert html_report.missing_files(_book(tmp_path)) == []


def test_a_missing_image_is_reported(tmp_path: Path) -> None:
    missing = html_report.missing_files(_book(tmp_path, img="gone.png"))
    assert missing == ["book/page.html: gone.png"]


def test_a_missing_font_is_reported(tmp_path: Path) -> None:
    root = _book(tmp_path, font="../fonts/b.woff2")
    assert html_report.missing_files(root) == ["_static/qd/book.css: url(../fonts/b.woff2)"]
    assert html_report.main(["html_report.py", str(root)]) == 1
