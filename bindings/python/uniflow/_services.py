"""Services that a statechart's states ``invoke`` (docs/statecharts.md): the C
trampolines for ``uf_register_service`` and what a service's ``start`` receives.

A ``start`` that returns a coroutine is a coroutine service: the coroutine runs as
a task on the event loop the dispatcher is attached to (``d.attach()``), its result
settles the invocation as done and an exception as an error; leaving the state
(or closing the dispatcher) cancels the task, and a cancelled task reports nothing.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any, Callable, Dict, Optional, Set, Tuple

from ._library import SERVICE_FN

__all__ = ["Invocation", "make_service", "make_stop", "NO_LOOP"]

#: What a coroutine service settles as its error when the dispatcher is attached to
#: no event loop: there is nowhere to run it.
NO_LOOP = ("a coroutine service needs a dispatcher attached to an event loop: "
           "call d.attach() first")


class Invocation:
    """One running invocation of a service, as ``start`` and ``stop`` see it.

    ``feature``, ``key`` (``None`` for a single feature), ``id`` (the invoke's id),
    ``input`` (decoded JSON) and ``serial`` (unique per dispatcher) are plain values
    that stay valid after the call; :meth:`done` and :meth:`error` settle the
    invocation at any time, from any thread.
    """

    __slots__ = ("feature", "key", "id", "input", "serial", "_dispatcher")

    def __init__(self, dispatcher: Any, feature: str, key: Optional[str], id: str, input: Any, serial: int) -> None:
        self._dispatcher = dispatcher
        self.feature = feature
        self.key = key
        self.id = id
        self.input = input
        self.serial = serial

    def done(self, output: Any = None) -> None:
        """Reports the service's result: the instance gets ``xstate.done.actor.<id>``
        with ``{"output": output}``."""
        self._dispatcher.service_done(self.serial, output)

    def error(self, error: Any = None) -> None:
        """Reports a failure: the instance gets ``xstate.error.actor.<id>`` with
        ``{"error": error}``."""
        self._dispatcher.service_error(self.serial, error)

    def __repr__(self) -> str:
        key = f"[{self.key}]" if self.key is not None else ""
        return f"<uniflow.Invocation {self.id} of {self.feature}{key} #{self.serial}>"


def error_value(exc: BaseException) -> Dict[str, str]:
    """What a coroutine service's exception settles as: ``{"type", "message"}``."""
    return {"type": type(exc).__name__, "message": str(exc)}


class _Tasks:
    """One dispatcher's coroutine services still running, by serial. Told when the
    dispatcher closes (it sits in the dispatcher's ``_waiting``), it cancels them."""

    def __init__(self) -> None:
        #: serial -> (loop, task); the task is None until the loop made it
        self.running: Dict[int, Tuple[asyncio.AbstractEventLoop, Optional["asyncio.Task[Any]"]]] = {}
        #: serials stopped before their task was made, or while it finished
        self.stopped: Set[int] = set()

    def cancel(self, serial: int) -> None:
        entry = self.running.get(serial)
        if entry is None:
            return
        self.stopped.add(serial)
        loop, task = entry
        if task is not None:
            _on_loop(loop, task.cancel)

    def dispatcher_closed(self) -> None:
        for serial in list(self.running):
            self.cancel(serial)


#: Each dispatcher's running coroutine services (kept here: the dispatcher's
#: ``_waiting`` holds its entry weakly).
_TASKS: "weakref.WeakKeyDictionary[Any, _Tasks]" = weakref.WeakKeyDictionary()


def _tasks_of(dispatcher: Any) -> _Tasks:
    tasks = _TASKS.get(dispatcher)
    if tasks is None:
        tasks = _TASKS[dispatcher] = _Tasks()
        dispatcher._waiting.add(tasks)
    return tasks


def _on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> None:
    """Runs ``fn`` now on ``loop``'s own thread, else soon on it."""
    try:
        here = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    if here is loop:
        fn()
    elif not loop.is_closed():
        loop.call_soon_threadsafe(fn)


def _run_coroutine(dispatcher: Any, invocation: Invocation, coroutine: Any) -> None:
    """Runs a coroutine service's coroutine as a task on the attached loop."""
    loop: Optional[asyncio.AbstractEventLoop] = getattr(dispatcher, "_loop", None)
    if loop is None or loop.is_closed():
        coroutine.close()  # never to run: no "was never awaited" warning
        invocation.error({"type": "Misuse", "message": NO_LOOP})
        return
    tasks = _tasks_of(dispatcher)
    serial = invocation.serial
    tasks.running[serial] = (loop, None)

    def finished(task: "asyncio.Task[Any]") -> None:
        tasks.running.pop(serial, None)
        if serial in tasks.stopped or task.cancelled():
            tasks.stopped.discard(serial)
            return  # stopped: the state was left or the dispatcher closed
        if dispatcher.closed:
            return
        exc = task.exception()
        if exc is not None:
            invocation.error(error_value(exc))
            return
        try:
            output = json.dumps(task.result())
        except (TypeError, ValueError) as not_json:
            invocation.error({"type": type(not_json).__name__,
                              "message": f"the service's result is not JSON: {not_json}"})
            return
        invocation.done(json.loads(output))

    def make_task() -> None:
        if serial in tasks.stopped:  # stopped before the loop came to it
            tasks.stopped.discard(serial)
            tasks.running.pop(serial, None)
            coroutine.close()
            return
        task = loop.create_task(coroutine, name=f"uniflow service {invocation.id} #{serial}")
        tasks.running[serial] = (loop, task)
        task.add_done_callback(finished)

    _on_loop(loop, make_task)


def _invocation(lib: Any, dispatcher: Any, ptr: int) -> Invocation:
    key = lib.uf_invocation_key(ptr)
    return Invocation(dispatcher, lib.uf_invocation_feature(ptr).decode(),
                      key.decode() if key is not None else None,
                      lib.uf_invocation_id(ptr).decode(),
                      json.loads(lib.uf_invocation_input_json(ptr)),
                      int(lib.uf_invocation_serial(ptr)))


def make_service(lib: Any, dispatcher: Any, store_error: Callable[[BaseException], None],
                 fn: Callable[[Invocation], Any]) -> Any:
    """The C function for a ``start``: builds the :class:`Invocation` and calls
    ``fn``; a coroutine it returns runs on the attached loop; an exception is kept
    for the outermost call and counts as a failed start."""

    def service(ptr: int, _payload: Optional[int]) -> int:
        try:
            invocation = _invocation(lib, dispatcher, ptr)
            result = fn(invocation)
            if asyncio.iscoroutine(result):
                _run_coroutine(dispatcher, invocation, result)
                return 0
            return -1 if isinstance(result, int) and not isinstance(result, bool) and result < 0 else 0
        except BaseException as exc:
            store_error(exc)
            return -1

    return SERVICE_FN(service)


def make_stop(lib: Any, dispatcher: Any, store_error: Callable[[BaseException], None],
              fn: Optional[Callable[[Invocation], Any]]) -> Any:
    """The C function for a ``stop``: cancels the invocation's task when its start
    returned a coroutine, then calls ``fn`` (if any). Registered for every service,
    since any ``start`` may return a coroutine."""

    def stop(ptr: int, _payload: Optional[int]) -> int:
        try:
            serial = int(lib.uf_invocation_serial(ptr))
            tasks = _TASKS.get(dispatcher)
            if tasks is not None:
                tasks.cancel(serial)
            if fn is not None:
                fn(_invocation(lib, dispatcher, ptr))
            return 0
        except BaseException as exc:
            store_error(exc)
            return -1

    return SERVICE_FN(stop)
