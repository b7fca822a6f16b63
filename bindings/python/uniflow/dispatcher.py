"""The :class:`Dispatcher`: one ``uf_dispatcher`` and everything Python keeps for it.

This module holds its construction, lifetime, registration and actions; the rest of
its methods come from mixins: reading and restoring the model (``_model``),
subscribers, watches, interceptors, the reporter and handlers (``_observers``), time
and the host's loop (``_timers``), and the hot path's prepared actions (``_prepared``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import weakref
from ctypes import byref, c_char, c_void_p
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    Mapping,
    Optional,
    Sequence,
    Union,
)

from . import _callbacks
from ._encoding import json_item as _json_item
from ._encoding import c_text as _c_text
from ._encoding import document_text as _document_text
from ._encoding import json_text as _json_text
from ._encoding import json_value_text as _json_text_value
from ._encoding import take_string as _take_string
from ._library import UF_ACTION_SIZE, UfAction, holding_the_gil, load, require
from ._partitions import Partitions
from ._model import ModelAccess
from ._observers import Observers
from ._prepared import PreparedActions
from ._timers import TimersAndLoop
# Re-exported: the aliases were defined here first, and are still imported from here.
from ._types import ActionLike as ActionLike
from ._types import DefinitionsLike as DefinitionsLike
from ._types import F as F
from ._types import Via as Via
from .errors import Misuse, Status, check
from .instance import Instance
from .intercept import Action
from .scenario import Scenario
from .subscription import Subscription
from .values import ActionKind, Payload

if TYPE_CHECKING:  # pragma: no cover
    from .inspect import Inspector

__all__ = ["Dispatcher", "Subscription", "logic_apply", "library_version"]

_RESULT = (Status.OK, Status.QUEUED)
OK = Status.OK
_INITIALIZE, _ACTUALIZE, _TRANSITION, _DEINITIALIZE, _TRIGGER, _SEND = (int(k) for k in ActionKind)


def library_version() -> str:
    """The loaded library's version (``uf_version()``), e.g. ``"0.2.0"``."""
    lib, _ = load()
    return str(lib.uf_version().decode())


def logic_apply(rule: Any, data: Any = None) -> Any:
    """Evaluates a JsonLogic rule over ``data`` (both Python values, sent as JSON) with
    the library's evaluator (``uf_logic_apply``) and returns the result.

    >>> logic_apply({"+": [{"var": "a"}, 2]}, {"a": 1})
    3

    An unknown operator, a malformed rule or a non-finite result raises
    :class:`uniflow.SchemaError`. Needs no dispatcher; any thread.
    """
    lib, path = load()
    fn = require(lib, "uf_logic_apply", path)
    out = c_void_p()
    rc = fn(_json_text_value(rule, "rule"), None if data is None else _json_text_value(data, "data"), byref(out))
    if rc < 0:
        check(rc)
    text = _take_string(lib, out)
    return None if text is None else json.loads(text)


