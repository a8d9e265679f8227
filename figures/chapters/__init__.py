"""The live figures of the chapters: one module per figure (each chapter's
main figure, and a few more), each listed in
``figures.live.LIVE_MODULES``.

* ``flight`` (chapter 1) -- RTT and TPT against QD, the ring simulation.
* ``wire`` (2) -- wire time of one message against its size.
* ``bottleneck`` (3) -- IOPS against QD under the bound, with the
  thresholds of inequalities [1] and [2].
* ``nagle`` (4) -- Nagle against TCP_NODELAY, the packet simulator.
* ``delack`` (5) -- a response written in two ``send()`` calls, and fixes.
* ``sequence`` (5) -- one operation of that response as a time-sequence
  diagram (from ``figures.sequence``).
* ``simulator`` (6) -- the packet simulator under the operational bound.
* ``modes`` (7) -- mean and median of a latency with two modes.
* ``budget`` (8) -- the wall-clock cost of a page against QD.
* ``kernel`` (9) -- a measured kernel beside the packet simulator.
* ``control`` (10) -- the closed throttling loop against time.
* ``windows`` (11) -- ``min(W/RTT, C)`` against Charrouf's runs.
* ``iscsi`` (12) -- one iSCSI command as a ladder, and its throughput bound.
* ``r2t`` (12) -- the latency of one write, MaxOutstandingR2T as a window.

Each module imports with the standard library alone (its figure functions
run in the reader's browser; see :mod:`figures.live`).  The static
companions drawn with Matplotlib (``iscsi.draw_exchange``,
``kernel.plot_kernel_vs_sim``) import Matplotlib inside themselves.
"""
