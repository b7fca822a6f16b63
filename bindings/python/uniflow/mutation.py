"""The objects a callback receives: :class:`Mutation` (subscribers) and :class:`BindingCall`
(handlers of model bindings).

Both wrap a pointer that C lends for the duration of the callback. They read it lazily
(a subscriber that reads nothing costs no call into C), and when the callback returns:

* if the Python object escaped (the callback kept a reference: a list, a closure, an
  exception traceback...), it first snapshots the whole record with one call
  (``uf_mutation_json``), so it stays fully usable forever;
* otherwise it just forgets the pointer.

"Escaped" is decided by comparing ``sys.getrefcount`` before and after the callback, which
is exact on CPython and costs two builtin calls. A subscriber's Mutation object is reused
for the next call when it did not escape, so a subscriber that reads nothing allocates
nothing.
"""

from __future__ import annotations

import json
from threading import RLock
from typing import Any, Dict, Optional

from .errors import Misuse
from .values import MutationKind, Payload, State

__all__ = ["Mutation", "BindingCall"]

_C: Any = None  # the loaded CDLL, set by _bind()


def _bind(lib: Any) -> None:
    global _C
    _C = lib


def _payload(raw: Optional[bytes]) -> Payload:
    if raw is None or raw == b"{}":
        return {}
    value: Payload = json.loads(raw)
    return value


def _expired(what: str) -> Misuse:
    return Misuse(f"{what} was read after its callback returned")


_MISSING: Any = object()


def _foreign(ptr: Any) -> bool:
    """``uf_mutation_foreign``; False with a library built before partitions existed."""
    fn = getattr(_C, "uf_mutation_foreign", None)
    return bool(fn(ptr)) if fn is not None else False


class Mutation:
    """What an applied action did, as a subscriber receives it (``uf_mutation_json``).

    Attributes are read from the library only when first accessed, then cached.
    The object is immutable and stays usable after the subscriber returns.
    """

    # _ptr: the uf_mutation* while the subscriber runs, else None.
    # _cache: None until an attribute is read, then {name: value}; "record" holds the
    # parsed uf_mutation_json once it was needed (or snapshotted on escape).
    # _pin: the object itself from the first read while lent until the subscriber
    # returns. The reference it adds lets the trampoline's one refcount check stand for
    # both questions "was it kept?" and "was anything cached that must be forgotten
    # before the object is lent again?" (see _callbacks._subscriber_function).
    # _lock: held while the lent pointer is read, and by _detach: another thread
    # reading a kept Mutation while the subscriber returns must not read the record
    # C frees once it has (the calls into C release the GIL). Reentrant: _detach
    # reads through _read and _full.
    __slots__ = ("_ptr", "_cache", "_pin", "_lock")

    def __init__(self, ptr: Optional[int] = None) -> None:
        self._ptr: Optional[int] = ptr
        self._cache: Optional[Dict[str, Any]] = None
        self._pin: Optional[Mutation] = None
        self._lock = RLock()

    # -- lifetime ------------------------------------------------------------------------

    def _detach(self) -> None:
        """Called when the subscriber returned and kept a reference: snapshot, then forget."""
        with self._lock:
            if self._ptr is not None:
                self._full()
                self._ptr = None

    def _cache_dict(self) -> Dict[str, Any]:
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
            if self._ptr is not None:
                self._pin = self
        return cache

    def _full(self) -> Dict[str, Any]:
        cache = self._cache_dict()
        record = cache.get("record")
        if record is None:
            with self._lock:
                record = cache.get("record")  # _detach may have snapshotted it meanwhile
                if record is None:
                    if self._ptr is None:
                        raise _expired("Mutation")
                    # Not part of the mutation's JSON: kept beside it while it can be read.
                    cache.setdefault("dropped", _C.uf_mutation_dropped(self._ptr))
                    cache.setdefault("foreign", _foreign(self._ptr))
                    record = cache["record"] = json.loads(_C.uf_mutation_json(self._ptr))
        return record  # type: ignore[no-any-return]

    def _read(self, name: str) -> Any:
        """A field, from the cache, else from C while the pointer lives, else the record."""
        cache = self._cache_dict()
        value = cache.get(name, _MISSING)
        if value is not _MISSING:
            return value
        with self._lock:
            return self._read_locked(name, cache)

    def _read_locked(self, name: str, cache: Dict[str, Any]) -> Any:
        ptr = self._ptr
        value: Any
        if ptr is not None and "record" not in cache:
            if name == "kind":
                value = MutationKind(_C.uf_mutation_kind_of(ptr))
            elif name == "feature":
                value = _C.uf_mutation_feature(ptr).decode()
            elif name == "seq":
                value = _C.uf_mutation_seq(ptr)
            elif name == "key":
                raw = _C.uf_mutation_key(ptr)
                value = None if raw is None else raw.decode()
            elif name == "dropped":
                value = _C.uf_mutation_dropped(ptr)
            elif name == "foreign":
                value = _foreign(ptr)
            elif name == "old":
                state = _C.uf_mutation_old_state(ptr)
                value = None if state is None else State(state.decode(), _payload(_C.uf_mutation_old_payload_json(ptr)))
            else:  # "new"
                state = _C.uf_mutation_new_state(ptr)
                value = None if state is None else State(state.decode(), _payload(_C.uf_mutation_new_payload_json(ptr)))
        else:
            record = self._full()
            if name == "kind":
                value = MutationKind.parse(record["kind"])
            elif name in ("old", "new"):
                value = State.from_json(record[name])
            elif name == "key":
                value = record.get("key")
            elif name == "dropped":
                value = 0  # a mutation read after it was delivered: nothing more to say
            elif name == "foreign":
                value = cache.get("foreign", False)
            else:
                value = record[name]
        cache[name] = value
        return value

    # -- public attributes ---------------------------------------------------------------

    @property
    def kind(self) -> MutationKind:
        """Initialization, actualization, transition or deinitialization."""
        return self._read("kind")  # type: ignore[no-any-return]

    @property
    def feature(self) -> str:
        """The feature's name."""
        return self._read("feature")  # type: ignore[no-any-return]

    @property
    def old(self) -> Optional[State]:
        """The state before (``None`` on an initialization)."""
        return self._read("old")  # type: ignore[no-any-return]

    @property
    def new(self) -> Optional[State]:
        """The state after (``None`` on a deinitialization)."""
        return self._read("new")  # type: ignore[no-any-return]

    @property
    def seq(self) -> int:
        """The dispatcher's count of applied mutations, from 1."""
        return self._read("seq")  # type: ignore[no-any-return]

    @property
    def key(self) -> Optional[str]:
        """The instance's key (a keyed feature); ``None`` for a single feature."""
        return self._read("key")  # type: ignore[no-any-return]

    @property
    def dropped(self) -> int:
        """A deferred delivery (``subscribe(..., deferred=True)``): how many deliveries
        to this subscription were dropped just before this one (``deferred_limit``).
        When it is not 0, read the state again rather than trusting the sequence."""
        return self._read("dropped")  # type: ignore[no-any-return]

    @property
    def foreign(self) -> bool:
        """Whether the mutation was installed from a record (``apply_record``: written
        by another node of a partitioned model, or this node's own record read back),
        not processed by this dispatcher."""
        return self._read("foreign")  # type: ignore[no-any-return]

    def _add_dropped(self, count: int) -> None:
        """Counts ``count`` more deliveries lost just before this one: those
        :func:`uniflow.aio.mutations` dropped from its own queue."""
        lost = self.dropped + count
        with self._lock:
            self._cache_dict()["dropped"] = lost

    @property
    def action(self) -> Dict[str, Any]:
        """The action that applied it: kind, feature, state keys, scope, context, id."""
        action: Dict[str, Any] = self._full()["action"]
        return action

    def to_dict(self) -> Dict[str, Any]:
        """The mutation as JSON data: seq, kind, feature, key (instances), old, new, action."""
        return dict(self._full())

    def to_json(self) -> str:
        """The mutation as JSON text."""
        return json.dumps(self._full())

    def __repr__(self) -> str:
        try:
            old = f"{self.old.name}" if self.old else "-"
            new = f"{self.new.name}" if self.new else "-"
            return f"<Mutation #{self.seq} {self.kind} {self.feature}: {old} -> {new}>"
        except Misuse:
            return "<Mutation (expired)>"


