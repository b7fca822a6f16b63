"""What an interceptor receives (:class:`Action`), and how it vetoes (:class:`Veto`,
:data:`uniflow.REJECT`).

An interceptor sees each action about to be applied: after its precondition held (and,
for a send, once its target is chosen), before its via, wherever it came from. It
returns ``None`` to let it through, :data:`uniflow.REJECT` to veto it (``Rejected``,
"intercepted by <id>"), or raises :class:`Veto` with a reason; any other exception fails
the action (``CallbackError``) and is re-raised from the outermost call.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from .errors import Misuse
from .values import ActionKind

__all__ = ["Action", "Veto"]

_C: Any = None  # the loaded CDLL, set by _bind()


def _bind(lib: Any) -> None:
    global _C
    _C = lib


class Veto(Exception):
    """Raised by an interceptor to veto the action with a reason: the action is
    rejected (``uniflow.Rejected``) and the reason is its message and its report's."""

    def __init__(self, reason: str = "vetoed") -> None:
        super().__init__(reason)
        #: What the rejection says.
        self.reason = reason


class Action:
    """An action an interceptor sees, read lazily while the interceptor runs and kept
    whole if the interceptor keeps the object.

    ``kind`` (an :class:`ActionKind`), ``feature``, ``key`` (``None`` for a single
    feature), ``state`` (the state entered or actualized — a send's chosen target — or,
    for a deinitialization or a trigger, the state it acts in; ``None`` when absent), and
    ``action``: the action as a dict, made on first use.
    """

    __slots__ = ("_ptr", "_cache")

    def __init__(self, ptr: Optional[int]) -> None:
        self._ptr = ptr
        self._cache: Dict[str, Any] = {}

    def _get(self, name: str) -> Any:
        cache = self._cache
        if name in cache:
            return cache[name]
        ptr = self._ptr
        if ptr is None:
            raise Misuse("Action was read after its interceptor returned")
        if name == "kind":
            value: Any = ActionKind(_C.uf_intercepted_kind(ptr))
        elif name == "action":
            value = json.loads(_C.uf_intercepted_json(ptr))
        else:
            raw = getattr(_C, f"uf_intercepted_{name}")(ptr)
            value = None if raw is None else raw.decode()
        cache[name] = value
        return value

    def _detach(self) -> None:
        """The interceptor returned and kept the object: read everything, then forget."""
        if self._ptr is not None:
            for name in ("kind", "feature", "key", "state", "action"):
                self._get(name)
            self._ptr = None

    @property
    def kind(self) -> ActionKind:
        """``ActionKind.TRANSITION == "transition"``, ..."""
        return self._get("kind")  # type: ignore[no-any-return]

    @property
    def feature(self) -> str:
        """The feature's name."""
        return self._get("feature")  # type: ignore[no-any-return]

    @property
    def key(self) -> Optional[str]:
        """The instance's key; ``None`` for a single feature."""
        return self._get("key")  # type: ignore[no-any-return]

    @property
    def state(self) -> Optional[str]:
        """The state entered or acted in (see the class)."""
        return self._get("state")  # type: ignore[no-any-return]

    @property
    def action(self) -> Dict[str, Any]:
        """The action as JSON data (its payload included when it carried one)."""
        return self._get("action")  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        try:
            key = f"[{self.key}]" if self.key else ""
            return f"<uniflow.Action {self.kind} {self.feature}{key} -> {self.state}>"
        except Misuse:
            return "<uniflow.Action (returned)>"
