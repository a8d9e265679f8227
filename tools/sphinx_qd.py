"""Sphinx extension for the Queue Depth book (listed in ``_config.yml``, loaded from ``tools/``).

1. **No stale cached outputs.**  jupyter-cache (``execute_notebooks: cache``) matches a notebook by
   its code alone, so a corrupted CSV in ``data/`` or an edited model would be shown with the old
   outputs, and the build would pass.  At the start of a build this extension computes the digest of
   what the cells read (:data:`book_state.EXECUTION_INPUTS`: ``data/``, ``models/``, ``figures/``,
   the pinned environment) and compares it with the one recorded in the cache
   (``<cache>/qd-inputs.json``).  If they differ it empties the cache, records the new digest and
   names the changed files; the digest is also a configuration value that Sphinx stores with its
   environment, so a change makes Sphinx re-read every page (a fresh environment) and so re-execute
   every notebook.  A notebook that fails is never cached, so a broken input fails every build until
   it is fixed.
2. **Warnings are not forgotten.**  With ``-W --keep-going`` a page that warned is stored in
   Sphinx's environment and is not read again by the next build, which would then pass.  After a
   build with warnings the saved environment is deleted (as Sphinx itself does after an error), so
   the next build reads every page again and repeats them.
3. **Only the MathJax the book loads.**  sphinx-mathjax-offline copies all of MathJax 3 (about
   24 MiB) into ``_static/mathjax``; the pages load one combined component
   (``mathjax_path``, ``tex-chtml.js``) and, from it, the component folders (fonts, extensions, the
   accessibility and menu modules) on demand.  The other combined components (``tex-svg.js``,
   ``tex-mml-chtml.js``, ``tex-chtml-full-speech.js``, ... about 14 MiB) are never loaded and are
   removed after the copy.
4. **The repository's address in one place.**  ``repository.url`` in ``_config.yml`` drives the
   theme's repository button and the Binder buttons; this extension also offers it to the pages as the
   MyST substitutions ``{{ repository_url }}`` (text) and ``{{ repository_link }}`` (a link).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_state  # noqa: E402

logger = logging.getLogger(__name__)

#: File in the jupyter-cache folder recording the inputs its notebooks were executed against.
CACHE_RECORD = "qd-inputs.json"

#: MathJax 3's combined components: each is a whole MathJax; a page loads one (``mathjax_path``).
#: ``node-main.js`` is for Node.js and ``latest.js`` redirects to a CDN: neither runs in the book.
_COMBINED = re.compile(r"^(?:tex|mml)-[a-z-]+\.js$|^node-main\.js$|^latest\.js$")

_state: dict[str, Any] = {}


def execution_inputs(root: Path) -> tuple[str, dict[str, str]]:
    files = book_state.file_digests(book_state.EXECUTION_INPUTS, root)
    return book_state.digest(files), files


def refresh_cache(cache: Path, digest: str, files: dict[str, str]) -> list[str] | None:
    """Empty the jupyter-cache folder ``cache`` unless it was filled against ``digest``.

    Returns ``None`` if the cache was kept, else the changed paths (``["(no record)"]`` for a cache
    with no record).  Afterwards the cache holds a record of ``digest``.
    """
    record = cache / CACHE_RECORD
    old: dict | None = None
    if record.is_file():
        try:
            old = json.loads(record.read_text())
        except (OSError, ValueError):
            old = None
    if old is not None and old.get("digest") == digest:
        return None
    why = book_state.changed(old.get("files", {}), files) if old else ["(no record)"]
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    record.write_text(json.dumps({"digest": digest, "files": files}, indent=0) + "\n")
    return why


def _config_inited(app: Sphinx, config: Config) -> None:
    root = Path(app.srcdir)
    digest, files = execution_inputs(root)
    _state["digest"], _state["files"] = digest, files
    # Stored with the environment: a change means a fresh environment, every page read again.
    config.qd_execution_inputs = digest

    url = (config.html_theme_options or {}).get("repository_url", "")
    subs = dict(config.myst_substitutions or {})
    subs.setdefault("repository_url", url)
    subs.setdefault("repository_link", f"<{url}>" if url else "")
    config.myst_substitutions = subs


def _builder_inited(app: Sphinx) -> None:
    nb_config = getattr(app.env, "mystnb_config", None)
    if nb_config is None or nb_config.execution_mode != "cache":
        return
    cache = Path(nb_config.execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
    why = refresh_cache(cache, _state["digest"], _state["files"])
    if why is not None:
        shown = ", ".join(why[:5]) + (f" and {len(why) - 5} more" if len(why) > 5 else "")
        logger.info(
            f"[qd] jupyter-cache emptied ({cache}): the notebooks' inputs changed: {shown}"
        )
    else:
        logger.info(
            "[qd] jupyter-cache kept: data/, models/, figures/ unchanged since it was filled"
        )


def prune_mathjax(outdir: Path, mathjax_path: str) -> list[str]:
    """Remove the combined MathJax components other than ``mathjax_path``'s from
    ``outdir/_static/mathjax``; return the names removed."""
    if "://" in mathjax_path or mathjax_path.startswith("//"):
        return []  # MathJax from elsewhere: nothing was copied
    folder = outdir / "_static" / "mathjax"
    used = Path(mathjax_path).name
    removed = []
    for f in sorted(folder.glob("*.js")) if folder.is_dir() else []:
        if _COMBINED.match(f.name) and f.name != used:
            f.unlink()
            removed.append(f.name)
    return removed


def _build_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None:
        return  # Sphinx deletes its environment itself after an error
    if app.builder.format == "html":
        removed = prune_mathjax(Path(app.outdir), app.config.mathjax_path or "")
        if removed:
            logger.info(
                f"[qd] MathJax: kept {app.config.mathjax_path}, removed {len(removed)} unused bundles"
            )
    warnings = getattr(app, "_warncount", 0)
    # -W sets warningiserror; -W --keep-going sets keep_going instead (Sphinx 7).
    strict = getattr(app, "warningiserror", False) or getattr(app, "keep_going", False)
    if warnings and strict:
        env_pickle = Path(app.doctreedir) / "environment.pickle"
        env_pickle.unlink(missing_ok=True)
        logger.info(
            "[qd] the build warned: Sphinx's saved environment deleted, so the next build reads "
            "every page again and repeats the warnings"
        )


def setup(app: Sphinx) -> dict:
    app.add_config_value("qd_execution_inputs", "", "env")
    app.connect("config-inited", _config_inited)
    # After myst-nb's own builder-inited handler has resolved the cache's path.
    app.connect("builder-inited", _builder_inited, priority=900)
    # After sphinx-mathjax-offline's build-finished handler has copied MathJax.
    app.connect("build-finished", _build_finished, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