class BindingCall:
    """A call of a host handler by a model binding (``{"call": "name"}``).

    ``mutation`` is the triggering mutation as JSON data, ``given`` the
    current ``given`` value (``None`` if none). In a ``given`` clause, the handler
    returns true to let the binding go on (false or ``None`` stops it) and may call
    :meth:`set_output` first to make a value the next clause's ``given``; in a ``then``
    clause any return succeeds. A handler that raises fails the binding (reported,
    ``UF_ECALLBACK``) and its exception is re-raised from the outermost call.
    """

    __slots__ = ("_ptr", "_mutation", "_given")

    _mutation: Dict[str, Any]
    _given: Any

    def __init__(self, ptr: int) -> None:
        self._ptr: Optional[int] = ptr

    def _detach(self) -> None:
        if self._ptr is not None:
            self.mutation
            self.given
            self._ptr = None

    @property
    def mutation(self) -> Dict[str, Any]:
        """The mutation that triggered the binding, as JSON data."""
        try:
            return self._mutation
        except AttributeError:
            pass
        if self._ptr is None:
            raise _expired("BindingCall")
        mutation: Dict[str, Any] = json.loads(_C.uf_binding_call_mutation_json(self._ptr))
        self._mutation = mutation
        return mutation

    @property
    def given(self) -> Any:
        """The current ``given`` value (the last map output), ``None`` if none."""
        try:
            return self._given
        except AttributeError:
            pass
        if self._ptr is None:
            raise _expired("BindingCall")
        self._given = json.loads(_C.uf_binding_call_given_json(self._ptr))
        return self._given

    def set_output(self, value: Any) -> None:
        """Makes ``value`` (JSON-serializable) the next clause's ``given``.

        Raises :class:`uniflow.Misuse` in a ``then`` clause or after the call returned.
        """
        from .errors import check

        if self._ptr is None:
            raise _expired("BindingCall")
        text = json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
        rc = _C.uf_binding_call_set_output(self._ptr, text)
        if rc < 0:
            check(rc)

    def __repr__(self) -> str:
        return "<BindingCall>" if self._ptr is not None else "<BindingCall (returned)>"
