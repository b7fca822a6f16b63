"""Finding and loading ``libuniflow.so``, and declaring its C prototypes once.

Discovery order (llama-cpp-python's habit):

1. ``UNIFLOW_LIBRARY``: when set, it is the only path tried.
2. A copy inside the package (``uniflow/libuniflow.so``, put there by ``pip install``).
3. The build folders of the source tree this package sits in:
   ``build/prefix/lib``, ``build/release``, ``.build/release``, ``.build/debug``.
4. The system's search path (``ctypes.util.find_library("uniflow")``), for a library
   installed with ``cmake --install`` into a standard prefix.

When nothing loads, :class:`LibraryNotFoundError` lists every path tried and why it
failed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (
    c_uint32,
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_uint,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .errors import Misuse

__all__ = [
    "LibraryNotFoundError",
    "load",
    "candidate_paths",
    "UfAction",
    "VIA_FN",
    "FREE_FN",
    "SUBSCRIBER_FN",
    "REPORT_FN",
    "HANDLER_FN",
    "SERVICE_FN",
    "WATCH_FN",
    "INTERCEPTOR_FN",
]

_LIBRARY_NAMES = ("libuniflow.so", "libuniflow.so.0", "libuniflow.dylib")
_BUILD_FOLDERS = ("build/prefix/lib", "build/release", ".build/release", ".build/debug")


class LibraryNotFoundError(OSError):
    """``libuniflow`` (or ``library``, e.g. ``libuniflow_nats`` for :mod:`uniflow.nats`)
    could not be loaded; the message lists every path tried, then ``hint``."""

    def __init__(self, attempts: List[Tuple[str, str]], library: str = "libuniflow",
                 hint: str = "Build it (swift build, or the CMake build) or set UNIFLOW_LIBRARY to its path.") -> None:
        self.attempts = attempts
        self.library = library
        lines = [f"{library} could not be loaded; tried:"]
        lines += [f"  {path}: {why}" for path, why in attempts]
        lines.append(hint)
        super().__init__("\n".join(lines))


# --- C types --------------------------------------------------------------------------

# typedef int (*uf_via_fn)(uf_context *ctx, void *payload);
VIA_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
# void (*payload_free)(void *);
FREE_FN = CFUNCTYPE(None, c_void_p)
# typedef int (*uf_subscriber_fn)(const uf_mutation *m, void *payload);
SUBSCRIBER_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
# typedef void (*uf_report_fn)(const char *report_json, void *payload);
REPORT_FN = CFUNCTYPE(None, c_char_p, c_void_p)
# typedef int (*uf_record_fn)(const uf_record *r, void *payload);
RECORD_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
# typedef int (*uf_handler_fn)(uf_binding_call *call, void *payload);
HANDLER_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
# typedef int (*uf_watch_fn)(const uf_watch_event *w, void *payload);
WATCH_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
# typedef int (*uf_interceptor_fn)(uf_intercepted *a, void *payload);
INTERCEPTOR_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
# typedef int (*uf_service_fn)(const uf_invocation *inv, void *payload);
SERVICE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)


class UfAction(Structure):
    """``struct uf_action`` (uniflow.h); ``size`` must be ``sizeof(uf_action)``."""

    _fields_ = [
        ("size", c_uint),
        ("kind", c_int),
        ("feature", c_char_p),
        ("from_", c_char_p),
        ("into", c_char_p),
        ("payload_json", c_char_p),
        ("same", c_int),
        ("uninitialized", c_int),
        ("scope", c_char_p),
        ("context", c_char_p),
        ("id", c_char_p),
        ("via", VIA_FN),
        ("via_payload", c_void_p),
        ("via_payload_free", FREE_FN),
        ("key", c_char_p),
        ("event", c_char_p),
    ]


UF_ACTION_SIZE = ctypes.sizeof(UfAction)

_P = c_void_p  # every opaque handle (uf_dispatcher*, uf_mutation*, uf_context*, ...)
_OUT = POINTER(c_void_p)  # char **out_json: read as a pointer, freed with uf_free

# name: (restype, argtypes). Every function of uniflow.h.
_PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "uf_version": (c_char_p, []),
    "uf_version_number": (c_int, []),
    "uf_last_status": (c_int, []),
    "uf_last_error": (c_char_p, []),
    "uf_status_name": (c_char_p, [c_int]),
    "uf_strerror": (c_char_p, [c_int]),
    "uf_free": (None, [c_void_p]),
    "uf_dispatcher_new": (c_int, [POINTER(c_void_p), c_char_p]),
    "uf_dispatcher_free": (None, [_P]),
    "uf_register": (c_int, [_P, c_char_p]),
    "uf_register_file": (c_int, [_P, c_char_p]),
    "uf_submit": (c_int, [_P, c_char_p]),
    "uf_state_get": (c_int, [_P, _OUT]),
    "uf_feature_get": (c_int, [_P, c_char_p, _OUT]),
    "uf_definitions_get": (c_int, [_P, _OUT]),
    "uf_dispatch": (c_int, [_P, POINTER(UfAction)]),
    "uf_submit_via": (c_int, [_P, c_char_p, VIA_FN, c_void_p, FREE_FN]),
    "uf_context_feature": (c_char_p, [_P]),
    "uf_context_state": (c_char_p, [_P]),
    "uf_context_payload_json": (c_char_p, [_P]),
    "uf_context_dispatcher": (c_void_p, [_P]),
    "uf_context_become": (c_int, [_P, c_char_p]),
    "uf_subscribe": (c_int, [_P, c_char_p, SUBSCRIBER_FN, c_void_p, FREE_FN, POINTER(c_uint64)]),
    "uf_unsubscribe": (c_int, [_P, c_uint64]),
    "uf_mutation_dispatcher": (c_void_p, [_P]),
    "uf_mutation_subscription_id": (c_uint64, [_P]),
    "uf_mutation_kind_of": (c_int, [_P]),
    "uf_mutation_feature": (c_char_p, [_P]),
    "uf_mutation_old_state": (c_char_p, [_P]),
    "uf_mutation_new_state": (c_char_p, [_P]),
    "uf_mutation_old_payload_json": (c_char_p, [_P]),
    "uf_mutation_new_payload_json": (c_char_p, [_P]),
    "uf_mutation_json": (c_char_p, [_P]),
    "uf_mutation_seq": (c_uint64, [_P]),
    "uf_set_reporter": (c_int, [_P, REPORT_FN, c_void_p, FREE_FN]),
    "uf_register_handler": (c_int, [_P, c_char_p, HANDLER_FN, c_void_p, FREE_FN]),
    "uf_binding_call_mutation_json": (c_char_p, [_P]),
    "uf_binding_call_given_json": (c_char_p, [_P]),
    "uf_binding_call_set_output": (c_int, [_P, c_char_p]),
    "uf_binding_call_dispatcher": (c_void_p, [_P]),
    "uf_logic_apply": (c_int, [c_char_p, c_char_p, _OUT]),
    "uf_submit_batch": (c_int, [_P, c_char_p]),
    "uf_state_restore": (c_int, [_P, c_char_p]),
    "uf_replay_file": (c_int, [_P, c_char_p]),
    "uf_graph_dot": (c_int, [_P, c_char_p, _OUT]),
    # Instances and events
    "uf_instance_get": (c_int, [_P, c_char_p, c_char_p, _OUT]),
    "uf_state_active": (c_int, [_P, c_char_p, c_char_p, c_char_p, POINTER(c_int)]),
    "uf_register_service": (c_int, [_P, c_char_p, SERVICE_FN, SERVICE_FN, c_void_p, FREE_FN]),
    "uf_invocation_feature": (c_char_p, [c_void_p]),
    "uf_invocation_key": (c_char_p, [c_void_p]),
    "uf_invocation_id": (c_char_p, [c_void_p]),
    "uf_invocation_input_json": (c_char_p, [c_void_p]),
    "uf_invocation_serial": (c_uint64, [c_void_p]),
    "uf_service_done": (c_int, [_P, c_uint64, c_char_p]),
    "uf_service_error": (c_int, [_P, c_uint64, c_char_p]),
    "uf_context_key": (c_char_p, [_P]),
    "uf_mutation_key": (c_char_p, [_P]),
    "uf_send": (c_int, [_P, c_char_p, c_char_p, c_char_p, c_char_p]),
    # Time and the host's loop
    "uf_submit_after": (c_int, [_P, c_char_p, c_uint64, c_char_p, c_uint]),
    "uf_dispatch_after": (c_int, [_P, POINTER(UfAction), c_uint64, c_char_p, c_uint]),
    "uf_timer_cancel": (c_int, [_P, c_char_p]),
    "uf_timers_get": (c_int, [_P, _OUT]),
    "uf_clock_advance": (c_int, [_P, c_uint64]),
    "uf_clock_now": (c_int, [_P, POINTER(c_uint64)]),
    "uf_subscribe_deferred": (c_int, [_P, c_char_p, SUBSCRIBER_FN, c_void_p, FREE_FN, POINTER(c_uint64)]),
    "uf_mutation_dropped": (c_uint64, [_P]),
    "uf_loop_fd": (c_int, [_P, POINTER(c_int)]),
    "uf_loop_timeout": (c_int, [_P, POINTER(c_int)]),
    "uf_loop_run": (c_int, [_P, POINTER(c_uint64)]),
    "uf_snapshot_get": (c_int, [_P, _OUT]),
    "uf_snapshot_restore": (c_int, [_P, c_char_p]),
    # Watches and interceptors
    "uf_watch": (c_int, [_P, c_char_p, WATCH_FN, c_void_p, FREE_FN, POINTER(c_uint64)]),
    "uf_watch_deferred": (c_int, [_P, c_char_p, WATCH_FN, c_void_p, FREE_FN, POINTER(c_uint64)]),
    "uf_watch_value_json": (c_char_p, [_P]),
    "uf_watch_previous_json": (c_char_p, [_P]),
    "uf_watch_id": (c_uint64, [_P]),
    "uf_watch_dispatcher": (c_void_p, [_P]),
    "uf_intercept": (c_int, [_P, c_char_p, INTERCEPTOR_FN, c_void_p, FREE_FN, POINTER(c_uint64)]),
    "uf_intercepted_kind": (c_int, [_P]),
    "uf_intercepted_feature": (c_char_p, [_P]),
    "uf_intercepted_key": (c_char_p, [_P]),
    "uf_intercepted_state": (c_char_p, [_P]),
    "uf_intercepted_json": (c_char_p, [_P]),
    "uf_intercepted_id": (c_uint64, [_P]),
    "uf_intercepted_dispatcher": (c_void_p, [_P]),
    "uf_intercepted_set_reason": (c_int, [_P, c_char_p]),
    # Partitions and records
    "uf_partition_of": (c_int, [_P, c_char_p, c_char_p, POINTER(c_uint32)]),
    "uf_record_sink": (c_int, [_P, RECORD_FN, c_void_p, FREE_FN]),
    "uf_record_json": (c_char_p, [_P]),
    "uf_record_partition": (c_int, [_P, POINTER(c_uint32)]),
    "uf_record_version": (c_int, [_P, POINTER(c_uint64)]),
    "uf_record_apply": (c_int, [_P, c_char_p]),
    "uf_partition_claim": (c_int, [_P, c_uint32]),
    "uf_partition_release": (c_int, [_P, c_uint32]),
    "uf_partitions_get": (c_int, [_P, _OUT]),
    "uf_partition_snapshot": (c_int, [_P, c_uint32, _OUT]),
    "uf_mutation_foreign": (c_int, [_P]),
}

# The functions a Dispatcher cannot work without; the others (handlers, JsonLogic,
# transactions, graphs) are looked up when used, so a library built before they
# existed still loads, and using them raises uniflow.Misuse naming the symbol.
REQUIRED = (
    "uf_version", "uf_last_status", "uf_last_error", "uf_status_name", "uf_strerror",
    "uf_free", "uf_dispatcher_new", "uf_dispatcher_free", "uf_register", "uf_register_file",
    "uf_submit", "uf_state_get", "uf_feature_get", "uf_dispatch", "uf_submit_via",
    "uf_context_payload_json", "uf_context_become", "uf_subscribe", "uf_unsubscribe",
    "uf_mutation_kind_of", "uf_mutation_feature", "uf_mutation_old_state",
    "uf_mutation_new_state", "uf_mutation_old_payload_json", "uf_mutation_new_payload_json",
    "uf_mutation_json", "uf_mutation_seq", "uf_set_reporter",
)


def _repo_root() -> Path:
    # bindings/python/uniflow/_library.py -> the repository root three levels up.
    return Path(__file__).resolve().parent.parent.parent.parent


def candidate_paths() -> List[str]:
    """The paths :func:`load` tries, in order (``UNIFLOW_LIBRARY`` alone when set)."""
    env = os.environ.get("UNIFLOW_LIBRARY")
    if env:
        return [env]
    here = Path(__file__).resolve().parent
    paths = [str(here / name) for name in _LIBRARY_NAMES[:2]]
    root = _repo_root()
    paths += [str(root / folder / "libuniflow.so") for folder in _BUILD_FOLDERS]
    return paths


_lock = threading.Lock()
_loaded: Optional[Tuple[ctypes.CDLL, str]] = None


def _declare(lib: ctypes.CDLL, prototypes: Optional[Dict[str, Tuple[Any, List[Any]]]] = None,
             required: Optional[Tuple[str, ...]] = None) -> None:
    """Sets each function's restype and argtypes from ``prototypes`` (the core's table
    by default; :mod:`uniflow.nats` passes its own); a missing function of
    ``required`` is an OSError."""
    if prototypes is None:
        prototypes, required = _PROTOTYPES, REQUIRED
    for name, (restype, argtypes) in prototypes.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in (required or ()):
                # load() lists it after the path it tried: the path is not repeated here.
                raise OSError(f"missing required symbol {name}") from None
            continue
        fn.restype = restype
        fn.argtypes = argtypes


def load() -> Tuple[ctypes.CDLL, str]:
    """Loads the library once (thread-safe) and returns it with the path it came from."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        attempts: List[Tuple[str, str]] = []
        candidates = candidate_paths()
        use_system = "UNIFLOW_LIBRARY" not in os.environ or not os.environ["UNIFLOW_LIBRARY"]
        for path in candidates:
            if not os.path.exists(path):
                attempts.append((path, "no such file"))
                continue
            try:
                lib = ctypes.CDLL(path)
                _declare(lib)
            except OSError as error:
                attempts.append((path, str(error)))
                continue
            _loaded = (lib, path)
            return _loaded
        if use_system:
            found = ctypes.util.find_library("uniflow")
            if found:
                try:
                    lib = ctypes.CDLL(found)
                    _declare(lib)
                    _loaded = (lib, found)
                    return _loaded
                except OSError as error:
                    attempts.append((found, str(error)))
            else:
                attempts.append(("system search path (ctypes.util.find_library('uniflow'))", "not found"))
        raise LibraryNotFoundError(attempts)


