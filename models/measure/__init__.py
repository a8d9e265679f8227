"""Measure the book's scenarios through the real kernel TCP stack (``python -m models.measure --help``).

Modules
-------
* ``models.measure.build`` -- compiles ``csrc/qdperf.c`` (client and server) into ``_build/measure/``.
* :mod:`~models.measure.netns` -- links: host loopback, a private loopback, or a veth pair between two
  network namespaces (MTU, optional tbf rate limit), always removed afterwards.
* ``models.measure.capture`` -- tcpdump capture when available, pcap parsing with dpkt.
* :mod:`~models.measure.runner` -- one bounded run: :class:`~models.measure.runner.RunSpec` in,
  :class:`~models.measure.runner.RunResult` out.
* :mod:`~models.measure.sweep` -- the standard sweep and the tidy tables it writes to ``data/``.
* ``models.measure.sysinfo`` -- kernel version, HZ, sysctls, MTU and offloads for the metadata.
"""

from .netns import Link, LinkSpec
from .runner import RunResult, RunSpec, run_one

__all__ = ["Link", "LinkSpec", "RunSpec", "RunResult", "run_one"]
