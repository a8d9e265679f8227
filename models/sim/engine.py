"""Wire the components of one scenario together, run the event loop and collect the result."""

from __future__ import annotations

import time as _time
from typing import Optional

import numpy as np

from models.sim.app import ClientThread, ServerThread
from models.sim.events import EventLoop
from models.sim.link import Link
from models.sim.result import Result, TraceRecord
from models.sim.scenario import Scenario
from models.sim.tcp import Endpoint

__all__ = ["simulate", "run", "Simulation"]

_DIRS = ("C>S", "S>C")


class Simulation:
    """The built model of one scenario: two endpoints, two links, two threads and the event loop.

    Use :func:`simulate` unless you want to step the loop yourself.
    """

    def __init__(self, scenario: Scenario) -> None:
        sc = scenario
        self.scenario = sc
        self.rng = np.random.default_rng(sc.seed)
        profile = sc.profile
        phase = sc.tick_phase_s if sc.tick_phase_s is not None else float(self.rng.uniform(0, profile.tick_s))
        self.tick_phase_s = phase
        loop = self.loop = EventLoop()
        c = self.client_ep = Endpoint(0, loop, profile, sc.mss, sc.nodelay_on("client"), sc.autocork_on, phase, sc.ck_s,
                                      sc.kernel_timers)
        s = self.server_ep = Endpoint(1, loop, profile, sc.mss, sc.nodelay_on("server"), sc.autocork_on, phase, sc.sk_s,
                                      sc.kernel_timers)
        # request direction: client transmit path, server receive path
        c.link = Link(loop, sc.bandwidth_bps, sc.ct_s, sc.sr_s, sc.latency_s, sc.si_s, s.receive, sc.bucket_bytes)
        s.link = Link(loop, sc.bandwidth_bps, sc.st_s, sc.cr_s, sc.latency_s, sc.ci_s, c.receive, sc.bucket_bytes)
        factors = self._factor_source() if sc.jitter else None
        target = sc.warmup + sc.ops
        self.server = ServerThread(loop, s, sc.sp_s, sc.sl_s, sc.flush_on_idle_on("server"), factors,
                                   response_writes=sc.response_writes,
                                   setup_response_writes=sc.setup_response_writes,
                                   msg_more=sc.msg_more_on("server"), msg_more_last=sc.msg_more_last,
                                   client_proc=sc.cp_s)
        self.client = ClientThread(loop, c, sc.cp_s, sc.cl_s, sc.flush_on_idle_on("client"), factors,
                                   qd=sc.qd, request_writes=sc.request_writes,
                                   setup_request_writes=sc.setup_request_writes,
                                   msg_more=sc.msg_more_on("client"), msg_more_last=sc.msg_more_last,
                                   server_proc=sc.sp_s, setup_server_proc=sc.setup_sp_s, target=target)
        self.server.peer, self.client.peer = self.client, self.server
        c.app, s.app = self.client, self.server
        self.trace: Optional[list] = None
        if sc.trace:
            self.trace = []
            (c if sc.trace_at == "client" else s).trace = self.trace
        if sc.check:
            loop.after_event = self.check_invariants
        loop.schedule(0.0, self.client.start, None)

    def _factor_source(self):
        """A callable returning jitter factors, drawn in blocks from the seeded generator."""
        rng, spread = self.rng, self.scenario.jitter
        state = {"buf": np.empty(0), "i": 0}

        def nxt() -> float:
            if state["i"] >= len(state["buf"]):
                state["buf"] = rng.uniform(1 - spread, 1 + spread, 4096)
                state["i"] = 0
            state["i"] += 1
            return float(state["buf"][state["i"] - 1])

        return nxt

    def check_invariants(self, now: float) -> None:
        """Raise ``AssertionError`` if any invariant fails (called after every event with ``check=True``)."""
        cl, sv = self.client, self.server
        heap = self.loop.heap
        assert not heap or heap[0][0] >= now, "an event was scheduled in the past"
        for ep, peer in ((self.client_ep, self.server_ep), (self.server_ep, self.client_ep)):
            # acknowledged <= received by the peer <= sent <= written
            assert ep.snd_una <= peer.rcv_nxt <= ep.snd_nxt <= ep.write_seq, (
                ep.side, ep.snd_una, peer.rcv_nxt, ep.snd_nxt, ep.write_seq)
            assert peer.copied_seq <= peer.rcv_nxt
            unsent = sum(b.end - b.start for b in ep.queue)
            assert ep.snd_nxt + unsent == ep.write_seq, "send queue does not account for every byte"
        started = cl.issued > 0
        if started:
            assert cl.issued - cl.completed == cl.qd, f"{cl.issued - cl.completed} operations in flight, qd {cl.qd}"
        assert sv.served <= cl.issued + (1 if self.scenario.setup_request_writes else 0)

    def run(self) -> Result:
        """Run to the scenario's number of operations and return the :class:`Result`."""
        sc = self.scenario
        t0 = _time.perf_counter()
        self.loop.run()
        wall = _time.perf_counter() - t0
        cl = self.client
        end = self.loop.now
        w = sc.warmup
        done = np.asarray(cl.done_time)
        measured = len(done) - w
        if measured > 0 and w > 0:
            span = done[-1] - done[w - 1]
            iops = measured / span if span > 0 else float("inf")
        elif measured > 0:
            iops = measured / done[-1] if done[-1] > 0 else float("inf")
        else:
            iops = 0.0
        rtts = np.asarray(cl.rtts[w:])
        eps = (self.client_ep, self.server_ep)
        links = (self.client_ep.link, self.server_ep.link)
        span = end if end > 0 else float("nan")
        trace = []
        if self.trace is not None:
            entries = sorted(self.trace, key=lambda e: e[0])
            for t, seg in entries:
                trace.append(TraceRecord(t, "C > S" if seg.src == 0 else "S > C", "P." if seg.psh else ".",
                                         seg.seq, seg.end, seg.ack, seg.end - seg.seq))
        return Result(
            scenario=sc, iops=float(iops), ops=max(measured, 0), rtts_s=rtts, sim_time_s=end,
            packets=sum(l.frames for l in links),
            packets_by_direction={d: l.frames for d, l in zip(_DIRS, links)},
            data_segments={d: e.data_segments for d, e in zip(_DIRS, eps)},
            pure_acks={d: e.pure_acks for d, e in zip(_DIRS, eps)},
            delayed_acks={d: e.delayed_acks for d, e in zip(_DIRS, eps)},
            probes={d: e.probes for d, e in zip(_DIRS, eps)},
            # wire time already committed to frames still serializing after the end does not count
            link_utilization={d: min(1.0, max(0.0, l.busy_time - max(0.0, l.free_at - end)) / span)
                              for d, l in zip(_DIRS, links)},
            cpu_utilization={
                "client": cl.cpu_time / span, "server": self.server.cpu_time / span,
                # receive soft interrupt of a host = the softirq stage of the link arriving at it
                "client_softirq": (self.server_ep.link.softirq_busy
                                   + (self.client_ep.tx_cpu - self.client_ep.thread_tx_segments * sc.ck_s)) / span,
                "server_softirq": (self.client_ep.link.softirq_busy
                                   + (self.server_ep.tx_cpu - self.server_ep.thread_tx_segments * sc.sk_s)) / span,
            },
            busy_counts=dict(sorted(self.server.busy_counts.items())),
            client_busy_counts=dict(sorted(cl.busy_counts.items())),
            events=self.loop.events, wall_time_s=wall,
            bytes_sent={d: e.snd_nxt - 1 for d, e in zip(_DIRS, eps)},
            bytes_acked={d: e.snd_una - 1 for d, e in zip(_DIRS, eps)},
            completed_total=cl.completed, in_flight=cl.issued - cl.completed,
            trace=trace,
        )


def simulate(scenario: Optional[Scenario] = None, **changes) -> Result:
    """Simulate ``scenario`` (default :class:`Scenario`), with any parameters changed by keyword.

    >>> r = simulate(qd=1, response_writes=(48, 512), ops=20)      # Nagle on: the delayed-ACK stall
    >>> 20 < r.iops < 30
    True
    >>> simulate(qd=0)
    Traceback (most recent call last):
    ...
    ValueError: qd must be a whole number >= 1, got 0
    """
    sc = scenario if scenario is not None else Scenario()
    if changes:
        sc = sc.replace(**changes)
    return Simulation(sc).run()


#: Another name for :func:`simulate`.
run = simulate
