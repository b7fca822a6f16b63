"""One instance of a keyed feature with a lifetime: ``with d.instance(F, key, into=S) as dl``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .errors import NotFound, Rejected
from .values import Payload, State

if TYPE_CHECKING:  # pragma: no cover
    from .dispatcher import Dispatcher, Via
    from .errors import Status

__all__ = ["Instance"]


class Instance:
    """An instance of a keyed feature, initialized on entry of the ``with`` block and
    deinitialized on exit if it still lives (a child store with a lifetime). Its
    methods are the dispatcher's, with the feature and the key filled in."""

    __slots__ = ("dispatcher", "feature", "key", "_into", "_payload")

    def __init__(self, dispatcher: "Dispatcher", feature: str, key: str, into: Optional[str],
                 payload: Any = None) -> None:
        self.dispatcher = dispatcher
        self.feature = feature
        self.key = key
        self._into = into
        self._payload = payload

    def __enter__(self) -> "Instance":
        """Initializes the instance (when ``into`` was given) and returns it."""
        if self._into is not None:
            self.dispatcher.initialize(self.feature, self._into, payload=self._payload, key=self.key)
        return self

    def __exit__(self, *exc: Any) -> None:
        """Deinitializes the instance if it still lives (exceptions propagate)."""
        d = self.dispatcher
        if d.closed:
            return
        try:
            if d.get(self.feature, key=self.key) is not None:
                d.deinitialize(self.feature, key=self.key)
        except (Rejected, NotFound):
            pass  # ended meanwhile (a binding, another thread): nothing left to end

    def get(self) -> Optional[State]:
        """The instance's state, or ``None`` when it does not live."""
        return self.dispatcher.get(self.feature, key=self.key)

    def actualize(self, in_: str, payload: Any = None, via: Optional["Via"] = None, **options: Any) -> "Status":
        """:meth:`Dispatcher.actualize` of this instance."""
        return self.dispatcher.actualize(self.feature, in_, payload=payload, via=via, key=self.key, **options)

    def transition(self, into: str, from_: Optional[str] = None, payload: Optional[Payload] = None,
                   via: Optional["Via"] = None, **options: Any) -> "Status":
        """:meth:`Dispatcher.transition` of this instance."""
        return self.dispatcher.transition(self.feature, into, from_=from_, payload=payload, via=via,
                                          key=self.key, **options)

    def deinitialize(self, from_: Optional[str] = None, **options: Any) -> "Status":
        """:meth:`Dispatcher.deinitialize` of this instance."""
        return self.dispatcher.deinitialize(self.feature, from_=from_, key=self.key, **options)

    def trigger(self, **options: Any) -> "Status":
        """:meth:`Dispatcher.trigger` of this instance."""
        return self.dispatcher.trigger(self.feature, key=self.key, **options)

    def send(self, event: str, payload: Optional[Payload] = None, **options: Any) -> "Status":
        """:meth:`Dispatcher.send` to this instance."""
        return self.dispatcher.send(self.feature, event, payload=payload, key=self.key, **options)

    def __repr__(self) -> str:
        return f"<uniflow.Instance {self.feature}[{self.key}]>"
