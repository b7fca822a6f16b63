"""Small value types: :class:`State`, the C enums, and the sentinels ``DECLINE``/``STOP``."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Dict, NamedTuple, Optional

from .errors import Status

__all__ = [
    "State",
    "MutationKind",
    "ActionKind",
    "OK",
    "QUEUED",
    "DECLINE",
    "STOP",
    "Payload",
]

#: A payload as Python sees it: the JSON object of a state's fields.
Payload = Dict[str, Any]

#: Returned by action methods when the action was applied (or a trigger processed).
OK = Status.OK
#: Returned by action methods called inside a callback: the action runs after the
#: current one, before the outermost call returns.
QUEUED = Status.QUEUED


class State(NamedTuple):
    """A feature's state: its name and its payload (defaults filled in).

    Immutable and comparable: ``State("InProgress", {"progress": 10})``.
    """

    name: str
    payload: Payload

    @classmethod
    def from_json(cls, value: Optional[Dict[str, Any]]) -> Optional["State"]:
        """``{"state": "S", "payload": {...}}`` (or ``None``) as a :class:`State` (or ``None``)."""
        if value is None:
            return None
        return cls(value["state"], value.get("payload", {}))

    def to_json(self) -> Dict[str, Any]:
        """The state as the library writes it: ``{"state": name, "payload": payload}``."""
        return {"state": self.name, "payload": self.payload}


class MutationKind(IntEnum):
    """``uf_mutation_kind``; ``str(kind)`` is the JSON spelling (``"transition"``)."""

    INITIALIZATION = 1
    ACTUALIZATION = 2
    TRANSITION = 3
    DEINITIALIZATION = 4

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "MutationKind":
        """``"transition"`` -> ``MutationKind.TRANSITION``."""
        return cls[text.upper()]


class ActionKind(IntEnum):
    """``uf_action_kind``; ``str(kind)`` is the JSON spelling (``"initialize"``)."""

    INITIALIZE = 1
    ACTUALIZE = 2
    TRANSITION = 3
    DEINITIALIZE = 4
    TRIGGER = 5

    def __str__(self) -> str:
        return self.name.lower()


class _Sentinel:
    """A named singleton (survives pickling and copying as itself)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"uniflow.{self._name}"

    def __reduce__(self) -> str:
        return self._name

    def __copy__(self) -> "_Sentinel":
        return self

    def __deepcopy__(self, memo: Any) -> "_Sentinel":
        return self


#: Returned by a ``via`` callable: reject the action (``uniflow.Rejected``) without an
#: exception, nothing changes. The C callback's "positive return: decline".
DECLINE = _Sentinel("DECLINE")

#: Returned by a subscriber: end this subscription (``UF_STOP``).
STOP = _Sentinel("STOP")
