"""Where the client's pure ACKs leave on the probe's shape (models.validation.ackcontext): each
claim holds, and fails on a wrong world."""

from __future__ import annotations

import pytest

from models.validation import ackcontext as AC


@pytest.fixture(scope="module")
def runs():
    from models import data

    return data.load(AC.DATASET)


@pytest.fixture(scope="module")
def model():
    return AC.table()


def _found(runs, model):
    return AC.findings(AC.kernel(runs), model)


def test_every_claim_holds(runs, model):
    found = _found(runs, model)
    assert all(found.values()), found
    assert len(found) == 4


def test_the_dataset_has_three_runs_at_each_qd_and_counts_add_up(runs):
    assert sorted(runs.groupby("qd")["repeat"].nunique().items()) == [(8, 3), (32, 3)]
    parts = runs[["softirq", "backlog", "recvfrom", "sendto", "other"]].sum(axis=1)
    assert (parts == runs["acks"]).all() and (runs["acks"] > 0).all()


def test_the_tool_writes_the_dataset_s_columns():
    from tool_columns import tool_writes_dataset_columns

    assert tool_writes_dataset_columns("ack_context_trace", AC.DATASET)


def test_a_kernel_that_reads_before_acking_at_qd_8_fails_the_arrival_claim(runs, model):
    wrong = runs.copy()
    shallow = wrong["qd"] == 8
    wrong.loc[shallow, "recvfrom"] += wrong.loc[shallow, "backlog"]  # the backlog's at the read
    wrong.loc[shallow, "backlog"] = 0
    assert not _found(wrong, model)["the kernel answers arrivals at QD 8"]


def test_a_kernel_answering_arrivals_at_qd_32_fails_the_read_claim(runs, model):
    wrong = runs.copy()
    deep = wrong["qd"] == 32
    wrong.loc[deep, "backlog"] += wrong.loc[deep, "recvfrom"]
    wrong.loc[deep, "recvfrom"] = 0
    assert not _found(wrong, model)["its slowest runs at QD 32 wait for the read"]


def test_a_fast_run_waiting_for_the_read_fails_the_slowest_claim(runs, model):
    wrong = runs.copy()
    deep = wrong.index[wrong["qd"] == 32]
    reading = wrong.loc[deep, "recvfrom"] > wrong.loc[deep, "backlog"]
    wrong.loc[deep[reading], "run_iops"] = 60_000.0  # faster than the run that answers arrivals
    assert not _found(wrong, model)["its slowest runs at QD 32 wait for the read"]


def test_a_model_that_answers_arrivals_at_qd_8_fails_its_read_claim(runs, model):
    wrong = model.copy()
    wrong.loc[8, "m_read_pct"] = 5.0
    assert not _found(runs, wrong)["the model leaves many to the read at QD 8"]


def test_a_model_waiting_for_the_read_at_qd_32_fails_its_arrival_claim(runs, model):
    wrong = model.copy()
    wrong.loc[32, "m_arrival_pct"] = 1.0
    assert not _found(runs, wrong)["and answers arrivals at QD 32"]


def test_every_pure_ack_of_the_model_s_client_is_counted_by_a_known_rule():
    from models.validation import machine8 as M8

    sim, _row = M8.probe_simulation(2000, 32)
    got = AC.count_pure_acks(sim)
    r = sim.run()
    assert got["other"] == 0  # every rule that sends one is known
    assert sum(got.values()) == r.directions["C>S"].pure_acks > 0


def test_the_model_runs_only_the_chapter_s_depths():
    with pytest.raises(ValueError, match="qd must be one of"):
        AC.model(16)
