"""Pack the Python that the book's live figures run in the reader's browser.

Usage: python tools/build_live_bundle.py [OUT]
       (default OUT: static/live/queue-depth-python.zip; run by make book)

The zip holds every ``.py`` file of the ``models`` and ``figures`` packages
except the kernel harness (``models/measure``), which never runs in a
browser.  ``static/qd/live-worker.js`` unpacks it into Pyodide's file
system and imports ``figures.live``; a figure imports only what it needs.
The zip is reproducible: sorted entries and fixed timestamps, so an
unchanged source gives a byte-identical file.

Before writing, every module in ``figures.live.LIVE_MODULES`` is imported in
a fresh interpreter with the packages the browser does not have
(:data:`BLOCKED`) blocked: a live figure that needs one of them fails the
build here, not in a reader's browser.  :func:`run_blocked` is that fresh
interpreter, also used by the tests that compare numbers computed with and
without those packages.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "static" / "live" / "queue-depth-python.zip"
PACKAGES = ("models", "figures")
EXCLUDE = ("models/measure/",)
#: Packages the browser does not have (the one list: the tests import it).
BLOCKED = (
    "numpy",
    "sympy",
    "pandas",
    "scipy",
    "matplotlib",
    "plotly",
    "IPython",
    "ipywidgets",
    "simpy",
)
#: Zip timestamps are fixed (the earliest a zip can store).
EPOCH = (1980, 1, 1, 0, 0, 0)


def sources(root: Path = ROOT) -> list[str]:
    """Paths (relative to ``root``, with ``/``) of the files to pack."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in rel or rel.startswith(EXCLUDE):
                continue
            found.append(rel)
    return found


def run_blocked(
    body: str, stdin: str | None = None, root: Path = ROOT, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run the Python source ``body`` in a fresh interpreter (in ``root``,
    ``sys`` and ``json`` imported) where importing any of :data:`BLOCKED`
    fails, as in the browser; ``stdin`` is its input.  Returns the
    finished process (text output)."""
    code = "\n".join(
        [
            "import json, sys",
            f"for name in {BLOCKED!r}:",
            "    sys.modules[name] = None",
            body,
        ]
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check_standard_library_only(root: Path = ROOT) -> list[str]:
    """Import every live module with the browser's missing packages blocked.

    Returns the modules checked; raises ``RuntimeError`` with the failing
    import's message otherwise.
    """
    out = run_blocked(
        "\n".join(
            [
                "import importlib",
                "from figures.live import LIVE_MODULES",
                "for module in LIVE_MODULES:",
                "    importlib.import_module(module)",
                "print(' '.join(LIVE_MODULES))",
            ]
        ),
        root=root,
    )
    if out.returncode != 0:
        raise RuntimeError(
            "a live figure module needs a package the browser does not have:\n" + out.stderr
        )
    return out.stdout.split()


def build(out: Path, root: Path = ROOT) -> int:
    """Write the zip to ``out``; returns its size in bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for rel in sources(root):
            info = zipfile.ZipInfo(rel, date_time=EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, (root / rel).read_bytes())
    tmp.replace(out)
    return out.stat().st_size


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    modules = check_standard_library_only()
    size = build(out)
    print(
        f"live Python bundle: {out} ({size / 1024:.0f} KiB, "
        f"{len(sources())} files); standard-library-only modules: "
        f"{', '.join(modules)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
