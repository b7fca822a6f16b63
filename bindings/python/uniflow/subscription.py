"""Handles of what a dispatcher calls back: :class:`Subscription` (``subscribe``),
:class:`Watch` (``watch``) and :class:`Interceptor` (``intercept``). They share the
library's id space: ``cancel()`` ends any of them through ``uf_unsubscribe``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .errors import Status, check

if TYPE_CHECKING:  # pragma: no cover
    from .dispatcher import Dispatcher

__all__ = ["Subscription", "Watch", "Interceptor"]


class Subscription:
    """A subscriber registered with :meth:`Dispatcher.subscribe`.

    ``id`` is the library's id (never 0, never reused); :meth:`cancel` ends it
    (idempotent, allowed inside the callback itself). Also a context manager that
    cancels on exit.
    """

    __slots__ = ("_dispatcher", "_token", "id", "when")

    def __init__(self, dispatcher: "Dispatcher", sub_id: int, token: int, when: Optional[str]) -> None:
        self._dispatcher: Optional["Dispatcher"] = dispatcher
        self._token = token
        #: The library's id.
        self.id: int = sub_id
        #: What it was made with: a filter (``None``: AnyMutation), a selector, a feature.
        self.when: Any = when

    @property
    def active(self) -> bool:
        """Whether it will still be called."""
        d = self._dispatcher
        return d is not None and d._handle is not None and self._token in d._keep

    def cancel(self) -> None:
        """Ends it. Idempotent; a no-op once the dispatcher is closed or the callback
        ended itself (:data:`uniflow.STOP`)."""
        d = self._dispatcher
        if d is None:
            return
        self._dispatcher = None
        if d._handle is None or self._token not in d._keep:
            return
        rc = d._lib.uf_unsubscribe(d._handle, self.id)
        if rc < 0 and rc != Status.ENOTFOUND:
            check(rc)

    def __enter__(self) -> "Subscription":
        """Itself: ``with d.subscribe(fn): ...`` cancels it on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Cancels it (exceptions propagate)."""
        self.cancel()

    def _describe(self) -> str:
        return f"when={self.when or 'AnyMutation'}"

    def __repr__(self) -> str:
        state = "active" if self.active else "cancelled"
        return f"<uniflow.{type(self).__name__} id={self.id} {self._describe()} {state}>"


class Watch(Subscription):
    """A watch registered with :meth:`Dispatcher.watch`; ``when`` is its selector."""

    __slots__ = ()

    def _describe(self) -> str:
        return f"select={self.when!r}"


class Interceptor(Subscription):
    """An interceptor registered with :meth:`Dispatcher.intercept`; ``when`` is its
    feature (``None``: every feature)."""

    __slots__ = ()

    def _describe(self) -> str:
        return f"feature={self.when or '*'}"
