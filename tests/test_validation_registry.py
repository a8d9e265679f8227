"""The comparison registry: set names carry their chapter, sets run once in the book's order, and the
dashboard's counts per set and per chapter come from the registry."""

import pytest
from comparison_rows import row as comparison_row

import models.validation as V


def row(chapter, measured, kind="test", source="Source 2001, table 2", fails=""):
    return comparison_row(chapter, measured, kind, source, fails)


@pytest.fixture
def fake_sets(monkeypatch):
    """Two sets of chapter 12 and one of chapter 3, registered for one test only."""
    sets = {
        "ch12.b": [
            row("ch12", 1.0),
            row("ch12", 9.0, fails="a known gap"),
            row("ch12", 1.0, "fit"),
            row("ch12", 1.0, "audit"),
        ],
        "ch12.a": [row("ch12", 9.0, "context", source="Other 1999")],
        "ch3.z": [row("ch3", 1.0), row("ch3", 1.05)],
    }
    for name, rows in sets.items():
        info = V._parse_name(name)
        monkeypatch.setitem(V._REGISTRY, name, lambda rows=rows: list(rows))
        monkeypatch.setitem(V._INFO, name, info)
    return sets


def test_set_names_are_chapter_dot_topic():
    info = V._parse_name("ch10.closed_loop")
    assert (info.number, info.topic, info.chapter) == (10, "closed_loop", "ch10")
    for bad in ("ch9", "chapter9.kernel", "ch0.x", "9.kernel", "ch9.Kernel", "app.kernel"):
        with pytest.raises(ValueError, match="<chapter>.<topic>"):
            V.comparisons(bad)


def test_every_registered_set_has_its_chapter():
    names = V.registered()
    assert names and all(V.set_info(n).name == n for n in names)
    with pytest.raises(ValueError, match="unknown comparison set"):
        V.set_info("ch99.nothing")


def test_tally_counts_per_set_in_book_order(fake_sets):
    t = V.tally({k: fake_sets[k] for k in ("ch12.b", "ch3.z", "ch12.a")})
    assert list(t["set"]) == ["ch3.z", "ch12.a", "ch12.b"]  # chapter number, then topic
    assert list(t["number"]) == [3, 12, 12]
    b = t.set_index("set").loc["ch12.b"]
    assert (b.rows, b.tests, b.passing, b.known_failures, b.audits, b.fits, b.context) == (
        4,
        2,
        1,
        1,
        1,
        1,
        0,
    )
    z = t.set_index("set").loc["ch3.z"]
    assert (z.rows, z.tests, z.passing, z.audits) == (2, 2, 2, 0)


def test_tally_by_chapter_sums_sets_and_lists_sources(fake_sets):
    c = V.tally_by_chapter({k: fake_sets[k] for k in ("ch12.b", "ch3.z", "ch12.a")})
    assert list(c.index) == ["ch3", "ch12"]
    assert c.loc["ch12", "rows"] == 5 and c.loc["ch12", "context"] == 1
    assert c.loc["ch12", "tests"] == 2 and c.loc["ch12", "audits"] == 1
    assert c.loc["ch12", "sets"] == "ch12.a, ch12.b"
    assert c.loc["ch12", "sources"] == "Other 1999; Source 2001"
    assert c[["rows", *V.TALLY_COLUMNS]].sum().rows == 7


def test_run_sets_refuses_a_row_of_another_chapter(monkeypatch, fake_sets):
    monkeypatch.setitem(V._REGISTRY, "ch3.z", lambda: [row("ch4", 1.0)])
    monkeypatch.setattr(V, "registered", lambda: ["ch3.z"])
    with pytest.raises(ValueError, match="rows of"):
        V.run_sets()


def test_run_sets_runs_each_set_once_in_book_order(monkeypatch, fake_sets):
    calls = []
    for name in fake_sets:
        monkeypatch.setitem(
            V._REGISTRY, name, lambda name=name: calls.append(name) or list(fake_sets[name])
        )
    monkeypatch.setattr(V, "registered", lambda: sorted(fake_sets))
    out = V.run_sets()
    assert list(out) == ["ch3.z", "ch12.a", "ch12.b"] and sorted(calls) == sorted(fake_sets)
    assert len(calls) == 3
    assert V.run_all() == [r for name in out for r in fake_sets[name]]
