"""Exceptions, one per status code of ``uniflow.h``, mapped in one place (:func:`check`)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Dict, NoReturn, Optional, Tuple, Type

__all__ = [
    "Status",
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
    "error_for",
    "check",
]


class Status(IntEnum):
    """The status codes of ``uniflow.h`` (``UF_OK`` ... ``UF_EGAP``)."""

    OK = 0
    QUEUED = 1
    REJECTED = -1
    EINVAL = -2
    EJSON = -3
    ESCHEMA = -4
    ENOTFOUND = -5
    EEXISTS = -6
    ECALLBACK = -7
    ELOOP = -8
    EMISUSE = -9
    ENOMEM = -10
    EIO = -11
    #: ``uf_dispatch_try`` only: another thread is processing, nothing was done (the
    #: package then waits with ``uf_dispatch``; it never raises for it).
    EBUSY = -12
    ENOTOWNER = -13
    ECONFLICT = -14
    EUNAVAILABLE = -15
    EGAP = -16

    def __str__(self) -> str:
        # The number, as IntEnum prints from Python 3.11 on (before: "Status.OK").
        return str(int(self))

    def __format__(self, spec: str) -> str:
        # Before 3.11, Enum formats a member whose __str__ is overridden as that
        # string, which refuses numeric specs ("d", "x", "03"): format the number.
        return format(int(self), spec)


class UniflowError(Exception):
    """Base of every error the library reports.

    ``code`` is the status (a :class:`Status` when known), ``message`` the library's
    message for the failed call (``uf_last_error()``), e.g.
    ``"FileDownloading is in state InProgress, not Starting"``. ``str(error)`` is the
    message.
    """

    #: The status this class stands for (overridden by each subclass).
    status: Optional[Status] = None

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        if code is None:
            code = int(self.status) if self.status is not None else 0
        try:
            code = Status(code)
        except ValueError:
            pass
        self.code: int = code
        self.message: str = message
        super().__init__(message)

    @property
    def name(self) -> str:
        """The code's name as in C (``"UF_REJECTED"``)."""
        return f"UF_{self.code.name}" if isinstance(self.code, Status) else "UF_UNKNOWN"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.name})"

    def __reduce__(self) -> Tuple[Any, Tuple[str, int]]:
        return (type(self), (self.message, int(self.code)))


class Rejected(UniflowError):
    """``UF_REJECTED``: the precondition did not hold, or a via callback declined."""

    status = Status.REJECTED


class InvalidArgument(UniflowError):
    """``UF_EINVAL``: a bad argument (NULL where a value is required, unknown option)."""

    status = Status.EINVAL


class InvalidJSON(UniflowError):
    """``UF_EJSON``: text that is not valid JSON; the message gives line and column."""

    status = Status.EJSON


class SchemaError(UniflowError):
    """``UF_ESCHEMA``: valid JSON of the wrong shape (definition, action, payload, filter)."""

    status = Status.ESCHEMA


class NotFound(UniflowError):
    """``UF_ENOTFOUND``: unknown feature, state, handler or subscription."""

    status = Status.ENOTFOUND


class AlreadyExists(UniflowError):
    """``UF_EEXISTS``: a feature or handler with that name is already registered."""

    status = Status.EEXISTS


class CallbackError(UniflowError):
    """``UF_ECALLBACK``: a user callback reported failure.

    A Python callback that raises is re-raised as itself rather than as this error;
    this is what a failure without a Python exception (a C callback) looks like.
    """

    status = Status.ECALLBACK


class LoopError(UniflowError):
    """``UF_ELOOP``: the cascade limit (``max_cascade``) was reached."""

    status = Status.ELOOP


class Misuse(UniflowError):
    """``UF_EMISUSE``: a call not allowed here.

    Also raised by the binding itself for a closed dispatcher, for closing a dispatcher
    inside one of its own callbacks, for a :class:`~uniflow.Mutation` read after its
    subscriber returned without keeping it, and for a part of the API that the loaded
    library does not export (an older build).
    """

    status = Status.EMISUSE


class OutOfMemory(UniflowError):
    """``UF_ENOMEM``: out of memory."""

    status = Status.ENOMEM


class FileError(UniflowError):
    """``UF_EIO``: a file could not be read (or a journal opened)."""

    status = Status.EIO


class NotOwner(UniflowError):
    """``UF_ENOTOWNER``: on a partitioned dispatcher, the action's partition is owned by
    another node, or by none (``docs/scale-out.md``)."""

    status = Status.ENOTOWNER


class Conflict(UniflowError):
    """``UF_ECONFLICT``: the log refused a record because another got there first.

    A record sink raises it to refuse a record; applying what is new and trying again
    is the way on."""

    status = Status.ECONFLICT


class Unavailable(UniflowError):
    """``UF_EUNAVAILABLE``: the log did not answer; the outcome is unknown until it is read.

    A record sink raises it to refuse a record it could not hand over."""

    status = Status.EUNAVAILABLE


class Gap(UniflowError):
    """``UF_EGAP``: a record came before the ones it follows (apply those first)."""

    status = Status.EGAP


_BY_CODE: Dict[int, Type[UniflowError]] = {
    int(cls.status or 0): cls
    for cls in (Rejected, InvalidArgument, InvalidJSON, SchemaError, NotFound, AlreadyExists,
                CallbackError, LoopError, Misuse, OutOfMemory, FileError, NotOwner, Conflict,
                Unavailable, Gap)
}


def error_for(code: int, message: str) -> UniflowError:
    """The exception for a negative status ``code`` (a bare :class:`UniflowError` if unknown)."""
    return _BY_CODE.get(code, UniflowError)(message, code)


def check(code: int) -> NoReturn:
    """Raises the exception for the negative status ``code`` of the call just made.

    The message is ``uf_last_error()``, read here right after the failing call on the
    same thread, so it is that call's own (``uf_strerror(code)`` if it is empty). The
    one place where codes become exceptions, as pygit2's ``check_error``.
    """
    from ._library import load

    lib = load()[0]
    raw = lib.uf_last_error()
    if not raw:
        raw = lib.uf_strerror(code)
    raise error_for(code, raw.decode("utf-8", "replace") if raw else "")