class _HoldingTheGil(ctypes._CFuncPtr):  # type: ignore[name-defined,misc]
    """``ctypes.PyDLL``'s function class without a ``_restype_``: a function left
    with no restype returns its C int straight (PyLong_FromLong), where a ``c_int``
    restype makes ctypes search its table of converters on every call (about 200
    instructions, a sixth of what ctypes adds to a call of ``uf_dispatch_try``)."""

    _flags_ = ctypes._FUNCFLAG_CDECL | ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]


def holding_the_gil(name: str) -> Optional[Any]:
    """The loaded library's function ``name`` called without releasing the GIL
    (like ``ctypes.PyDLL``'s), without argtypes, returning a C int unless given a
    ``restype``, or None if the library does not export it.

    Only for functions that never wait for another thread: one that did, while that
    thread needs the GIL for a callback, would deadlock.
    """
    lib, _ = load()
    if not hasattr(lib, name):
        return None
    return _HoldingTheGil((name, lib))


def has(name: str) -> bool:
    """Whether the loaded library exports ``name`` (optional parts of the API)."""
    lib, _ = load()
    return hasattr(lib, name)


def require(lib: Any, name: str, path: Optional[str] = None) -> Any:
    """``lib``'s function ``name``; :class:`uniflow.Misuse` naming it and the library
    (``path``, by default the loaded library's) when the library does not export it."""
    fn = getattr(lib, name, None)
    if fn is None:
        raise Misuse(f"{name} is not exported by the loaded libuniflow ({path if path is not None else load()[1]}); "
                     f"this part of the API needs a newer build of the library")
    return fn


def library_path() -> str:
    """The path of the loaded library (loading it if needed)."""
    return load()[1]
