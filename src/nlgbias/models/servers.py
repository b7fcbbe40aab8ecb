"""Several copies of one served model: spread the requests, take out a server that keeps failing.

:class:`ServerPool` holds the servers (one per GPU or node is the common setup) and runs
``fn(item, server)`` for every item on a thread pool, at most ``concurrency`` requests in
flight per server.  Each request goes to the least busy server (ties in turn, so requests
spread round robin).  A request that fails its retries (:class:`GiveUp`) takes its server out
of rotation for ``cooldown`` seconds and is sent again to another server; the server's other
requests stop at their next retry (:class:`TakenOut`) and are sent again too.  After the
cool-down the server gets one request at a time until one is answered.

The pool gives up only when every server is *down*: each has failed its retries and none has
answered since.  It then raises one :class:`GiveUp` that names every server (with one server,
that server's own error).  An answer is never thrown away: answers come back as they arrive,
and the requests in flight finish before the error is raised.

Which server answered does not change an answer: every request carries its own seed.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence, TypeVar

from nlgbias.errors import BackendError

Item = TypeVar("Item")
Answer = TypeVar("Answer")


class GiveUp(BackendError):
    """The server kept failing after every retry."""


class TakenOut(GiveUp):
    """The request stopped retrying because its server was taken out of rotation meanwhile."""


@dataclass(eq=False)
class Server:
    """One server's state; only the pool's dispatching thread changes it (``out`` is read by requests)."""

    url: str
    in_flight: int = 0
    answered: int = 0
    taken_out: int = 0
    back_at: float = 0.0  # time.monotonic() when its cool-down ends
    failing: bool = False  # failed its retries and has answered nothing since
    error: str = ""
    out: threading.Event = field(default_factory=threading.Event)  # set while cooling down

    def counts(self) -> dict:
        return {"url": self.url, "answered": self.answered, "taken_out": self.taken_out}


class ServerPool:
    """Servers of one model, ``concurrency`` requests in flight on each; see the module docstring.

    Parameters
    ----------
    urls : sequence of str
        Base URLs, at least one, no duplicates.
    concurrency : int
        Requests in flight per server.
    cooldown : float
        Seconds a server that failed its retries stays out of rotation.
    """

    def __init__(self, urls: Sequence[str], *, concurrency: int, cooldown: float) -> None:
        if not urls:
            raise ValueError("a server pool needs at least one URL")
        self.servers = [Server(url) for url in urls]
        self.concurrency = concurrency
        self.cooldown = cooldown
        self._turn = 0

    def spread(self, fn: Callable[[Item, Server], Answer], items: Sequence[Item]) -> Iterator[list[tuple[int, Answer]]]:
        """Yield ``[(item index, fn(item, server)), ...]`` as answers arrive (all that arrived together).

        A :class:`GiveUp` sends the item again to another server; any other exception stops new
        requests, lets those in flight finish (their answers are still yielded), and is raised.
        """
        items = list(items)
        if not items:
            return
        pending = deque(range(len(items)))
        arrived: queue.Queue = queue.Queue()
        running: dict[Future, tuple[int, Server]] = {}
        pool = ThreadPoolExecutor(max_workers=min(len(items), self.concurrency * len(self.servers)))
        error: BaseException | None = None
        try:
            while running or (pending and error is None):
                while pending and error is None:
                    server = self._free()
                    if server is None:
                        break
                    index = pending.popleft()
                    server.in_flight += 1
                    future = pool.submit(contextvars.copy_context().run, fn, items[index], server)  # the caller's wording
                    running[future] = (index, server)
                    future.add_done_callback(arrived.put)
                if not running:  # nothing can be sent: every server is down
                    error = error or self._down_error()
                    break
                try:
                    done = [arrived.get(timeout=self._until_back() if pending and error is None else None)]
                except queue.Empty:
                    continue  # a cool-down ended: send again
                while True:
                    try:
                        done.append(arrived.get_nowait())
                    except queue.Empty:
                        break
                answers = []
                for future in done:
                    index, server = running.pop(future)
                    server.in_flight -= 1
                    failure = future.exception()
                    if failure is None:
                        server.answered += 1
                        server.failing = False
                        answers.append((index, future.result()))
                    elif isinstance(failure, GiveUp):
                        if error is None:
                            pending.appendleft(index)  # sent again to another server
                        if not isinstance(failure, TakenOut):
                            self._take_out(server, failure)
                        if error is None and all(s.failing for s in self.servers):
                            error = self._down_error()
                    elif error is None:
                        error = failure
                if answers:
                    yield answers
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if error is not None:
            raise error

    def counts(self) -> list[dict]:
        """``[{"url", "answered", "taken_out"}, ...]`` per server, in the order given."""
        return [server.counts() for server in self.servers]

    # -- dispatching ---------------------------------------------------------------------------

    def _free(self) -> Server | None:
        """The least busy server that may take a request now (ties in turn), or None."""
        now = time.monotonic()
        free = []
        for position, server in enumerate(self.servers):
            if server.back_at > now:
                continue
            server.out.clear()  # back after its cool-down
            limit = 1 if server.failing else self.concurrency
            if server.in_flight < limit:
                free.append((server.in_flight, (position - self._turn) % len(self.servers), position))
        if not free:
            return None
        _, _, position = min(free)
        self._turn = position + 1
        return self.servers[position]

    def _take_out(self, server: Server, failure: GiveUp) -> None:
        if server.out.is_set():  # another of its requests took it out already
            return
        server.failing = True
        server.error = str(failure)
        server.taken_out += 1
        server.back_at = time.monotonic() + self.cooldown
        server.out.set()

    def _until_back(self) -> float | None:
        """Seconds until the next server comes back from its cool-down (None: none is cooling down)."""
        now = time.monotonic()
        waits = [server.back_at - now for server in self.servers if server.back_at > now]
        return max(0.0, min(waits)) if waits else None

    def _down_error(self) -> GiveUp:
        if len(self.servers) == 1:
            return GiveUp(self.servers[0].error or f"endpoint {self.servers[0].url}: no answer")
        errors = "; ".join(server.error or f"endpoint {server.url}: no answer" for server in self.servers)
        return GiveUp(f"all {len(self.servers)} servers are down (each failed its retries and has answered "
                      f"nothing since): {errors}")


def with_earlier_answers(earlier: dict | None, info: dict) -> dict:
    """``info`` with the per-server counts of an earlier invocation of the same run added in.

    A resumed run then records how many requests each server answered over the whole run.
    Info without ``servers`` (a local model) is returned as it is.
    """
    if "servers" not in info or not earlier or not isinstance(earlier.get("servers"), list):
        return info
    totals = {entry["url"]: dict(entry) for entry in earlier["servers"]}
    for entry in info["servers"]:
        before = totals.get(entry["url"], {})
        totals[entry["url"]] = {key: value + before.get(key, 0) if key != "url" else value
                                for key, value in entry.items()}
    return {**info, "servers": list(totals.values())}


__all__ = ["GiveUp", "Server", "ServerPool", "TakenOut", "with_earlier_answers"]
