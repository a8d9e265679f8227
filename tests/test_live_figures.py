"""figures.live: declarations, the grid, the browser's entry point, and the
standard-library-only rule for every function that runs in the browser."""

from __future__ import annotations

import html
import importlib
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest

from figures import live as L
from figures.live import Live, Number, Range, Select
from figures.live.runtime import rounded

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_live_bundle  # noqa: E402


def declared() -> dict[str, Live]:
    """Every module-level Live declaration in the live modules, plus the
    ones a chapter makes from data (with representative data)."""
    found = {}
    for name in L.LIVE_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, Live):
                found[f"{name}.{attr}"] = value
    from figures.chapters.budget import page_cost_figure
    from figures.chapters.kernel import kernel_figure
    from figures.chapters.modes import mean_median_figure
    from figures.chapters.windows import window_live_figure
    from models.validation.wan import KB, bound_table

    found["figures.chapters.modes.mean_median_figure"] = mean_median_figure(204.5)
    found["figures.chapters.budget.page_cost_figure"] = page_cost_figure(4.82)
    found["figures.chapters.windows.window_live_figure"] = window_live_figure(bound_table(), KB)
    found["figures.chapters.kernel.kernel_figure"] = kernel_figure()
    found["figures.chapters.control.loop_figure"] = _loop_figure()
    return found


def _loop_figure() -> Live:
    """Chapter 10's figure with the thesis's plant and settings."""
    from figures.chapters.control import loop_figure
    from models.control import thesis as th
    from models.validation import throttling as VT

    return loop_figure(
        th.thesis_plant(),
        VT.LOOP_SCHEDULE,
        th.controller_parameters("reg_pl"),
        {"section 4.4": th.text_ladder(), "listing B.2": th.listed_ladder()},
        VT.LOOP_SEED,
        VT.LOOP_TRANSIENT_S,
        th.MB,
    )


def test_every_live_module_imports_without_the_missing_packages():
    assert build_live_bundle.check_standard_library_only() == list(L.LIVE_MODULES)


def test_functions_give_identical_numbers_without_the_missing_packages():
    """The browser has no NumPy, SymPy, pandas: with them blocked, every
    declared figure's first view equals the normal import's, bit for bit."""
    specs = {k: v.spec_json() for k, v in declared().items()}
    out = build_live_bundle.run_blocked(
        "\n".join(
            [
                "from figures.live import evaluate_json",
                "specs = json.loads(sys.stdin.read())",
                "print(json.dumps({k: evaluate_json(s) for k, s in specs.items()}))",
            ]
        ),
        stdin=json.dumps(specs),
    )
    assert out.returncode == 0, out.stderr
    blocked = json.loads(out.stdout)
    here = {k: json.loads(json.dumps(L.evaluate_json(s))) for k, s in specs.items()}
    assert blocked == here


@pytest.mark.parametrize("name", sorted(declared()))
def test_grid_is_the_function_rounded(name):
    spec = declared()[name]
    fig = spec.figure() if name != "figures.chapters.bottleneck.IOPS_QD" else None
    if fig is None:  # 360 ring runs: check one off-default point instead
        exact = spec.evaluate(iosize=512, cp_us=30.0)
        assert exact["traces"][1]["y"][-1] * 1e3 * 30e-6 == pytest.approx(
            1, rel=0.02
        )  # client bound: 1/CP
        assert "neither [1] nor [2]" in exact["title"]
        assert len(exact["traces"]) == 3  # no threshold line
        return
    default = fig.frame()
    assert default == rounded(spec.evaluate(), spec.digits)
    assert fig.grid_size == len(list(fig.frames))
    # The browser's entry point returns the same numbers, unrounded.
    payload = {**spec.spec_json(), "values": {}}
    assert json.loads(L.browser_call(json.dumps(payload))) == json.loads(
        json.dumps(spec.evaluate())
    )


def test_page_html_carries_the_spec():
    from figures.chapters.wire import WIRE_TIME

    fig = WIRE_TIME.figure()
    page = fig.to_html()
    assert 'data-live="figures.chapters.wire:wire_time_curve"' in page
    data = re.search(
        r'<script type="application/json" id="ch2-wire-time-'
        r'data">(.*?)</script>',
        page,
        re.S,
    ).group(1)
    spec = json.loads(data)
    assert spec["function"] == "figures.chapters.wire:wire_time_curve"
    assert spec["frames"][spec["default"]] == fig.frame()
    assert [c["name"] for c in spec["controls"]] == ["mtu", "gbps"]
    assert spec["exact"] is True
    # Off the grid: the function, coerced by the page's controls.
    off = L.evaluate_json({**spec, "values": {"mtu": 2000.4, "gbps": 3.3}})
    assert off["traces"][0]["name"] == "wire time, MTU 2000"
    assert 'min="576" max="65536"' in html.unescape(page)


def test_values_are_checked_and_coerced():
    from figures.chapters.bottleneck import IOPS_QD

    spec = IOPS_QD.spec_json()
    with pytest.raises(ValueError, match="sp_us"):
        L.evaluate_json({**spec, "values": {"sp_us": 61}})
    with pytest.raises(ValueError, match="no control named"):
        L.evaluate_json({**spec, "values": {"nope": 1}})
    with pytest.raises(ValueError, match="function"):
        L.evaluate_json({**spec, "function": "os:system"})
    iosize = IOPS_QD.controls[0]
    assert iosize.coerce(1000.4) == 1000 and isinstance(iosize.coerce(7.0), int)
    assert IOPS_QD.controls[1].coerce(16) == 16.0


