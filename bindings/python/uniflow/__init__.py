"""uniflow: a predictable state container (UniFlow) for Python, over ``libuniflow``.

>>> import uniflow
>>> with uniflow.Dispatcher() as d:
...     d.register("examples/definitions/file_downloading.json")
...     d.subscribe(print, when="AnyMutationOf<FileDownloading>")
...     d.initialize("FileDownloading", "Starting")
...     d.transition("FileDownloading", into="InProgress", from_="Starting",
...                  payload={"progress": 10})

See :class:`Dispatcher` for the API and ``SPEC.md`` section 8 for the contract. The
library is found through ``UNIFLOW_LIBRARY``, a copy inside this package, or the build
folders of the source tree (:func:`uniflow._library.candidate_paths`).
"""

from __future__ import annotations

from ._library import LibraryNotFoundError, candidate_paths, library_path
from .dispatcher import Dispatcher, Subscription, library_version, logic_apply
from .errors import (
    AlreadyExists,
    CallbackError,
    FileError,
    InvalidArgument,
    InvalidJSON,
    LoopError,
    Misuse,
    NotFound,
    OutOfMemory,
    Rejected,
    SchemaError,
    Status,
    UniflowError,
)
from .mutation import BindingCall, Mutation
from .scenario import Scenario
from .values import DECLINE, OK, QUEUED, STOP, ActionKind, MutationKind, State

__version__ = "0.1.0"

__all__ = [
    "Dispatcher",
    "Subscription",
    "Scenario",
    "Mutation",
    "BindingCall",
    "State",
    "MutationKind",
    "ActionKind",
    "Status",
    "OK",
    "QUEUED",
    "DECLINE",
    "STOP",
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
]
