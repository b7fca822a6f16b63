"""The ctypes trampolines C calls, and how their Python objects are kept alive.

Rules (CPython's ctypes documentation: a callback object collected while C can still
call it crashes the process):

* Every callback object C may call is kept in its dispatcher's ``_keep`` dict under a
  *token*, a number passed to C as the callback's ``payload``. C calls
  ``payload_free(token)`` (:data:`RELEASE`, one module-level function) exactly once when
  it is done with the callback; only then is the entry dropped.
* ``_owners`` maps a token to a *weak* reference to its dispatcher, so a subscriber that
  refers to its own dispatcher forms an ordinary cycle that the garbage collector can
  free (the dispatcher's ``__del__`` then frees the C side).
* Via callbacks are per action: one module-level trampoline (:data:`VIA`) looks the
  Python callable up by token in ``_vias``.

No exception ever crosses C (ctypes would print and ignore it): each trampoline
catches everything, stores the exception in its dispatcher's ``errors`` dict under the
thread's id, and tells C the callback failed. The outermost action method on that
thread re-raises it (see :func:`take_error`). A second exception on the same thread
before the first was re-raised goes to ``sys.unraisablehook``, and so does one raised
on the library's timer thread, where no Python call is there to re-raise it.
"""

from __future__ import annotations

import itertools
import json
import sys
import traceback
import types
import weakref
from ctypes import c_char_p, c_void_p
from threading import get_ident
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import intercept as _intercept
from . import mutation as _mutation
from ._library import (FREE_FN, HANDLER_FN, INTERCEPTOR_FN, REPORT_FN, SUBSCRIBER_FN, VIA_FN, WATCH_FN,
                       holding_the_gil)
from .errors import InvalidArgument
from .intercept import Action, Veto
from .mutation import BindingCall, Mutation
from .values import DECLINE, REJECT, STOP

Errors = Dict[int, BaseException]

_tokens = itertools.count(1)
#: token -> weak reference to the Dispatcher whose ``_keep`` holds the token's objects.
_owners: Dict[int, "weakref.ref[Any]"] = {}
#: token -> (errors, via callable, whether its result becomes the payload)
_vias: Dict[int, Tuple[Errors, Callable[[Any], Any], bool]] = {}

_payload_json: Any = None  # uf_context_payload_json
_become: Any = None  # uf_context_become
_watch_value: Any = None  # uf_watch_value_json
_set_reason: Any = None  # uf_intercepted_set_reason


def bind(lib: Any) -> None:
    """Binds the C functions the trampolines call (idempotent)."""
    global _payload_json, _become, _watch_value, _set_reason
    _payload_json = lib.uf_context_payload_json
    _become = lib.uf_context_become
    # Called once per watch delivery, from inside a callback: keeping the GIL saves a
    # release and re-take around a call that only copies the value's text out.
    _watch_value = holding_the_gil("uf_watch_value_json")
    if _watch_value is not None:
        _watch_value.restype, _watch_value.argtypes = c_char_p, [c_void_p]
    _set_reason = getattr(lib, "uf_intercepted_set_reason", None)
    _mutation._bind(lib)
    _intercept._bind(lib)


def new_token() -> int:
    """A fresh token (never 0: NULL is not a token)."""
    return next(_tokens)


def own(token: int, dispatcher_ref: "weakref.ref[Any]") -> None:
    """Records that ``token``'s objects live in the dispatcher's ``_keep``."""
    _owners[token] = dispatcher_ref


# -- errors ------------------------------------------------------------------------------


