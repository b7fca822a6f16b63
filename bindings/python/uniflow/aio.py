"""asyncio integration: a dispatcher's deliveries and host timers on the event loop.

``d.attach()`` adds the dispatcher's loop descriptor (``uf_loop_fd``) to the running
loop with ``add_reader``: whenever the library has work (deferred deliveries, deferred
watch values, host timers due), the loop calls ``d.run_pending()`` on its own thread.
Made with ``timers="host"``, an attached dispatcher never starts a thread of its own.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Coroutine, Optional

from .errors import Misuse
from .mutation import Mutation
from .values import STOP

if TYPE_CHECKING:  # pragma: no cover
    from .dispatcher import Dispatcher

__all__ = ["attach", "detach", "mutations", "values", "wait_for"]


def attach(d: "Dispatcher", loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
    """Adds the dispatcher to ``loop`` (the running loop when ``None``)."""
    if d._loop is not None and d._loop.is_closed():
        d._loop = None  # its loop ended (an earlier asyncio.run): attach afresh
    if d._loop is not None:
        if loop is None or loop is d._loop:
            return
        raise Misuse("the dispatcher is attached to another event loop; detach() it first")
    loop = loop if loop is not None else asyncio.get_running_loop()
    fd = d.fileno()
    loop.add_reader(fd, d.run_pending)
    d._loop = loop
    d._loop_fd = fd
    # Work waiting already (made before the reader was added) is seen at once:
    # the descriptor is level-triggered.


def detach(d: "Dispatcher") -> None:
    """Removes the dispatcher from its loop (idempotent)."""
    loop = d._loop
    if loop is None:
        return
    d._loop = None
    if not loop.is_closed():
        loop.remove_reader(d._loop_fd)


def _require(d: "Dispatcher", what: str) -> asyncio.AbstractEventLoop:
    loop = d._loop
    if loop is not None and loop.is_closed():
        # Attached in an earlier asyncio.run: to this one, as attach() would.
        d._loop = None
        try:
            running: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            attach(d, running)
        loop = d._loop
    if loop is None:
        raise Misuse(f"{what} needs a dispatcher attached to an event loop: call d.attach() first")
    return loop


#: What a closed dispatcher puts in an iteration's queue: the iteration ends.
_CLOSED: Any = object()


def _call_on(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """Runs ``fn(*args)`` on ``loop``'s thread (close() may run on any thread)."""
    if not loop.is_closed():
        loop.call_soon_threadsafe(fn, *args)


class _Inbox:
    """What waits for a slow consumer of :class:`_Deliveries`. The loop hands every
    delivery over at once, so it waits here, bounded as the library bounds it: at
    most ``limit`` mutations, the oldest dropped and counted in the next one's
    ``dropped``; with ``limit`` None (a watch's values) only the latest. The
    subscription's callback holds this, not the iterator, so that an iterator left
    behind is collected (and unsubscribes)."""

    def __init__(self, limit: Optional[int]) -> None:
        self.queue: "asyncio.Queue[Any]" = asyncio.Queue()
        self.limit = limit
        self.lost = 0

    def put(self, item: Any) -> None:
        queue = self.queue
        if self.limit is None:
            while not queue.empty():
                queue.get_nowait()
        elif queue.qsize() >= self.limit:
            oldest = queue.get_nowait()
            self.lost += 1 + oldest.dropped  # and those the library dropped before it
        queue.put_nowait(item)


class _Deliveries:
    """What a deferred subscription or watch delivers, as an async iterator. It
    subscribes when it is made, so that nothing done between the call and the first
    ``async for`` step is missed, and unsubscribes when the iteration ends,
    ``aclose()`` is awaited, or it is collected (leaving an ``async for`` drops it).
    It ends when the dispatcher is closed."""

    def __init__(self, d: "Dispatcher", loop: asyncio.AbstractEventLoop,
                 subscribe: Callable[[Callable[[Any], Any]], Any], limit: Optional[int]) -> None:
        self._loop = loop
        self._inbox = _Inbox(limit)
        self._queue = self._inbox.queue
        # Set first: if subscribing raises, __del__ still finds the attribute.
        self._subscription: Any = None
        self._subscription = subscribe(self._inbox.put)
        d._waiting.add(self)

    def __aiter__(self) -> "_Deliveries":
        return self

    async def __anext__(self) -> Any:
        if self._subscription is None:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is _CLOSED:
            self._subscription = None
            raise StopAsyncIteration
        if self._inbox.lost:
            item._add_dropped(self._inbox.lost)
            self._inbox.lost = 0
        return item

    def dispatcher_closed(self) -> None:
        _call_on(self._loop, self._queue.put_nowait, _CLOSED)

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            subscription.cancel()

    def __del__(self) -> None:
        self.close()


def mutations(d: "Dispatcher", when: Optional[str] = None) -> AsyncIterator[Mutation]:
    """Every mutation matched by ``when`` from the call on, delivered on the loop;
    leaving the ``async for`` unsubscribes."""
    loop = _require(d, "mutations()")
    return _Deliveries(d, loop, lambda put: d.subscribe(put, when, deferred=True), d._deferred_limit)


def values(d: "Dispatcher", select: Any) -> AsyncIterator[Any]:
    """A watch's values (its value at the call first), delivered on the loop; leaving
    the ``async for`` ends the watch."""
    loop = _require(d, "values()")
    return _Deliveries(d, loop, lambda put: d.watch(select, put, deferred=True), None)


def wait_for(d: "Dispatcher", when: Optional[str] = None,
             timeout: Optional[float] = None) -> Coroutine[Any, Any, Mutation]:
    """The first mutation matched by ``when`` after the call (``asyncio.TimeoutError``
    after ``timeout`` seconds), to be awaited.

    Not a coroutine function: the subscription is made by the call, so a mutation made
    between the call and the ``await`` is not missed, and ``Misuse`` is raised there.
    Closing the dispatcher while it waits raises ``Misuse`` from the ``await``; a
    coroutine never awaited ends its subscription when it is collected."""
    loop = _require(d, "wait_for()")
    waiter = _FirstMutation(loop)
    subscription = d.subscribe(waiter.first, when, deferred=True)
    d._waiting.add(waiter)

    async def waiting() -> Mutation:
        try:
            return await asyncio.wait_for(waiter.future, timeout)
        finally:
            subscription.cancel()

    coroutine = waiting()
    # Not at interpreter exit: the dispatchers are closed then.
    weakref.finalize(coroutine, subscription.cancel).atexit = False
    return coroutine


class _FirstMutation:
    """The future ``wait_for()`` awaits, and what sets it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.future: "asyncio.Future[Mutation]" = loop.create_future()

    def first(self, m: Mutation) -> Any:
        if not self.future.done():
            self.future.set_result(m)
        return STOP

    def dispatcher_closed(self) -> None:
        _call_on(self._loop, self._fail)

    def _fail(self) -> None:
        if not self.future.done():
            self.future.set_exception(Misuse("wait_for(): the dispatcher was closed before a matching mutation"))
