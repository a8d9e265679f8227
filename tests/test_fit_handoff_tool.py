"""tools/fit_handoff.py: the split keeps every two-CPU cost, and the shipped profile is the tool's
own result (its one-CPU share is the grid's best on the bundled placement sweep, inside the grid)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models.sim import hostprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import fit_handoff  # noqa: E402


def test_a_split_keeps_the_two_cpu_totals():
    p = hostprofile.shipped()
    total = hostprofile.handoff_totals(p)
    for k in (0.2, 0.5, 1.0):
        q = hostprofile.handoff_split(p, k)
        assert hostprofile.handoff_totals(q) == pytest.approx(total, rel=1e-12)
        assert q.host["proc_s"] == pytest.approx(k * total[0], rel=1e-12)
    assert hostprofile.handoff_split(p, 1.0).host["handoff_cpu_s"] == 0.0


def test_the_shipped_split_is_the_fit_and_not_at_a_bound():
    p = hostprofile.shipped()
    got = fit_handoff.fit(p)
    share = p.host["proc_s"] / hostprofile.handoff_totals(p)[0]
    assert got["k"] == pytest.approx(share, abs=1e-9)
    assert not got["at_bound"]
    assert all(abs(r - 1) < 0.05 for r in got["ratios"].values())
    # a message costs at least a read: the grid starts at the measured recv() cost
    assert got["k"] * hostprofile.handoff_totals(p)[0] >= got["floor_s"]
