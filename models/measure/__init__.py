"""Measure the book's scenarios through the real kernel TCP stack (``python -m models.measure --help``).

Modules
-------
* :mod:`~models.measure.build` -- compiles ``csrc/qdperf.c`` (client and server) into ``_build/measure/``.
* :mod:`~models.measure.netns` -- links: host loopback, a private loopback, or a veth pair between two
  network namespaces (MTU, optional tbf rate limit), always removed afterwards.
* :mod:`~models.measure.capture` -- tcpdump capture when available, pcap parsing with dpkt.
* :mod:`~models.measure.runner` -- one bounded run: :class:`RunSpec` in, :class:`RunResult` out.
* :mod:`~models.measure.sweep` -- the standard sweep and the tidy tables it writes to ``data/``.
* :mod:`~models.measure.sysinfo` -- kernel version, HZ, sysctls, MTU and offloads for the metadata.
"""

from .netns import Link, LinkSpec
from .runner import RunResult, RunSpec, run_one

__all__ = ["Link", "LinkSpec", "RunSpec", "RunResult", "run_one"]
