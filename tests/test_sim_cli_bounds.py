"""Every option of ``python -m models.sim`` walked with bad and extreme values: each is refused
with a one-line message naming it (exit status 2), quickly, never a traceback, a hang or a run
with the value ignored."""

from __future__ import annotations

import contextlib
import io
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.sim import PARTS
from models.sim.cli import main, option_names
from models.sim.params import MAX_RATE_BPS, MAX_SECONDS, MAX_SEND_BYTES
from models.sim.parts import MAX_OPS, MAX_QD

#: Bad values by kind of parameter (each must be refused).
BAD = {
    "count": ["-1", "2.5", "abc", "nan"],  # and one past the declared upper bound
    "bytes": ["-1", "0.5", "xyz"],
    "seconds": ["-1", "nan", "inf", "1e300", f"{MAX_SECONDS * 2:g}"],
    "rate": ["0", "-5", "nan", f"{MAX_RATE_BPS * 10:g}"],
    "fraction": ["1", "-0.1", "nan", "2"],
    "sizes": ["0", "a,b", f"48,{MAX_SEND_BYTES + 1}", "-3"],
    "legs": ["///", "48//48", "48", "x/y"],
    "curve": ["1e-3:2e-5", "2e-3:2e-5,1e-3:3e-5", "a:b,c:d", "1e-3:5,2e-3:1e-5", "1e-3"],
    "messages": ["///", "c:48/x:1@0", "s:48", "c:48/s:48@1", "c:48/c:48@0", "c:48"],
    "flag": ["maybe", "2"],
    "choice": ["no-such-value"],
}
#: Values that pass the option's own check but break a rule across fields (still refused).
TOGETHER = [
    ["--legs", "48/48", "--response-writes", "48,1024"],
    ["--setup-request-writes", "8"],
    ["--bucket-bytes", "100"],
    ["--qd", str(MAX_QD + 1)],
    ["--ops", str(MAX_OPS + 1)],
    ["--ops", "100000", "--response-writes", f"48,{MAX_SEND_BYTES}", "--fast-forward", "false"],
    ["--max-events", "1000", "--ops", "5000", "--fast-forward", "false"],
    ["--max-events", "1000", "--ops", "5000", "--server-nodelay", "true", "--jitter", "0.1"],
]


def _run(argv: list[str]) -> tuple[int, str, float]:
    err = io.StringIO()
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse refuses a value
            code = int(e.code or 0)
    return code, err.getvalue(), time.perf_counter() - t0


def _cases():
    for flag, (part, name) in option_names().items():
        spec = PARTS[part].specs()[name]
        values = list(BAD[spec.kind])
        if spec.kind in ("count", "bytes"):
            values.append(str(spec.high + 1))
        for value in values:
            yield flag, value


@pytest.mark.parametrize("flag,value", list(_cases()))
def test_bad_value_is_refused_quickly(flag: str, value: str) -> None:
    code, err, seconds = _run([flag, value])
    assert code == 2, (flag, value, err)
    last = err.strip().splitlines()[-1]
    assert flag.lstrip("-").split("-")[-1] in last.replace("_", "-") or "argument" in last, last
    assert "Traceback" not in err
    assert seconds < 5


@pytest.mark.parametrize("argv", TOGETHER)
def test_rules_across_fields(argv: list[str]) -> None:
    code, err, seconds = _run(argv)
    assert code == 2, (argv, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert seconds < 5


def test_every_option_has_bad_values_and_bounds() -> None:
    specs = [PARTS[p].specs()[n] for p, n in option_names().values()]
    assert {s.kind for s in specs} <= set(BAD)
    # Every whole-number option has a documented upper bound, shown in --help.
    assert all(s.high is not None for s in specs if s.kind in ("count", "bytes"))


@settings(max_examples=60, deadline=None)
@given(
    qd=st.integers(min_value=-10, max_value=10**9),
    ops=st.integers(min_value=-10, max_value=10**13),
    size=st.integers(min_value=-10, max_value=10**13),
    latency=st.floats(allow_nan=True, allow_infinity=True),
)
def test_any_numbers_answer_quickly(qd: int, ops: int, size: int, latency: float) -> None:
    """Whatever the numbers, an answer (a result or a one-line error) within seconds."""
    argv = [
        "--qd",
        str(qd),
        "--ops",
        str(ops),
        "--response-writes",
        f"48,{size}",
        "--latency-s",
        repr(latency),
        "--json",
    ]
    code, err, seconds = _run(argv)
    assert code in (0, 2)
    assert "Traceback" not in err
    assert seconds < 10, argv