def _f(x: float) -> dict:  # not in a figures module
    return {"traces": []}


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Range("a b", "A", 0, 1, [0, 1], 0), "name"),
        (lambda: Range("a", "A", 1, 1, [1, 1], 1), "min must be below max"),
        (lambda: Range("a", "A", 0, 1, [0], 0), "at least two"),
        (lambda: Range("a", "A", 0, 1, [0, 2], 0), "outside"),
        (lambda: Range("a", "A", 0, 1, [0, 1], 0.5), "not on the grid"),
        (lambda: Range("a", "A", 0, 1, [1, 0], 0), "increase"),
        (lambda: Range("a", "A", 0, 10, [0, 1], 0, log=True), "positive"),
        (lambda: Number("a", "A", 0, 10, [0.5, 1], 1, integer=True), "whole"),
        (lambda: Select("a", "A", ["x"], "x"), "at least two"),
        (lambda: Select("a", "A", ["x", "y"], "z"), "not one of"),
        (lambda: Live("Bad", _f, [Range("x", "X", 0, 1, [0, 1], 0)]), "fig_id"),
        (lambda: Live("ok", _f, [Range("x", "X", 0, 1, [0, 1], 0)]), "figures module"),
    ],
)
def test_bad_declarations_name_the_problem(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_live_rejects_fixed_that_json_would_change():
    from figures.chapters.wire import wire_time_curve

    control = Range("mtu", "MTU", 576, 9000, [576, 9000], 576, integer=True)
    with pytest.raises(ValueError, match="JSON"):
        Live("x", wire_time_curve, [control], fixed={"max_bytes": (1, 2)})
    with pytest.raises(ValueError, match="also controls"):
        Live("x", wire_time_curve, [control], fixed={"mtu": 1500})


def test_frames_are_found_by_control_name_or_label():
    from figures.chapters.wire import WIRE_TIME, wire_time_curve

    fig = WIRE_TIME.figure()
    assert fig.live is WIRE_TIME and fig.axes == {
        "MTU (bytes)": [576, 1500, 4000, 9000],
        "link (Gb/s)": [0.1, 1.0, 10.0, 25.0, 100.0],
    }
    assert fig.grid_size == 20 == len(fig.frames) and fig.compute_seconds > 0
    at_9000 = rounded(wire_time_curve(9000, 1.0, 20000), WIRE_TIME.digits)
    assert fig.frame(mtu=9000) == at_9000  # a name; the other control at its first view
    assert fig.frame(**{"MTU (bytes)": 9000, "gbps": 1.0}) == at_9000  # a label and a name
    assert fig.frame() == fig.frames["1,1"]
    with pytest.raises(ValueError, match="not on the grid"):
        fig.frame(mtu=2000)
    with pytest.raises(ValueError, match="no control named"):
        fig.frame(nope=1)


def test_every_chapter_module_is_live():
    """Each module of figures/chapters is listed in LIVE_MODULES (so its
    function may run in the browser), and each listed module exists."""
    chapters = {
        f"figures.chapters.{p.stem}"
        for p in (ROOT / "figures" / "chapters").glob("*.py")
        if p.stem != "__init__"
    }
    assert len(chapters) >= 12  # at least each chapter's main figure
    assert chapters == {m for m in L.LIVE_MODULES if m.startswith("figures.chapters.")}
    assert set(L.LIVE_MODULES) - chapters == {"figures.live"}


def test_bundle_holds_the_live_modules(tmp_path):
    out = tmp_path / "b.zip"
    build_live_bundle.build(out)
    names = zipfile.ZipFile(out).namelist()
    for module in L.LIVE_MODULES:
        path = module.replace(".", "/")
        assert f"{path}.py" in names or f"{path}/__init__.py" in names, module
    assert "models/ring.py" in names and "models/analytic/numbers.py" in names
    assert {f"figures/live/{m}.py" for m in ("controls", "runtime", "page", "image")} <= set(names)
    assert not any(n.startswith("models/measure/") for n in names)
    first = out.read_bytes()
    build_live_bundle.build(out)
    assert out.read_bytes() == first  # reproducible


def test_no_live_figure_id_is_also_a_label_of_the_book():
    """A figure's id is an HTML id on its page; a MyST label ``(x)=`` is too
    (an empty span), so the same name twice makes two elements with one id
    and the page's script (and the browser tests) find the wrong one."""
    book = Path(__file__).resolve().parents[1] / "book"
    labels = {
        m.group(1)
        for page in book.glob("*.md")
        for m in re.finditer(r"^\(([\w-]+)\)=$", page.read_text(), re.M)
    }
    ids = {live.fig_id for live in declared().values()}
    assert ids and labels
    assert not ids & labels, f"live figure ids that are also labels: {sorted(ids & labels)}"


def test_a_grid_is_computed_once_per_cache_and_read_back_equal(tmp_path, monkeypatch):
    """With the simulation cache's folder set (the Makefile's builds), a figure's frames are
    kept there: the next process that builds the same declaration reads them, equal to the
    ones computed; another declaration (other digits) or no folder computes them again."""
    import dataclasses

    from figures.chapters.wire import WIRE_TIME
    from figures.live import runtime
    from models.kernel import simcache

    computed = []
    frames = runtime._frames

    def counting(live):
        computed.append(live.digits)
        return frames(live)

    monkeypatch.setattr(runtime, "_frames", counting)
    monkeypatch.setenv(simcache.CACHE_ENV, str(tmp_path))
    first, again = WIRE_TIME.figure(), WIRE_TIME.figure()
    assert computed == [WIRE_TIME.digits] and again.frames == first.frames
    assert again.compute_seconds == first.compute_seconds > 0  # what computing them took
    coarse = dataclasses.replace(WIRE_TIME, digits=2)
    assert coarse.figure().frames != first.frames and len(computed) == 2
    monkeypatch.delenv(simcache.CACHE_ENV)
    assert WIRE_TIME.figure().frames == first.frames and len(computed) == 3
