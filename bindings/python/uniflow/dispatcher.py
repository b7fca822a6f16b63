"""The :class:`Dispatcher`: one ``uf_dispatcher`` and everything Python keeps for it."""

from __future__ import annotations

import json
import os
import weakref
from ctypes import byref, c_char, c_uint64, c_void_p, string_at
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

from . import _callbacks
from ._library import FREE_FN, REPORT_FN, UF_ACTION_SIZE, UfAction, holding_the_gil, load
from ._callbacks import RELEASE, VIA, Errors
from .errors import InvalidArgument, Misuse, Status, check
from .mutation import BindingCall, Mutation
from .values import Payload, State

try:  # Python 3.8+
    from typing import Literal
except ImportError:  # pragma: no cover
    Literal = None  # type: ignore[assignment]

__all__ = ["Dispatcher", "Subscription", "logic_apply", "library_version"]

#: An action as a dict (SPEC 3) or as JSON text.
ActionLike = Union[Mapping[str, Any], str, bytes]
#: Feature definitions: a path, JSON text, one definition (dict) or a list of them.
DefinitionsLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Sequence[Mapping[str, Any]], bytes]
#: What a via callable returns: the new payload (dict or JSON text), None, or DECLINE.
Via = Callable[[Optional[Payload]], Any]
F = TypeVar("F", bound=Callable[..., Any])

_RESULT = (Status.OK, Status.QUEUED)
OK = Status.OK
# uf_dispatch_try's answer when another thread is processing: nothing was done.
_BUSY = int(Status.EBUSY)
_INITIALIZE, _ACTUALIZE, _TRANSITION, _DEINITIALIZE, _TRIGGER = 1, 2, 3, 4, 5
# Prepared actions are cheap to rebuild; the bound only matters for programs that
# generate names, which would otherwise grow the cache without end.
_PREPARED_LIMIT = 4096


def _name(value: Optional[str], what: str) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, str):
        if "\0" in value:
            raise InvalidArgument(f"{what} contains a NUL character: {value!r}")
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{what} must be a str, got {type(value).__name__}")


def _payload_bytes(payload: Any) -> bytes:
    try:
        return _callbacks.encode_payload(payload)
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"payload is not JSON-serializable: {error}") from error


def _json_text(value: Any, what: str) -> bytes:
    """A dict/list as JSON, a str/bytes as the JSON text it already is."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"{what} is not JSON-serializable: {error}") from error


def _take_string(lib: Any, out: c_void_p) -> Optional[str]:
    """Reads and frees a ``char *`` the library returned."""
    if not out.value:
        return None
    try:
        return string_at(out.value).decode("utf-8")
    finally:
        lib.uf_free(out)


def library_version() -> str:
    """The loaded library's version (``uf_version()``), e.g. ``"0.1.0"``."""
    lib, _ = load()
    return str(lib.uf_version().decode())


def _require(lib: Any, name: str) -> Any:
    fn = getattr(lib, name, None)
    if fn is None:
        raise Misuse(f"{name} is not exported by the loaded libuniflow ({load()[1]}); "
                     f"this part of the API needs a newer build of the library")
    return fn


def logic_apply(rule: Any, data: Any = None) -> Any:
    """Evaluates a JsonLogic rule over ``data`` (both Python values, sent as JSON) with
    the library's evaluator (``uf_logic_apply``) and returns the result.

    >>> logic_apply({"+": [{"var": "a"}, 2]}, {"a": 1})
    3

    An unknown operator, a malformed rule or a non-finite result raises
    :class:`uniflow.SchemaError`. Needs no dispatcher; any thread.
    """
    lib, _ = load()
    fn = _require(lib, "uf_logic_apply")
    out = c_void_p()
    rc = fn(_json_text(rule, "rule"), None if data is None else _json_text_value(data), byref(out))
    if rc < 0:
        check(rc)
    text = _take_string(lib, out)
    return None if text is None else json.loads(text)


