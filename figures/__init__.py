"""Figures for the book's pages: the package map.

* :mod:`figures.live` -- the live-figure machinery: controls
  (``controls``), declaring and running a figure and its precomputed grid
  (``runtime``), the HTML and JSON a page carries for ``static/qd/live.js``
  (``page``), and a Matplotlib still of any point (``image``).
* :mod:`figures.chapters` -- the chapters' live figures, one module per
  figure (chapter 1's ``flight`` to chapter 12's ``iscsi``), each a
  standard-library function declared with ``figures.live.Live``.
* ``figures.tables``, ``figures.typeset``, ``figures.sequence`` --
  the static figures apart: comparison tables (pandas), SymPy typeset in the
  book's notation, and time-sequence diagrams of one connection from the
  packet simulator's traces (the arrows as standard-library data, which
  ``figures.chapters.sequence`` runs live; the drawing with Matplotlib).

``figures.live`` and ``figures.chapters`` (with what they import, such as
the data half of ``figures.sequence``) also run in the reader's browser
(Pyodide): standard library and the standard-library parts of ``models``
only, at import and in every figure function (Matplotlib, pandas and the
like are imported inside the build-only functions that need them).  Their
freedom from NumPy, SymPy and pandas is a ``lint-imports`` contract in
``pyproject.toml``, and ``tests/test_live_figures.py`` runs them with those
packages blocked.  ``tables`` needs pandas, ``typeset`` SymPy and the
drawings of ``sequence`` Matplotlib.

Layers, one direction only (``lint-imports`` checks it): ``models`` ->
``models.validation`` -> ``figures`` (rendering only; the comparisons through
their registry) -> ``book/``.
"""
