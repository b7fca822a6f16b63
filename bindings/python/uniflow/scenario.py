"""Observer bindings written in Python: ``when`` / ``given`` / ``then`` on top of subscribe.

With ``d`` a :class:`~uniflow.Dispatcher` whose FileDownloading is in progress at 10:

>>> log = d.scenario("Log completed downloads") \\
...     .when("TransitionInto<FileDownloading.Completed>") \\
...     .given(map=lambda m: m.old.payload.get("progress")) \\
...     .given(if_=lambda progress: progress is not None) \\
...     .then(do=lambda progress: print("finished at", progress))
>>> d.transition("FileDownloading", into="Completed")
finished at 10
<Status.OK: 0>

The chain starts with the :class:`~uniflow.Mutation`; ``given(map=f)`` passes
``f(value)`` on; ``given(if_=p)`` stops the chain unless ``p(value)`` is true, passing
``value`` on unchanged; ``then(do=f)`` gets the last value, ``then(submit=...)`` submits
actions (a dict, JSON text, a list of them, or a callable that returns them from the last
value); with both, ``do`` runs first, as a model binding's ``call`` does. ``then``
subscribes and returns the :class:`~uniflow.Subscription`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Tuple, Union

if TYPE_CHECKING:  # pragma: no cover
    from .dispatcher import ActionLike, Dispatcher, Subscription

__all__ = ["Scenario"]

_Step = Tuple[str, Callable[[Any], Any]]


class Scenario:
    """A builder for one observer binding (see the module docstring)."""

    __slots__ = ("_dispatcher", "text", "_when", "_steps", "_subscription")

    def __init__(self, dispatcher: "Dispatcher", text: str) -> None:
        self._dispatcher = dispatcher
        #: The scenario's name, added to the notes of an exception raised in its steps.
        self.text = text
        self._when: Optional[str] = None
        self._steps: List[_Step] = []
        self._subscription: Optional["Subscription"] = None

    def when(self, filter: Optional[str]) -> "Scenario":
        """The mutations that start the chain (a filter, docs/filters.md; ``None``: every one)."""
        self._check_open()
        self._when = filter
        return self

    def given(self, map: Optional[Callable[[Any], Any]] = None,
              if_: Optional[Callable[[Any], Any]] = None) -> "Scenario":
        """One step: exactly one of ``map`` (transform the value) or ``if_`` (a condition)."""
        self._check_open()
        if (map is None) == (if_ is None):
            raise TypeError("given() takes exactly one of map= or if_=")
        if map is not None:
            self._steps.append(("map", map))
        else:
            self._steps.append(("if", if_))  # type: ignore[arg-type]
        return self

    def then(self, do: Optional[Callable[[Any], Any]] = None,
             submit: Union["ActionLike", List["ActionLike"], Callable[[Any], Any], None] = None
             ) -> "Subscription":
        """Ends the chain and subscribes it; returns the :class:`~uniflow.Subscription`."""
        self._check_open()
        if do is None and submit is None:
            raise TypeError("then() needs do= and/or submit=")
        steps = tuple(self._steps)
        dispatcher = self._dispatcher
        text = self.text

        def run(mutation: Any) -> None:
            value = mutation
            try:
                for kind, fn in steps:
                    if kind == "map":
                        value = fn(value)
                    elif not fn(value):
                        return
                if do is not None:
                    do(value)
                if submit is not None:
                    actions = submit(value) if callable(submit) else submit
                    if actions is None:
                        return
                    if isinstance(actions, (Mapping, str, bytes)):
                        actions = [actions]
                    for action in actions:
                        dispatcher.submit(action)
            except BaseException as exc:
                if hasattr(exc, "add_note"):
                    exc.add_note(f"uniflow: in scenario {text!r}")
                raise

        self._subscription = dispatcher.subscribe(run, self._when)
        return self._subscription

    def _check_open(self) -> None:
        if self._subscription is not None:
            raise TypeError(f"scenario {self.text!r} is already subscribed")

    def __repr__(self) -> str:
        state = "subscribed" if self._subscription is not None else "building"
        return f"<uniflow.Scenario {self.text!r} when={self._when or 'AnyMutation'} {state}>"
