"""Measured values live in ``data/`` only.

A value a source measured (Butterfield's 275.7 us round trip, his 63,000
IOPS, the gaps of Flory's trace, the busy-count table) must reach the code
through :func:`models.data.load`, never as a number typed into it: a typed
copy does not change when the dataset is corrected, and a test that
compares the simulator with a typed copy checks nothing the dataset says.

This test scans the Python of ``models/``, ``figures/`` and ``tests/`` for
such numbers.  The list of forbidden values is read from the datasets
themselves, limited to distinctive ones (a small integer such as 1, 2 or 8
is everywhere for other reasons):

* every *measured* row of ``butterfield2017_rtt_breakdown``;
* the CPU-bound rates of ``butterfield2017_cpu_bound_iops`` and the fast
  rates of ``flory2001_thresholds`` (four digits or more);
* the gaps of ``flory2001_trace`` with four significant digits or more,
  also rounded to three (``2.29e-3`` is a copy of 0.002295), and the
  trace's sequence and ACK numbers;
* each row of the busy-count table with three or more non-zero shares,
  as the same numbers in the same order within one statement;
* ``approx(v`` where ``v`` is a rate in IOPS a source states
  (``butterfield2017_stated``, ``flory2001_thresholds``).

Only number tokens count (found with :mod:`tokenize`), in any unit a
prefix away (``275.7e-6`` is 275.7 us in seconds) and any spelling
(``63_000``, ``63e3``); comments and docstrings may quote the sources.  A hit is
reported as ``file:line``.
"""

from __future__ import annotations

import ast
import functools
import io
import math
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from models.data import load

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("models", "figures", "tests")
#: Powers of ten a measured value may be typed in: its own unit, or a
#: prefix away (s, ms, us, ns ... and back).  A value of fewer than three
#: significant digits only counts as typed in its own unit (63,000 IOPS is
#: not 6.3 us).
SCALES = (0, 3, -3, 6, -6, 9, -9, 12, -12)


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    text: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text.strip()}  ({self.why})"


def _sig_digits(x: float) -> int:
    """Significant digits of ``x`` (trailing zeros of a whole number do
    not count: 63000 has two)."""
    digits = f"{abs(x):.12g}".split("e")[0].replace(".", "").strip("0")
    return len(digits)


def _round_sig(x: float, n: int, up: bool) -> float:
    e = math.floor(math.log10(abs(x))) - n + 1
    f = math.ceil if up else math.floor
    return f(x / 10**e) * 10**e


@functools.cache
def forbidden_values() -> dict[float, str]:
    """``{value: where it comes from}``, read from the datasets."""
    out: dict[float, str] = {}
    rtt = load("butterfield2017_rtt_breakdown")
    for r in rtt[rtt["kind"] == "measured"].itertuples():
        out[float(r.value_us)] = f"butterfield2017_rtt_breakdown {r.quantity}"
    cpu = load("butterfield2017_cpu_bound_iops")
    for v in cpu["throughput_iops"]:
        out[float(v)] = "butterfield2017_cpu_bound_iops"
    th = load("flory2001_thresholds")
    for v in th["rate_packets_per_s"].dropna():
        if v >= 1000:
            out[float(v)] = "flory2001_thresholds"
    trace = load("flory2001_trace")
    for r in trace.itertuples():
        where = f"flory2001_trace {r.trace} packet {r.number}"
        gap = float(r.inter_packet_s)
        if gap and _sig_digits(gap) >= 4:
            out[gap] = where
            for up in (False, True):
                out[_round_sig(gap, 3, up)] = where + " (rounded)"
        for v in (r.seq, r.ack):
            if v >= 100_000:
                out[float(v)] = where
    return out


@functools.cache
def forbidden_rows() -> dict[tuple[float, ...], str]:
    """Busy-count rows with three or more non-zero shares, in count order."""
    t = load("butterfield2017_busy_count").sort_values("busy_count")
    out = {}
    for (sock, qd), g in t.groupby(["socket_option", "queue_depth"]):
        row = tuple(float(v) for v in g["cycles_pct"] if v)
        if len(row) >= 3:
            out[row] = f"butterfield2017_busy_count {sock} QD {qd}"
    return out


@functools.cache
def stated_rates() -> dict[float, str]:
    """Rates in IOPS the sources state, for the ``approx(`` check."""
    st = load("butterfield2017_stated")
    out = {
        float(r.value): f"butterfield2017_stated {r.quantity}"
        for r in st.itertuples()
        if r.unit == "iops"
    }
    th = load("flory2001_thresholds")
    for v in th["rate_packets_per_s"].dropna():
        out.setdefault(float(v), "flory2001_thresholds")
    return out


