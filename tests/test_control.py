"""Unit and property tests for models.control: throttle, EWMA, PID, plant and closed loop."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from models.analytic import S
from models.control import ewma as E
from models.control import pid as P
from models.control import throttle as TH
from models.control.loop import on_off_schedule, run_closed_loop, settled, summarize
from models.control.plant import SharedDiskPlant, calibrate, mva_closed

MiB = 2**20


# ---- throttle ---------------------------------------------------------------------------------------


def test_rate_under_delay_is_the_ring_identity():
    expr = TH.rate_under_delay_expr()
    assert sp.simplify(expr - S.QD * S.IOSIZE / (TH.RTT0 + TH.k * TH.d)) == 0
    # undelayed: IOSIZE / RTT0 per operation in flight
    assert TH.rate_under_delay(65536, 2e-3, 0.0) == pytest.approx(65536 / 2e-3)
    assert TH.rate_under_delay(65536, 2e-3, 1e-3, rounds=2, qd=3) == pytest.approx(
        3 * 65536 / 4e-3
    )


def test_transfer_time_is_linear_in_delay():
    t = [TH.transfer_time(200 * MiB, 65536, 3e-3, x) for x in (0.0, 1e-3, 2e-3)]
    assert t[2] - t[1] == pytest.approx(t[1] - t[0])
    assert t[1] - t[0] == pytest.approx(3200 * 1e-3)  # 3200 operations each 1 ms longer


def test_fits_invert_the_model():
    rtt0 = TH.rtt0_from_rate(22 * MiB, 65536)
    r = TH.rate_under_delay(65536, rtt0, 9.6e-3, rounds=2.5)
    assert TH.rounds_from_rates(22 * MiB, r, 9.6e-3, 65536) == pytest.approx(2.5)


@given(st.floats(1e-5, 1.0), st.floats(0, 0.05), st.floats(0, 0.05), st.floats(0.1, 5))
def test_rate_falls_as_delay_grows(rtt0, d1, d2, k):
    lo, hi = sorted((d1, d2))
    assert TH.rate_under_delay(4096, rtt0, hi, k) <= TH.rate_under_delay(4096, rtt0, lo, k)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(iosize_bytes=0, rtt0_s=1e-3, delay_s=0), "iosize_bytes"),
        (dict(iosize_bytes=1, rtt0_s=-1, delay_s=0), "rtt0_s"),
        (dict(iosize_bytes=1, rtt0_s=1e-3, delay_s=-1e-3), "delay_s"),
        (dict(iosize_bytes=1, rtt0_s=1e-3, delay_s=0, rounds=0), "rounds"),
        (dict(iosize_bytes=1, rtt0_s=1e-3, delay_s=0, qd=0), "qd"),
        (dict(iosize_bytes=1, rtt0_s=1e-3, delay_s=0, qd=1.5), "qd"),
    ],
)
def test_rate_under_delay_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TH.rate_under_delay(**kwargs)


def test_delay_ladders():
    assert TH.DelayThrottle().max_delay_s == pytest.approx(20e-3)
    assert TH.DelayThrottle().delay(0) == 0.0
    b2 = TH.DelayThrottle(0.5e-3, 20, first_s=0.1e-3)
    assert b2.delays()[1] == pytest.approx(0.1e-3) and b2.max_delay_s == pytest.approx(9.6e-3)
    with pytest.raises(ValueError, match="steps"):
        TH.DelayThrottle().delay(41)
    with pytest.raises(ValueError, match="step_s"):
        TH.DelayThrottle(step_s=0)
    with pytest.raises(ValueError, match="max_steps"):
        TH.DelayThrottle(max_steps=0)
    with pytest.raises(ValueError, match="first_s"):
        TH.DelayThrottle(first_s=-1.0)
    with pytest.raises(ValueError, match="classes"):
        TH.DelayThrottle(max_steps=20, classes=21)
    with pytest.raises(ValueError, match="classes"):
        TH.DelayThrottle(classes=0)


@given(st.integers(1, 60), st.integers(0, 60))
def test_marks_past_the_last_class_add_nothing(classes, extra):
    lad = TH.DelayThrottle(0.5e-3, classes + extra, first_s=0.1e-3, classes=classes)
    d = lad.delays()
    assert (np.diff(d[: classes + 1]) > 0).all()  # rising while there are classes
    assert (d[classes + 1 :] == 0).all()  # then unshaped
    assert lad.max_delay_s == pytest.approx(0.1e-3 + 0.5e-3 * (classes - 1))


# ---- EWMA -------------------------------------------------------------------------------------------


def test_ewma_closed_forms_match_the_recurrence():
    a = 0.25
    step = E.ewma(np.ones(10), a)
    expr = E.step_response_expr()
    for n in range(1, 11):
        assert step[n - 1] == pytest.approx(
            float(
                expr.subs(
                    {
                        sp.Symbol("alpha", positive=True): a,
                        sp.Symbol("n", integer=True, nonnegative=True): n,
                    }
                )
            )
        )
    ramp = E.ewma(np.arange(200.0), a)
    assert 199 - ramp[-1] == pytest.approx(E.ramp_lag_samples(a))
    assert E.ramp_lag_samples(0.15) == pytest.approx(0.85 / 0.15)
    # time constant: after tau the step response has covered 1 - 1/e
    tau = E.time_constant_s(a, 0.1)
    assert 1 - (1 - a) ** (tau / 0.1) == pytest.approx(1 - math.exp(-1))


@given(st.floats(0.01, 1.0), st.lists(st.floats(0, 1e3), min_size=1, max_size=50))
def test_ewma_stays_within_the_range_of_its_inputs(a, xs):
    out = E.ewma(xs, a, initial=xs[0])
    assert min(xs) - 1e-9 <= out.min() and out.max() <= max(xs) + 1e-9


@pytest.mark.parametrize("alpha", [0, -0.1, 1.5, float("nan"), "x"])
def test_ewma_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        E.Ewma(alpha)


def test_ewma_bad_sample_and_interval():
    with pytest.raises(ValueError, match="sample"):
        E.Ewma(0.2).update(float("inf"))
    with pytest.raises(ValueError, match="sample_interval_s"):
        E.time_constant_s(0.2, 0)


# ---- PID --------------------------------------------------------------------------------------------


def test_textbook_form_is_the_backward_euler_increment():
    inc = P.velocity_increment_expr()
    textbook = (
        P.Kp * (1 + P.T / P.Ti) * P.e_k
        - P.Kp * P.e_k1
        + P.Kp * P.Td / P.T * (P.e_k - 2 * P.e_k1 + P.e_k2)
    )
    assert sp.simplify(inc - textbook) == 0


def test_velocity_form_tracks_the_positional_form():
    errs = [-3.0, -1.0, 2.0, 0.5, -4.0, 1.0]
    pid = P.VelocityPID(0.3, 500, 1, 16, u_min=-1e9, u_max=1e9)
    vals = {P.Kp: 0.3, P.Ti: 500, P.Td: 1, P.T: 16}
    es = sp.symbols("x0:6")
    for k, e in enumerate(errs):
        u = pid.step(e)
        ref = float(P.positional_expr(list(es), k).subs(vals).subs(dict(zip(es, errs))))
        assert u == pytest.approx(ref)


def test_listing_rests_above_the_set_point():
    assert sp.simplify(P.steady_error_expr("listing") - (P.T / P.Ti - 1)) == 0
    assert P.steady_error_expr("textbook") == 0
    pid = P.VelocityPID(0.3, 500, 1, 16, form="listing")
    rest = -(1 - 16 / 500)
    for _ in range(3):  # fill e_{k-1}, e_{k-2}: the derivative term vanishes on a constant error
        pid.step(rest)
    assert pid.increment(rest) == pytest.approx(0.0, abs=1e-12)


def test_printed_form_is_equation_4_2_as_printed_and_rests_higher():
    inc = P.printed_increment_expr()
    assert not inc.has(P.e_k) or sp.diff(inc, P.e_k) == P.Kp * P.Td / P.T  # e_k only in the D term
    assert sp.simplify(P.steady_error_expr("printed") + (1 + P.T / P.Ti)) == 0
    pid = P.VelocityPID(0.3, 500, 1, 16, u_min=-1e9, u_max=1e9, form="printed")
    first = pid.step(-5.0)  # e_{k-1} = 0 on the first sample: only the constant and the D term act
    assert first == pytest.approx(0.3 * (1 + 16 / 500) + 0.3 / 16 * -5.0)
    second = pid.step(-5.0) - first
    assert second == pytest.approx(0.3 * (1 + 16 / 500) + 0.3 * -5.0 + 0.3 / 16 * (-5.0 + 10.0))


def test_output_is_clamped_and_single_sided():
    pid = P.VelocityPID(0.3, 500, 1, 16)
    for _ in range(200):
        u = pid.step(-100.0)
    assert u == -40.0
    for _ in range(200):
        u = pid.step(+100.0)
    assert u == 0.0
    assert P.throttle_steps(-3.7) == 3 and P.throttle_steps(-0.2) == 0
    assert P.throttle_steps(0.0, previous=5, hold_at_zero=True) == 5
    assert P.throttle_steps(0.0, previous=5) == 0


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(kp=0), "kp"),
        (dict(ti=0), "ti"),
        (dict(td=-1), "td"),
        (dict(t=0), "t"),
        (dict(u_min=0, u_max=0), "u_min"),
        (dict(form="ideal"), "form"),
        (dict(kp=float("nan")), "kp"),
    ],
)
def test_pid_bad_parameters(kwargs, name):
    base = dict(kp=0.3, ti=500, td=1, t=16)
    base.update(kwargs)
    with pytest.raises(ValueError, match=name):
        P.VelocityPID(**base)


def test_pid_bad_error_and_output():
    with pytest.raises(ValueError, match="error"):
        P.VelocityPID(0.3, 500, 1, 16).step(float("nan"))
    with pytest.raises(ValueError, match="u must not be positive"):
        P.throttle_steps(0.5)


# ---- plant ------------------------------------------------------------------------------------------

PLANT = SharedDiskPlant(1.4e-3, 3.5e-3, 2.7e-3)


def test_mva_single_customer_and_little():
    x, q, r = mva_closed(1, 2e-3, 1e-3)
    assert x == pytest.approx(1 / 3e-3) and r == pytest.approx(1e-3) and q == pytest.approx(1 / 3)
    x, q, r = mva_closed(12, 2e-3, 1e-3, stations=2)
    assert 2 * q + x * 2e-3 == pytest.approx(12)  # Little over the whole ring: n = X (Z + R)


@given(st.integers(1, 40), st.floats(0, 0.05), st.floats(1e-4, 1e-2), st.integers(1, 4))
@settings(max_examples=60)
def test_mva_respects_the_operational_bounds(n, z, dem, c):
    x, q, r = mva_closed(n, z, dem, c)
    assert x <= min(n / (z + c * dem), 1 / dem) * (1 + 1e-9)
    assert x * (z + r) == pytest.approx(n)


@given(st.integers(1, 20), st.floats(0, 0.02), st.floats(0, 0.02))
@settings(max_examples=60)
def test_delay_lowers_write_rate_and_read_wait(n, d1, d2):
    lo, hi = sorted((d1, d2))
    a, b = PLANT.steady_state(n, lo), PLANT.steady_state(n, hi)
    assert b.write_rate_Bps <= a.write_rate_Bps * (1 + 1e-12)
    assert b.read_wait_s <= a.read_wait_s * (1 + 1e-12)
    assert 0 <= a.utilization < 1


def test_more_writers_raise_the_read_wait():
    waits = [PLANT.steady_state(n).read_wait_s for n in range(0, 13)]
    assert all(w2 > w1 for w1, w2 in zip(waits, waits[1:]))
    assert waits[0] == pytest.approx(PLANT.read_service_s / (1 - PLANT.read_utilization))


def test_calibration_reproduces_its_inputs():
    p = calibrate(39 * MiB, 45e-3, 15 * MiB)
    st0 = p.steady_state(12)
    assert st0.write_rate_Bps == pytest.approx(39 * MiB, rel=1e-8)
    assert st0.read_wait_s == pytest.approx(45e-3, rel=1e-8)
    assert p.write_bytes / (p.writer_base_s + p.write_service_s) == pytest.approx(15 * MiB)
    d = p.delay_for_read_wait(12, 20e-3)
    assert p.steady_state(12, d).read_wait_s == pytest.approx(20e-3, rel=1e-6)
    assert p.delay_for_read_wait(12, 1.0) == 0.0


def test_sample_is_seeded_and_zero_without_reads():
    a = PLANT.sample(12, 0.0, 0.1, np.random.default_rng(7))
    b = PLANT.sample(12, 0.0, 0.1, np.random.default_rng(7))
    assert a == b
    quiet = SharedDiskPlant(1.4e-3, 3.5e-3, 2.7e-3, read_rate_per_s=0.0)
    assert quiet.sample(12, 0.0, 0.1, np.random.default_rng(0))[:2] == (0.0, 0)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(write_service_s=0), "write_service_s"),
        (dict(read_service_s=-1), "read_service_s"),
        (dict(writer_base_s=-1e-3), "writer_base_s"),
        (dict(read_rate_per_s=-1), "read_rate_per_s"),
        (dict(stations=0), "stations"),
        (dict(rounds_per_write=0), "rounds_per_write"),
        (dict(read_rate_per_s=1000.0), "read_rate_per_s"),
        (dict(write_bytes=0), "write_bytes"),
    ],
)
def test_plant_bad_parameters(kwargs, name):
    base = dict(write_service_s=1.4e-3, read_service_s=3.5e-3, writer_base_s=2.7e-3)
    base.update(kwargs)
    with pytest.raises(ValueError, match=name):
        SharedDiskPlant(**base)


def test_plant_bad_calls():
    with pytest.raises(ValueError, match="writers"):
        PLANT.steady_state(-1)
    with pytest.raises(ValueError, match="delay_s"):
        PLANT.steady_state(3, -1e-3)
    with pytest.raises(ValueError, match="rng"):
        PLANT.sample(3, 0.0, 0.1, 42)
    with pytest.raises(ValueError, match="read_wait_s"):
        PLANT.delay_for_read_wait(12, 1e-3, max_delay_s=1e-3)
    with pytest.raises(ValueError, match="unregulated_write_Bps"):
        calibrate(10 * MiB, 45e-3, 15 * MiB)


# ---- closed loop ------------------------------------------------------------------------------------


def test_schedule_shape():
    s = on_off_schedule(10, 2, 1, 12, interval_s=0.5, lead_s=1)
    assert list(s[:8]) == [0, 0, 12, 12, 12, 12, 0, 0]
    with pytest.raises(ValueError, match="on_s"):
        on_off_schedule(10, 0, 1, 12)
    with pytest.raises(ValueError, match="lead_s"):
        on_off_schedule(10, 1, 1, 12, lead_s=-1)


def test_closed_loop_holds_the_set_point_and_is_deterministic():
    p = calibrate(39 * MiB, 45e-3, 15 * MiB)
    sch = on_off_schedule(60, 25, 5, 12, lead_s=2)
    a = run_closed_loop(p, sch, 15e-3, seed=3)
    b = run_closed_loop(p, sch, 15e-3, seed=3)
    assert a.equals(b)
    s = summarize(a, 8)
    # listing form: rests (1 - T/Ti) = 0.968 ms above the set point
    assert s.mean_smoothed_s * 1e3 == pytest.approx(15 + 0.968, abs=0.5)
    assert s.mean_write_rate_Bps < p.steady_state(12).write_rate_Bps
    assert (a["steps"] >= 0).all() and (a["steps"] <= 40).all()
    # open loop never throttles
    free = run_closed_loop(p, sch, np.inf, seed=3)
    assert (free["steps"] == 0).all() and summarize(free, 8).mean_wait_s == pytest.approx(45e-3)


def test_textbook_form_settles_at_the_set_point_given_time():
    p = calibrate(39 * MiB, 45e-3, 15 * MiB)
    sch = on_off_schedule(122, 120, 5, 12, lead_s=2)
    df = run_closed_loop(
        p, sch, 15e-3, controller=P.VelocityPID(0.3, 500, 1, 16, form="textbook"), seed=5
    )
    assert summarize(df, 60).mean_smoothed_s * 1e3 == pytest.approx(15.0, abs=0.5)


def test_loop_bad_input():
    p = calibrate(39 * MiB, 45e-3, 15 * MiB)
    with pytest.raises(ValueError, match="schedule"):
        run_closed_loop(p, [1, -2], 15e-3)
    with pytest.raises(ValueError, match="setpoint_s"):
        run_closed_loop(p, [1, 2], 0.0)
    with pytest.raises(ValueError, match="seed"):
        run_closed_loop(p, [1, 2], 15e-3, seed=-1)
    with pytest.raises(ValueError, match="transient_s"):
        settled(run_closed_loop(p, [1, 2], 15e-3), 0)


# ---- noise without NumPy ----------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 7, 2010, 2**40 + 3])
def test_noise_stream_draws_what_numpy_draws(seed):
    """NoiseStream is numpy.random.default_rng(seed)'s Poisson (small
    means), exponential and mean, draw for draw and bit for bit."""
    from models.control.noise import NoiseStream

    mine, ref = NoiseStream(seed), np.random.default_rng(seed)
    for i in range(400):
        lam = (0.0, 0.3, 3.2000000000000006, 9.999)[i % 4]
        assert mine.poisson(lam) == int(ref.poisson(lam))
        n = (1, 2, 7, 8, 9, 16, 23, 128, 129, 300, 1001)[i % 11]
        assert mine.exponential_mean(0.045, n) == ref.exponential(0.045, n).mean()
    assert mine.standard_exponential() == ref.standard_exponential()


def test_noise_stream_covers_the_ziggurat_tail():
    """Draws beyond the ziggurat's base (x > 7.7, one in ~2200) and its
    rejection branch match NumPy too."""
    from models.control.noise import NoiseStream

    mine, ref = NoiseStream(5), np.random.default_rng(5)
    a = [mine.standard_exponential() for _ in range(50_000)]
    assert a == ref.standard_exponential(50_000).tolist()
    assert sum(x > 7.69711747013105 for x in a) > 5


def test_numpy_sum_is_numpys_pairwise_sum():
    from models.control.noise import numpy_sum

    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 8, 15, 16, 17, 127, 128, 129, 1000, 5000):
        x = rng.exponential(1.0, n) * 10.0 ** rng.integers(-8, 8, n)
        assert numpy_sum(x.tolist()) == np.add.reduce(x), n


def test_noise_stream_bad_input():
    from models.control.noise import NoiseStream

    with pytest.raises(ValueError, match="lam"):
        NoiseStream(1).poisson(10.0)
    with pytest.raises(ValueError, match="size"):
        NoiseStream(1).exponential_mean(1.0, 0)
    with pytest.raises(ValueError, match="seed"):
        NoiseStream(-1)


def test_loop_without_numpy_equals_the_numpy_generator():
    """closed_loop's NoiseStream gives the run numpy.random.default_rng gives
    (sampled through the plant's NumPy path), and a large Poisson mean uses
    NumPy's generator."""
    from models.control.noise import NoiseStream

    p = calibrate(39 * MiB, 45e-3, 15 * MiB)
    rng_np, rng_std = np.random.default_rng(11), NoiseStream(11)
    for writers, delay in ((12, 0.0), (12, 2e-3), (0, 0.0), (3, 5e-3)) * 50:
        assert p.sample(writers, delay, 0.1, rng_np) == p.sample(writers, delay, 0.1, rng_std)
    busy = SharedDiskPlant(1.4e-3, 3.5e-3, 2.7e-3, read_rate_per_s=150.0)
    sch = [12] * 30
    a = run_closed_loop(busy, sch, 15e-3, seed=4)  # 15 reads per interval
    assert a.equals(run_closed_loop(busy, sch, 15e-3, seed=4))
    assert a["measured_s"].gt(0).all()


def test_simulator_cross_check_matches_the_model():
    from models.control.simcheck import simulated_read_rate

    rtt0 = 65536 / (22 * MiB)
    for d in (0.0, 4.6e-3):
        assert simulated_read_rate(d, rtt0, ops=20) == pytest.approx(
            TH.rate_under_delay(65536, rtt0, d), rel=1e-6
        )
    with pytest.raises(ValueError, match="rtt0_s"):
        simulated_read_rate(0.0, 1e-6, ops=20)
    with pytest.raises(ValueError, match="delay_s"):
        simulated_read_rate(-1.0, rtt0)


def test_on_off_schedule_refuses_nan_and_endless() -> None:
    import pytest as _pt

    from models.control.loop import on_off_schedule

    with _pt.raises(ValueError, match="lead_s"):
        on_off_schedule(10, 1, 1, 2, lead_s=float("nan"))
    with _pt.raises(ValueError, match="samples"):
        on_off_schedule(1e12, 1, 1, 2)
