"""Reading the model and putting it back: state, snapshots, restore, journal replay,
the definitions and their graph: the methods :class:`uniflow.Dispatcher` inherits
from :class:`ModelAccess`."""

from __future__ import annotations

import json
import os
from ctypes import byref, c_int, c_void_p
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Union

from ._encoding import c_text as _c_text
from ._encoding import document_text as _document_text
from ._encoding import name as _name
from ._library import require
from .errors import InvalidArgument, Status
from .values import State

__all__ = ["ModelAccess"]


class ModelAccess:
    """The Dispatcher's methods that read, save and restore the model (a mixin of
    :class:`uniflow.Dispatcher`, which defines what is declared here)."""

    if TYPE_CHECKING:  # pragma: no cover
        _lib: Any
        _handle: Optional[c_void_p]
        _keyed: Dict[str, bool]

        def _finish(self, rc: int) -> Status: ...

        def _text_result(self, fn: Callable[..., int], *args: Any) -> Optional[str]: ...

        def _handle_or_raise(self) -> c_void_p: ...

    # -- definitions -----------------------------------------------------------------------

    @property
    def definitions(self) -> Dict[str, Any]:
        """``{"features": [...]}``: every definition as registered, in order."""
        text = self._text_result(self._lib.uf_definitions_get)
        return json.loads(text) if text else {"features": []}

    # -- state -----------------------------------------------------------------------------

    def state_active(self, feature: str, path: str, key: Optional[str] = None) -> bool:
        """Whether the state ``path`` (``"Active.Playing"``, or a bare name unique in the
        feature) is active in ``feature`` (its instance ``key``): on a statechart, a state
        at any level; on a flat feature, the state it is in. ``False`` when the feature
        (instance) is absent. :class:`uniflow.NotFound` for an unknown feature or state;
        ``SchemaError`` for a bare name several states carry."""
        out = c_int()
        rc = require(self._lib, "uf_state_active")(
            self._handle_or_raise(), _name(feature, "feature"),
            None if key is None else _name(key, "key"), _name(path, "path"), byref(out))
        if rc < 0:
            self._finish(rc)
        return out.value == 1

    def get(self, feature: str, key: Optional[str] = None) -> Optional[State]:
        """The state of ``feature`` (of its instance ``key``), or ``None`` when it is not
        initialized (the instance does not live). :class:`uniflow.NotFound` when it is
        not registered. A keyed feature without ``key``: ``InvalidArgument`` (read
        :attr:`state` for all its instances); ``key`` on a single feature: ``SchemaError``."""
        if key is not None:
            text = self._text_result(require(self._lib, "uf_instance_get"), _name(feature, "feature"), _name(key, "key"))
        else:
            text = self._text_result(self._lib.uf_feature_get, _name(feature, "feature"))
        value = json.loads(text) if text is not None else None
        if key is None and (value is None or not isinstance(value.get("state"), str)) \
                and self._is_keyed(feature):
            raise InvalidArgument(f"{feature} is keyed: name an instance with key=")
        if value is None:
            return None
        return State(value["state"], value["payload"])

    def _is_keyed(self, feature: str) -> bool:
        # A registered feature stays as it was registered: asked once, not on every
        # get() of one that is absent (reading the definitions costs their size).
        keyed = self._keyed.get(feature)
        if keyed is None:
            keyed = any(f.get("feature") == feature and f.get("instances") == "keyed"
                        for f in self.definitions.get("features", []))
            if len(self._keyed) < 4096:
                self._keyed[feature] = keyed
        return keyed

    @property
    def state(self) -> Dict[str, Any]:
        """The GlobalModel as JSON data: ``{"Feature": {"state": "S", "payload": {...}}}``
        (a keyed feature: ``{"Feature": {key: {"state": ..., "payload": ...}, ...}}``),
        initialized features only, in registration order."""
        text = self._text_result(self._lib.uf_state_get)
        return json.loads(text) if text else {}

    def states(self) -> Dict[str, Any]:
        """The GlobalModel as ``{feature: State}`` (a keyed feature: ``{key: State}``)."""
        result: Dict[str, Any] = {}
        for name, value in self.state.items():
            if isinstance(value.get("state"), str):
                result[name] = State(value["state"], value["payload"])
            else:
                result[name] = {key: State(v["state"], v["payload"]) for key, v in value.items()}
        return result

    def snapshot(self, timers: bool = False) -> Dict[str, Any]:
        """The model now, for :meth:`restore`. With ``timers=True``, the durable
        snapshot: ``{"clock", "model", "timers": [...]}`` (armed timers included)."""
        if timers:
            text = self._text_result(require(self._lib, "uf_snapshot_get"))
            return json.loads(text) if text else {}
        return self.state

    def restore(self, snapshot: Union[Mapping[str, Any], str, bytes, "os.PathLike[str]"],
                timers: bool = False) -> Status:
        """Replaces the model with a :meth:`snapshot` (a dict, JSON text, or the path of
        a file that holds it) taken on a dispatcher with the same definitions (validated
        first: invalid input changes nothing). No mutations
        are sent; restored features' model bindings become active and their state
        timers armed afresh. With ``timers=True`` the snapshot is a durable one, and its
        timers are armed again by their ``on_restore``. :class:`uniflow.Misuse` inside a
        callback."""
        name = "uf_snapshot_restore" if timers else "uf_state_restore"
        return self._finish(require(self._lib, name)(self._handle, _document_text(snapshot, "snapshot")))

    def replay(self, journal: Union[str, "os.PathLike[str]"]) -> Status:
        """Installs the mutations (and timers) of a journal written with the same definitions."""
        return self._finish(require(self._lib, "uf_replay_file")(self._handle, _c_text(os.fsencode(journal), "journal")))

    def graph(self, feature: Optional[str] = None) -> str:
        """Graphviz DOT of the registered features (or of one)."""
        return self._text_result(require(self._lib, "uf_graph_dot"), _name(feature, "feature")) or ""