def _json_text_value(value: Any) -> bytes:
    """Any Python value as JSON (a str is a JSON string here, not JSON text)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"data is not JSON-serializable: {error}") from error


class Subscription:
    """A subscriber registered with :meth:`Dispatcher.subscribe`.

    ``id`` is the library's subscription id (never 0, never reused); :meth:`cancel` ends
    it (idempotent, allowed inside the subscriber itself). Also a context manager that
    cancels on exit.
    """

    __slots__ = ("_dispatcher", "_token", "id", "when")

    def __init__(self, dispatcher: "Dispatcher", sub_id: int, token: int, when: Optional[str]) -> None:
        self._dispatcher: Optional[Dispatcher] = dispatcher
        self._token = token
        #: The library's id of this subscription.
        self.id: int = sub_id
        #: The filter the subscription was made with (``None``: AnyMutation).
        self.when: Optional[str] = when

    @property
    def active(self) -> bool:
        """Whether the subscriber will still be called."""
        d = self._dispatcher
        return d is not None and d._handle is not None and self._token in d._keep

    def cancel(self) -> None:
        """Ends the subscription. Idempotent; a no-op once the dispatcher is closed or the
        subscriber returned :data:`uniflow.STOP`."""
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
        """The subscription itself: ``with d.subscribe(fn): ...`` cancels it on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Cancels the subscription (exceptions propagate)."""
        self.cancel()

    def __repr__(self) -> str:
        state = "active" if self.active else "cancelled"
        return f"<uniflow.Subscription id={self.id} when={self.when or 'AnyMutation'} {state}>"


class Dispatcher:
    """A uniflow dispatcher: the GlobalModel, its features, subscriptions and reporter.

    >>> with Dispatcher() as d:
    ...     d.register({"feature": "Door", "states": {"Open": {}, "Closed": {}}})
    ...     d.initialize("Door", "Closed")
    ...     d.transition("Door", into="Open", from_="Closed")
    ...     d.get("Door")
    State(name='Open', payload={})

    Options (SPEC 4.2): ``reporting`` ("none", "short" or "verbose": the built-in
    reporter prints to stderr), ``max_cascade`` (actions processed within one outer
    call), ``report_skipped`` (send ``binding_skipped`` reports to a custom reporter),
    ``journal`` (a JSON-lines file receiving every registration and mutation) and
    ``journal_sync``.

    Action methods return :data:`uniflow.OK`, or :data:`uniflow.QUEUED` when called
    inside a callback (the action then runs after the current one, before the outermost
    call returns), and raise a :class:`uniflow.UniflowError` subclass on every failure.
    An exception raised by a Python callback is re-raised from the outermost action
    call on that thread.

    Every method may be called from any thread; :meth:`close` must not race with other
    calls.
    """

    # Class-level defaults so that __del__ and __repr__ work on a half-built instance.
    _handle: Optional[c_void_p] = None
    _handle_arg: Any = None

    def __init__(
        self,
        reporting: Optional[str] = None,
        max_cascade: Optional[int] = None,
        report_skipped: Optional[bool] = None,
        journal: Optional[Union[str, "os.PathLike[str]"]] = None,
        journal_sync: Optional[bool] = None,
    ) -> None:
        lib, _ = load()
        _callbacks.bind(lib)
        options: Dict[str, Any] = {}
        if reporting is not None:
            options["reporting"] = reporting
        if max_cascade is not None:
            options["max_cascade"] = max_cascade
        if report_skipped is not None:
            options["report_skipped"] = report_skipped
        if journal is not None:
            options["journal"] = os.fspath(journal)
        if journal_sync is not None:
            options["journal_sync"] = journal_sync
        handle = c_void_p()
        rc = lib.uf_dispatcher_new(byref(handle), json.dumps(options).encode() if options else None)
        if rc < 0:
            check(rc)
        self._lib = lib
        # The hot path: uf_dispatch without argtypes (no from_param per argument), called
        # with two ready-made byref() argument objects: the handle (below) and a cached
        # prepared action. ctypes copies a byref() object's pointer straight into the
        # call; any other ctypes instance (a c_void_p, a pointer()) would first be turned
        # into a fresh argument object, about a tenth of the cost of the whole call.
        self._dispatch = self._dispatch_wait = lib["uf_dispatch"]
        # Better still: uf_dispatch_try, which never waits for another thread, called
        # without releasing the GIL. Releasing and retaking it around the call and
        # again around each callback is the largest cost left on the hot path; keeping
        # it is safe only because this call cannot wait for a thread that may need it
        # (when another thread is processing, the call answers _BUSY having done
        # nothing, and the hot path waits through uf_dispatch, GIL released). Not with
        # a journal, whose writes (fsync with journal_sync) should not hold the GIL.
        if journal is None:
            self._dispatch = holding_the_gil("uf_dispatch_try") or self._dispatch_wait
        self._clear_prepared()  # the caches of prepared uf_action structs
        #: thread id -> exception raised by a callback, re-raised by the outermost call
        self._errors: Errors = {}
        #: token -> ctypes callback objects (and the Python callables) C may still call
        self._keep: Dict[int, Any] = {}
        self._ref = weakref.ref(self)
        self._handle = handle  # a c_void_p, for every call but uf_dispatch
        # The same pointer as a byref() argument: byref of a c_char that lives at the
        # dispatcher's address passes exactly that address. Nothing reads the c_char.
        # None once closed (NULL: the library answers UF_EINVAL, _finish says closed).
        self._handle_arg = byref(c_char.from_address(handle.value))  # type: ignore[arg-type]

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the dispatcher, ending every subscription. Idempotent.

        Raises :class:`uniflow.Misuse` inside one of the dispatcher's own callbacks
        (close it after the outer call returns). Must not race with other calls.
        """
        handle = self._handle
        if handle is None:
            return
        lib = self._lib
        if _callbacks.in_callback_of(self._errors):
            raise Misuse("close() was called inside one of the dispatcher's own callbacks; "
                         "close it after the outer call returns")
        # uf_dispatcher_free is void: to see whether it refused (inside a C-level
        # callback of this dispatcher), put a known status first and look after.
        lib.uf_unsubscribe(None, 0)
        lib.uf_dispatcher_free(handle)
        if lib.uf_last_status() == Status.EMISUSE:
            check(Status.EMISUSE)
        self._handle = None
        self._handle_arg = None
        self._clear_prepared()
        self._keep.clear()  # C released everything; drop what a dead weakref missed

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._handle is None

    def __enter__(self) -> "Dispatcher":
        """The dispatcher itself: ``with Dispatcher() as d: ...`` closes it on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Closes the dispatcher (exceptions propagate)."""
        self.close()

    def __del__(self) -> None:
        if self._handle is not None:
            try:
                self.close()
            except BaseException:  # pragma: no cover - finalizers must not raise
                pass

    def __repr__(self) -> str:
        if self._handle is None:
            return f"<uniflow.{type(self).__name__} closed>"
        return f"<uniflow.{type(self).__name__} open at {self._handle.value:#x}>"

    # -- results ---------------------------------------------------------------------------

    def _settle(self, rc: int, prepared: Any) -> Status:
        """The end of a prepared action that did not simply succeed: wait (GIL
        released) if the dispatcher was busy on another thread, then :meth:`_finish`."""
        if rc == _BUSY:
            rc = self._dispatch_wait(self._handle_arg, prepared)
        return self._finish(rc)

    def _finish(self, rc: int) -> Status:
        """The slow path of every call: a pending callback exception, or a failure."""
        if self._errors:
            exc = _callbacks.take_error(self._errors)
            if exc is not None:
                if rc < 0 and hasattr(exc, "add_note"):
                    lib = self._lib
                    raw = lib.uf_last_error()
                    exc.add_note(f"uniflow: the call failed with {lib.uf_status_name(rc).decode()}: "
                                 f"{raw.decode('utf-8', 'replace') if raw else ''}")
                raise exc
        if rc < 0:
            if self._handle is None:
                raise Misuse(f"the {type(self).__name__} is closed")
            check(rc)
        return _RESULT[rc]

    def _handle_or_raise(self) -> c_void_p:
        handle = self._handle
        if handle is None:
            raise Misuse(f"the {type(self).__name__} is closed")
        return handle

    # -- definitions -----------------------------------------------------------------------

    def register(self, definitions: DefinitionsLike) -> Status:
        """Registers feature definitions, all or nothing (SPEC 2).

        ``definitions`` is a path (``str`` or path-like), JSON text (a ``str`` that
        starts with ``{`` or ``[``), one definition (a dict), a list of them, or
        ``{"features": [...]}``.
        """
        handle = self._handle_or_raise()
        lib = self._lib
        if isinstance(definitions, (str, bytes)):
            text = definitions.decode("utf-8") if isinstance(definitions, bytes) else definitions
            if text.lstrip().startswith(("{", "[")):
                rc = lib.uf_register(handle, text.encode("utf-8"))
            else:
                rc = lib.uf_register_file(handle, os.fsencode(text))
        elif isinstance(definitions, os.PathLike):
            rc = lib.uf_register_file(handle, os.fsencode(definitions))
        else:
            rc = lib.uf_register(handle, _json_text(definitions, "definitions"))
        return self._finish(rc)

    @property
    def definitions(self) -> Dict[str, Any]:
        """``{"features": [...]}``: every definition as registered, in order."""
        out = c_void_p()
        rc = self._lib.uf_definitions_get(self._handle_or_raise(), byref(out))
        if rc < 0:
            self._finish(rc)
        text = _take_string(self._lib, out)
        return json.loads(text) if text else {"features": []}

    # -- actions ---------------------------------------------------------------------------

    def _prepare(self, kind: int, feature: str, from_: Optional[str], into: Optional[str],
                 same: Any) -> Any:
        """A ``uf_action`` for a payload-free, via-free action, cached for reuse.

        Cached in nested dicts keyed by the method's own arguments (feature, then state
        names), which are cheaper to look up than one tuple key. What is cached is a
        ``byref()`` of the struct (see ``_dispatch`` in ``__init__``), which keeps the
        struct alive, as the struct keeps the bytes of its names (ctypes' ``_objects``).
        The struct is never written again once cached, so threads may share it, and
        ``uf_dispatch`` copies what it needs before it returns.
        """
        action = UfAction(UF_ACTION_SIZE, kind, _name(feature, "feature"), _name(from_, "from_"),
                          _name(into, "state"), None, 1 if same else 0)
        prepared = byref(action)
        if self._prepared_count >= _PREPARED_LIMIT:
            self._clear_prepared()
        self._prepared_count += 1
        if kind == _INITIALIZE:
            self._p_init.setdefault(feature, {})[into] = prepared
        elif kind == _ACTUALIZE:
            self._p_act.setdefault(feature, {})[into] = prepared
        elif kind == _TRANSITION:
            root = self._p_same if same else self._p_tr
            root.setdefault(feature, {}).setdefault(into, {})[from_] = prepared
        else:
            self._p_deinit.setdefault(feature, {})[from_] = prepared
        return prepared

    def _clear_prepared(self) -> None:
        self._prepared_count = 0
        #: feature -> into -> prepared initialize
        self._p_init: Dict[Any, Dict[Any, Any]] = {}
        #: feature -> in -> prepared actualize
        self._p_act: Dict[Any, Dict[Any, Any]] = {}
        #: feature -> into -> from -> prepared transition (same false / same true)
        self._p_tr: Dict[Any, Dict[Any, Dict[Any, Any]]] = {}
        self._p_same: Dict[Any, Dict[Any, Dict[Any, Any]]] = {}
        #: feature -> from -> prepared deinitialize
        self._p_deinit: Dict[Any, Dict[Any, Any]] = {}

    def _dispatch_full(self, kind: int, feature: str, from_: Optional[str], into: Optional[str],
                       same: Any, uninitialized: int, payload: Any, via: Optional[Via],
                       scope: Optional[str], context: Optional[str], id: Optional[str]) -> Status:
        """The general path: a fresh ``uf_action`` with a payload, a via, or diagnostics."""
        action = UfAction(UF_ACTION_SIZE, kind, _name(feature, "feature"), _name(from_, "from_"),
                          _name(into, "state"), None if payload is None else _payload_bytes(payload),
                          1 if same else 0, uninitialized, _name(scope, "scope"), _name(context, "context"),
                          _name(id, "id"))
        if via is not None:
            token = _callbacks.register_via(self._errors, via, kind in (_INITIALIZE, _ACTUALIZE, _TRANSITION))
            action.via = VIA
            action.via_payload = token
            action.via_payload_free = RELEASE
        return self._finish(self._dispatch_wait(self._handle_arg, byref(action)))

    def initialize(self, feature: str, into: str, payload: Optional[Union[Payload, str]] = None,
                   via: Optional[Via] = None, scope: Optional[str] = None,
                   context: Optional[str] = None, id: Optional[str] = None) -> Status:
        """Initializes ``feature`` into state ``into`` (precondition: the feature is absent).

        Without ``payload`` or ``via`` the state must be an auto state.
        """
        if payload is None and via is None and scope is None and context is None and id is None:
            try:
                prepared = self._p_init[feature][into]
            except KeyError:
                prepared = self._prepare(1, feature, None, into, False)
            dispatch = self._dispatch  # LOAD_ATTR: a method-call lookup is slower here
            rc = dispatch(self._handle_arg, prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(1, feature, None, into, False, 0, payload, via, scope, context, id)

    def actualize(self, feature: str, in_: str, payload: Optional[Union[Payload, str]] = None,
                  via: Optional[Via] = None, scope: Optional[str] = None,
                  context: Optional[str] = None, id: Optional[str] = None) -> Status:
        """Replaces the payload of ``feature``, which must be in state ``in_``."""
        if payload is None and via is None and scope is None and context is None and id is None:
            try:
                prepared = self._p_act[feature][in_]
            except KeyError:
                prepared = self._prepare(2, feature, None, in_, False)
            dispatch = self._dispatch  # LOAD_ATTR: a method-call lookup is slower here
            rc = dispatch(self._handle_arg, prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(2, feature, None, in_, False, 0, payload, via, scope, context, id)

    def transition(self, feature: str, into: str, from_: Optional[str] = None,
                   payload: Optional[Union[Payload, str]] = None, via: Optional[Via] = None,
                   same: bool = False, scope: Optional[str] = None,
                   context: Optional[str] = None, id: Optional[str] = None) -> Status:
        """Moves ``feature`` into state ``into``.

        With ``from_`` the feature must be in that state (``Between<A, B>``); without it
        the feature must be initialized and, unless ``same`` is true, not already in
        ``into``. ``initial``/``transitions`` of the definition must allow the pair.
        """
        if payload is None and via is None and scope is None and context is None and id is None:
            try:
                if same:
                    prepared = self._p_same[feature][into][from_]
                else:
                    prepared = self._p_tr[feature][into][from_]
            except KeyError:
                prepared = self._prepare(3, feature, from_, into, same)
            dispatch = self._dispatch  # LOAD_ATTR: a method-call lookup is slower here
            rc = dispatch(self._handle_arg, prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(3, feature, from_, into, same, 0, payload, via, scope, context, id)

    def deinitialize(self, feature: str, from_: Optional[str] = None, via: Optional[Via] = None,
                     scope: Optional[str] = None, context: Optional[str] = None,
                     id: Optional[str] = None) -> Status:
        """Removes ``feature`` from the model (from state ``from_`` if given).

        A ``via`` runs as a side effect before the removal (its result is ignored, except
        :data:`uniflow.DECLINE`).
        """
        if via is None and scope is None and context is None and id is None:
            try:
                prepared = self._p_deinit[feature][from_]
            except KeyError:
                prepared = self._prepare(4, feature, from_, None, False)
            dispatch = self._dispatch  # LOAD_ATTR: a method-call lookup is slower here
            rc = dispatch(self._handle_arg, prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(4, feature, from_, None, False, 0, None, via, scope, context, id)

    def trigger(self, feature: str, in_: Optional[str] = None, initialized: Optional[bool] = None,
                via: Optional[Via] = None, submit: Optional[Iterable[ActionLike]] = None,
                scope: Optional[str] = None, context: Optional[str] = None,
                id: Optional[str] = None) -> Status:
        """Runs ``via`` (a side effect; its result is ignored except
        :data:`uniflow.DECLINE`) and queues ``submit`` if the precondition holds: the
        feature is in ``in_``, or initialized (``initialized`` true or neither given), or
        absent (``initialized=False``). A trigger applies no mutation.
        """
        uninitialized = 1 if initialized is False else 0
        if submit is None and (in_ is None or initialized is None):
            return self._dispatch_full(5, feature, in_, None, False, uninitialized, None, via,
                                       scope, context, id)
        # uf_action has no field for a trigger's "submit" list (nor for "in" together with
        # "initialized", which the library refuses): go through JSON.
        action: Dict[str, Any] = {"kind": "trigger", "feature": feature}
        if in_ is not None:
            action["in"] = in_
        if initialized is not None:
            action["initialized"] = bool(initialized)
        for key, value in (("scope", scope), ("context", context), ("id", id)):
            if value is not None:
                action[key] = value
        if submit is not None:
            action["submit"] = [json.loads(a) if isinstance(a, (str, bytes)) else dict(a) for a in submit]
        return self.submit(action, via=via)

    def submit(self, action: ActionLike, via: Optional[Via] = None) -> Status:
        """Submits one action given as a dict (SPEC 3) or as JSON text.

        With ``via``, the action must carry no ``"payload"`` (``InvalidArgument``).
        """
        handle = self._handle
        text = _json_text(action, "action")
        if via is None:
            return self._finish(self._lib.uf_submit(handle, text))
        if isinstance(action, Mapping):
            kind = action.get("kind")
        else:
            try:
                kind = json.loads(text).get("kind")
            except (ValueError, AttributeError):
                kind = None  # the library reports the bad text
        token = _callbacks.register_via(self._errors, via, kind not in ("trigger", "deinitialize"))
        return self._finish(self._lib.uf_submit_via(handle, text, VIA, token, RELEASE))

    def batch(self, actions: Union[Sequence[ActionLike], str, bytes]) -> Status:
        """Applies a list of actions (dicts or JSON text, payloads in the JSON only: no
        ``via``) in order, all or nothing (SPEC 10, ``uf_submit_batch``).

        The first that fails rolls the model back and raises; its message names its index
        (``"batch[2]: ..."``), and nobody is notified. On success the bindings and
        subscribers then see each mutation in order. :class:`uniflow.Misuse` inside a
        callback.
        """
        fn = _require(self._lib, "uf_submit_batch")
        if isinstance(actions, (str, bytes)):
            text = _json_text(actions, "actions")
        else:
            text = _json_text([json.loads(a) if isinstance(a, (str, bytes)) else a for a in actions], "actions")
        return self._finish(fn(self._handle, text))

    # -- state -----------------------------------------------------------------------------

    def get(self, feature: str) -> Optional[State]:
        """The state of ``feature``, or ``None`` when it is registered but not initialized.

        :class:`uniflow.NotFound` when it is not registered.
        """
        out = c_void_p()
        rc = self._lib.uf_feature_get(self._handle, _name(feature, "feature"), byref(out))
        if rc < 0:
            self._finish(rc)
        text = _take_string(self._lib, out)
        if text is None:
            return None
        value = json.loads(text)
        return State(value["state"], value["payload"])

    @property
    def state(self) -> Dict[str, Any]:
        """The GlobalModel as JSON data (SPEC 5.2):
        ``{"Feature": {"state": "S", "payload": {...}}}``, initialized features only, in
        registration order."""
        out = c_void_p()
        rc = self._lib.uf_state_get(self._handle, byref(out))
        if rc < 0:
            self._finish(rc)
        text = _take_string(self._lib, out)
        return json.loads(text) if text else {}

    def states(self) -> Dict[str, State]:
        """The GlobalModel as ``{feature: State}``."""
        return {name: State(v["state"], v["payload"]) for name, v in self.state.items()}

    def snapshot(self) -> Dict[str, Any]:
        """The model now, for :meth:`restore` (SPEC 10): the GlobalModel as JSON data, as
        :attr:`state` gives it. Serialized with ``json.dumps`` it can be stored; the
        library writes it deterministically (registration order, field order)."""
        return self.state

    def restore(self, model: Union[Mapping[str, Any], str, bytes]) -> Status:
        """Replaces the model with a :meth:`snapshot` (a dict or its JSON text) taken on a
        dispatcher with the same definitions. Validated first: invalid input changes
        nothing. No mutations are sent; restored features' model bindings become active.
        :class:`uniflow.Misuse` inside a callback."""
        fn = _require(self._lib, "uf_state_restore")
        return self._finish(fn(self._handle, _json_text(model, "model")))

    def replay(self, journal: Union[str, "os.PathLike[str]"]) -> Status:
        """Installs the mutations of a journal written with the same definitions."""
        fn = _require(self._lib, "uf_replay_file")
        return self._finish(fn(self._handle, os.fsencode(journal)))

    def graph(self, feature: Optional[str] = None) -> str:
        """Graphviz DOT of the registered features (or of one)."""
        fn = _require(self._lib, "uf_graph_dot")
        out = c_void_p()
        rc = fn(self._handle, _name(feature, "feature"), byref(out))
        if rc < 0:
            self._finish(rc)
        return _take_string(self._lib, out) or ""

    # -- subscribers, reporter, handlers ---------------------------------------------------

    def subscribe(self, fn: Callable[[Mutation], Any], when: Optional[str] = None) -> Subscription:
        """Calls ``fn(mutation)`` for every mutation matched by the filter ``when``
        (``None``: every mutation; e.g. ``"TransitionInto<FileDownloading.Completed>"``).

        ``fn`` returns :data:`uniflow.STOP` to end the subscription (anything else keeps
        it) and may submit (queued), subscribe, cancel (itself included) and read state.
        An exception it raises leaves the mutation applied and is re-raised from the
        outermost action call. The :class:`Mutation` is lazy and stays usable after
        ``fn`` returns.
        """
        if not callable(fn):
            raise TypeError(f"subscriber must be callable, got {type(fn).__name__}")
        handle = self._handle_or_raise()
        token = _callbacks.new_token()
        cfunc = _callbacks.make_subscriber(self._errors, fn)
        self._keep[token] = (cfunc, fn)
        _callbacks.own(token, self._ref)
        out = c_uint64()
        rc = self._lib.uf_subscribe(handle, _name(when, "when"), cfunc, token, RELEASE, byref(out))
        if rc < 0:
            self._keep.pop(token, None)  # C already released it; be sure
            self._finish(rc)
        return Subscription(self, out.value, token, when)

    def on(self, when: Optional[str] = None) -> Callable[[F], F]:
        """Decorator form of :meth:`subscribe`; returns the function unchanged, with the
        :class:`Subscription` in its ``subscription`` attribute (when it takes one).

        >>> @d.on("TransitionInto<FileDownloading.Completed>")
        ... def done(m): print("done")
        """

        def decorator(fn: F) -> F:
            subscription = self.subscribe(fn, when)
            try:
                fn.subscription = subscription  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return fn

        return decorator

    def set_reporter(self, fn: Optional[Callable[[Dict[str, Any]], Any]]) -> None:
        """Sends every report (SPEC 4.6) to ``fn`` as a dict; ``None`` goes back to the
        built-in reporter (which prints according to ``reporting``)."""
        handle = self._handle_or_raise()
        if fn is None:
            rc = self._lib.uf_set_reporter(handle, REPORT_FN(), None, FREE_FN())  # NULLs
        else:
            if not callable(fn):
                raise TypeError(f"reporter must be callable, got {type(fn).__name__}")
            token = _callbacks.new_token()
            cfunc = _callbacks.make_reporter(self._errors, fn)
            self._keep[token] = (cfunc, fn)
            _callbacks.own(token, self._ref)
            rc = self._lib.uf_set_reporter(handle, cfunc, token, RELEASE)
            if rc < 0:
                self._keep.pop(token, None)
        if rc < 0:
            self._finish(rc)

    def register_handler(self, name: str, fn: Callable[[BindingCall], Any]) -> None:
        """Registers ``fn`` as the host handler ``name`` for model bindings'
        ``{"call": name}`` (register handlers before the definitions that name them).

        ``fn(call)`` receives a :class:`uniflow.BindingCall`. In a ``given`` clause a true
        result holds and a false one (``None`` included) stops the binding; in ``then``
        any result succeeds. An exception fails the binding and is re-raised from the
        outermost call. :class:`uniflow.AlreadyExists` for a name taken.
        """
        register = _require(self._lib, "uf_register_handler")
        if not callable(fn):
            raise TypeError(f"handler must be callable, got {type(fn).__name__}")
        handle = self._handle_or_raise()
        token = _callbacks.new_token()
        cfunc = _callbacks.make_handler(self._errors, fn)
        self._keep[token] = (cfunc, fn)
        _callbacks.own(token, self._ref)
        rc = register(handle, _name(name, "name"), cfunc, token, RELEASE)
        if rc < 0:
            self._keep.pop(token, None)
            self._finish(rc)

    def logic_apply(self, rule: Any, data: Any = None) -> Any:
        """:func:`uniflow.logic_apply` (JsonLogic with the library's evaluator)."""
        return logic_apply(rule, data)

    def scenario(self, text: str) -> "Scenario":
        """Starts an observer binding evaluated in Python:
        ``d.scenario("...").when(filter).given(map=f).given(if_=p).then(do=g)``."""
        from .scenario import Scenario

        return Scenario(self, text)


# Imported late for the annotation only (scenario imports this module).
from .scenario import Scenario  # noqa: E402