def _number(token: str) -> float | None:
    try:
        v = ast.literal_eval(token)
    except (ValueError, SyntaxError):
        return None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _matches(x: float, values: dict[float, str]) -> str | None:
    """Where ``x`` comes from, if it is a forbidden value at some scale."""
    if x == 0:
        return None
    for v, where in values.items():
        for k in SCALES if _sig_digits(v) >= 3 else (0,):
            if math.isclose(x, v * 10.0**k, rel_tol=1e-9):
                return where
    return None


def _is_subsequence(row: tuple[float, ...], numbers: list[float]) -> bool:
    it = iter(numbers)
    return all(any(math.isclose(n, v) for n in it) for v in row)


def scan_source(text: str, path: str = "<string>") -> list[Hit]:
    """The forbidden literals in one Python source."""
    lines = text.splitlines()
    hits: list[Hit] = []
    values, rows, rates = forbidden_values(), forbidden_rows(), stated_rates()
    statement: list[tuple[float, int]] = []  # numbers of the logical line
    recent: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NUMBER:
            x = _number(tok.string)
            if x is not None:
                line = tok.start[0]
                where = _matches(x, values)
                if where:
                    hits.append(Hit(path, line, lines[line - 1], where))
                if (
                    len(recent) >= 2
                    and recent[-1].string == "("
                    and recent[-2].string == "approx"
                    and x in rates
                ):
                    hits.append(Hit(path, line, lines[line - 1], rates[x]))
                statement.append((x, line))
        elif tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            numbers = [x for x, _ in statement]
            for row, where in rows.items():
                if _is_subsequence(row, numbers):
                    line = statement[0][1]
                    hits.append(Hit(path, line, lines[line - 1], where))
            statement = []
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            recent = [*recent[-1:], tok]
    return hits


def scan(paths: Iterable[Path]) -> list[Hit]:
    hits: list[Hit] = []
    for p in paths:
        hits += scan_source(p.read_text(), str(p.relative_to(ROOT)))
    return hits


def scanned_files() -> list[Path]:
    return sorted(p for d in SCANNED for p in (ROOT / d).rglob("*.py"))


def test_no_measured_value_is_typed_into_the_code():
    hits = scan(scanned_files())
    assert not hits, "measured values typed into the code (read them from data/):\n" + "\n".join(
        map(str, hits)
    )


# The scanner itself: each kind of copy must be found.  The literals are
# built from the datasets, so this file holds none of them.


def _rtt_us() -> float:
    t = load("butterfield2017_rtt_breakdown").set_index("quantity")
    return float(t.loc["RTT", "value_us"])


def _iops() -> int:
    cpu = load("butterfield2017_cpu_bound_iops")
    return int(cpu["throughput_iops"].iloc[0])


def _stall_rounded() -> float:
    t = load("flory2001_trace").set_index(["trace", "number"])
    gap = float(t.loc[("payload_1447", 6), "inter_packet_s"])
    return _round_sig(gap, 3, up=False)


def _busy_row() -> str:
    row = max(forbidden_rows(), key=len)
    return ", ".join(f"{k}: {int(v)}" for k, v in enumerate(row, start=1))


COPIES = {
    "plain": lambda: f"rtt = {_rtt_us()!r}\n",
    "in seconds": lambda: f"assert r.rtt == approx({_rtt_us()!r}e-6)\n",
    "underscores": lambda: f"iops = {_iops():_}\n",
    "exponent": lambda: f"iops = {_iops() // 1000}e3\n",
    "rounded": lambda: f"stall = {_stall_rounded():.2e}\n",
    "table row": lambda: f"shares = {{{_busy_row()}}}\n",
    "approx": lambda: f"assert iops == pytest.approx({min(stated_rates())!r})\n",
}


@pytest.mark.parametrize("kind", COPIES)
def test_the_scanner_finds_a_typed_copy(tmp_path, kind):
    src = COPIES[kind]()
    f = tmp_path / "copy.py"
    f.write_text("import pytest\n\n" + src)
    hits = scan_source(f.read_text(), "copy.py")
    assert hits and hits[0].line == 3, src
    assert str(hits[0]).startswith("copy.py:3: ")


def test_the_scanner_leaves_comments_strings_and_small_numbers():
    rtt = _rtt_us()
    src = f'"""the source measured {rtt} us"""\n# {rtt} us\nqd = range(1, 9)\nx = 2 * 8\n'
    assert scan_source(src) == []