def _unraisable(exc: BaseException, where: str, why: str) -> None:
    hook = getattr(sys, "unraisablehook", None)
    if hook is None:  # pragma: no cover
        return
    message = f"Exception ignored in uniflow {where} ({why})"
    try:
        hook(types.SimpleNamespace(exc_type=type(exc), exc_value=exc, exc_traceback=exc.__traceback__,
                                   err_msg=message, object=None))
    except BaseException:
        # The interpreter's own hook takes only its own argument type, which
        # Python cannot make; a hook that fails must not lose the exception
        # either (nor let anything cross C): printed as the default hook prints,
        # and, as it does, not at all without a stderr.
        if sys.stderr is None:
            return
        try:
            print(f"{message}:", file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        except BaseException:  # pragma: no cover - stderr gone
            pass


def store_error(errors: Errors, exc: BaseException, where: str) -> None:
    """Keeps ``exc`` to be re-raised by the outermost call on this thread.

    On a thread that no Python code called into (the library's timer thread), no
    call would ever re-raise it: it goes to ``sys.unraisablehook`` at once.
    """
    if _no_caller_takes(errors):
        _unraisable(exc, where, "raised on the library's timer thread, where no call can re-raise it")
        return
    ident = get_ident()
    if ident in errors:
        _unraisable(exc, where, "an earlier one is pending")
    else:
        errors[ident] = exc


def _no_caller_takes(errors: Errors) -> bool:
    """Whether no Python call will re-raise an exception of this dispatcher's callback.

    The exception is left for the outermost of the dispatcher's callbacks on this
    stack (see :func:`take_error`), so it is taken by the Python call that led to that
    one, if any: when C started it (the library's timer thread), nothing will. A
    callback of another dispatcher in between does not matter: the call of this
    dispatcher made inside it takes the exception."""
    frame: Optional[types.FrameType] = sys._getframe(1)
    outermost: Optional[types.FrameType] = None
    while frame is not None:
        if frame.f_code in _TRAMPOLINE_CODES and frame.f_locals.get("errors") is errors:
            outermost = frame
        frame = frame.f_back
    return outermost is not None and outermost.f_back is None


def take_error(errors: Errors) -> Optional[BaseException]:
    """The exception pending for this thread, removed, if this call is the outermost one.

    A call made inside one of the same dispatcher's callbacks (found by walking the
    Python stack for a trampoline frame whose ``errors`` is this dispatcher's) leaves it
    for the outer call: it belongs to the action that is running, not to a queued one.
    Only runs when an error is pending, so the walk costs nothing on the hot path.
    """
    ident = get_ident()
    if ident not in errors:
        return None
    frame: Optional[types.FrameType] = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _TRAMPOLINE_CODES and frame.f_locals.get("errors") is errors:
            return None
        frame = frame.f_back
    return errors.pop(ident, None)


def in_callback_of(errors: Errors) -> bool:
    """Whether the current thread runs inside one of the dispatcher's callbacks."""
    frame: Optional[types.FrameType] = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _TRAMPOLINE_CODES and frame.f_locals.get("errors") is errors:
            return True
        frame = frame.f_back
    return False


# -- payload_free ------------------------------------------------------------------------


def _release(token: Optional[int]) -> None:
    try:
        if token is None:
            return
        _vias.pop(token, None)
        ref = _owners.pop(token, None)
        if ref is not None:
            owner = ref()
            if owner is not None:
                owner._keep.pop(token, None)
    except BaseException:  # pragma: no cover - nothing above raises; never cross C
        pass


#: The one ``payload_free`` of every callback the binding registers.
RELEASE = FREE_FN(_release)


# -- via ---------------------------------------------------------------------------------


def encode_payload(value: Any) -> bytes:
    """A payload (dict, JSON text or bytes) as the bytes C expects: JSON text cut by a
    NUL, or a value ``json.dumps`` cannot write, is :class:`InvalidArgument`."""
    if isinstance(value, str):
        raw = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    else:
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as error:
            raise InvalidArgument(f"payload is not JSON-serializable: {error}") from error
    if b"\0" in raw:
        raise InvalidArgument("payload contains a NUL character")
    return raw


def _via(ctx: int, token: Optional[int]) -> int:
    try:
        entry = _vias.get(token)  # type: ignore[arg-type]
        if entry is None:
            return -1
        errors, fn, sets_payload = entry
        try:
            raw = _payload_json(ctx)
            result = fn(None if raw is None else json.loads(raw))
            if result is DECLINE:
                return 1
            if sets_payload and result is not None:
                # A failing become is recorded by the core: the action then fails with
                # UF_ESCHEMA and the library's message names the field.
                _become(ctx, encode_payload(result))
            return 0
        except BaseException as exc:
            store_error(errors, exc, "via callback")
            return -1
    except BaseException:  # pragma: no cover - never cross C
        return -1


#: The one via trampoline; its payload is a token of ``_vias``.
VIA = VIA_FN(_via)


def register_via(errors: Errors, fn: Callable[[Any], Any], sets_payload: bool) -> int:
    """Keeps a via callable until C releases it; returns its token."""
    if not callable(fn):
        raise TypeError(f"via must be callable, got {type(fn).__name__}")
    token = next(_tokens)
    _vias[token] = (errors, fn, sets_payload)
    return token


# -- subscribers, reporters, handlers ----------------------------------------------------


def _subscriber_function(errors: Errors, fn: Callable[[Mutation], Any], unescaped: int,
                         new_mutation: Callable[[], Mutation] = Mutation) -> Callable[[int, Optional[int]], bool]:
    """The Python side of a C subscriber (see :func:`make_subscriber`).

    One Mutation object is lent to ``fn`` and reused from call to call while ``fn``
    neither keeps it nor reads it: C never runs the same subscription re-entrantly
    (submits inside callbacks are queued). After ``fn`` returns, one refcount check
    against ``unescaped`` (the count of a Mutation referenced only by this frame and its
    closure, measured at import by :func:`_calibrate`) decides whether anything happened
    to it: a read pins the object to itself (``Mutation._pin``), so a higher count
    means it was read, kept, or both. Only then does the slow path look closer: a kept
    Mutation is snapshotted (one call into C) and replaced; a Mutation that was only
    read forgets what it read and is lent again.
    """
    getrefcount = sys.getrefcount
    spare = new_mutation()

    # The hot path of every notification: keep it to the few bytecodes below (a try
    # block costs nothing in CPython 3.11+ until it catches).
    def subscriber(ptr: int, _payload: Optional[int]) -> bool:
        nonlocal spare
        try:
            mutation = spare
            mutation._ptr = ptr
            try:
                result = fn(mutation)
            except BaseException as exc:
                result = None
                store_error(errors, exc, "subscriber")
            if getrefcount(mutation) > unescaped:
                if mutation._pin is not None:
                    mutation._pin = None
                    if getrefcount(mutation) <= unescaped:
                        # Read, not kept: nobody can read it again, so its _ptr may stay
                        # stale until the next call overwrites it; only what was read
                        # must be forgotten.
                        mutation._cache = None
                        return result is STOP
                mutation._detach()
                spare = new_mutation()
            # A bool is the int C expects (UF_STOP is 1, UF_KEEP 0).
            return result is STOP
        except BaseException as exc:  # pragma: no cover - never cross C
            store_error(errors, exc, "subscriber")
            return False

    return subscriber


def _calibrate() -> int:
    """The refcount of a lent Mutation that nobody kept, found by trying the real
    trampoline (so CPython versions that count differently calibrate themselves)."""
    detached: List[bool] = []

    class Probe(Mutation):
        __slots__ = ()

        def _detach(self) -> None:
            detached.append(True)
            self._ptr = None

    for unescaped in range(1, 64):
        detached.clear()
        _subscriber_function({}, lambda m: None, unescaped, Probe)(1, None)
        if not detached:
            kept: List[Mutation] = []
            _subscriber_function({}, kept.append, unescaped, Probe)(1, None)
            if detached:  # and a kept one is still seen as escaped
                detached.clear()  # and one that was only read (pinned) is not
                _subscriber_function({}, lambda m: setattr(m, "_pin", m), unescaped, Probe)(1, None)
                if detached:  # pragma: no cover
                    break
                return unescaped
    raise RuntimeError("uniflow: cannot calibrate the escape check")  # pragma: no cover


_UNESCAPED = _calibrate()


def make_subscriber(errors: Errors, fn: Callable[[Mutation], Any]) -> Any:
    """The C subscriber for ``fn``: lends it a lazy Mutation, calls it, maps STOP."""
    return SUBSCRIBER_FN(_subscriber_function(errors, fn, _UNESCAPED))


def make_reporter(errors: Errors, fn: Callable[[Dict[str, Any]], Any]) -> Any:
    """The C reporter for ``fn``, which receives each report as a dict."""

    def reporter(text: bytes, _payload: Optional[int]) -> None:
        try:
            fn(json.loads(text))
        except BaseException as exc:
            store_error(errors, exc, "reporter")

    return REPORT_FN(reporter)


def make_handler(errors: Errors, fn: Callable[[BindingCall], Any]) -> Any:
    """The C handler for ``fn`` (see :class:`uniflow.BindingCall` for the return values)."""
    getrefcount = sys.getrefcount

    def handler(ptr: int, _payload: Optional[int]) -> int:
        try:
            call = BindingCall(ptr)
            before = getrefcount(call)
            try:
                result = fn(call)
                if result is None:
                    status = 0
                elif isinstance(result, int):  # bool included
                    # A failure keeps its value (reports show it), within C's int.
                    status = 1 if result > 0 else (0 if result == 0 else max(result, -2**31))
                else:
                    status = 1 if result else 0
            except BaseException as exc:
                status = -1
                store_error(errors, exc, "handler")
            if getrefcount(call) > before:
                call._detach()
            else:
                call._ptr = None
            return status
        except BaseException as exc:  # pragma: no cover - never cross C
            store_error(errors, exc, "handler")
            return -1

    return HANDLER_FN(handler)


#: JSON text -> its value, for immutable values only (str, int, float, bool, None): a
#: watched value mostly repeats (states, flags, small numbers), and json.loads of even
#: b'"A"' costs about as much as the rest of a watch call. A dict or list is never kept: each
#: call must hand ``fn`` a fresh object it may mutate. Emptied when full, so a value
#: that never repeats (a counter) keeps it bounded and costs one json.loads as before.
_decoded: Dict[bytes, Any] = {}
_DECODED_MAX = 1024
_DECODED_TEXT_MAX = 128  # bytes: a long text seldom repeats, and memory stays small
_IMMUTABLE = (str, int, float, bool, type(None))


def decode_value(text: bytes) -> Any:
    """``json.loads(text)``, remembered in ``_decoded`` when the value is immutable."""
    value = json.loads(text)
    if type(value) in _IMMUTABLE and len(text) <= _DECODED_TEXT_MAX:
        if len(_decoded) >= _DECODED_MAX:
            _decoded.clear()
        _decoded[text] = value
    return value


def make_watch(errors: Errors, fn: Callable[[Any], Any]) -> Any:
    """The C watch for ``fn``, which receives each new value decoded from JSON."""
    # Runs once per change: what it needs is bound here (bind() ran before any watch is
    # made), and a repeated value costs a dict lookup instead of json.loads.
    value_json = _watch_value
    remembered = _decoded.get
    missing = object()

    def watch(ptr: int, _payload: Optional[int]) -> bool:
        try:
            try:
                text = value_json(ptr)
                # One get(), atomic even while another thread empties the cache; not
                # try/except KeyError, whose raise would slow every dict or list value.
                value = remembered(text, missing)
                result = fn(decode_value(text) if value is missing else value)
            except BaseException as exc:
                result = None
                store_error(errors, exc, "watch")
            return result is STOP
        except BaseException as exc:  # pragma: no cover - never cross C
            store_error(errors, exc, "watch")
            return False

    return WATCH_FN(watch)


def make_interceptor(errors: Errors, fn: Callable[[Action], Any]) -> Any:
    """The C interceptor for ``fn``: ``None`` goes on, :data:`REJECT` or :class:`Veto`
    vetoes, any other exception fails the action."""
    getrefcount = sys.getrefcount

    def interceptor(ptr: int, _payload: Optional[int]) -> int:
        try:
            action = Action(ptr)
            before = getrefcount(action)
            try:
                status = 1 if fn(action) is REJECT else 0
            except Veto as veto:
                _set_reason(ptr, str(veto.reason).encode("utf-8"))
                status = 1
            except BaseException as exc:
                status = -1
                store_error(errors, exc, "interceptor")
            if getrefcount(action) > before:
                action._detach()
            else:
                action._ptr = None
            return status
        except BaseException as exc:  # pragma: no cover - never cross C
            store_error(errors, exc, "interceptor")
            return -1

    return INTERCEPTOR_FN(interceptor)


def _code_of(factory: Callable[..., Any]) -> types.CodeType:
    for const in factory.__code__.co_consts:
        if isinstance(const, types.CodeType):
            return const
    raise AssertionError(factory)  # pragma: no cover


#: Frames of these functions are "inside a callback" (see take_error).
_TRAMPOLINE_CODES = frozenset(
    {_via.__code__, _code_of(_subscriber_function), _code_of(make_reporter), _code_of(make_handler),
     _code_of(make_watch), _code_of(make_interceptor)}
)
