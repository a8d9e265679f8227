"""The tbf watchdog microbenchmark (models.measure.tbftimer, tools/tbf_timer_sweep.py) and its
validation (models.validation.tbf_timer): the replay recovers a known lateness from departures a
token bucket made, refuses impossible input, and the bundled measurement says what chapter 9
states."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models import framing
from models.measure import tbftimer as TB
from models.validation import tbf_timer as TT

ROOT = Path(__file__).resolve().parents[1]
FRAME = 1514  # a full frame at MTU 1500, bytes
BUCKET = framing.tbf_burst_bytes(1500)


def departures(n: int, rate: float, late_ns: list[float], bucket: int = BUCKET) -> list[float]:
    """What a tbf with a bucket of ``bucket`` bytes at ``rate`` bits/s does with ``n`` frames of
    FRAME bytes all queued at time 0 behind a full bucket: a frame that lacks tokens leaves
    ``late_ns[k]`` after they suffice (the watchdog), the next at once if the tokens are there."""
    per_byte = 8e9 / rate
    need, cap = FRAME * per_byte, bucket * per_byte
    t, tokens, out, k = 0.0, cap, [], 0
    for _ in range(n):
        if tokens < need:
            wait = need - tokens
            late = late_ns[k % len(late_ns)]
            k += 1
            tokens = min(tokens + wait + late, cap)
            t += wait + late
        tokens -= need
        out.append(t)
    return out


@given(
    rate=st.sampled_from([20e6, 100e6, 300e6, 1e9]),
    late=st.lists(st.floats(0, 60_000), min_size=1, max_size=8),
)
def test_the_replay_recovers_the_lateness_the_bucket_was_given(rate, late):
    t = departures(40, rate, late)
    got = TB.watchdog_lateness(t, FRAME, rate, BUCKET)
    want = [late[k % len(late)] for k in range(len(got))]
    assert len(got) >= 1
    # (to a thousandth of a nanosecond; rounding both sides to three places can part two values
    # that straddle a half, such as 0.0015 and 0.0014999)
    assert [x["late_ns"] for x in got] == pytest.approx(want, abs=1e-3)
    assert all(x["wait_ns"] >= 0 for x in got)


def test_frames_before_the_last_send_are_left_out():
    t = departures(10, 100e6, [20_000.0])
    every = TB.watchdog_lateness(t, FRAME, 100e6, BUCKET)
    later = TB.watchdog_lateness(t, FRAME, 100e6, BUCKET, after_ns=t[5])
    assert len(later) == len([x for x in t[1:] if x > t[5]]) < len(every)


def test_the_replay_refuses_what_no_bucket_can_do():
    with pytest.raises(ValueError, match="frame_bytes .* must not exceed burst_bytes"):
        TB.watchdog_lateness([0, 1], 4000, 1e8, BUCKET)
    with pytest.raises(ValueError, match="rate_bits_per_s must be positive"):
        TB.watchdog_lateness([0, 1], FRAME, 0, BUCKET)
    with pytest.raises(ValueError, match="rate_bits_per_s must be positive"):
        TB.watchdog_lateness([0, 1], FRAME, float("nan"), BUCKET)
    with pytest.raises(ValueError, match="in order"):
        TB.watchdog_lateness([0, 200_000, 100_000], FRAME, 1e8, BUCKET)
    assert TB.watchdog_lateness([], FRAME, 1e8, BUCKET) == []


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"frames": 2}, "frames must be"),
        ({"frame_bytes": 9000}, "frame_bytes must be"),
        ({"bursts": 0}, "bursts must be"),
        ({"cpu": 4096}, "cpu must be one of"),
    ],
)
def test_measure_names_a_bad_setting_before_it_makes_a_namespace(kw, match):
    args = {"rate_bits_per_s": 1e8, "frame_bytes": FRAME, **kw}
    with pytest.raises(ValueError, match=match):
        TB.measure(**args)


def _tool():
    spec = importlib.util.spec_from_file_location(
        "tbf_timer_sweep", ROOT / "tools" / "tbf_timer_sweep.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tbf_timer_sweep"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--repeats", "0"], "--repeats must be 1..10"),
        (["--rates", "1e9"], "--rates must each be 1e6..300e6"),
        (["--rates", "fast"], "--rates must be numbers"),
    ],
)
def test_the_tool_refuses_bad_options_before_any_run(tmp_path, capsys, argv, match):
    with pytest.raises(SystemExit) as exc:
        _tool().main(["--out", str(tmp_path), *argv])
    assert exc.value.code == 2
    assert match in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# -- the bundled measurement ------------------------------------------------------------------


def test_the_bundled_table_covers_every_rate_and_state_of_the_tool():
    tool = _tool()
    t = TT.lateness_table()
    assert set(t["rate_bits_per_s"]) == set(tool.RATES)
    assert set(t["cpu_state"]) == set(tool.STATES)
    assert (t["frames"] > 100).all() and (t["late_p10_us"] > 0).all()


def test_the_measured_lateness_is_shorter_than_the_wake_up_that_stood_in_for_it():
    from models.sim import hostprofile
    from models.validation import apart

    late = TT.measured_late_s()
    assert 5e-6 < late < 30e-6
    proxy = TT.proxy_late_s(hostprofile.shipped(apart.lowest_loss()), 10e-6)
    assert proxy > 1.25 * late


def test_a_burst_out_of_step_is_left_out_and_counted():
    rows = []
    for burst, shift in ((0, 0.0), (1, -25.0)):  # burst 1: every frame 8 us early
        for k in range(4):
            rows.append(
                {
                    "sweep": 0,
                    "rate_bits_per_s": 1e8,
                    "cpu_state": "idle",
                    "repeat": 0,
                    "burst": burst,
                    "frame": k,
                    "wait_us": 100.0,
                    "late_us": 17.0 + shift,
                }
            )
    df = pd.DataFrame(rows)
    assert set(TT.in_step(df)["burst"]) == {0}
    t = TT.lateness_table(df)
    assert int(t["bursts_out"].iloc[0]) == 1 and float(t["late_us"].iloc[0]) == 17.0
    assert TT.measured_late_s(df) == pytest.approx(17e-6)


def test_the_proxy_follows_the_wake_up_rule():
    class P:
        def side(self, name):
            return {"wake_s": 25e-6, "wake_fast_s": 8e-6, "wake_fast_idle_s": 3e-6}

    assert TT.proxy_late_s(P(), 2e-6) == 8e-6
    assert TT.proxy_late_s(P(), 10e-6) == 25e-6


def test_the_findings_chapter_9_quotes_come_from_the_table():
    from models.sim import hostprofile
    from models.validation import apart

    f = TT.findings(hostprofile.shipped(apart.lowest_loss()))
    t = TT.lateness_table().set_index(["rate_bits_per_s", "cpu_state"])
    fast = t.index.levels[0].max()
    assert f["late"] == pytest.approx(TT.measured_late_s() * 1e6)
    assert f["fast_idle"] == pytest.approx(t.loc[(fast, "idle"), "late_us"])
    assert f["out"] == int(t["bursts_out"].sum()) and f["bursts"] > f["out"]
    assert f["proxy"] > f["late"] and f["slow_wait"] > f["fast_wait"]


def _fake_run(late_us: dict, out_of_step: int = 0):
    """A stand-in for TB.measure: each burst's departures made by a bucket whose watchdog is
    ``late_us[state]`` late, replayed as measure() replays them; the first ``out_of_step``
    bursts of each state have every frame after the bucket's two moved 30 us early (the first
    frames' receive times lagged their dequeue)."""

    def run(rate, frame_bytes, frames, bursts, spin):
        late = late_us["spin" if spin else "idle"]
        bucket = framing.tbf_burst_bytes(1500)
        made = []
        for b in range(bursts):
            t = departures(frames, rate, [late * 1e3], bucket)
            if b < out_of_step:
                t = t[:2] + [x - 30e3 for x in t[2:]]
            waited = TB.watchdog_lateness(t, frame_bytes, rate, bucket)
            made.append({"burst": b, "received": frames, "complete": True, "frames": waited})
        return {"bursts": made}

    return run


