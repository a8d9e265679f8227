"""Issue 24: no legend covers data.  :func:`figures.legends.legend_overlaps`
finds a Matplotlib legend over data (and only then), and the static images
``figures/`` draws -- every live figure's still (``LiveFigure.plot``, the
printed book's version) and chapter 9's ``plot_kernel_vs_sim`` -- have
legends that cover nothing.  The live figures in the page are measured in
the browser at 390 px (``browser_tests/test_legends.py``)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from test_live_figures import declared  # noqa: E402

from figures.legends import legend_overlaps  # noqa: E402
from figures.live.image import draw  # noqa: E402


@pytest.fixture
def axes():
    fig, ax = plt.subplots(figsize=(4, 3))
    yield fig, ax
    plt.close(fig)


def test_a_legend_over_markers_is_found(axes):
    fig, ax = axes
    ax.plot([0.05, 0.5, 0.95], [0.95, 0.5, 0.05], "o", label="diagonal points")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")
    assert legend_overlaps(fig) == ['axes 1: legend covers "diagonal points" (1 points)']


def test_a_line_through_the_legend_is_found_between_its_vertices(axes):
    """Two vertices far apart, the segment between them under the legend."""
    fig, ax = axes
    ax.plot([0, 1], [0.9, 0.9], label="a line")
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper center")
    (problem,) = legend_overlaps(fig)
    assert 'legend covers "a line"' in problem


def test_bars_and_scatter_under_a_legend_are_found(axes):
    fig, ax = axes
    ax.bar([0, 1, 2], [1, 1, 1], label="bars")
    ax.scatter([1.8], [0.95], label="scatter")
    ax.legend(loc="upper right")
    found = " ".join(legend_overlaps(fig))
    assert '"scatter"' in found and '"bars"' in found  # the bars' label


def test_a_legend_of_one_axes_over_another_axes_is_found():
    fig, (a, b) = plt.subplots(1, 2, figsize=(6, 3))
    try:
        a.plot([0, 1], [0, 1], label="left")
        b.plot([0, 1], [0.9, 0.9], label="right, flat at the top")
        b.set_ylim(0, 1)
        a.legend(loc="upper left", bbox_to_anchor=(1.3, 1.0))
        assert any('"right, flat at the top"' in p for p in legend_overlaps(fig))
    finally:
        plt.close(fig)


def test_clean_legends_pass(axes):
    fig, ax = axes
    ax.plot([0, 1], [0, 1], label="rising")
    ax.plot([0, 1], [0, 0.5], label="slower")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside
    assert legend_overlaps(fig) == []
    ax.legend(loc="lower right")  # an empty corner
    assert legend_overlaps(fig) == []


def test_data_clipped_away_does_not_count(axes):
    fig, ax = axes
    ax.plot([0, 10], [0.95, 0.95], label="mostly off the axes")
    ax.plot([0.5, 0.6], [0.1, 0.2], label="low")
    ax.set_xlim(5, 10)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")
    assert legend_overlaps(fig) != []
    ax.set_xlim(0.4, 0.7)  # the flat line's vertices and most of it now off
    ax.set_ylim(0, 0.5)
    assert legend_overlaps(fig) == []


STILLS = sorted(declared())


@pytest.mark.parametrize("name", STILLS)
def test_every_live_figure_still_keeps_its_legend_off_the_data(name):
    """The still of a live figure (the printed book's image), at its first
    view, drawn at the book's size."""
    live = declared()[name]
    ax = draw(live.evaluate(), live.layout)
    try:
        assert legend_overlaps(ax.figure) == [], name
    finally:
        plt.close(ax.figure)


def test_chapter_9_still_keeps_its_legend_off_the_data():
    from figures.chapters.kernel import plot_kernel_vs_sim

    ax = plot_kernel_vs_sim()
    try:
        assert legend_overlaps(ax.figure) == []
    finally:
        plt.close(ax.figure)
