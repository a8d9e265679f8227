"""When a Nagle server's tail leaves against the client's two ACKs: tools/tail_order.py reads a
capture, models.validation.tail_order compares the kernel's captures with the model's runs of
the same scenarios, each claim able to fail."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import tail_order as TO  # noqa: E402

from models.data import describe, load  # noqa: E402
from models.validation import tail_order as T  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return T.table()


def test_the_captures_and_the_model_show_what_the_text_says(table):
    f = T.findings(table)
    assert all(f.values()), f


def test_the_warm_handshake_in_the_models_place_fails(table):
    """The model with a warm connection's handshake (bbr kept in start-up) in the model's place:
    its tails leave sooner still after the data's ACK, so the claim that the model's wait
    longer than in start-up fails."""
    t = table.copy()
    warm = t[t["source"] == "warm handshake"].iloc[0]
    model = t.index[(t["cc"] == "bbr") & (t["source"] == "model")][0]
    for col in ("after_data_share", "after_data_us", "after_data_ratio", "within"):
        t.loc[model, col] = warm[col]
    assert not T.findings(t)[
        "under bbr the model's tails leave after it, sooner than the kernel's"
    ]


def test_the_tool_refuses_bad_options():
    for bad in (["--duration", "0.01"], ["--keep", "5"]):
        with pytest.raises(SystemExit):
            TO.main(["--out", "/tmp/unused", *bad])


def test_the_bundled_dataset_is_the_tools():
    command = describe(T.DATASET)["sources"][0]["section"]
    keep = int(command.split("--keep ")[1].split()[0])
    k = load(T.DATASET)
    assert sorted(k["cc"].unique()) == sorted(cc for _, cc in TO.RUNS)
    assert (k.groupby("cc").size() <= keep).all()
