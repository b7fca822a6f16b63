"""The action methods' hot path: prepared ``uf_action`` structs, cached and reused.

Every ctypes call costs about as much as a whole pure-Python store, so an action that
needs nothing but names (no payload, no via, no diagnostics) is dispatched from a
``uf_action`` prepared once per (kind, names) and kept, passed as a ready-made
``byref()`` argument to ``uf_dispatch_try`` called with the GIL held (see
``Dispatcher.__init__``). Everything else builds a fresh struct (:meth:`_dispatch_full`).

What is kept is the call's whole argument tuple, ``(handle, action)``, called as
``dispatch(*prepared)``: a ctypes function is called through a tuple of its arguments
either way, and one made beforehand saves building it (and the attribute load of the
handle) on every call: 3-5% of a transition from Python. The
handle in it is the one of the moment it was made: ``close()`` empties the caches,
and one made after closing holds None, which the library answers with UF_EINVAL.
"""

from __future__ import annotations

from ctypes import byref
from typing import Any, Dict, Optional, Tuple

from . import _callbacks
from ._callbacks import RELEASE, VIA
from ._encoding import name, payload_bytes
from ._library import UF_ACTION_SIZE, UfAction
from .errors import Status
from .values import ActionKind

__all__ = ["PreparedActions"]

_INITIALIZE, _ACTUALIZE, _TRANSITION, _DEINITIALIZE, _SEND = (
    int(ActionKind.INITIALIZE), int(ActionKind.ACTUALIZE), int(ActionKind.TRANSITION),
    int(ActionKind.DEINITIALIZE), int(ActionKind.SEND))
#: ``uf_dispatch_try``'s answer when another thread is processing: nothing was done.
BUSY = int(Status.EBUSY)
# Prepared actions are cheap to rebuild; the bound only matters for programs that
# generate names (or keys), which would otherwise grow the caches without end.
_PREPARED_LIMIT = 4096


class PreparedActions:
    """The caches of prepared actions of a Dispatcher (a mixin: the hot path reads
    them as instance attributes, the cheapest lookup there is)."""

    _dispatch: Any
    _dispatch_wait: Any
    _handle_arg: Any
    _errors: Any

    def _finish(self, rc: int) -> Status:  # pragma: no cover - the Dispatcher's
        raise NotImplementedError

    def _settle(self, rc: int, prepared: Any) -> Status:
        """The end of a prepared action that did not simply succeed: wait (GIL
        released) if the dispatcher was busy on another thread, then :meth:`_finish`."""
        if rc == BUSY:
            rc = self._dispatch_wait(*prepared)
        return self._finish(rc)

    def _prepare(self, kind: int, feature: str, from_: Optional[str], into: Optional[str],
                 same: Any, key: Optional[str] = None, event: Optional[str] = None) -> Any:
        """The arguments of a dispatch of a payload-free, via-free action (the handle
        and a ``uf_action``), cached for reuse.

        Without a key, cached in nested dicts keyed by the method's own arguments
        (feature, then state names), which are cheaper to look up than one tuple key;
        with a key or an event, under one tuple. The action is passed as a ``byref()`` of
        the struct, which keeps the struct alive, as the struct keeps the bytes of its
        names (ctypes' ``_objects``). The struct is never written again once cached, so
        threads may share it, and ``uf_dispatch`` copies what it needs before it returns.
        """
        action = UfAction(UF_ACTION_SIZE, kind, name(feature, "feature"), name(from_, "from_"),
                          name(into, "state"), None, 1 if same else 0)
        action.key = name(key, "key")
        action.event = name(event, "event")
        prepared = (self._handle_arg, byref(action))
        if self._prepared_count >= _PREPARED_LIMIT:
            self._clear_prepared()
        self._prepared_count += 1
        if key is not None or event is not None:
            self._p_keyed[(kind, feature, key, from_, into, bool(same), event)] = prepared
        elif kind == _INITIALIZE:
            self._p_init.setdefault(feature, {})[into] = prepared
        elif kind == _ACTUALIZE:
            self._p_act.setdefault(feature, {})[into] = prepared
        elif kind == _TRANSITION:
            root = self._p_same if same else self._p_tr
            root.setdefault(feature, {}).setdefault(into, {})[from_] = prepared
        else:
            self._p_deinit.setdefault(feature, {})[from_] = prepared
        return prepared

    def _prepared_keyed(self, kind: int, feature: str, from_: Optional[str], into: Optional[str],
                        same: Any, key: Optional[str], event: Optional[str] = None) -> Any:
        """The cached prepared action with a key or an event, made when missing."""
        prepared = self._p_keyed.get((kind, feature, key, from_, into, bool(same), event))
        if prepared is None:
            prepared = self._prepare(kind, feature, from_, into, same, key, event)
        return prepared

    def _run_prepared(self, prepared: Any) -> Status:
        rc = self._dispatch(*prepared)
        if not rc and not self._errors:
            return Status.OK
        return self._settle(rc, prepared)

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
        #: (kind, feature, key, from, into, same, event) -> prepared action of an
        #: instance, or a send
        self._p_keyed: Dict[Tuple[Any, ...], Any] = {}

    def _dispatch_full(self, kind: int, feature: str, from_: Optional[str], into: Optional[str],
                       same: Any, uninitialized: int, payload: Any, via: Any,
                       scope: Optional[str], context: Optional[str], id: Optional[str],
                       key: Optional[str] = None, event: Optional[str] = None) -> Status:
        """The general path: a fresh ``uf_action`` with a payload, a via, or diagnostics."""
        action = UfAction(UF_ACTION_SIZE, kind, name(feature, "feature"), name(from_, "from_"),
                          name(into, "state"), None if payload is None else payload_bytes(payload),
                          1 if same else 0, uninitialized, name(scope, "scope"), name(context, "context"),
                          name(id, "id"))
        action.key = name(key, "key")
        action.event = name(event, "event")
        if via is not None:
            token = _callbacks.register_via(self._errors, via, kind in (_INITIALIZE, _ACTUALIZE, _TRANSITION))
            action.via = VIA
            action.via_payload = token
            action.via_payload_free = RELEASE
        return self._finish(self._dispatch_wait(self._handle_arg, byref(action)))