class Dispatcher(ModelAccess, Observers, TimersAndLoop, Partitions, PreparedActions):
    """A uniflow dispatcher: the GlobalModel, its features, subscriptions and reporter.

    >>> with Dispatcher() as d:
    ...     d.register({"feature": "Door", "states": {"Open": {}, "Closed": {}}})
    ...     d.initialize("Door", "Closed")
    ...     d.transition("Door", into="Open", from_="Closed")
    ...     d.get("Door")
    <Status.OK: 0>
    <Status.OK: 0>
    <Status.OK: 0>
    State(name='Open', payload={})

    Options (``uf_dispatcher_new``): ``reporting`` ("none", "short" or "verbose": the
    built-in reporter prints to stderr), ``max_cascade`` (actions processed within one
    outer call), ``report_skipped`` (send ``binding_skipped`` reports to a custom
    reporter), ``journal`` (a JSON-lines file receiving every registration and
    mutation), ``journal_sync``, ``timers`` ("thread": the library's thread fires them,
    the default; "host": :meth:`run_pending`, or the event loop after :meth:`attach`),
    ``clock`` ("monotonic", or "manual": it moves only with :meth:`advance`) and
    ``deferred_limit`` (deliveries waiting for :meth:`run_pending` before the oldest is
    dropped); ``partitions`` and ``node`` together make a partitioned dispatcher, one
    node of a model shared across processes (:meth:`claim`, :meth:`record_sink`,
    :meth:`apply_record`; ``docs/scale-out.md``).

    Action methods return :data:`uniflow.OK`, or :data:`uniflow.QUEUED` when called
    inside a callback (the action then runs after the current one, before the outermost
    call returns), and raise a :class:`uniflow.UniflowError` subclass on every failure.
    An exception raised by a Python callback is re-raised from the outermost action
    call on that thread. On a keyed feature every action takes ``key=``.

    Every method may be called from any thread; :meth:`close` must not race with other
    calls.
    """

    # Class-level defaults so that __del__ and __repr__ work on a half-built instance.
    _handle: Optional[c_void_p] = None
    _handle_arg: Any = None
    _loop: Optional[asyncio.AbstractEventLoop] = None
    _loop_fd: int = -1
    _nats_nodes: Any = ()  # a WeakSet once built (see __init__)

    def __init__(
        self,
        reporting: Optional[str] = None,
        max_cascade: Optional[int] = None,
        report_skipped: Optional[bool] = None,
        journal: Optional[Union[str, "os.PathLike[str]"]] = None,
        journal_sync: Optional[bool] = None,
        timers: Optional[str] = None,
        clock: Optional[str] = None,
        deferred_limit: Optional[int] = None,
        partitions: Optional[int] = None,
        node: Optional[str] = None,
    ) -> None:
        #: held by close(): a dispatcher is freed once, even when the thread that frees
        #: it (see __del__) and a caller's close() meet
        self._closing = threading.RLock()
        lib, _ = load()
        _callbacks.bind(lib)
        options: Dict[str, Any] = {}
        for key, value in (("reporting", reporting), ("max_cascade", max_cascade),
                           ("report_skipped", report_skipped), ("journal_sync", journal_sync),
                           ("timers", timers), ("clock", clock), ("deferred_limit", deferred_limit),
                           ("partitions", partitions), ("node", node)):
            if value is not None:
                options[key] = value
        if journal is not None:
            options["journal"] = os.fspath(journal)
        #: whether each feature asked about is keyed (_is_keyed)
        self._keyed: Dict[str, bool] = {}
        #: what uniflow.aio's iterators keep for a slow consumer (the library's default)
        self._deferred_limit: int = deferred_limit if deferred_limit is not None else 100_000
        handle = c_void_p()
        rc = lib.uf_dispatcher_new(byref(handle), _json_text(options, "options") if options else None)
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
        # (when another thread is processing, the timer thread included, the call
        # answers EBUSY having done nothing, and the hot path waits through
        # uf_dispatch, GIL released). Not with a journal, whose writes (fsync with
        # journal_sync) should not hold the GIL.
        if journal is None:
            self._dispatch = holding_the_gil("uf_dispatch_try") or self._dispatch_wait
        self._clear_prepared()  # the caches of prepared uf_action structs
        #: thread id -> exception raised by a callback, re-raised by the outermost call
        self._errors: _callbacks.Errors = {}
        #: token -> ctypes callback objects (and the Python callables) C may still call
        self._keep: Dict[int, Any] = {}
        self._ref = weakref.ref(self)
        self._handle = handle  # a c_void_p, for every call but uf_dispatch
        # The same pointer as a byref() argument: byref of a c_char that lives at the
        # dispatcher's address passes exactly that address. Nothing reads the c_char.
        # None once closed (NULL: the library answers UF_EINVAL, _finish says closed).
        self._handle_arg = byref(c_char.from_address(handle.value))  # type: ignore[arg-type]
        #: what waits on the event loop for this dispatcher (aio): told when it closes
        self._waiting: "weakref.WeakSet[Any]" = weakref.WeakSet()
        #: the uniflow.nats nodes serving this dispatcher: closed before it is freed
        self._nats_nodes: "weakref.WeakSet[Any]" = weakref.WeakSet()

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Detaches from the event loop, then frees the dispatcher, ending every
        subscription, watch and interceptor (and stopping its timer thread). Idempotent.

        Raises :class:`uniflow.Misuse` inside one of the dispatcher's own callbacks
        (close it after the outer call returns). Must not race with other calls.
        """
        if self._handle is None:
            return
        lib = self._lib
        if _callbacks.in_callback_of(self._errors):
            raise Misuse("close() was called inside one of the dispatcher's own callbacks; "
                         "close it after the outer call returns")
        # A uniflow.nats node holds this dispatcher's pointer and installed its record
        # sink: it goes first (releasing its partitions).
        for node in list(self._nats_nodes):
            node.close()
        self.detach()
        # Its own lock, reentrant: freeing runs payload_free callbacks, which may drop
        # (and so close) other dispatchers, or come back here (refused inside).
        with self._closing:
            handle = self._handle
            if handle is None:
                return
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
        # Async iterations end and wait_for() fails: nothing will come.
        for waiter in list(self._waiting):
            waiter.dispatcher_closed()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._handle is None

    def __enter__(self) -> "Dispatcher":
        """The dispatcher itself: ``with Dispatcher() as d: ...`` closes it on exit."""
        self._handle_or_raise()
        return self

    def __exit__(self, *exc: Any) -> None:
        """Closes the dispatcher (exceptions propagate)."""
        self.close()

    def __del__(self) -> None:
        if self._handle is None:
            return
        if sys.is_finalizing():
            # The interpreter is going: the library's timer thread may have been
            # stopped for good inside a callback, holding the dispatcher, and other
            # threads may still be in its calls. Freeing could wait forever or race
            # them; the process's exit frees everything anyway.
            return
        try:
            self.close()
        except Misuse:
            # The last reference went inside one of its own callbacks (the library
            # refused the free). No Python call of it can be running, its frame would
            # hold a reference: this is the library's timer thread, still using the
            # dispatcher and the callbacks this object keeps. Another thread frees it
            # (uf_dispatcher_free waits for the firing under way), its reference
            # resurrecting this object until then. Not a daemon, which it would
            # inherit: the exit waits for it.
            threading.Thread(target=self._close_quietly, name="uniflow-close", daemon=False).start()
        except BaseException:  # pragma: no cover - finalizers must not raise
            pass

    def _close_quietly(self) -> None:
        try:
            self.close()
        except BaseException:  # pragma: no cover - finalizers must not raise
            pass

    def __repr__(self) -> str:
        if self._handle is None:
            return f"<uniflow.{type(self).__name__} closed>"
        return f"<uniflow.{type(self).__name__} open at {self._handle.value:#x}>"

    # -- results ---------------------------------------------------------------------------

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

    def _text_result(self, fn: Callable[..., int], *args: Any) -> Optional[str]:
        """Calls a C function whose last argument is ``char **out`` and returns the text."""
        out = c_void_p()
        rc = fn(self._handle_or_raise(), *args, byref(out))
        if rc < 0:
            self._finish(rc)
        return _take_string(self._lib, out)

    # -- definitions -----------------------------------------------------------------------

    def register(self, definitions: DefinitionsLike) -> Status:
        """Registers feature definitions, all or nothing (``docs/definitions.md``).

        ``definitions`` is a path (``str`` or path-like), JSON text (a ``str`` that
        starts with ``{`` or ``[``), one definition (a dict), a list of them, or
        ``{"features": [...]}``.
        """
        handle = self._handle_or_raise()
        lib = self._lib
        if isinstance(definitions, (str, bytes)):
            # Bytes go to the library as they are: text that is not UTF-8 is its UF_EJSON.
            # JSON text is UTF-8 (a lone surrogate makes it invalid, which the library
            # says); a path is in the file system's encoding.
            raw = definitions if isinstance(definitions, bytes) else definitions.encode("utf-8", "surrogateescape")
            if raw.lstrip().startswith((b"{", b"[")):
                rc = lib.uf_register(handle, _c_text(raw, "definitions"))
            else:
                rc = lib.uf_register_file(handle, _c_text(os.fsencode(definitions), "path"))
        elif isinstance(definitions, os.PathLike):
            rc = lib.uf_register_file(handle, _c_text(os.fsencode(definitions), "path"))
        else:
            rc = lib.uf_register(handle, _json_text(definitions, "definitions"))
        return self._finish(rc)

    # -- actions ---------------------------------------------------------------------------

    def initialize(self, feature: str, into: str, payload: Optional[Union[Payload, str]] = None,
                   via: Optional[Via] = None, scope: Optional[str] = None,
                   context: Optional[str] = None, id: Optional[str] = None,
                   key: Optional[str] = None) -> Status:
        """Initializes ``feature`` (the instance ``key`` of a keyed feature) into state
        ``into`` (precondition: it is absent).

        Without ``payload`` or ``via`` the state must be an auto state.
        """
        if payload is None and via is None and scope is None and context is None and id is None:
            if key is not None:
                return self._run_prepared(self._prepared_keyed(_INITIALIZE, feature, None, into, False, key))
            try:
                prepared = self._p_init[feature][into]
            except KeyError:
                prepared = self._prepare(_INITIALIZE, feature, None, into, False)
            rc = self._dispatch(*prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(_INITIALIZE, feature, None, into, False, 0, payload, via, scope, context, id, key)

    def actualize(self, feature: str, in_: str, payload: Optional[Union[Payload, str]] = None,
                  via: Optional[Via] = None, scope: Optional[str] = None,
                  context: Optional[str] = None, id: Optional[str] = None,
                  key: Optional[str] = None) -> Status:
        """Replaces the payload of ``feature`` (of instance ``key``), which must be in state ``in_``."""
        if payload is None and via is None and scope is None and context is None and id is None:
            if key is not None:
                return self._run_prepared(self._prepared_keyed(_ACTUALIZE, feature, None, in_, False, key))
            try:
                prepared = self._p_act[feature][in_]
            except KeyError:
                prepared = self._prepare(_ACTUALIZE, feature, None, in_, False)
            rc = self._dispatch(*prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(_ACTUALIZE, feature, None, in_, False, 0, payload, via, scope, context, id, key)

    def transition(self, feature: str, into: str, from_: Optional[str] = None,
                   payload: Optional[Union[Payload, str]] = None, via: Optional[Via] = None,
                   same: bool = False, scope: Optional[str] = None,
                   context: Optional[str] = None, id: Optional[str] = None,
                   key: Optional[str] = None) -> Status:
        """Moves ``feature`` (instance ``key``) into state ``into``.

        With ``from_`` it must be in that state; without it it must be initialized and,
        unless ``same`` is true, not already in ``into``. ``initial``/``transitions`` of
        the definition must allow the pair.
        """
        if payload is None and via is None and scope is None and context is None and id is None:
            if key is not None:
                return self._run_prepared(self._prepared_keyed(_TRANSITION, feature, from_, into, same, key))
            try:
                if same:
                    prepared = self._p_same[feature][into][from_]
                else:
                    prepared = self._p_tr[feature][into][from_]
            except KeyError:
                prepared = self._prepare(_TRANSITION, feature, from_, into, same)
            rc = self._dispatch(*prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(_TRANSITION, feature, from_, into, same, 0, payload, via, scope, context, id, key)

    def deinitialize(self, feature: str, from_: Optional[str] = None, via: Optional[Via] = None,
                     scope: Optional[str] = None, context: Optional[str] = None,
                     id: Optional[str] = None, key: Optional[str] = None) -> Status:
        """Removes ``feature`` (instance ``key``) from the model (from state ``from_`` if given).

        A ``via`` runs as a side effect before the removal (its result is ignored, except
        :data:`uniflow.DECLINE`).
        """
        if via is None and scope is None and context is None and id is None:
            if key is not None:
                return self._run_prepared(self._prepared_keyed(_DEINITIALIZE, feature, from_, None, False, key))
            try:
                prepared = self._p_deinit[feature][from_]
            except KeyError:
                prepared = self._prepare(_DEINITIALIZE, feature, from_, None, False)
            rc = self._dispatch(*prepared)
            if not rc and not self._errors:
                return OK
            return self._settle(rc, prepared)
        return self._dispatch_full(_DEINITIALIZE, feature, from_, None, False, 0, None, via, scope, context, id, key)

    def trigger(self, feature: str, in_: Optional[str] = None, initialized: Optional[bool] = None,
                via: Optional[Via] = None, submit: Optional[Iterable[ActionLike]] = None,
                scope: Optional[str] = None, context: Optional[str] = None,
                id: Optional[str] = None, key: Optional[str] = None) -> Status:
        """Runs ``via`` (a side effect; its result is ignored except
        :data:`uniflow.DECLINE`) and queues ``submit`` if the precondition holds: the
        feature is in ``in_``, or initialized (``initialized`` true or neither given), or
        absent (``initialized=False``). A trigger applies no mutation.
        """
        # Any false value means "absent", on both paths below.
        uninitialized = 1 if initialized is not None and not initialized else 0
        if submit is None and (in_ is None or initialized is None):
            return self._dispatch_full(_TRIGGER, feature, in_, None, False, uninitialized, None, via,
                                       scope, context, id, key)
        # uf_action has no field for a trigger's "submit" list (nor for "in" together with
        # "initialized", which the library refuses): go through JSON.
        action: Dict[str, Any] = {"kind": "trigger", "feature": feature}
        if in_ is not None:
            action["in"] = in_
        if initialized is not None:
            action["initialized"] = bool(initialized)
        for name, value in (("scope", scope), ("context", context), ("id", id), ("key", key)):
            if value is not None:
                action[name] = value
        if submit is not None:
            if isinstance(submit, (str, bytes, bytearray, Mapping)):
                raise TypeError(f"submit takes a list of actions, got {type(submit).__name__}")
            action["submit"] = [_json_item(a, f"submit[{i}]") if isinstance(a, (str, bytes)) else dict(a)
                                for i, a in enumerate(submit)]
        return self.submit(action, via=via)

    def send(self, feature: str, event: str, payload: Optional[Union[Payload, str]] = None,
             key: Optional[str] = None, scope: Optional[str] = None, context: Optional[str] = None,
             id: Optional[str] = None) -> Status:
        """Sends ``event`` to ``feature`` (instance ``key``): the definition's ``on``
        chooses the next state (``docs/events.md``). ``payload`` is the event's payload
        (any object). No target for the event in the current state: ``Rejected``.
        """
        if payload is None and scope is None and context is None and id is None:
            return self._run_prepared(self._prepared_keyed(_SEND, feature, None, None, False, key, event))
        return self._dispatch_full(_SEND, feature, None, None, False, 0, payload, None, scope, context, id,
                                   key, event)

    def submit(self, action: ActionLike, via: Optional[Via] = None) -> Status:
        """Submits one action given as a dict, as JSON text, or as the path of a file
        that holds it (``docs/actions.md``).

        With ``via``, the action must carry no ``"payload"`` (``InvalidArgument``).
        """
        handle = self._handle
        text = _document_text(action, "action")
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
        return self._finish(self._lib.uf_submit_via(handle, text, _callbacks.VIA, token, _callbacks.RELEASE))

    def batch(self, actions: Union[Sequence[ActionLike], str, bytes, "os.PathLike[str]"]) -> Status:
        """Applies a list of actions (dicts or JSON text, payloads in the JSON only: no
        ``via``) in order, all or nothing (``uf_submit_batch``). The list may also be
        JSON text, or the path of a file that holds it.

        The first that fails rolls the model back and raises; its message names its index
        (``"batch[2]: ..."``), and nobody is notified. On success the bindings and
        subscribers then see each mutation in order. :class:`uniflow.Misuse` inside a
        callback.
        """
        fn = require(self._lib, "uf_submit_batch")
        if isinstance(actions, Mapping):
            raise TypeError("batch takes a list of actions (or JSON text of one), got a mapping")
        if isinstance(actions, (str, bytes, os.PathLike)):
            text = _document_text(actions, "actions")
        else:
            text = _json_text([_json_item(a, f"batch[{i}]") for i, a in enumerate(actions)], "actions")
        return self._finish(fn(self._handle, text))

    def instance(self, feature: str, key: str, into: Optional[str] = None,
                 payload: Optional[Payload] = None) -> Instance:
        """One instance of a keyed feature as a context manager: ``with
        d.instance("Download", "a_pdf", into="Starting") as dl:`` initializes it on
        entry (when ``into`` is given) and deinitializes it on exit if it still lives;
        ``dl.transition(...)``, ``dl.get()``, ``dl.send(...)`` act on it."""
        return Instance(self, feature, key, into, payload)

    def logic_apply(self, rule: Any, data: Any = None) -> Any:
        """:func:`uniflow.logic_apply` (JsonLogic with the library's evaluator)."""
        self._handle_or_raise()
        return logic_apply(rule, data)

    def inspect(self, port: int = 0, host: str = "127.0.0.1", allow_submit: bool = False) -> "Inspector":
        """Serves this dispatcher's inspector (``docs/inspector.md``) from a thread: the
        live model, mutation log, graph, timers and time travel in a browser. Returns a
        :class:`uniflow.inspect.Inspector`: ``.url`` (with its token) and ``.close()``.
        Listens on ``host`` (loopback by default) and ``port`` (0: any free one); with
        ``allow_submit`` the page may submit actions to this dispatcher. Needs aiohttp
        (``pip install 'uniflow[inspect]'``)."""
        self._handle_or_raise()
        from .inspect import Inspector

        return Inspector(self, port=port, host=host, allow_submit=allow_submit)

    def scenario(self, text: str) -> Scenario:
        """Starts an observer binding evaluated in Python:
        ``d.scenario("...").when(filter).given(map=f).given(if_=p).then(do=g)``."""
        return Scenario(self, text)

