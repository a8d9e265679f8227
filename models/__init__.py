"""Models for the Queue Depth book: the package map.

Subpackages, bottom to top (each imports only those above it in this list, never below; the import
contracts in ``pyproject.toml`` check it with ``lint-imports``):

* :mod:`models.framing`, :mod:`models.checks` -- one home for each wire fact (header bytes, the MSS
  rule) and for the input checks that name a bad parameter.
* :mod:`models.sim` -- the counting-level TCP simulator: a scenario, an event loop, two endpoints,
  the Linux rules as one class per family (``models.sim.rules``), the exact fast-forward.
* :mod:`models.iscsi` -- iSCSI login keys and one command as an exchange of PDUs (RFC 7143).
* :mod:`models.data` -- the bundled measurements in ``data/`` (CSV + Frictionless sidecar) and their
  loader.
* :mod:`models.analytic` -- closed forms: ``symbolic`` (SymPy derivations of ``IOPS = QD/RTT``,
  inequalities [1]-[3], the Nagle bounds), ``numbers`` (the same as fast numbers), ``iscsi``,
  ``windows`` (window/RTT over distance) and ``modes``.
* :mod:`models.ring` -- the ring of single-server stages simulated exactly (Little's law, the bounds).
* :mod:`models.presets` -- the scenarios the chapters, figures and tests share.
* ``models.control`` -- the PID throttling loop and its shared-disk plant (chapter 10).
* :mod:`models.measure` -- the real-kernel harness: a C client/server over loopback or a veth pair.
* :mod:`models.kernel` -- a harness run turned into simulator scenarios, side-by-side tables and the
  calibrated host model (chapter 9).
* :mod:`models.validation` -- every model-versus-measurement comparison; nothing in ``models``
  imports it.

What runs in the reader's browser (Pyodide: standard library only, no NumPy, SymPy or pandas):
``framing``, ``checks``, ``sim``, ``iscsi``, ``ring``, ``presets``, ``analytic.numbers``,
``analytic.modes`` and the scenario half of ``kernel.runs``.  Everything else may use NumPy, SymPy,
pandas or SciPy, imported where it is used.  Above ``models`` sit ``figures`` (rendering only) and
the chapters in ``book/``.
"""

__version__ = "0.1.0"
