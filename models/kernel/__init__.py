"""The real kernel beside the models: a harness run turned into simulator scenarios (chapter 9).

* :mod:`models.kernel.runs` -- load a run of the harness (:mod:`models.measure`), fit the one-number
  host, build each row's scenario and simulate it (the scenario code is standard library only).
* :mod:`models.kernel.tables` -- the kernel's and the simulator's numbers side by side, and the views
  chapter 9 prints (stall maps, thresholds, repeat spread).
* :mod:`models.kernel.calibrate` -- the calibrated host cost model fitted on a run (NumPy, SciPy).
* :mod:`models.kernel.simcache` -- an opt-in disk cache of the rows' simulated summaries, shared by
  the processes of one build.
* :mod:`models.kernel.stall_end` -- where a Nagle server's delayed-ACK stall ends with a TCP_NODELAY
  client, from a host profile (chapter 4; ``python -m models.measure stall-end``).

The names of ``runs`` and ``tables`` are available here: ``from models import kernel as KR``.
"""

from __future__ import annotations

from .runs import *  # noqa: F403
from .runs import __all__ as _runs_all
from .tables import *  # noqa: F403
from .tables import __all__ as _tables_all

__all__ = [*_runs_all, *_tables_all]
