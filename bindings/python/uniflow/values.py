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
    "REJECT",
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

    def active(self, path: str) -> bool:
        """Whether the state ``path`` is active, read from :attr:`name`.

        A statechart's name lists its active atomic states' paths, joined by
        ``,`` (``"Sound.Audio.On,Sound.Video.Off"``): a state at any level is
        active when it is one of them or an ancestor of one (``"Sound.Audio"``),
        and a bare name (``"Audio"``) when it is part of one. A flat feature's
        name is its one state. What the value alone cannot tell (a bare name
        that several states carry) :meth:`Dispatcher.state_active` asks the
        library.
        """
        for leaf in self.name.split(","):
            if leaf == path or leaf.startswith(path + "."):
                return True
            if "." not in path and path in leaf.split("."):
                return True
        return False


class _SpelledKind(IntEnum):
    """An ``IntEnum`` of a C enum that also equals its JSON spelling.

    ``kind == 3``, ``kind == MutationKind.TRANSITION`` and ``kind == "transition"`` are
    all true, and ``kind in ("initialization", "transition")`` works; ``int(kind)`` is
    the C value and ``str(kind)`` the JSON spelling. An ``IntEnum`` (rather than a
    ``str`` mixin) because the C layer passes kinds as ints. Its hash is the int's, so
    that kinds and ints mix in sets and as dict keys: a dict keyed by the JSON
    spellings will not find a kind (look it up with ``str(kind)``).
    """

    def __str__(self) -> str:
        return self.name.lower()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.name.lower() == other
        return int.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = IntEnum.__hash__

    @classmethod
    def parse(cls, text: str) -> "Any":
        """The kind a JSON spelling names: ``"transition"`` -> ``TRANSITION``."""
        return cls[text.upper()]


class MutationKind(_SpelledKind):
    """``uf_mutation_kind``: ``MutationKind.TRANSITION == 3 == "transition"``."""

    INITIALIZATION = 1
    ACTUALIZATION = 2
    TRANSITION = 3
    DEINITIALIZATION = 4


class ActionKind(_SpelledKind):
    """``uf_action_kind``: ``ActionKind.SEND == 6 == "send"``."""

    INITIALIZE = 1
    ACTUALIZE = 2
    TRANSITION = 3
    DEINITIALIZE = 4
    TRIGGER = 5
    SEND = 6


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

#: Returned by a subscriber or a watch: end it (``UF_STOP``).
STOP = _Sentinel("STOP")

#: Returned by an interceptor: veto the action (``uniflow.Rejected``, reported as
#: "intercepted by <id>"). Raise :class:`uniflow.Veto` to give a reason.
REJECT = _Sentinel("REJECT")
