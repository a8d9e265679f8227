"""Application threads: the server's session thread and the client (initiator) thread.

Each thread follows Butterfield (2017)'s queue process: when it is idle and data arrives in its socket,
it wakes after its start latency (``SL`` or ``CL``); once busy it reads everything queued, processes each
*complete* message in turn (``SP`` or ``CP`` each; a message is complete when all its bytes arrived: the
reader parses the stream by the known message lengths), writes the reply's ``send()`` calls at the end of
each operation, and looks again; it goes idle only when no complete message is left.  The number of
operations handled in each busy period is recorded (``busy_counts``).
"""

from __future__ import annotations

from collections import deque

__all__ = ["AppThread", "ServerThread", "ClientThread"]


class AppThread:
    """Common part of both threads.

    Parameters
    ----------
    loop : EventLoop
    endpoint : Endpoint
        This host's TCP endpoint.
    proc_s : float
        Processing time per operation, seconds.
    wake_s : float
        Wake-up latency after going idle, seconds.
    flush_on_idle : bool
        Push held data out before sleeping.
    factors : callable or None
        Returns the next jitter factor (``None``: no jitter).
    """

    def __init__(self, loop, endpoint, proc_s: float, wake_s: float, flush_on_idle: bool, factors=None) -> None:
        self.loop = loop
        self.ep = endpoint
        self.proc = proc_s
        self.wake = wake_s
        self.flush_on_idle = flush_on_idle
        self.factors = factors
        self.peer = None                 # the other host's thread (it learns our message boundaries)
        self.expect: deque = deque()     # (end sequence number, op id, processing time) of incoming messages
        self.busy = False
        self.waking = False
        self.busy_start = 0.0
        self.count = 0                   # operations handled in the current busy period
        self.busy_counts: dict[int, int] = {}
        self.empty_wakeups = 0           # wake-ups that found no complete message
        self.busy_time = 0.0             # seconds busy (processing, including wake-to-idle bookkeeping)
        self.cpu_time = 0.0              # seconds of processing and transmit CPU
        self.wakeups = 0

    # called by the TCP endpoint when data arrives
    def on_data(self, now: float) -> None:
        if not self.busy and not self.waking:
            self.waking = True
            self.loop.schedule(now + self.wake, self._wake, None)

    def _wake(self, now: float, _arg) -> None:
        self.waking = False
        self.busy = True
        self.wakeups += 1
        self.busy_start = now
        self.count = 0
        self._step(now, None)

    def _step(self, now: float, _arg) -> None:
        """Read what is queued; start the next complete message or go idle."""
        ep = self.ep
        if ep.rcv_nxt != ep.copied_seq:
            ep.app_read(now)
        expect = self.expect
        if expect and expect[0][0] <= ep.copied_seq:
            item = expect.popleft()
            self.count += 1
            proc = item[2]
            if self.factors is not None:
                proc *= self.factors()
            self.cpu_time += proc
            self.loop.schedule(now + proc, self._done, item[1])
            return
        # idle
        if self.flush_on_idle:
            ep.flush(now)
        self.busy = False
        self.busy_time += now - self.busy_start
        if self.count:
            self.busy_counts[self.count] = self.busy_counts.get(self.count, 0) + 1
        else:
            self.empty_wakeups += 1

    def _done(self, now: float, op: int) -> None:
        before = self.ep.thread_tx_segments
        self.finish(now, op)
        extra = (self.ep.thread_tx_segments - before) * self.ep.tx_cost   # transmit CPU in our send() calls
        if extra:
            self.cpu_time += extra
            self.loop.schedule(now + extra, self._step, None)
        else:
            self._step(now, None)

    def finish(self, now: float, op: int) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def send_message(self, now: float, writes: tuple, more_fragments: bool, more_last: bool,
                     op: int, peer_proc: float) -> None:
        """Write one message as ``send()`` calls and tell the peer where it ends."""
        ep = self.ep
        last = len(writes) - 1
        for i, size in enumerate(writes):
            more = more_last if i == last else more_fragments
            ep.write(now, size, more)
        self.peer.expect.append((ep.write_seq, op, peer_proc))


class ServerThread(AppThread):
    """The server's session thread: each request's response is written after ``SP``."""

    def __init__(self, *args, response_writes: tuple, setup_response_writes: tuple, msg_more: bool,
                 msg_more_last: bool, client_proc: float, **kw) -> None:
        super().__init__(*args, **kw)
        self.response_writes = response_writes
        self.setup_response_writes = setup_response_writes
        self.msg_more = msg_more
        self.msg_more_last = msg_more_last
        self.client_proc = client_proc
        self.next_op = -1 if setup_response_writes else 0   # requests must arrive in order, once each
        self.served = 0

    def finish(self, now: float, op: int) -> None:
        if op != self.next_op:
            raise AssertionError(f"server processed op {op}, expected op {self.next_op}")
        self.next_op += 1
        self.served += 1
        writes = self.setup_response_writes if op < 0 else self.response_writes
        self.send_message(now, writes, self.msg_more, self.msg_more and self.msg_more_last, op, self.client_proc)


class ClientThread(AppThread):
    """The initiator: keeps ``qd`` operations outstanding; each response completes one and issues the next."""

    def __init__(self, *args, qd: int, request_writes: tuple, setup_request_writes: tuple, msg_more: bool,
                 msg_more_last: bool, server_proc: float, setup_server_proc: float, target: int, **kw) -> None:
        super().__init__(*args, **kw)
        self.qd = qd
        self.request_writes = request_writes
        self.setup_request_writes = setup_request_writes
        self.msg_more = msg_more
        self.msg_more_last = msg_more_last
        self.server_proc = server_proc
        self.setup_server_proc = setup_server_proc
        self.target = target             # completions after which the run stops
        self.issued = 0
        self.completed = 0
        self.issue_time: list[float] = []
        self.done_time: list[float] = []
        self.rtts: list[float] = []
        self.seen: set = set()

    def start(self, now: float, _arg=None) -> None:
        """At time 0: the setup exchange if any, else the first ``qd`` requests."""
        if self.setup_request_writes:
            self.send_message(now, self.setup_request_writes, self.msg_more, self.msg_more and self.msg_more_last,
                              -1, self.setup_server_proc)
        else:
            for _ in range(self.qd):
                self._issue(now)

    def _issue(self, now: float) -> None:
        op = self.issued
        self.issued += 1
        self.issue_time.append(now)
        self.send_message(now, self.request_writes, self.msg_more, self.msg_more and self.msg_more_last,
                          op, self.server_proc)

    def finish(self, now: float, op: int) -> None:
        if op < 0:                                   # the setup reply: start the loop
            for _ in range(self.qd):
                self._issue(now)
            return
        if op in self.seen:
            raise AssertionError(f"operation {op} completed twice")
        self.seen.add(op)
        self.completed += 1
        self.done_time.append(now)
        self.rtts.append(now - self.issue_time[op])
        self._issue(now)                             # the successor keeps qd in flight
        if self.completed >= self.target:
            self.loop.stop()
