"""Report what the built HTML book weighs, and whether any page loads code or styles from outside it.

Usage: python tools/html_report.py [_build/html]

Prints the total size, the heaviest pages and asset folders, what the
live figures' Python runtime adds (Pyodide's core and the book's own Python
bundle, fetched only when a reader starts a live figure), what MathJax
weighs (only the bundle the pages load is kept: tools/sphinx_qd.py), and
every <script src> or stylesheet <link> that points off the book (there
should be none: the book must read offline).  Then checks that every file a
page or a stylesheet names is in the book: the src and href of every
element of every page (scripts, stylesheets, images, links to pages and
downloads) and every url(...) in the book's stylesheets.  Files that
scripts load themselves (MathJax's components, Pyodide) are checked by the
browser tests.  Exit status 1 if any reference leaves the book or names a
missing file.
"""

from __future__ import annotations

import html.parser
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

STYLESHEET_OR_SCRIPT = re.compile(
    r"""<script[^>]*\bsrc=["'](?:https?:)?//[^"']+|<link[^>]*rel=["']stylesheet["'][^>]*href=["'](?:https?:)?//[^"']+""",
    re.I,
)


def sizes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


#: Where the live figures' runtime is served from (see the Makefile and
#: static/qd/live.js).
LIVE_RUNTIME = {"Pyodide core": "_static/pyodide/", "Python bundle": "_static/live/"}


def live_runtime(files: dict[str, int]) -> dict[str, int]:
    """Bytes of each part of the live figures' runtime (see
    :data:`LIVE_RUNTIME`)."""
    return {
        name: sum(s for f, s in files.items() if f.startswith(prefix))
        for name, prefix in LIVE_RUNTIME.items()
    }


def external_refs(root: Path) -> list[str]:
    hits = []
    for page in root.rglob("*.html"):
        for m in STYLESHEET_OR_SCRIPT.finditer(page.read_text(errors="ignore")):
            hits.append(f"{page.relative_to(root)}: {m.group(0)[:120]}")
    return hits


#: Attributes that name a file: <script src>, <img src>, <link href>, <a href>, <source srcset> ...
_URL_ATTRS = {"src", "href", "poster", "data"}
_CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")


class _Refs(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (name in _URL_ATTRS or (tag == "img" and name == "srcset")):
                if name == "srcset":
                    self.refs += [c.strip().split(" ")[0] for c in value.split(",") if c.strip()]
                else:
                    self.refs.append(value)


def _local_target(base: Path, ref: str, root: Path) -> Path | None:
    """The file ``ref`` (seen in ``base``) names inside the book, or None
    for a reference that is not to a file of the book."""
    ref = ref.strip()
    if not ref or ref.startswith(("#", "data:", "javascript:", "mailto:", "tel:", "about:")):
        return None
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or not parts.path:
        return None  # off the book (external_refs reports scripts and stylesheets) or same page
    path = unquote(parts.path)
    target = (root / path.lstrip("/")) if path.startswith("/") else (base.parent / path)
    return target


def missing_files(root: Path) -> list[str]:
    """Every page or stylesheet reference to a file that is not in the book."""
    root = root.resolve()
    out = []
    for page in sorted(root.rglob("*.html")):
        if page.relative_to(root).parts[0] == "_static":
            continue  # the themes' Jinja templates (*-macros.html), copied as assets, not pages
        parser = _Refs()
        parser.feed(page.read_text(errors="ignore"))
        for ref in dict.fromkeys(parser.refs):
            t = _local_target(page, ref, root)
            if t is None:
                continue
            if t.is_dir():
                t = t / "index.html"
            if not t.resolve().is_file():
                out.append(f"{page.relative_to(root)}: {ref}")
    for css in sorted(root.rglob("*.css")):
        for m in _CSS_URL.finditer(css.read_text(errors="ignore")):
            t = _local_target(css, m.group(2), root)
            if t is not None and not t.resolve().is_file():
                out.append(f"{css.relative_to(root)}: url({m.group(2)})")
    return out


def mathjax(files: dict[str, int]) -> tuple[int, list[str]]:
    """Bytes under _static/mathjax/ and its top-level bundles."""
    size = sum(s for f, s in files.items() if f.startswith("_static/mathjax/"))
    bundles = sorted(
        f.split("/")[-1] for f in files if re.fullmatch(r"_static/mathjax/[^/]+\.js", f)
    )
    return size, bundles


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "_build/html")
    if not (root / "index.html").exists():
        print(f"no book at {root}; run make book", file=sys.stderr)
        return 2
    files = sizes(root)
    total = sum(files.values())
    pages = sorted(((s, f) for f, s in files.items() if f.endswith(".html")), reverse=True)
    folders: dict[str, int] = {}
    for f, s in files.items():
        top = "/".join(f.split("/")[:2]) if f.startswith("_static/") else f.split("/")[0]
        folders[top] = folders.get(top, 0) + s
    print(f"HTML book: {total / 2**20:.1f} MiB in {len(files)} files ({len(pages)} pages)")
    print("heaviest pages:  " + ", ".join(f"{f} {s / 2**10:.0f} KiB" for s, f in pages[:4]))
    print(
        "largest folders: "
        + ", ".join(
            f"{k} {v / 2**20:.1f} MiB"
            for k, v in sorted(folders.items(), key=lambda kv: -kv[1])[:5]
        )
    )
    runtime = live_runtime(files)
    print(
        f"live figures' runtime: {sum(runtime.values()) / 2**20:.1f} MiB ("
        + ", ".join(f"{k} {v / 2**20:.2f} MiB" for k, v in runtime.items())
        + "), fetched only when a reader starts a live figure"
    )
    mj_size, mj_bundles = mathjax(files)
    print(f"MathJax: {mj_size / 2**20:.1f} MiB (top-level scripts: {', '.join(mj_bundles)})")
    ext = external_refs(root)
    for line in ext:
        print("EXTERNAL:", line)
    print(
        "offline: every script and stylesheet is served by the book"
        if not ext
        else f"offline: {len(ext)} references leave the book"
    )
    missing = missing_files(root)
    for line in missing:
        print("MISSING:", line)
    print(
        "files: every file a page or stylesheet names is in the book"
        if not missing
        else f"files: {len(missing)} references name a file the book does not have"
    )
    return 1 if ext or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
