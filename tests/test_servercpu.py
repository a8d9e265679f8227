"""Pacing timers and CPU per operation behind Nagle servers (models.validation.servercpu): the
kernel's counts against the models', every row a test, and the claims fail with wrong models."""

from __future__ import annotations

import functools

from models import data
from models.validation import servercpu as SC


@functools.cache
def _table():
    return SC.compare()


def test_every_configuration_is_counted_and_a_test():
    t = _table()
    assert len(t) == len(SC.CONFIGS) and set(t.role) == {"test"}
    raw = data.load(SC.DATASET)
    assert raw.groupby(list(SC.CONFIG_KEY)).size().min() >= 2  # repeats
    assert set(raw.cc) == {"bbr"}


def test_the_chapter_claims_hold():
    found = SC.findings(_table())
    assert all(found.values()), found


def test_a_model_without_pacing_timers_fails_the_late_claim():
    """Wrong model: no pacing timer at all (reno's sender) in the late model's place."""
    t = _table().assign(
        arms_0=0.0, arms_right_0=lambda d: (d.arms_per_op - 0).abs() <= SC.ARMS_TOL
    )
    assert not SC.findings(t)["the late model's timers are right in every Nagle and NODELAY row"]


def test_the_two_models_swapped_fail_both_model_claims():
    t = _table()
    swapped = t.assign(
        arms_0=t.arms_1,
        arms_1=t.arms_0,
        arms_right_0=t.arms_right_1,
        arms_right_1=t.arms_right_0,
        ratio_0=t.ratio_1,
        ratio_1=t.ratio_0,
    )
    found = SC.findings(swapped)
    assert not found["the late model's timers are right in every Nagle and NODELAY row"]
    assert not found[
        "the machine's-buffer model arms too few behind a Nagle server, and runs faster"
    ]


def test_kernel_counts_that_do_not_separate_the_servers_fail_the_kernel_claims():
    """Wrong data: the NODELAY servers' rows with the Nagle servers' counts."""
    t = _table().copy()
    nagle = t[t.sock_mode.eq("nagle")]
    pick = t.sock_mode.eq("nodelay")
    t.loc[pick, "arms_per_op"] = float(nagle.arms_per_op.median())
    t.loc[pick, "server_busy_us_per_op"] = float(nagle.server_busy_us_per_op.median())
    found = SC.findings(t)
    assert not found[
        "the kernel's Nagle server arms about one pacing timer per operation, a NODELAY one none"
    ]
    assert not found["and spends about three times the CPU per operation"]


MORE_CLAIM = (
    "a MSG_MORE server at 2 KiB arms one per operation too, the models fewer, and run faster"
)


def test_models_that_pace_a_msg_more_server_as_the_kernel_does_fail_the_more_claim():
    """Wrong model: each model's MSG_MORE rows with the kernel's timers and rate."""
    t = _table().copy()
    more = t.sock_mode.eq("more")
    assert more.sum() == 4
    for i in (0, 1):
        t.loc[more, f"arms_{i}"] = t.loc[more, "arms_per_op"]
        t.loc[more, f"ratio_{i}"] = 1.0
    assert not SC.findings(t)[MORE_CLAIM]


def test_a_kernel_that_does_not_pace_a_msg_more_server_fails_the_more_claim():
    """Wrong data: the MSG_MORE rows with the NODELAY servers' counts (no timer)."""
    t = _table().copy()
    t.loc[t.sock_mode.eq("more"), "arms_per_op"] = 0.0
    assert not SC.findings(t)[MORE_CLAIM]
