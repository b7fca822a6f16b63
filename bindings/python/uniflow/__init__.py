"""uniflow: a predictable state container (UniFlow) for Python, over ``libuniflow``.

>>> import uniflow
>>> d = uniflow.Dispatcher()
>>> d.register("examples/definitions/file_downloading.json")
<Status.OK: 0>
>>> d.subscribe(print, when="AnyMutationOf<FileDownloading>")
<uniflow.Subscription id=1 when=AnyMutationOf<FileDownloading> active>
>>> d.initialize("FileDownloading", "Starting")
<Mutation #1 initialization FileDownloading: - -> Starting>
<Status.OK: 0>
>>> d.transition("FileDownloading", into="InProgress", from_="Starting",
...              payload={"progress": 10})
<Mutation #2 transition FileDownloading: Starting -> InProgress>
<Status.OK: 0>
>>> d.close()

See :class:`Dispatcher` for the API and ``docs/python-guide.md`` for a guide. The
library is found through ``UNIFLOW_LIBRARY``, a copy inside this package, or the build
folders of the source tree (:func:`uniflow._library.candidate_paths`). ``uniflow.nats``
(imported on its own) shares a model across processes through NATS JetStream.
"""

from __future__ import annotations

from ._library import LibraryNotFoundError, candidate_paths, library_path
from .dispatcher import Dispatcher, library_version, logic_apply
from .errors import (
    AlreadyExists,
    CallbackError,
    Conflict,
    FileError,
    Gap,
    InvalidArgument,
    InvalidJSON,
    LoopError,
    Misuse,
    NotFound,
    NotOwner,
    OutOfMemory,
    Rejected,
    SchemaError,
    Status,
    Unavailable,
    UniflowError,
)
from .instance import Instance
from .intercept import Action, Veto
from .mutation import BindingCall, Mutation
from ._services import Invocation
from .scenario import Scenario
from .subscription import Interceptor, Subscription, Watch
from .values import DECLINE, OK, QUEUED, REJECT, STOP, ActionKind, MutationKind, State

def _package_version() -> str:
    """The library's version, which is the package's: written into an installed package
    by setup.py, read from the source tree's header otherwise."""
    try:
        from ._version import VERSION  # type: ignore[import-not-found]

        return str(VERSION)
    except ImportError:
        import re
        from pathlib import Path

        header = Path(__file__).resolve().parents[3] / "Include" / "uniflow.h"
        try:
            match = re.search(r'^#define UNIFLOW_VERSION "([^"]+)"', header.read_text(encoding="utf-8"), re.MULTILINE)
        except OSError:
            match = None
        return match.group(1) if match else "unknown"


__version__ = _package_version()

__all__ = [
    "Dispatcher",
    "Subscription",
    "Watch",
    "Interceptor",
    "Instance",
    "Action",
    "Veto",
    "Scenario",
    "Mutation",
    "BindingCall",
    "Invocation",
    "State",
    "MutationKind",
    "ActionKind",
    "Status",
    "OK",
    "QUEUED",
    "DECLINE",
    "STOP",
    "REJECT",
    "logic_apply",
    "library_version",
    "library_path",
    "candidate_paths",
    "LibraryNotFoundError",
    "UniflowError",
    "Rejected",
    "InvalidArgument",
    "InvalidJSON",
    "SchemaError",
    "NotFound",
    "AlreadyExists",
    "CallbackError",
    "LoopError",
    "Misuse",
    "OutOfMemory",
    "FileError",
    "NotOwner",
    "Conflict",
    "Unavailable",
    "Gap",
]
