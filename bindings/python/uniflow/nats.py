"""A model shared by several processes through NATS JetStream: :class:`Node`, over
``libuniflow_nats`` (``uniflow_nats.h``; ``docs/scale-out.md``).

>>> import uniflow, uniflow.nats
>>> d = uniflow.Dispatcher(partitions=16, node="a")            # doctest: +SKIP
>>> d.register("examples/definitions/downloads.json")          # doctest: +SKIP
>>> with uniflow.nats.Node(d, url="nats://127.0.0.1:4222", model="downloads") as node:  # doctest: +SKIP
...     node.submit({"kind": "initialize", "feature": "Download", "key": "a_pdf", "into": "Queued"})
...     node.sync()

A node joins the partitioned dispatcher ``d`` to a JetStream server: it publishes
every record ``d`` writes, applies every record the other nodes write (their
mutations reach ``d``'s subscribers with ``m.foreign`` true, on the node's own
thread), holds leases on the partitions it owns, and routes each action to the
partition's owner. All the work is the C library's; this module only converts
arguments and statuses.

Finding the library: ``UNIFLOW_NATS_LIBRARY`` when set (the only path tried), else
``libuniflow_nats.so`` beside the core library the package loaded
(:func:`uniflow.library_path`), else the system's search path. Importing this module
needs nothing; the first :class:`Node` (or :func:`load`) loads the library, and
raises :class:`uniflow.LibraryNotFoundError` naming every path it tried when there
is none (it is built only where CMake found the NATS C client, ``libnats``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_void_p
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _callbacks
from ._encoding import document_text as _document_text
from ._encoding import json_text as _json_text
from ._encoding import take_string as _take_string
from ._library import LibraryNotFoundError, _declare
from ._library import load as _load_core
from ._types import ActionLike
from .dispatcher import Dispatcher
from .errors import InvalidArgument, Misuse, Status, error_for

__all__ = ["Node", "load", "candidate_paths", "library_path"]

_LIBRARY_NAMES = ("libuniflow_nats.so", "libuniflow_nats.so.0")
_HINT = ("libuniflow_nats is built by the CMake build when it finds the NATS C client "
         "(Debian: apt-get install libnats-dev, then scripts/setup); or set UNIFLOW_NATS_LIBRARY to its path.")

_P = c_void_p
# name: (restype, argtypes). Every function of uniflow_nats.h (checked against the
# header by tests/test_nats_prototypes.py).
_PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "uf_nats_node_new": (c_int, [POINTER(c_void_p), _P, c_char_p]),
    "uf_nats_node_start": (c_int, [_P]),
    "uf_nats_submit": (c_int, [_P, c_char_p]),
    "uf_nats_sync": (c_int, [_P, c_int]),
    "uf_nats_node_status": (c_int, [_P, POINTER(c_void_p)]),
    "uf_nats_node_free": (None, [_P]),
    "uf_nats_last_status": (c_int, []),
    "uf_nats_last_error": (c_char_p, []),
}
_REQUIRED = tuple(_PROTOTYPES)

_lock = threading.Lock()
_loaded: Optional[Tuple[ctypes.CDLL, str]] = None
_RESULT = (Status.OK, Status.QUEUED)


def candidate_paths() -> List[str]:
    """The paths :func:`load` tries, in order: ``UNIFLOW_NATS_LIBRARY`` alone when
    set, else the folder of the core library the package loaded (which loads it)."""
    env = os.environ.get("UNIFLOW_NATS_LIBRARY")
    if env:
        return [env]
    core = _load_core()[1]
    folder = os.path.dirname(os.path.abspath(core)) if os.path.dirname(core) else ""
    return [os.path.join(folder, name) for name in _LIBRARY_NAMES] if folder else []


def load() -> Tuple[ctypes.CDLL, str]:
    """Loads ``libuniflow_nats`` once (after the core, whose symbols it uses) and
    returns it with its path; :class:`uniflow.LibraryNotFoundError` lists every path
    tried when none loads."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        # The core first: libuniflow_nats needs libuniflow.so.0, which the loader then
        # finds already loaded (by its SONAME) instead of searching for another copy.
        _load_core()
        attempts: List[Tuple[str, str]] = []
        for path in candidate_paths():
            if not os.path.exists(path):
                attempts.append((path, "no such file"))
                continue
            try:
                lib = ctypes.CDLL(path)
                _declare(lib, _PROTOTYPES, _REQUIRED)
            except OSError as error:
                attempts.append((path, str(error)))
                continue
            _loaded = (lib, path)
            return _loaded
        if not os.environ.get("UNIFLOW_NATS_LIBRARY"):
            found = ctypes.util.find_library("uniflow_nats")
            if found:
                try:
                    lib = ctypes.CDLL(found)
                    _declare(lib, _PROTOTYPES, _REQUIRED)
                    _loaded = (lib, found)
                    return _loaded
                except OSError as error:
                    attempts.append((found, str(error)))
            else:
                attempts.append(("system search path (ctypes.util.find_library('uniflow_nats'))", "not found"))
        raise LibraryNotFoundError(attempts, "libuniflow_nats", _HINT)


