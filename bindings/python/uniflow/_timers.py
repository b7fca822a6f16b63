"""The Dispatcher's clock, timers and the host's event loop (``docs/time.md``): the
methods :class:`uniflow.Dispatcher` inherits from :class:`TimersAndLoop`."""

from __future__ import annotations

import asyncio
import json
import math
from ctypes import byref, c_int, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Coroutine, Dict, List, Optional, Union, cast

from . import aio
from ._encoding import document_text as _document_text
from ._encoding import name as _name
from ._library import require
from ._types import ActionLike
from .errors import InvalidArgument, Status
from .mutation import Mutation

if TYPE_CHECKING:  # pragma: no cover
    from .dispatcher import Dispatcher

__all__ = ["TimersAndLoop"]

#: ``uf_submit_after``'s flag: keep an armed timer of the same id (throttle).
_TIMER_KEEP = 1


def _milliseconds(seconds: float, what: str) -> int:
    """Seconds as whole milliseconds, rounded up (a timer never fires early). Past 2^53
    ms the library refuses them; past 2^64 a C uint64_t would wrap, so they stop here."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0 or (
            isinstance(seconds, float) and not math.isfinite(seconds)):
        raise InvalidArgument(f"{what} must be a number of seconds >= 0, got {seconds!r}")
    # An int exactly (it may be too large for a float), a float rounded up.
    ms = seconds * 1000 if isinstance(seconds, int) else int(math.ceil(seconds * 1000 - 1e-9))
    if ms == 0 and seconds > 0:
        ms = 1  # any delay at all is at least the next millisecond
    if ms > 2**53:
        raise InvalidArgument(f"{what} is {seconds!r}, more than 2^53 ms")
    return ms


class TimersAndLoop:
    """The Dispatcher's methods for time and the host's loop (a mixin of
    :class:`uniflow.Dispatcher`, which defines what is declared here)."""

    if TYPE_CHECKING:  # pragma: no cover
        _lib: Any

        def _finish(self, rc: int) -> Status: ...

        def _handle_or_raise(self) -> c_void_p: ...

        def _text_result(self, fn: Callable[..., int], *args: Any) -> Optional[str]: ...

    # -- time --------------------------------------------------------------------------------

    def submit_after(self, seconds: float, action: Union[ActionLike], id: Optional[str] = None,
                     keep: bool = False) -> Status:
        """Submits ``action`` (as :meth:`submit` takes it) after ``seconds`` (rounded up
        to whole milliseconds). The action is checked now, up to its payload. An ``id`` names the timer: arming an
        armed id replaces it (debounce), or with ``keep=True`` keeps the armed one
        (throttle). A timer without an id cannot be cancelled."""
        fn = require(self._lib, "uf_submit_after")
        return self._finish(fn(self._handle_or_raise(), _document_text(action, "action"),
                               _milliseconds(seconds, "seconds"), _name(id, "id"), _TIMER_KEEP if keep else 0))

    def cancel_timer(self, id: str) -> Status:
        """Disarms the timer ``id``: it never fires, even if it was due. ``NotFound``
        when none is armed; ``Misuse`` for a state timer (leave the state instead)."""
        return self._finish(require(self._lib, "uf_timer_cancel")(self._handle_or_raise(), _name(id, "id")))

    def timers(self) -> List[Dict[str, Any]]:
        """The armed timers, soonest first: ``[{"id", "due_in_ms", "ms"}, ...]``."""
        text = self._text_result(require(self._lib, "uf_timers_get"))
        return json.loads(text) if text else []

    def advance(self, seconds: float) -> Status:
        """A manual clock (``clock="manual"``): moves it on by ``seconds``, firing every
        timer due by then, in order. ``Misuse`` on a monotonic clock or inside a callback."""
        fn = require(self._lib, "uf_clock_advance")
        return self._finish(fn(self._handle_or_raise(), _milliseconds(seconds, "seconds")))

    def now(self) -> float:
        """The dispatcher's clock in seconds (since it was made, or the manual reading)."""
        out = c_uint64()
        rc = require(self._lib, "uf_clock_now")(self._handle_or_raise(), byref(out))
        if rc < 0:
            self._finish(rc)
        return out.value / 1000.0

    # -- the host's loop ---------------------------------------------------------------------

    def fileno(self) -> int:
        """The descriptor that is readable while :meth:`run_pending` has work (the
        dispatcher owns it: do not close it)."""
        out = c_int()
        rc = require(self._lib, "uf_loop_fd")(self._handle_or_raise(), byref(out))
        if rc < 0:
            self._finish(rc)
        return out.value

    def timeout(self) -> Optional[float]:
        """What to wait for before :meth:`run_pending` has work: 0, the seconds until
        the next host timer, or ``None`` when nothing waits."""
        out = c_int()
        rc = require(self._lib, "uf_loop_timeout")(self._handle_or_raise(), byref(out))
        if rc < 0:
            self._finish(rc)
        return None if out.value < 0 else out.value / 1000.0

    def run_pending(self) -> int:
        """Fires the host timers due and makes the deferred deliveries waiting (on
        this thread); returns how many. What the callbacks submit runs before it returns."""
        out = c_uint64()
        rc = require(self._lib, "uf_loop_run")(self._handle_or_raise(), byref(out))
        self._finish(rc)
        return out.value

    def attach(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        """Lets the asyncio event loop (the running one by default) run this
        dispatcher's deferred deliveries and host timers (:mod:`uniflow.aio`)."""
        aio.attach(cast("Dispatcher", self), loop)

    def detach(self) -> None:
        """Removes the dispatcher from its event loop (idempotent)."""
        aio.detach(cast("Dispatcher", self))

    def mutations(self, when: Optional[str] = None) -> AsyncIterator[Mutation]:
        """``async for m in d.mutations(when)``: the mutations from now on, on the loop
        (an attached dispatcher; ``Misuse`` otherwise)."""
        return aio.mutations(cast("Dispatcher", self), when)

    def wait_for(self, when: Optional[str] = None,
                 timeout: Optional[float] = None) -> Coroutine[Any, Any, Mutation]:
        """``await d.wait_for(when)``: the first matching mutation after the call
        (``asyncio.TimeoutError`` after ``timeout`` seconds); an attached dispatcher
        only (``Misuse`` otherwise, raised by the call, which also subscribes)."""
        return aio.wait_for(cast("Dispatcher", self), when, timeout)

    def values(self, select: Any) -> AsyncIterator[Any]:
        """``async for v in d.values(select)``: a watch's values, on the loop."""
        return aio.values(cast("Dispatcher", self), select)
