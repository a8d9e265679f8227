"""tools/fit_wake_late.py: the shipped share is the one the tool picks on the training rows
(it beats no late wake-ups there), and the tool never reads a test row."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import fit_wake_late as T  # noqa: E402

from models.kernel import load_kernel_run  # noqa: E402
from models.sim import hostprofile  # noqa: E402
from models.validation import fidelity as FID  # noqa: E402


@pytest.fixture(scope="module")
def training():
    run = load_kernel_run(prefix=FID.FIELD_PREFIX)
    return run, T.training_rows(run)


def test_the_shipped_share_beats_none_on_the_training_rows(training):
    run, rows = training
    share = hostprofile.shipped().host["wake_late_share"]
    assert share in T.GRID
    with_late, without = T.score(share, run, rows), T.score(0.0, run, rows)
    assert with_late["right"] > without["right"]
    assert with_late["verdicts"] > without["verdicts"]


def test_only_training_rows_are_scored(training):
    _, rows = training
    assert (FID.roles(rows) == "train").all() and len(rows) < 200
