"""Closed-form results for request/response pipelines: derivations and the numbers they give.

* :mod:`models.analytic.symbolic` -- the ring of stages in SymPy (Butterfield 2017): ``IOPS = QD/RTT``,
  inequalities [1]-[3], the Nagle delay bounds, each derived from a drain-time condition.
* :mod:`models.analytic.numbers` -- the same results as functions of numbers (standard library only,
  so they run in the reader's browser): wire time, framing, bounds and thresholds.
* ``models.analytic.iscsi`` -- round trips and latency of one iSCSI command, in SymPy (chapter 12).
* :mod:`models.analytic.windows` -- window/RTT bounds over a long path (chapter 11), standard library.
* :mod:`models.analytic.modes` -- what a mean and a median report about bimodal latencies (chapter 7).

The names of ``symbolic`` and ``numbers`` are also available here (``from models import analytic as
A; A.qd_min_cpu_bound()``).  Importing this package does not import SymPy: a symbolic result imports
it on first use.  Code that runs in the browser imports :mod:`models.analytic.numbers` directly, which
``lint-imports`` holds free of NumPy, SymPy and pandas.
"""

from __future__ import annotations

from . import numbers, symbolic
from .numbers import *  # noqa: F403  (the numbers)
from .numbers import ArrayLike, Number
from .symbolic import *  # noqa: F403  (the derivations; SymPy on first use)

__all__ = [*numbers.__all__, *symbolic.__all__, "ArrayLike", "Number"]
