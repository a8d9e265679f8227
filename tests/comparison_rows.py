"""A made-up comparison row for the registry's own tests."""

from models.validation import Comparison


def row(
    chapter: str, measured: float, kind: str = "test", source: str = "", fails: str = ""
) -> Comparison:
    """A row of ``chapter`` that passes when ``measured`` is within 10 % of 1 s."""
    return Comparison(
        chapter,
        f"q {kind} {measured}",
        measured=measured,
        predicted=1.0,
        unit="s",
        rel_tol=0.1,
        why="test",
        source=source,
        kind=kind,
        fails=fails,
    )