def test_calibrate_pools_both_cpu_states_over_the_bursts_in_step():
    got = TB.calibration(run=_fake_run({"idle": 20.0, "spin": 24.0}, out_of_step=2))
    assert got["idle_late_us"] == pytest.approx(20.0) and got["spin_late_us"] == pytest.approx(24)
    assert 20.0 <= got["late_us"] <= 24.0 and got["late_p10_us"] <= got["late_p90_us"]
    assert got["rounds"] == 1 and got["bursts"] == 2 * TB.CAL_BURSTS and got["bursts_out"] == 4
    assert got["rate_bits_per_s"] == TB.CAL_RATE_BITS_PER_S
    # the wrong model: with the bursts out of step kept, the lateness comes out early
    run = _fake_run({"idle": 20.0, "spin": 20.0}, out_of_step=2)
    res = run(TB.CAL_RATE_BITS_PER_S, FRAME, TB.CAL_FRAMES, TB.CAL_BURSTS, False)
    every = [f["late_ns"] / 1e3 for b in res["bursts"] for f in b["frames"]]
    kept, out = TB.in_step_lateness_us(res)
    assert out == 2 and statistics.median(kept) == pytest.approx(20.0)
    assert min(every) < 20.0 - TB.EARLY_US and len(every) > len(kept)


def test_calibrate_measures_again_until_enough_bursts_stayed_in_step():
    # 2 of 8 bursts in step per state and round: two rounds give 8 >= CAL_MIN_KEPT in all
    got = TB.calibration(run=_fake_run({"idle": 20.0, "spin": 20.0}, out_of_step=6))
    assert got["rounds"] == 2 and got["bursts"] == 32 and got["bursts_out"] == 24
    assert got["late_us"] == pytest.approx(20.0)


def test_calibrate_refuses_a_measurement_mostly_out_of_step():
    with pytest.raises(
        ValueError,
        match=r"only 3 \(idle\) and 3 \(busy\) of the tbf watchdog's "
        r"24 bursts per state stayed in step in 3 rounds \(at least 8 in all",
    ):
        TB.calibration(run=_fake_run({"idle": 20.0, "spin": 20.0}, out_of_step=7))
