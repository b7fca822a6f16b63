"""Services that a statechart's states ``invoke`` (docs/statecharts.md): the C
trampolines for ``uf_register_service`` and what a service's ``start`` receives."""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from ._library import SERVICE_FN

__all__ = ["Invocation", "make_service"]


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


def make_service(lib: Any, dispatcher: Any, store_error: Callable[[BaseException], None],
                 fn: Callable[[Invocation], Any]) -> Any:
    """The C function for ``fn``: builds the :class:`Invocation` and calls ``fn``; an
    exception is kept for the outermost call and counts as a failed start."""

    def service(ptr: int, _payload: Optional[int]) -> int:
        try:
            key = lib.uf_invocation_key(ptr)
            invocation = Invocation(dispatcher, lib.uf_invocation_feature(ptr).decode(),
                                    key.decode() if key is not None else None,
                                    lib.uf_invocation_id(ptr).decode(),
                                    json.loads(lib.uf_invocation_input_json(ptr)),
                                    int(lib.uf_invocation_serial(ptr)))
            result = fn(invocation)
            return -1 if isinstance(result, int) and not isinstance(result, bool) and result < 0 else 0
        except BaseException as exc:
            store_error(exc)
            return -1

    return SERVICE_FN(service)
