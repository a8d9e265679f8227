"""models.validation.qd2race: how the kernel enters a Nagle server's stall behind a Nagle client
at QD 2 (a capture) against the simulator's traces; chapter 9b's claims hold and fail with the
models swapped."""

from __future__ import annotations

import dataclasses

import pytest

from models._paths import bundled_data_dir
from models.validation import qd2race as Q


@pytest.fixture(scope="module")
def race():
    return Q.evaluate()


def test_the_capture_is_the_run_its_readme_names():
    recs = Q.records_from_capture(bundled_data_dir() / "captures" / f"{Q.CAPTURE}.pcap")
    client = [r for r in recs if r[1] == "C" and r[3] > r[2]]
    assert {r[3] - r[2] for r in client} == {Q.HEADER}  # one 48-byte request per send
    assert len(client) == 121  # --count 120, and the one the drain sends
    assert max(r[3] for r in recs if r[1] == "S") == 121 * (Q.HEADER + Q.PAYLOAD)


def test_lone_headers_and_the_stalls_after_them():
    # a header alone (nothing in flight), a stall, the data, then a header behind unacked data
    recs = [
        (0.0, "S", 0, 48, 0),
        (0.043, "C", 0, 0, 48),
        (0.043, "S", 48, 560, 0),
        (0.04301, "S", 560, 608, 0),
    ]
    assert Q.lone_headers(recs) == 1
    assert len(Q._stalls_after(recs, Q._lone_indices(recs), 0.020)) == 1
    assert len(Q._stalls_after(recs, Q._lone_indices(recs), 0.050)) == 0


def test_the_chapter_claims_hold(race):
    found = Q.findings(race)
    assert all(found.values()), found


def test_the_models_swapped_fail_them(race):
    table = race.table
    names = list(Q.MODELS)
    wrong = table.copy()
    wrong.loc[names[0]], wrong.loc[names[1]] = table.loc[names[1]], table.loc[names[0]]
    found = Q.findings(dataclasses.replace(race, table=wrong))
    assert not found[
        "the calibration's server loses the race as often (responses per stall within a quarter)"
    ]
    assert not found["the rules' server wins it: no stall, hardly a lone header"]
    # the kernel's row from the model that wins the race
    wrong = table.copy()
    wrong.loc[Q.KERNEL] = table.loc[names[1]]
    found = Q.findings(dataclasses.replace(race, table=wrong))
    assert not found["every kernel stall starts with a lone header, one in two of them"]
    assert not found["the kernel sends a lone header for about every second response"]


def test_the_flag_claim_can_fail(race):
    claim = "the segment sent after its send()'s CPU is what wins it"
    assert Q.findings(race)[claim]
    # the flag's two runs swapped: the one that never stalls is now the one without it
    swapped = dataclasses.replace(race, flag={True: race.flag[False], False: race.flag[True]})
    assert not Q.findings(swapped)[claim]


def test_turnarounds_and_their_claim(race):
    # the client's request 8 us after the server's data; then a lone header and a stall
    recs = [
        (0.0, "S", 0, 512, 0),
        (8e-6, "C", 0, 48, 512),
        (2e-5, "S", 512, 560, 48),
        (0.06, "C", 0, 0, 560),
    ]
    assert Q.turnarounds(recs) == [pytest.approx(8e-6)]
    assert Q.turnarounds(recs[:3]) == []  # no stall after the header
    claim = "before a stall the client answers sooner than a wake-up takes"
    assert Q.findings(race)[claim]
    slow = dataclasses.replace(race, turnarounds_s=[30e-6, 25e-6, 8e-6])  # a client that woke
    assert not Q.findings(slow)[claim]
