"""Measure the book's scenarios through the real kernel TCP stack (``python -m models.measure --help``).

Modules
-------
* ``models.measure.build`` -- compiles ``csrc/qdperf.c`` (client and server) into ``_build/measure/`` in
  a checkout, else a folder private to the user; runs only a binary no other user could have written.
* :mod:`~models.measure.netns` -- links: host loopback, a private loopback, or a veth pair between two
  network namespaces (MTU, optional tbf rate limit), always removed afterwards; leftovers of a killed
  run are removed by the next run.
* ``models.measure.capture`` -- tcpdump capture when available, pcap parsing with dpkt.
* :mod:`~models.measure.runner` -- one bounded run: :class:`~models.measure.runner.RunSpec` in,
  :class:`~models.measure.runner.RunResult` out.
* ``models.measure.plan`` -- the standard sweep's runs; ``models.measure.schemas`` -- the tables'
  schemas, read from the bundled sidecars in ``data/``; ``models.measure.tables`` -- a run's rows.
* :mod:`~models.measure.sweep` -- runs a plan and writes the tidy tables (CSV + sidecar).
* ``models.measure.diagnose`` (with ``models.measure.streams`` and ``models.measure.pcap``) -- a
  capture to a verdict, cause and fix (``python -m models.measure analyze``).
* ``models.measure.cli`` and ``models.measure.cli_args`` -- the command line's parser, every flag
  with documented bounds and a one-line error.
* ``models.measure.sysinfo`` -- kernel version, HZ, sysctls, MTU and offloads for the metadata.
* ``models.measure.costs`` -- host-cost microbenchmarks (``csrc/qdcosts.c``: wake-up, ``send()``
  and ``recv()`` CPU); ``models.measure.profile`` -- ``calibrate``: the microbenchmarks, a short
  loopback sweep and a fit of the rest, written as a host profile
  (:mod:`models.sim.hostprofile`); ``models.measure.hostfields`` -- what a profile takes from the
  microbenchmarks as measured, and a profile moved to another machine by them.
"""

from .netns import Link, LinkSpec
from .runner import RunResult, RunSpec, run_one

__all__ = ["Link", "LinkSpec", "RunSpec", "RunResult", "run_one"]
