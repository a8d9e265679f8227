"""Issue 24: every slider of every live figure moves by at least 1 % of its
span per step, so one press of an arrow key moves it visibly.

The span is in the slider's own unit: ``max - min`` on a linear slider,
``log10(max / min)`` decades on a log slider (``static/qd/live.js`` sets a
log slider's ``min``, ``max`` and ``step`` in decades).  The rule is
checked here on the page JSON of every declared live figure, independently
of the check in :class:`figures.live.Range`, and that check itself is
tested below.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from test_live_figures import declared

from figures.live import Number, Range
from figures.live.controls import MIN_STEP_FRACTION, control_from_json

ROOT = Path(__file__).resolve().parents[1]


def _sliders() -> list[tuple[str, dict]]:
    """(figure.control, the control's page JSON) for every slider."""
    found = []
    for name, live in declared().items():
        for c in live.spec_json()["controls"]:
            if c["kind"] == "range":
                found.append((f"{name}.{c['name']}", c))
    return found


SLIDERS = _sliders()


def test_the_live_figures_have_sliders():
    assert len(SLIDERS) >= 30, [n for n, _ in SLIDERS]


@pytest.mark.parametrize("name, c", SLIDERS, ids=[n for n, _ in SLIDERS])
def test_every_slider_steps_by_at_least_one_percent(name, c):
    if c["log"]:
        span = math.log10(c["max"]) - math.log10(c["min"])  # decades
    else:
        span = c["max"] - c["min"]
    fraction = c["step"] / span
    assert 0.01 * (1 - 1e-9) <= fraction <= 1, (
        f"{name}: step {c['step']} is {100 * fraction:.2f} % of the "
        f"slider's span {span:g} (range [{c['min']}, {c['max']}])"
    )
    if c["integer"] and not c["log"]:
        assert c["step"] == int(c["step"]), f"{name}: a whole step"
    # The browser rebuilds the control from this JSON: it must pass.
    assert control_from_json(c).to_json() == c


def test_live_js_uses_the_declared_step_on_every_slider():
    """live.js sets a slider's step from the JSON, linear or log (it once
    used 1/400 of a log slider's decades, whatever was declared)."""
    js = (ROOT / "static" / "qd" / "live.js").read_text()
    assert re.findall(r"slider\.step = ([^;]+);", js) == ["String(spec.step)"]


def test_min_step_fraction_is_one_percent():
    assert MIN_STEP_FRACTION == 0.01


@pytest.mark.parametrize(
    "kwargs, step",
    [
        ({"min": 1, "max": 60}, 1.0),  # 0.59 -> 1
        ({"min": 0, "max": 200}, 2.0),
        ({"min": 0, "max": 1}, 0.01),
        ({"min": 0.1, "max": 3}, 0.05),  # 0.029 -> 0.05
        ({"min": 1, "max": 256, "integer": True}, 5),  # 2.55 -> 5
        ({"min": 1, "max": 16, "integer": True}, 1),
        ({"min": 1, "max": 100000, "log": True}, 0.05),  # 5 decades
    ],
)
def test_default_steps(kwargs, step):
    lo, hi = kwargs["min"], kwargs["max"]
    rest = {k: v for k, v in kwargs.items() if k not in ("min", "max")}
    c = Range("x", "X", lo, hi, [lo, hi], lo, **rest)
    assert c.slider_step == pytest.approx(step, rel=1e-12)
    assert c.to_json()["step"] == c.slider_step


@pytest.mark.parametrize("cls", [Range, Number])
@pytest.mark.parametrize(
    "lo, hi, step, log, integer",
    [
        (1, 60, 0.1, False, False),
        (0, 200, 1.99, False, False),
        (1, 256, 1, False, True),  # QD 1-256 by 1: 0.4 %
        (1, 65536, 0.01, True, True),  # 0.01 of 4.8 decades: 0.2 %
    ],
)
def test_a_step_below_one_percent_is_refused(cls, lo, hi, step, log, integer):
    with pytest.raises(ValueError) as err:
        cls("x_us", "X (µs)", lo, hi, [lo, hi], lo, step=step, log=log, integer=integer)
    message = str(err.value)
    assert "x_us (X (µs))" in message  # the control
    assert f"[{lo!r}, {hi!r}]" in message  # its range
    assert "below 1 %" in message


@pytest.mark.parametrize(
    "lo, hi, step, log, integer, problem",
    [
        (0, 10, 11, False, False, "exceeds"),
        (1, 100, 2.5, True, False, "exceeds"),  # 2 decades
        (0, 1000, 12.5, False, True, "whole number"),
        (0, 10, 0, False, False, "below 1 %"),
        (0, 10, -1, False, False, "below 1 %"),
    ],
)
def test_other_bad_steps_are_refused(lo, hi, step, log, integer, problem):
    with pytest.raises(ValueError, match=problem):
        Range("x", "X", lo, hi, [lo, hi], lo, step=step, log=log, integer=integer)


def test_steps_at_one_percent_and_above_are_kept():
    assert Range("a", "A", 0, 1, [0, 1], 0, step=0.01).slider_step == 0.01
    assert Range("a", "A", 0.02, 1, [0.02, 1], 0.02, step=0.01).slider_step == 0.01
    log = Range("b", "B", 1, 1000, [1, 10], 1, step=0.03, log=True, integer=True)
    assert log.slider_step == 0.03  # decades, not bytes
    assert Range("c", "C", 1, 4096, [1, 8], 1, step=64, integer=True).slider_step == 64
