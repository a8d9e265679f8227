"""Report what the built HTML book weighs, and whether any page loads code or styles from outside it.

Usage: python tools/html_report.py [_build/html]

Prints the total size, the heaviest pages and asset folders, what the
live figures' Python runtime adds (Pyodide's core and the book's own Python
bundle, fetched only when a reader starts a live figure), and every
<script src> or stylesheet <link> that points off the book (there should be
none: the book must read offline). Exit status 1 if any such reference
exists.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

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
    ext = external_refs(root)
    for line in ext:
        print("EXTERNAL:", line)
    print(
        "offline: every script and stylesheet is served by the book"
        if not ext
        else f"offline: {len(ext)} references leave the book"
    )
    return 1 if ext else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
