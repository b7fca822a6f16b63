"""Who hears from the Dispatcher: subscribers, watches, interceptors, the reporter and
model bindings' handlers: the methods :class:`uniflow.Dispatcher` inherits from
:class:`Observers`."""

from __future__ import annotations

import json
import threading
import weakref
from ctypes import byref, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, cast

from . import _callbacks
from ._encoding import json_text as _json_text
from ._encoding import name as _name
from ._library import FREE_FN, REPORT_FN, require
from ._services import Invocation, make_service, make_stop
from ._types import F
from .errors import Status
from .mutation import BindingCall, Mutation
from .subscription import Interceptor, Subscription, Watch

if TYPE_CHECKING:  # pragma: no cover
    from .dispatcher import Dispatcher

__all__ = ["Observers"]


def _selector(select: Any) -> bytes:
    """A watch's selector: a dotted path into the model (``"F.payload.x"`` is
    ``{"var": "model.F.payload.x"}``) or a JsonLogic rule (a dict)."""
    if isinstance(select, str):
        if select.lstrip().startswith("{"):
            return _json_text(select, "select")
        return _json_text({"var": "model." + select}, "select")
    return _json_text(select, "select")


class Observers:
    """The Dispatcher's methods that register callbacks (a mixin of
    :class:`uniflow.Dispatcher`, which defines what is declared here)."""

    if TYPE_CHECKING:  # pragma: no cover
        _lib: Any
        _errors: _callbacks.Errors
        _keep: Dict[int, Any]
        _ref: "weakref.ref[Dispatcher]"

        def _finish(self, rc: int) -> Status: ...

        def _handle_or_raise(self) -> c_void_p: ...

    # -- subscribers, watches, interceptors, reporter, handlers ---------------------------

    def _keep_callback(self, cfunc: Any, fn: Any) -> int:
        token = _callbacks.new_token()
        self._keep[token] = (cfunc, fn)
        _callbacks.own(token, self._ref)
        return token

    def _registered(self, rc: int, token: int, out: c_uint64) -> int:
        if rc < 0:
            self._keep.pop(token, None)  # C already released it; be sure
            self._finish(rc)
        return out.value

    def subscribe(self, fn: Callable[[Mutation], Any], when: Optional[str] = None,
                  deferred: bool = False) -> Subscription:
        """Calls ``fn(mutation)`` for every mutation matched by the filter ``when``
        (``None``: every mutation; e.g. ``"TransitionInto<FileDownloading.Completed>"``,
        ``"AnyMutationOf<Download[a_pdf]>"``).

        ``fn`` returns :data:`uniflow.STOP` to end the subscription (anything else keeps
        it) and may submit (queued), subscribe, cancel (itself included) and read state.
        An exception it raises leaves the mutation applied and is re-raised from the
        outermost action call. The :class:`Mutation` is lazy and stays usable after
        ``fn`` returns. With ``deferred=True`` the mutations wait for
        :meth:`run_pending` (or the event loop, see :meth:`attach`), on its thread.
        """
        if not callable(fn):
            raise TypeError(f"subscriber must be callable, got {type(fn).__name__}")
        handle = self._handle_or_raise()
        # Arguments first: once kept, the callback is released only by the library.
        when_bytes = _name(when, "when")
        subscribe = require(self._lib, "uf_subscribe_deferred") if deferred else self._lib.uf_subscribe
        cfunc = _callbacks.make_subscriber(self._errors, fn)
        token = self._keep_callback(cfunc, fn)
        out = c_uint64()
        rc = subscribe(handle, when_bytes, cfunc, token, _callbacks.RELEASE, byref(out))
        return Subscription(cast("Dispatcher", self), self._registered(rc, token, out), token, when)

    def on(self, when: Optional[str] = None, deferred: bool = False) -> Callable[[F], F]:
        """Decorator form of :meth:`subscribe`; returns the function unchanged, with the
        :class:`Subscription` in its ``subscription`` attribute (when it takes one).

        >>> @d.on("TransitionInto<FileDownloading.Completed>")
        ... def done(m): print("done")
        >>> d.transition("FileDownloading", into="Completed")
        done
        <Status.OK: 0>
        """

        def decorator(fn: F) -> F:
            subscription = self.subscribe(fn, when, deferred=deferred)
            try:
                fn.subscription = subscription  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return fn

        return decorator

    def watch(self, select: Any, fn: Callable[[Any], Any], deferred: bool = False) -> Watch:
        """Calls ``fn(value)`` with the value ``select`` picks from the model, now and
        then whenever it changes (compared as JSON), once per outer call.

        ``select`` is a dotted path (``"FileDownloading.payload.progress"``) or a
        JsonLogic rule over ``{"model": ...}`` (a dict). ``fn`` returns
        :data:`uniflow.STOP` to end the watch. With ``deferred=True`` the values wait for
        :meth:`run_pending` (coalesced to the latest)."""
        if not callable(fn):
            raise TypeError(f"watch function must be callable, got {type(fn).__name__}")
        handle = self._handle_or_raise()
        selector = _selector(select)
        watch = require(self._lib, "uf_watch_deferred" if deferred else "uf_watch")
        cfunc = _callbacks.make_watch(self._errors, fn)
        token = self._keep_callback(cfunc, fn)
        out = c_uint64()
        ident = threading.get_ident()
        pending = ident in self._errors
        rc = watch(handle, selector, cfunc, token, _callbacks.RELEASE, byref(out))
        result = Watch(cast("Dispatcher", self), self._registered(rc, token, out), token, select)
        # The first value was delivered inside uf_watch (unless deferred): if fn raised,
        # no watch is left (no handle would end it), and the exception is this call's,
        # or, inside a callback, the outer call's.
        if not pending and ident in self._errors:
            result.cancel()
        self._finish(Status.OK)
        return result

    def intercept(self, fn: Any = None, feature: Optional[str] = None) -> Any:
        """Calls ``fn(action)`` with each :class:`uniflow.Action` about to be applied
        (of ``feature``, or of every feature): ``None`` lets it through,
        :data:`uniflow.REJECT` or ``raise uniflow.Veto(reason)`` vetoes it, another
        exception fails it. Returns the :class:`Interceptor`.

        Also a decorator: ``@d.intercept("FileDownloading")`` (the feature's name) or
        ``@d.intercept()``. The function stays a function, and gains the
        :class:`Interceptor` as ``.interceptor`` and its ``.cancel()``.
        """
        if fn is None or isinstance(fn, str):
            name = fn if isinstance(fn, str) else feature

            def decorator(function: F) -> F:
                interceptor = self.intercept(function, feature=name)
                try:
                    function.interceptor = interceptor  # type: ignore[attr-defined]
                    function.cancel = interceptor.cancel  # type: ignore[attr-defined]
                except (AttributeError, TypeError):
                    pass
                return function

            return decorator
        if not callable(fn):
            raise TypeError(f"interceptor must be callable, got {type(fn).__name__}")
        handle = self._handle_or_raise()
        feature_bytes = _name(feature, "feature")
        intercept = require(self._lib, "uf_intercept")
        cfunc = _callbacks.make_interceptor(self._errors, fn)
        token = self._keep_callback(cfunc, fn)
        out = c_uint64()
        rc = intercept(handle, feature_bytes, cfunc, token, _callbacks.RELEASE, byref(out))
        return Interceptor(cast("Dispatcher", self), self._registered(rc, token, out), token, feature)

    def set_reporter(self, fn: Optional[Callable[[Dict[str, Any]], Any]]) -> None:
        """Sends every report to ``fn`` as a dict (``docs/processing.md``); ``None``
        goes back to the built-in reporter (which prints according to ``reporting``)."""
        handle = self._handle_or_raise()
        if fn is None:
            rc = self._lib.uf_set_reporter(handle, REPORT_FN(), None, FREE_FN())  # NULLs
        else:
            if not callable(fn):
                raise TypeError(f"reporter must be callable, got {type(fn).__name__}")
            cfunc = _callbacks.make_reporter(self._errors, fn)
            token = self._keep_callback(cfunc, fn)
            rc = self._lib.uf_set_reporter(handle, cfunc, token, _callbacks.RELEASE)
            if rc < 0:
                self._keep.pop(token, None)
        if rc < 0:
            self._finish(rc)

    # -- services ------------------------------------------------------------------------

    def register_service(self, name: str, start: Callable[[Invocation], Any],
                         stop: Optional[Callable[[Invocation], Any]] = None) -> None:
        """Registers the service ``name`` that statechart states ``invoke`` (register it
        before the definitions that name it).

        ``start(inv)`` runs after the action that entered an invoking state, with an
        :class:`uniflow.Invocation`; it reports the result later (or at once) with
        ``inv.done(output)`` or ``inv.error(err)``. A negative int returned, or an
        exception (re-raised from the outermost call), settles it as an error.
        A coroutine returned runs as a task on the event loop the dispatcher is
        attached to (``d.attach()``): its result settles the invocation as done, an
        exception as an error (``{"type": "ValueError", "message": "..."}``); without
        an attached loop it is not run and settles as an error at once.
        ``stop(inv)`` runs when the state is left before the service finished (a
        coroutine's task is cancelled first, and then reports nothing).
        :class:`uniflow.AlreadyExists` for a name taken.
        """
        register = require(self._lib, "uf_register_service")
        if not callable(start) or (stop is not None and not callable(stop)):
            raise TypeError("a service's start and stop must be callable")
        handle = self._handle_or_raise()
        name_bytes = _name(name, "name")

        def keep_error(exc: BaseException) -> None:
            _callbacks.store_error(self._errors, exc, "service")

        c_start = make_service(self._lib, self, keep_error, start)
        c_stop = make_stop(self._lib, self, keep_error, stop)
        token = self._keep_callback((c_start, c_stop), (start, stop))
        rc = register(handle, name_bytes, c_start, c_stop, token, _callbacks.RELEASE)
        if rc < 0:
            self._keep.pop(token, None)
            self._finish(rc)

    def service(self, name: str) -> Callable[[Callable[[Invocation], Any]], Callable[[Invocation], Any]]:
        """``@d.service("fetch")``: :meth:`register_service` as a decorator (no ``stop``)."""
        def decorate(start: Callable[[Invocation], Any]) -> Callable[[Invocation], Any]:
            self.register_service(name, start)
            return start
        return decorate

    def service_done(self, serial: int, output: Any = None) -> Status:
        """Settles the invocation ``serial`` with ``output`` (its instance gets
        ``xstate.done.actor.<id>``). A serial no longer running is no error."""
        text = json.dumps(output).encode()
        return self._finish(require(self._lib, "uf_service_done")(self._handle_or_raise(), serial, text))

    def service_error(self, serial: int, error: Any = None) -> Status:
        """Settles the invocation ``serial`` as failed (``xstate.error.actor.<id>``)."""
        text = json.dumps(error).encode()
        return self._finish(require(self._lib, "uf_service_error")(self._handle_or_raise(), serial, text))

    def register_handler(self, name: str, fn: Callable[[BindingCall], Any]) -> None:
        """Registers ``fn`` as the host handler ``name`` for model bindings' and event
        guards' ``{"call": name}`` (register handlers before the definitions that name them).

        ``fn(call)`` receives a :class:`uniflow.BindingCall`. In a ``given`` clause (or
        as a guard) a true result holds and a false one (``None`` included) does not; in
        ``then`` any result succeeds. An exception fails the binding and is re-raised
        from the outermost call. :class:`uniflow.AlreadyExists` for a name taken.
        """
        register = require(self._lib, "uf_register_handler")
        if not callable(fn):
            raise TypeError(f"handler must be callable, got {type(fn).__name__}")
        handle = self._handle_or_raise()
        name_bytes = _name(name, "name")
        cfunc = _callbacks.make_handler(self._errors, fn)
        token = self._keep_callback(cfunc, fn)
        rc = register(handle, name_bytes, cfunc, token, _callbacks.RELEASE)
        if rc < 0:
            self._keep.pop(token, None)
            self._finish(rc)
