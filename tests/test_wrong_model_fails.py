"""Failing on purpose: a chapter run against a deliberately wrong model must stop with an AssertionError.

These tests prove the chapters' asserts can fail, so that a green test run means the models agree with
the derivations and the data, not merely that the cells ran.  Each test prepends one cell that breaks a
model in the running kernel, executes the chapter, and requires an ``AssertionError`` from a chapter cell
(not an import error or a crash).
"""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]


def _run_with_patch(chapter: str, patch: str) -> str:
    nb = jupytext.read(ROOT / "book" / chapter)
    nb.cells.insert(0, nbformat.v4.new_code_cell(patch))
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "book")}},
    )
    with pytest.raises(CellExecutionError) as err:
        client.execute()
    return str(err.value)


def test_wrong_cpu_bound_fails_chapter_3():
    """Inequality [2] with SL wrongly added to the refill path: chapter 3's derivation check must fail."""
    message = _run_with_patch(
        "03_bottleneck.md",
        """
import models.analytic as _A
_A.qd_min_cpu_bound = lambda: (_A.S.CL + _A.S.RTTmin + _A.S.SL) / _A.S.SP
""",
    )
    assert "AssertionError" in message and "qd_min_cpu_bound" in message


def test_wrong_framing_fails_chapter_2():
    """Ethernet overhead taken as 18 bytes (no preamble or gap): the wire-time checks must fail."""
    message = _run_with_patch(
        "02_time_on_the_wire.md",
        """
import models.framing as _F
_F.MAC_BYTES = 18
_F.FRAME_OVERHEAD_BYTES = _F.TCPIP_BYTES + 18
""",
    )
    assert "AssertionError" in message


def test_mismeasured_rtt_fails_chapter_1():
    """A ring that reports RTT 5 % long (a timestamp taken too early): Little's-law checks must fail.

    (A wrong stage time would not do: Little's law holds whatever the stage times are.)
    """
    message = _run_with_patch(
        "01_operations_in_flight.md",
        """
import models.ring as _R
_run = _R.Ring.run
def _bad_run(self, *a, **k):
    r = _run(self, *a, **k)
    r.rtts = [x * 1.05 for x in r.rtts]
    r.rtt_mean *= 1.05
    return r
_R.Ring.run = _bad_run
""",
    )
    assert "AssertionError" in message
