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

The chapters are scanned too (``book/*.md``): the Python of their code
cells as above, and the numbers of their prose, where a measured value
must arrive through ``{glue}`` from a cell that read it.  In the chapters,
and in the code of ``models/`` and ``figures/``, the MSS of the links the
book uses and its neighbours (1447, 1448, 1449 at MTU 1500, and so on:
:data:`MSS_VALUES`) are also literals: they come from
:func:`models.framing.mss`, so that a chapter about the 1448-byte boundary
cannot drift from the rule that makes it.  (Tests may type them as the
expected values of the rule.)
"""

from __future__ import annotations

import ast
import functools
import io
import math
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from models import framing
from models.data import load

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("models", "figures", "tests")
#: Where the MSS rule applies to Python (tests may type the rule's values).
MSS_SCANNED = ("models", "figures")
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


@functools.cache
def mss_values() -> dict[float, str]:
    """The MSS of the links the book uses (MTU 1500, 9000 and loopback's
    65536), with one byte either side: the sizes chapters 5 and 9 and
    Flory's traces turn on.  (The 2.4 loopback's 16384 and its neighbours
    are left out: 16 KiB is a common I/O size, and 16383 KiB is iSCSI's
    largest burst.)"""
    out: dict[float, str] = {}
    for mtu in (1500, 9000, 65536):
        m = framing.mss(mtu)
        for d in (-1, 0, 1):
            out[float(m + d)] = f"models.framing.mss({mtu}) {d:+d}"
    return out


#: The MSS rule's values, read from ``models.framing``.
MSS_VALUES = mss_values()


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


def scan_source(
    text: str, path: str = "<string>", mss: bool = False, first_line: int = 1
) -> list[Hit]:
    """The forbidden literals in one Python source (with ``mss``, the
    values of :data:`MSS_VALUES` too); ``first_line`` is the number of the
    source's first line in its file."""
    lines = text.splitlines()
    hits: list[Hit] = []
    shift = first_line - 1
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
                    hits.append(Hit(path, line + shift, lines[line - 1], where))
                if mss and x in MSS_VALUES:
                    hits.append(Hit(path, line + shift, lines[line - 1], MSS_VALUES[x]))
                if (
                    len(recent) >= 2
                    and recent[-1].string == "("
                    and recent[-2].string == "approx"
                    and x in rates
                ):
                    hits.append(Hit(path, line + shift, lines[line - 1], rates[x]))
                statement.append((x, line))
        elif tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            numbers = [x for x, _ in statement]
            for row, where in rows.items():
                if _is_subsequence(row, numbers):
                    line = statement[0][1]
                    hits.append(Hit(path, line + shift, lines[line - 1], where))
            statement = []
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            recent = [*recent[-1:], tok]
    return hits


def scan(paths: Iterable[Path], mss: bool = False) -> list[Hit]:
    hits: list[Hit] = []
    for p in paths:
        hits += scan_source(p.read_text(), str(p.relative_to(ROOT)), mss=mss)
    return hits


def scanned_files(dirs: Iterable[str] = SCANNED) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def test_no_measured_value_is_typed_into_the_code():
    hits = scan(scanned_files())
    assert not hits, "measured values typed into the code (read them from data/):\n" + "\n".join(
        map(str, hits)
    )


def test_no_mss_value_is_typed_into_models_or_figures():
    hits = scan(scanned_files(MSS_SCANNED), mss=True)
    assert not hits, "MSS values typed into the code (use models.framing.mss):\n" + "\n".join(
        map(str, hits)
    )


# ---- the chapters -----------------------------------------------------------------------------

_FENCE = re.compile(r"^(`{3,}|~{3,})")
#: Inline markup whose numbers are not prose: code, roles ({glue:text}`x`,
#: {cite:p}`x`, {ref}`x`), math, links and labels.
_INLINE = re.compile(
    r"\{[\w:-]+\}`[^`]*`|``[^`]*``|`[^`]*`|\$[^$]*\$|\]\([^)]*\)|https?://\S+|^\([\w-]+\)="
)
#: A number in prose: ``63,000``, ``275.7``, ``1448``.
_PROSE_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])|(?<![\w.,])\d+(?:\.\d+)?(?![\w])"
)


def book_parts(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """A MyST chapter's code cells ``[(first line, source)]`` and prose
    lines ``[(line, text)]`` (front matter, fenced blocks and directive
    options left out)."""
    lines = text.splitlines()
    cells: list[tuple[int, str]] = []
    prose: list[tuple[int, str]] = []
    i = 0
    if lines and lines[0] == "---":  # front matter
        i = lines.index("---", 1) + 1
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            code = line[len(fence) :].startswith("{code-cell}")
            j = i + 1
            while j < len(lines) and not lines[j].startswith(fence):
                j += 1
            body = lines[i + 1 : j]
            start = i + 2
            if code:
                while body and (body[0].startswith(":") or body[0].startswith("---")):
                    body, start = body[1:], start + 1  # cell options
                cells.append((start, "\n".join(body) + "\n"))
            elif fence.startswith("`") and not code and line[len(fence) :].startswith("{"):
                # a directive (exercise, solution, admonition ...): its text is prose
                prose += [(i + 2 + k, t) for k, t in enumerate(body) if not t.startswith(":")]
            i = j + 1
            continue
        if not line.startswith(":::") and not line.startswith(":"):
            prose.append((i + 1, line))
        i += 1
    return cells, prose


def scan_prose(lines: Iterable[tuple[int, str]], path: str) -> list[Hit]:
    """Measured values and MSS values written as numbers in prose."""
    hits: list[Hit] = []
    values = forbidden_values()
    for n, text in lines:
        bare = _INLINE.sub(" ", text)
        for m in _PROSE_NUMBER.finditer(bare):
            x = float(m.group().replace(",", ""))
            where = _matches(x, values) or MSS_VALUES.get(x)
            if where:
                hits.append(Hit(path, n, text, where))
    return hits


def scan_chapter(path: Path) -> list[Hit]:
    rel = str(path.relative_to(ROOT))
    cells, prose = book_parts(path.read_text())
    hits: list[Hit] = []
    for start, src in cells:
        hits += scan_source(src, rel, mss=True, first_line=start)
    return hits + scan_prose(prose, rel)


CHAPTERS = sorted((ROOT / "book").glob("*.md"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_measured_or_mss_value_is_typed_into_a_chapter(chapter):
    hits = scan_chapter(chapter)
    assert not hits, (
        "values typed into the chapter (glue them from a cell that reads data/ or "
        "models.framing):\n" + "\n".join(map(str, hits))
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


def test_the_chapter_scanner_finds_prose_and_cell_copies():
    rtt = _rtt_us()
    mss = framing.mss(1500)
    text = (
        "---\njupytext: {}\n---\n# Title\n\n"
        f"The round trip was {rtt} µs, and {mss}-byte payloads do not stall.\n"
        "Glued: {glue:text}`x` and `" + str(mss) + "` in code are fine.\n\n"
        "```{code-cell} ipython3\n:tags: [hide-cell]\n"
        f"sizes = ({mss - 1}, {mss})\n```\n"
    )
    cells, prose = book_parts(text)
    assert len(cells) == 1 and cells[0][0] == 11
    hits = scan_prose(prose, "ch.md")
    assert [h.line for h in hits] == [6, 6]
    cell_hits = scan_source(cells[0][1], "ch.md", mss=True, first_line=cells[0][0])
    assert [h.line for h in cell_hits] == [11, 11]
