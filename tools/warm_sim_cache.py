"""Simulate, once, the field evaluations that a chapter and a test module both ask for, so that
``make test``'s two pytest workers read them from the simulation cache instead of each
simulating them at the same time.

    QUEUE_DEPTH_SIM_CACHE=_build/sim_cache .venv/bin/python tools/warm_sim_cache.py [NAME ...]

Chapter 9b and ``tests/test_field5.py`` both evaluate the fifth machine's field sweep under its
eight models (:func:`models.validation.field5.evaluate`: minutes on two CPUs), and chapter 9d and
``tests/test_field6.py`` the sixth machine's under two (:mod:`models.validation.field6`), and
chapter 9d and ``tests/test_machine7.py`` the seventh machine's sample under four
(:mod:`models.validation.machine7`), and chapter 9e and ``tests/test_machine8.py`` the eighth
machine's under four (:mod:`models.validation.machine8`); under pytest-xdist
they ran side by side, each with two forked processes, so both CPUs simulated every row twice.
A simulation is a pure function of its scenario and of ``models``' code, and the cache
(:mod:`models.kernel.simcache`) is keyed on both, so filling it first changes no number: the two
then read the same summaries this run wrote.  The evaluations run in :func:`EVALUATIONS`' order;
with names, only those.  Without the cache's folder set it does nothing (and says so).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.kernel import simcache  # noqa: E402


def _field5() -> None:
    from models.validation import field5 as F5

    F5.evaluate()


def _field6() -> None:
    from models.validation import field6 as F6

    F6.lateness_table(F6.evaluate())  # the on-time rows and each lateness's too


def _machine7() -> None:
    from models.validation import machine7 as M7

    M7.evaluate()
    M7.sixth_with_wait()  # (the sixth machine's sweep with the wait: chapter 9d)


def _machine8() -> None:
    from models.validation import machine8 as M8

    M8.evaluate()


#: The shared evaluations, by name: each simulates its rows through the cache.
EVALUATIONS: dict[str, Callable[[], None]] = {
    "field5": _field5,
    "field6": _field6,
    "machine7": _machine7,
    "machine8": _machine8,
}


def main(argv: list[str] | None = None) -> int:
    names = list(sys.argv[1:] if argv is None else argv) or list(EVALUATIONS)
    unknown = [n for n in names if n not in EVALUATIONS]
    if unknown:
        print(f"warm_sim_cache.py: unknown evaluation(s) {unknown}; known: {list(EVALUATIONS)}")
        return 2
    if simcache.folder() is None:
        print(f"warm_sim_cache.py: {simcache.CACHE_ENV} is not set, nothing to warm")
        return 0
    for name in names:
        start = time.monotonic()
        EVALUATIONS[name]()
        print(f"warm_sim_cache.py: {name} in {time.monotonic() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
