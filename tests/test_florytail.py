"""models.validation.florytail: when the client ACKs the full segment of Flory's responses either
side of one MSS, kernel captures against the simulator on both kernel profiles; the chapter's
claims hold and fail with a source in the place of another."""

from __future__ import annotations

import pytest

from models.validation import florytail as FT


@pytest.fixture(scope="module")
def tail():
    return FT.evaluate()


def test_the_chapter_claims_hold(tail):
    found = FT.findings(tail)
    assert all(found.values()), found


def test_the_models_swapped_fail_their_claims(tail):
    plain, window = FT.MODELS
    t = tail.table.copy()
    t.loc[plain], t.loc[window] = tail.table.loc[window].values, tail.table.loc[plain].values
    found = FT.findings(FT.Tail(t, tail.first_wake_s))
    assert not found["linux-6's client ACKs at once at both"]
    assert not found["the window's client waits for its read at both"]


@pytest.mark.parametrize("source", list(FT.MODELS))
def test_a_model_in_the_kernels_place_fails_the_kernels_claim(tail, source):
    t = tail.table.copy()
    t.loc[FT.KERNEL] = tail.table.loc[source].values
    found = FT.findings(FT.Tail(t, tail.first_wake_s))
    assert not found["the kernel's client ACKs at its read at 1448 bytes and at once at 1449"]
    assert not found["the kernel's tail leaves about a wake-up after the ACK, the models' sooner"]


def test_a_request_carrying_the_ack_is_not_a_pure_ack():
    records = [
        (0.0, "S", 0, 1448, 0),
        (4e-6, "C", 0, 8, 1448),  # the next request carries the ACK: no pure ACK
        (5e-6, "S", 1448, 2896, 8),
        (9e-6, "C", 8, 8, 2896),  # a pure ACK 4 us after the second full segment
        (1e-5, "S", 2896, 2897, 8),  # a tail: not a full segment
        (2e-5, "C", 8, 8, 2897),
    ]
    assert FT.ack_delays(records) == [4e-6]


def test_a_tail_is_timed_from_the_clients_last_pure_ack():
    records = [
        (0.0, "S", 0, 8, 0),  # a descriptor: not a tail
        (1e-6, "S", 8, 1456, 0),
        (4e-6, "C", 0, 0, 1456),
        (2.4e-5, "S", 1456, 1457, 0),  # the tail, 20 us after the ACK
        (3e-5, "C", 0, 8, 1457),  # a request: the next tail is not timed from it
        (3.5e-5, "S", 1457, 1458, 8),
    ]
    assert FT.tail_delays(records) == [2e-5]


def test_the_numbers_are_the_tables(tail):
    n = FT.numbers(tail)
    assert n["ft_k_1448_us"] == tail.table.loc[FT.KERNEL, "ACK delay, 1448 B (us)"]
    assert n["ft_wake_us"] == pytest.approx(tail.first_wake_s * 1e6)
