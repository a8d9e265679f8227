"""Application threads: the server's session thread and the initiator.

Each thread follows Butterfield (2017)'s queue process: idle, it wakes
``wake`` after data arrives in its socket (``wake_fast`` instead if it
has been idle for less than ``wake_fast_idle``, or the latency of a
measured curve at its idle time; plus a random extra latency if the host
has one), spends ``wake_cpu`` on the wake-up itself, and then, busy, reads
everything queued, processes each *complete* message in turn (``proc`` each; a
message is complete when all its bytes arrived: the reader knows the
message lengths), writes the messages that one releases at the end of
the processing, and looks again; it goes idle only when no complete
message is left.  Messages handled per busy period are counted
(``busy_counts``).

An operation is an exchange of messages (:class:`models.sim.exchange.Exchange`,
from :attr:`~models.sim.scenario.Workload.graph`): the client writes the
messages that wait for nothing when it issues the operation, and each
side, once it has read a message, writes every message that message
releases (several at once if several are released).  The client
completes the operation when it has read every message of the server's
and issues the next, so exactly ``qd`` operations are always
outstanding.  A read is a chain of two (request, response); an iSCSI
write with R2T four or more, and with MaxOutstandingR2T a window that
slides (:func:`models.iscsi.messages`).

Each thread runs on a CPU of its own or shares a pool of them with the
other host's (:mod:`models.sim.cpu`).  The two ends' own rules (the
order the server takes operations in, the client's queue depth) are in
:mod:`models.sim.ends`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heappush
from typing import TYPE_CHECKING

from models.sim.app_view import AppThreadView
from models.sim.cpu import OwnCpu
from models.sim.own_code import OwnCode
from models.sim.owner import SocketOwner
from models.sim.preemption import PreemptionPoints
from models.sim.softirq_first import SoftIrqFirst
from models.sim.wakeups import wake_latency

if TYPE_CHECKING:
    from models.sim.exchange import Exchange

__all__ = ["AppThread"]


class AppThread(OwnCode, PreemptionPoints, SocketOwner, SoftIrqFirst, AppThreadView):
    """What both threads share.

    With a transmit cost (``tx_cpu``) the ``send()`` calls of a message
    are made one after another: a call that costs CPU (``take_thread_cpu``
    of its sender) returns that much later, then the next call is made.

    Parameters
    ----------
    loop : EventLoop
    ep : Endpoint
        This host's TCP endpoint.
    proc : int
        Processing time per message, fs.
    wake : int
        Wake-up latency after idling, fs.
    tx_cpu : int
        Nonzero if ``send()`` costs CPU (the sender's ``TxCosts``), fs.
    host : Host
        The scenario part (socket options of the writes).
    factor : callable or None
        The next jitter factor (``None``: deterministic).
    wake_cpu : int
        CPU spent on each wake-up before the thread reads, fs.
    wake_extra : callable or None
        The next random extra wake-up latency, fs (``None``: none).
    wake_fast, wake_fast_idle : int
        Wake-up latency, fs, of a thread idle for less than
        ``wake_fast_idle`` fs (0: every wake-up takes ``wake``).
    wake_late : callable or None
        A draw: whether such a brief-idle wake-up still takes ``wake``
        (``None``: never).
    wake_curve : tuple
        ``(idle, latency)`` points, fs, idle rising: when given, a wake-up
        takes the latency at the thread's idle time, linear between the
        points and the end points' beyond (in place of the fast step).
    wake_late_latency : int
        The latency, fs, of a wake-up the draw ``wake_late`` says is late
        (0: ``wake``, or with a curve its last point's).
    read_byte : int
        CPU per byte read (the copy to the application), fs, added to
        the processing of the next message the thread handles.
    cpu : OwnCpu or CpuPool, optional
        Where the thread's work runs.
    exchange : Exchange
        One operation's messages.
    setup : Exchange or None
        The setup's messages, before the loop (op -1).
    """

    # the events' methods: each thread's class runs its own copy (models.sim.own_code: speed)
    own_code = (
        "on_data",
        "_wake",
        "_step",
        "_done",
        "_written",
        "_next_call",
        "finish",
        "send_messages",
        "_calls",
    )
    # its fields as slots: CPython reads them in one step (a dict of them had more keys than
    # the shared-key form holds, so every access went through a dict lookup)
    __slots__ = (
        "loop",
        "heap",
        "ticket",
        "exchange",
        "setup",
        "ep",
        "side",
        "tx",
        "rcv",
        "stock_ack",
        "cpu",
        "own_cpu",
        "hold_cpu",
        "proc",
        "wake",
        "tx_cpu",
        "writes",
        "unwritten",
        "wake_cpu",
        "wake_extra",
        "wake_late",
        "wake_fast",
        "wake_fast_idle",
        "wake_curve",
        "wake_late_latency",
        "idle_since",
        "read_byte",
        "read_cpu",
        "cork",
        "flush_on_idle",
        "quickack",
        "own_socket",
        "factor",
        "peer",
        "expect",
        "got",
        "busy",
        "waking",
        "wake_paid",
        "woken_horizon",
        "busy_start",
        "count",
        "busy_counts",
        "empty_wakeups",
        "wakeups",
        "busy_fs",
        "cpu_fs",
        "thread_segments",
        "served",
        "plain_complete",
        "reply_proc",
        "done",
        "wake_up",
        "next_call",
        "step",
        "call_end",
        "preemptible",
        "parked",
        "plans",
        "setup_plans",
    )

    def __init__(
        self,
        loop,
        ep,
        proc: int,
        wake: int,
        tx_cpu: int,
        host,
        factor: Callable[[], float] | None,
        wake_cpu: int = 0,
        wake_extra: Callable[[], int] | None = None,
        cpu=None,
        wake_late: Callable[[], bool] | None = None,
        *,
        exchange: Exchange,
        setup: Exchange | None = None,
        wake_fast: int = 0,
        wake_fast_idle: int = 0,
        wake_curve: tuple = (),
        wake_late_latency: int = 0,
        read_byte: int = 0,
    ) -> None:
        self._own_code()  # (first: the bound methods below are its class's copies)
        self.loop = loop
        self.heap, self.ticket = loop.heap, loop.ticket  # the loop's fast path
        self.exchange = exchange
        self.setup = setup
        self.ep = ep
        self.side = ep.side
        self.tx, self.rcv = ep.sender, ep.receiver  # its halves, looked up once
        self.stock_ack = ep.stock_ack  # LinuxAck.on_read runs inline in _step
        self.cpu = OwnCpu() if cpu is None else cpu
        self.own_cpu = cpu is None  # work ends when done (a shortcut)
        self.hold_cpu = self.cpu.hold  # held from its wake-up until it blocks
        self.proc = proc
        self.wake = wake
        self.tx_cpu = tx_cpu
        self.writes: deque = deque()  # calls of the message being written
        self.unwritten = 0  # bytes in them
        self.wake_cpu = wake_cpu
        self.wake_extra, self.wake_late = wake_extra, wake_late
        self.wake_fast, self.wake_fast_idle = wake_fast, wake_fast_idle
        self.wake_curve = wake_curve
        self.wake_late_latency = wake_late_latency  # fs a late wake-up takes (0: the default)
        self.idle_since = 0  # fs: when the thread last went idle
        self.read_byte = read_byte
        self.read_cpu = 0  # fs of copying read but not yet paid
        self.cork, self.flush_on_idle, self.quickack = host.cork, host.flush_on_idle, host.quickack
        self.own_socket = host.own_socket  # its calls own the socket (models.sim.owner)
        self.factor = factor
        self.peer: AppThread = None  # type: ignore[assignment]
        # (end sequence, op, message, processing fs) of incoming messages
        self.expect: deque = deque()
        self.got: dict = {}  # op -> bit mask of its messages read, ops under way
        self.busy = self.waking = False
        self.wake_paid = False  # a send() of the peer has paid for waking us (WakerCost)
        self.woken_horizon = 0  # fs: the idle up to which the peer's WakerCost depends on it
        self.busy_start = 0
        self.count = 0  # messages handled in this busy period
        self.busy_counts: dict = {}
        self.empty_wakeups = self.wakeups = 0
        self.busy_fs = 0  # fs busy (processing and between)
        self.cpu_fs = 0  # fs of processing and own-send CPU
        self.thread_segments = 0  # data segments sent by own send()s
        self.served = 0  # messages read and processed
        self.plain_complete = type(self).complete is AppThread.complete
        # peer_proc of an operation and of the setup, fs (looked up once)
        self.reply_proc = (self.peer_proc(0), self.peer_proc(-1))
        # Made once: the bound methods events run (the loop's fast path),
        # each message's bytes and send() calls (Exchange.plans)
        self.done, self.wake_up = self._done, self._wake
        self.next_call, self.step, self.call_end = self._next_call, self._step, self._call_end
        # with wake-up preemption on a shared CPU (Link.wake_preempt) its events are preemption
        # points (a wake-up behind the CPU's holder is queued at once); with Host.softirq_first
        # on one machine they wait for the soft interrupts queued on its CPU (softirq_first)
        self.preemptible = getattr(self.cpu, "preempt", False)
        self.parked: tuple | None = None  # (method name, argument) to go on with, preempted
        if self.preemptible:
            self.done, self.next_call, self.step = self._done_p, self._next_call_p, self._step_p
        elif host.softirq_first and ep.own_cpu is not None:
            self.done, self.next_call = self._done_s, self._next_call_s
        flags = host.msg_more, host.msg_more_last
        self.plans, self.setup_plans = exchange.plans(*flags), setup.plans(*flags) if setup else ()

    def on_data(self, now: int) -> None:
        """Data arrived in the socket (the endpoint calls this)."""
        if not self.busy and not self.waking:
            self.waking = True
            if not (self.wake_curve or self.wake_fast_idle):
                delay = self.wake  # (wake_latency's answer: no curve, no fast step, no draw)
            else:
                args = self.wake, self.wake_fast, self.wake_fast_idle, self.wake_curve
                delay = wake_latency(
                    now - self.idle_since, *args, self.wake_late, self.wake_late_latency
                )
            if self.wake_extra is not None:
                delay += self.wake_extra()
            if self.preemptible and self.cpu.holders:  # (in the holder's soft interrupt)
                delay = 0
            heappush(self.heap, [now + delay, next(self.ticket), self.wake_up, None])

    def _wake(self, now: int, _arg: object) -> None:
        if self.hold_cpu and not self.cpu.acquire(self):
            return  # (still waking) the CPU's holder runs on; it wakes us when it blocks
        self.waking = False
        self.wake_paid = False
        self.busy = True
        self.wakeups += 1
        self.busy_start = now
        self.count = 0
        if self.wake_cpu:  # the wake-up's own CPU
            self.cpu_fs += self.wake_cpu
            self.loop.schedule(self.cpu.run(now, self.wake_cpu), self.step)
        else:
            self._step(now, None)

    def _step(self, now: int, _arg: object) -> None:
        """Read what is queued; start the next message or go idle."""
        rcv = self.rcv
        nxt = rcv.rcv_nxt
        if nxt != rcv.copied_seq:
            copied = nxt - rcv.copied_seq  # Receiver.read, inline
            rcv.copied_seq = nxt
            ack = rcv.ack
            if not self.stock_ack:
                ack.on_read(now)
            elif ack.owed and (  # LinuxAck.on_read, inline
                nxt - ack.rcv_wup > ack.rcv_mss
                or ack.pushed & 2
                or (ack.pushed & 1 and ack.pingpong < ack.pingpong_thresh)
            ):
                self.ep.send_ack(now)
            if self.read_byte:
                self.read_cpu += copied * self.read_byte
            if self.quickack:  # setsockopt(TCP_QUICKACK, 1)
                rcv.ack.quickack(now)
        expect = self.expect
        if expect and expect[0][0] <= rcv.copied_seq:
            item = expect.popleft()
            self.count += 1
            proc = item[3]
            if self.factor is not None:
                proc = round(proc * self.factor())
            if self.read_cpu:  # the copies of what was read, paid first
                proc += self.read_cpu
                self.read_cpu = 0
            self.cpu_fs += proc
            end = now + proc if self.own_cpu else self.cpu.run(now, proc)
            heappush(self.heap, [end, next(self.ticket), self.done, item])
            return
        if self.flush_on_idle:
            self.ep.sender.flush(now)
        self.busy = False
        self.idle_since = now
        if self.hold_cpu:
            self.cpu.release(self, now)
        self.busy_fs += now - self.busy_start
        if self.count:
            self.busy_counts[self.count] = self.busy_counts.get(self.count, 0) + 1
        else:
            self.empty_wakeups += 1

    def _done(self, now: int, item: tuple) -> None:
        sent = self.finish(now, item[1], item[2])
        if self.writes or self.tx.thread_cpu:
            self._written(now, sent)
        else:  # _written with no transmit CPU to take and no call left
            self.thread_segments += sent
            self._step(now, None)

    def _written(self, now: int, sent: int) -> None:
        """``sent`` data segments left in our own ``send()`` calls: their
        CPU, then the next call of the message or the next step."""
        tx = self.ep.sender
        while True:
            self.thread_segments += sent
            extra = tx.take_thread_cpu()  # CPU of our own send() calls
            if extra:
                self.cpu_fs += extra
                end = self.cpu.run(now, extra)
                if self.own_socket:
                    self._owning_call(now, end)
                else:
                    self.loop.schedule(end, self.next_call if self.writes else self.step)
                return
            if not self.writes:
                self._step(now, None)
                return
            # a call that cost nothing (clearing TCP_CORK) sent data: the next call now
            sent = self._calls(now)

    def _next_call(self, now: int, _arg: object) -> None:
        self._written(now, self._calls(now))

    def finish(self, now: int, op: int, msg: int) -> int:
        """Message ``msg`` of operation ``op`` is processed: write what it
        releases (and, if it was the side's last message of the operation,
        what the end of the operation brings); returns the data segments
        the thread's writes sent."""
        self.served += 1
        ex = self.setup if op < 0 else self.exchange
        assert ex is not None  # a setup message comes with a setup exchange
        side = self.side
        if ex.full[side] == 1 << msg:  # the one message of op this side reads
            self.begin(op, msg, ex)  # (so none of op's is in got: read once)
            got = 1 << msg
        else:
            got = self.got.pop(op, None)
            if got is None:  # the operation's first message this side reads
                self.begin(op, msg, ex)
                got = 0
            if got >> msg & 1 or ex.sides[msg] == side:
                raise AssertionError(f"{type(self).__name__} read message {msg} of op {op} again")
            got |= 1 << msg
        items = []
        released = ex.releases[msg]
        if released:
            proc = self.reply_proc[op < 0]  # peer_proc(op)
            if len(released) == 1:  # (the common case, without a comprehension)
                items = [(op, released[0], proc)]
            else:
                items = [(op, j, proc) for j in released]
        if got != ex.full[side]:
            self.got[op] = got
            return self.send_messages(now, items)
        if self.plain_complete:  # complete(), AppThread's: no call between
            return self.send_messages(now, items)
        return self.complete(now, op, items)

    def begin(self, op: int, msg: int, ex: Exchange) -> None:
        """The first message of operation ``op`` this side reads (a check)."""

    def complete(self, now: int, op: int, items: list) -> int:
        """Every message of ``op`` this side reads is read: write ``items``
        (what the last released) and what follows; data segments sent."""
        return self.send_messages(now, items)

    def peer_proc(self, op: int) -> int:
        """The peer's processing time for a message of ``op``, fs."""
        raise NotImplementedError

    def send_messages(self, now: int, items: list, at_once: bool = False) -> int:
        """Write messages, ``(op, message, peer's processing fs)`` each,
        as ``send()`` calls, in turn; tell the peer where each ends.
        Returns the data segments sent now: with a transmit cost the calls
        after one that transmits wait for its CPU (``_written``), unless
        ``at_once``."""
        if not items:
            return 0
        tx = self.tx
        end = tx.write_seq + self.unwritten
        expect = self.peer.expect
        if not self.cork and not self.writes and (at_once or not self.tx_cpu):
            # every call now, none pending: make them without queueing (each
            # message's end is told first; the peer reads it only later)
            sent = 0
            write = tx.write
            for op, msg, proc in items:
                total, calls = (self.setup_plans if op < 0 else self.plans)[msg]
                end += total
                expect.append((end, op, msg, proc))
                for size, more in calls:
                    sent += write(now, size, more)
            return sent
        plans = []
        for op, msg, proc in items:
            plan = (self.setup_plans if op < 0 else self.plans)[msg]
            plans.append(plan)
            end += plan[0]
            expect.append((end, op, msg, proc))
        queue = self.writes
        for total, calls in plans:
            if self.cork:
                queue.append(("cork", True))
            queue.extend(calls)
            if self.cork:
                queue.append(("cork", False))
            self.unwritten += total
        return self._calls(now, at_once or not self.tx_cpu)

    def _calls(self, now: int, all_now: bool = False) -> int:
        """Make the pending calls until one transmits (or all of them)."""
        tx = self.ep.sender
        writes = self.writes
        sent = 0
        while writes and (all_now or not (sent or tx.thread_cpu)):
            a, b = writes.popleft()
            if a == "cork":
                sent += tx.set_cork(now, b)
            else:
                self.unwritten -= a
                sent += tx.write(now, a, b)
        return sent