def library_path() -> str:
    """The path of the loaded ``libuniflow_nats`` (loading it if needed)."""
    return load()[1]


def _seconds_to_ms(value: float, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} is a number of seconds, got {type(value).__name__}")
    return int(round(value * 1000))


class Node:
    """One node of a model shared through NATS JetStream (``uf_nats_node``).

    ``d`` is a partitioned :class:`uniflow.Dispatcher` (``partitions=N, node="name"``),
    with the same definitions and ``N`` on every node of the model. Keywords, the C
    options of ``uf_nats_node_new`` with times in seconds:

    * ``url``: the server, default ``"nats://127.0.0.1:4222"`` (comma-separated for a
      cluster);
    * ``model``: the shared model's name, required (the stream is ``UF_<model>``);
    * ``owns``: ``"any"`` (claim every partition nobody holds), ``"none"`` (a
      follower), or a list of partition numbers and/or ``"global"``;
    * ``lease``: the lease's time to live, 3.0 s (at least 0.3); renewed every third;
    * ``timeout``: how long a publish, request or read may take before its outcome
      counts as unknown, 2.0 s (at least 0.05);
    * ``max_owned``: at most this many partitions at once (default unlimited);
    * ``snapshot_every``: records of a partition between two snapshots (0: never);
    * ``replicas``: of the stream and bucket this node creates (above 1 needs
      ``nats-server`` 2.10.19 or later).

    A bad option raises :class:`uniflow.InvalidArgument`. The node installs ``d``'s
    record sink (replacing one set with :meth:`~uniflow.Dispatcher.record_sink`) and
    keeps ``d`` alive; closing ``d`` closes the node first. ``with Node(...) as node``
    starts the node (unless started) and closes it on exit.

    Every method may be called from any thread; :meth:`close` must not race with the
    others, nor be called inside one of ``d``'s callbacks.
    """

    _handle: Optional[c_void_p] = None
    _started = False

    def __init__(
        self,
        d: Dispatcher,
        url: Optional[str] = None,
        model: Optional[str] = None,
        owns: Union[str, Sequence[Union[int, str]]] = "any",
        lease: float = 3.0,
        timeout: float = 2.0,
        max_owned: Optional[int] = None,
        snapshot_every: int = 1000,
        replicas: int = 1,
    ) -> None:
        if not isinstance(d, Dispatcher):
            raise TypeError(f"Node needs a uniflow.Dispatcher, got {type(d).__name__}")
        lib, _ = load()
        options: Dict[str, Any] = {
            "owns": owns if isinstance(owns, str) else list(owns),
            "lease_ms": _seconds_to_ms(lease, "lease"),
            "timeout_ms": _seconds_to_ms(timeout, "timeout"),
            "snapshot_every": snapshot_every,
            "replicas": replicas,
        }
        if url is not None:
            options["url"] = url
        if model is not None:
            options["model"] = model
        if max_owned is not None:
            options["max_owned"] = max_owned
        handle = c_void_p()
        rc = lib.uf_nats_node_new(byref(handle), d._handle_or_raise(), _json_text(options, "options"))
        if rc < 0:
            _raise(lib, rc)
        self._lib = lib
        self._d = d
        self._model = model
        self._url = url or "nats://127.0.0.1:4222"
        self._handle = handle
        # The dispatcher closes its nodes before it frees itself: the C node holds a
        # pointer to it.
        d._nats_nodes.add(self)

    # -- lifetime ------------------------------------------------------------------------

    def start(self) -> None:
        """Connects, creates the stream and the lease bucket when missing, catches up
        (each partition's last snapshot, then the records after it), and starts the
        node's threads; the partitions that ``owns`` allows are claimed in the
        background (:meth:`status` lists them once owned).

        :class:`uniflow.Unavailable` when the server cannot be reached or JetStream
        does not answer within ``timeout`` (the node may be started again),
        :class:`uniflow.InvalidArgument` for ``replicas`` above 1 on a server older
        than 2.10.19, :class:`uniflow.Misuse` when already started.
        """
        rc = self._lib.uf_nats_node_start(self._handle_or_raise())
        if rc < 0:
            _raise(self._lib, rc)
        self._started = True

    def close(self) -> None:
        """Stops the node: releases every partition it owns (another node may claim them
        at once, without waiting for the lease to run out), stops its threads and
        disconnects. ``d`` stays open, owning nothing. Idempotent.

        :class:`uniflow.Misuse` inside one of ``d``'s callbacks (the C library must not
        free a node there)."""
        handle = self._handle
        if handle is None:
            return
        if _callbacks.in_callback_of(self._d._errors):
            raise Misuse("Node.close() was called inside one of the dispatcher's callbacks; "
                         "close it after the outer call returns")
        self._handle = None
        self._lib.uf_nats_node_free(handle)
        self._d._nats_nodes.discard(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or the dispatcher was closed)."""
        return self._handle is None

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher this node serves."""
        return self._d

    def __enter__(self) -> "Node":
        """Starts the node unless it was started; ``with`` closes it on exit."""
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if self._handle is None:
            return
        try:
            self.close()
        except BaseException:  # pragma: no cover - finalizers must not raise
            pass

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else ("started" if self._started else "not started")
        return f"<uniflow.nats.Node model={self._model!r} url={self._url!r} {state}>"

    # -- actions and state ------------------------------------------------------------------

    def submit(self, action: ActionLike) -> Status:
        """Runs one action (a dict, JSON text, or the path of a file that holds it) where
        it may run: here when this node owns its partition, else at the owner, by a
        request (which checks the precondition there).

        Returns :data:`uniflow.OK` (or :data:`uniflow.QUEUED` inside a callback of a
        local action) and raises as :meth:`uniflow.Dispatcher.submit` does, with the
        owner's message for a routed action, plus: :class:`uniflow.NotOwner` (no owner
        answered within ``timeout``, or this node's lease is stale),
        :class:`uniflow.Conflict` (the stream refused the record: another got there
        first; the node applies what is new, call again) and
        :class:`uniflow.Unavailable` (the server or the owner did not answer within
        ``timeout``: the outcome is unknown, the action is not sent again).
        """
        text = _document_text(action, "action")
        rc = self._lib.uf_nats_submit(self._handle_or_raise(), text)
        if rc < 0 or self._d._errors:
            return self._finish(rc)
        return _RESULT[rc]

    def sync(self, timeout: Optional[float] = None) -> None:
        """Waits until this node has applied every record the stream held when called
        (at most ``timeout`` seconds; default the node's ``timeout``), then returns.
        A binding that the global partition's owner runs because of those records may
        write later: sync again to converge.

        :class:`uniflow.Unavailable` when that takes longer; :class:`uniflow.Misuse`
        when the node is not started, or inside one of ``d``'s callbacks (the node's
        thread would wait for the callback to end)."""
        ms = 0
        if timeout is not None:
            ms = _seconds_to_ms(timeout, "timeout")
            if ms <= 0:
                raise InvalidArgument(f"timeout must be positive, got {timeout!r}")
        handle = self._handle_or_raise()
        if _callbacks.in_callback_of(self._d._errors):
            raise Misuse("Node.sync() cannot finish inside one of the dispatcher's callbacks: "
                         "the node applies records under the dispatcher the callback holds")
        rc = self._lib.uf_nats_sync(handle, ms)
        if rc < 0:
            _raise(self._lib, rc)

    def status(self) -> Dict[str, Any]:
        """The node as a dict: ``{"node": name, "model": ..., "connected": bool, "owned":
        [p, ...], "partitions": d.partitions(), "blocked": [p, ...] (waiting for an
        unknown outcome), "lag": records not applied yet, "apply_errors": n,
        "last_apply_error": text or None}``."""
        out = c_void_p()
        rc = self._lib.uf_nats_node_status(self._handle_or_raise(), byref(out))
        if rc < 0:
            _raise(self._lib, rc)
        text = _take_string(_load_core()[0], out)
        return json.loads(text) if text else {}

    # -- helpers ----------------------------------------------------------------------------

    def _handle_or_raise(self) -> c_void_p:
        handle = self._handle
        if handle is None:
            raise Misuse("the uniflow.nats.Node is closed")
        return handle

    def _finish(self, rc: int) -> Status:
        # A Python callback that raised during a local action wins, as for d.submit.
        exc = _callbacks.take_error(self._d._errors) if self._d._errors else None
        if exc is not None:
            raise exc
        if rc < 0:
            _raise(self._lib, rc)
        return _RESULT[rc]


def _raise(lib: Any, rc: int) -> None:
    """The exception for a failed uf_nats_* call, with the adapter's message (read on
    this thread right after the call, as errors.check reads the core's)."""
    raw = lib.uf_nats_last_error()
    message = raw.decode("utf-8", "replace") if raw else ""
    if not message:
        core = _load_core()[0]
        message = (core.uf_strerror(rc) or b"").decode("utf-8", "replace")
    raise error_for(rc, message)
