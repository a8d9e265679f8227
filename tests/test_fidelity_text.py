"""models.validation.fidelity_text: chapter 9's claim about the Nagle server on veth at MTU 1500
(4 KiB responses, QD 2 and above) under bbr, on those rows alone: with the book's profile, whose
pacing timer costs nothing, the simulator runs them too fast; lent the third machine's measured
timer costs, most are within the tolerance (a what-if)."""

from __future__ import annotations

import pytest

from models.kernel import load_kernel_run
from models.sim import hostprofile
from models.validation import fidelity as FID
from models.validation import fidelity_text as FT


@pytest.fixture(scope="module")
def field():
    return load_kernel_run(prefix=FID.FIELD_PREFIX)


def test_the_book_profile_runs_the_rows_too_fast_and_the_lent_costs_bring_most_within(field):
    book = hostprofile.shipped()
    assert not any(book.host.get(k) for k in FT.TIMER_FIELDS)  # its timer costs nothing
    rows = lambda t: FT.v1500_rows(t) & ~FID.link_limited(t)  # noqa: E731
    plain = FID.iops_table(FID.simulate_loop(field, book, rows=rows))
    lent = FT.timer_what_if(book, field)
    assert len(plain) == len(lent) >= 10
    assert plain.ratio.median() > 1 + FID.IOPS_TOL  # the claim "too fast"
    assert lent.within.mean() > 0.5  # the what-if: most within
    assert lent.ratio.median() < plain.ratio.median()
