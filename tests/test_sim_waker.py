"""``Host.waker_curve_s``: the ``send()`` that wakes the peer's sleeping thread pays for the wake-up
(an interrupt to a halted CPU; a trip through the hypervisor on a virtual machine), dearer the longer
that CPU has idled, and only once per sleep."""

from __future__ import annotations

import pytest

from models.sim import simulate

US = 1e-6  # seconds per microsecond
CURVE = ((1e-3, 0.0), (40e-3, 20 * US))  # nothing after 1 ms idle, 20 us after 40 ms


def stall_loop(curve: tuple = (), **run) -> object:
    """A Nagle server's stall loop on the third machine's profile, traced at the client: a NODELAY
    client with 4 operations in flight, 512-byte responses on the loopback, begun as a stall
    restarts; after each stall the client reads the released responses and writes its requests,
    the first of which wakes the server, asleep since the stall began.  The client's ``send()``
    pays ``curve``."""
    from models.sim import hostprofile
    from models.validation.fidelity import ProfileHost
    from models.validation.stallend import PROFILE, established_scenario

    row = dict(
        link="loopback", mtu_bytes=65536, rate_limit_bits_per_s=None, cc="reno",
        sock_mode="nagle", client_sock_mode="nodelay", qd=4, iosize_bytes=512,
    )  # fmt: skip
    p = hostprofile.shipped(PROFILE)
    sc = established_scenario("iscsi_loop", row, ProfileHost(p), p.machine["config_hz"])
    return simulate(
        sc.replace(
            client={"waker_curve_s": curve},
            run={"ops": 40, "trace": True, "trace_at": "client", **run},
        )
    )


def request_gaps_after_stalls(r) -> list[float]:
    """Seconds between the first and second request the client sends after each gap of 10 ms or
    more in its trace."""
    out, last, burst = [], None, None
    for t in r.trace:
        if last is not None and t.time - last > 10e-3:
            burst = []
        last = t.time
        if burst is not None and t.direction == "C > S" and t.length:
            burst.append(t.time)
            if len(burst) == 2:
                out.append(burst[1] - burst[0])
                burst = None
    return out


def test_the_request_that_wakes_the_sleeping_server_delays_the_next():
    base, woke = stall_loop(), stall_loop(CURVE)
    g0, g1 = request_gaps_after_stalls(base), request_gaps_after_stalls(woke)
    assert len(g0) == len(g1) >= 2
    # the server slept for a stall's ~40 ms: the client's send() paid about the curve's end
    for a, b in zip(g0, g1):
        assert b - a == pytest.approx(20 * US, abs=1.5 * US)


def test_a_peer_that_slept_briefly_costs_nothing():
    # a NODELAY loop without stalls: the server never sleeps 1 ms, so the curve adds nothing
    loop = dict(server={"nodelay": True}, client={"nodelay": True}, run={"ops": 2000})
    base = simulate(**loop)
    woke = simulate(**{**loop, "client": {"nodelay": True, "waker_curve_s": CURVE}})
    assert woke.rtts_s == base.rtts_s


def test_the_fast_forward_stays_exact_with_the_waker_cost():
    on = stall_loop(CURVE, trace=False)
    off = stall_loop(CURVE, trace=False, fast_forward=False)
    assert on.rtts_s == off.rtts_s


def test_the_curve_is_checked():
    with pytest.raises(ValueError, match="waker_curve_s"):
        simulate(client={"waker_curve_s": ((40e-3, 1e-6), (1e-3, 0.0))})  # idle falling


def test_a_waker_cost_alone_makes_the_calls_wait_for_it_from_the_first_stall_on():
    # A client whose only transmit cost is waking the server: its calls still wait for that CPU
    # (regression: its start-up calls were made at once and their waker's charge was left over
    # for the first stall, which then delayed the second request by the charge twice).
    from models.sim import Scenario

    cd, ce = 5e-6, 5.5e-6
    host = {"tx_latency_s": 0.6 * US, "rx_latency_s": 0.6 * US}
    wakes = {"wake_curve_s": ((1e-6, 20 * US), (1e-3, 20 * US), (10e-3, 60 * US))}
    sc = Scenario(
        workload={"qd": 4},
        link={"mtu": 65536, "bandwidth_bps": 1e11},
        client={**host, **wakes, "waker_curve_s": ((1e-3, 0.0), (10e-3, cd)), "nodelay": True,
                "proc_s": ce},
        server={**host, **wakes, "proc_s": ce},
        run={"start": "established", "ops": 12, "warmup_ops": 0, "trace": True,
             "trace_at": "client", "fast_forward": False},
    )  # fmt: skip
    gaps = request_gaps_after_stalls(simulate(sc))
    assert len(gaps) >= 2
    assert gaps == pytest.approx([ce + cd] * len(gaps), abs=0.01 * US)


def _plateau(soft_waker: bool, **run):
    """The eighth machine's plateau row (veth-1500, bbr, a Nagle server, a NODELAY client, QD 4,
    16 KiB) under its best rules (the held pacing call), ``Host.soft_waker`` as given: the held
    tail leaves when the pacing timer fires, outside the server's ``send()``, and its arrival
    wakes the client asleep in ``recv()``."""
    from models.sim.engine import Simulation
    from models.validation import fidelity as FID
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    row, hz = M7.sample_row("veth-1500", "nagle", "nodelay", 4, 16384, prefix=M8.PREFIX)
    profile, make = M8._models()[M8.HERE[1]]
    sc = make("iscsi_loop", row, FID.ProfileHost(profile), hz)
    flag = {"soft_waker": soft_waker}
    return Simulation(sc.replace(server=flag, client=flag, run={"ops": 2000, **run}))


def test_a_segment_released_outside_send_pays_for_the_wake_up_too():
    runs = {}
    for soft in (False, True):
        sim = _plateau(soft, fast_forward=False)
        r = sim.run()
        runs[soft] = (r.iops, sim.server_ep.sender.soft_cpu_fs / r.completed_total)
    (iops_off, soft_off), (iops_on, soft_on) = runs[False], runs[True]
    # some released tails wake the client (in this run about one in four): the curve's cost each
    from models.sim import hostprofile
    from models.validation import machine8 as M8

    curve = hostprofile.shipped(M8.PROFILE).host["waker_curve_s"]
    least = min(w for _, w in curve) * 1e15  # s -> fs
    assert soft_on - soft_off > 0.2 * least
    # (a wake-up is paid once per sleep: what the release pays, the next send() does not)
    assert iops_on != iops_off


def test_the_fast_forward_stays_exact_with_the_released_segments_waking():
    on, off = _plateau(True).run(), _plateau(True, fast_forward=False).run()
    assert on.rtts_s == off.rtts_s
