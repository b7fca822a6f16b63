"""Python values to the bytes C takes, and C's strings back (used by every module that calls C)."""

from __future__ import annotations

import json
import os
from ctypes import c_void_p, string_at
from typing import Any, Optional

from . import _callbacks
from .errors import FileError, InvalidArgument, InvalidJSON

__all__ = ["c_text", "name", "payload_bytes", "json_text", "document_text", "json_value_text", "json_item",
           "take_string"]


def c_text(raw: bytes, what: str) -> bytes:
    """Bytes for a C string: C would read them only up to a NUL, and use what comes
    before it as if it were all."""
    if b"\0" in raw:
        raise InvalidArgument(f"{what} contains a NUL character")
    return raw


def name(value: Optional[str], what: str) -> Optional[bytes]:
    """A name (feature, state, key, event, filter...) as C bytes; ``None`` stays NULL."""
    if value is None:
        return None
    if isinstance(value, str):
        if "\0" in value:
            raise InvalidArgument(f"{what} contains a NUL character: {value!r}")
        return value.encode("utf-8")
    raise TypeError(f"{what} must be a str, got {type(value).__name__}")


def payload_bytes(payload: Any) -> bytes:
    """A payload (dict, JSON text or bytes) as JSON bytes."""
    return _callbacks.encode_payload(payload)


def json_text(value: Any, what: str) -> bytes:
    """A dict/list as JSON, a str/bytes as the JSON text it already is."""
    if isinstance(value, str):
        return c_text(value.encode("utf-8"), what)
    if isinstance(value, (bytes, bytearray)):
        return c_text(bytes(value), what)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"{what} is not JSON-serializable: {error}") from error


def document_text(value: Any, what: str) -> bytes:
    """A document the caller may also give as a file, as :meth:`Dispatcher.register`
    takes definitions: a ``str`` that starts with ``{`` or ``[`` (after blanks) is JSON
    text, any other ``str`` (or a path-like) is a path whose file holds it; bytes are
    JSON text, a dict or list is serialized."""
    if isinstance(value, os.PathLike) or (isinstance(value, str) and not value.lstrip().startswith(("{", "["))):
        c_text(os.fsencode(value), "path")  # a NUL is InvalidArgument, as register's path
        try:
            with open(value, "rb") as file:
                raw = file.read()
        except OSError as error:
            raise FileError(f"cannot read '{os.fsdecode(value)}': {error.strerror}") from None
        return c_text(raw, what)
    return json_text(value, what)


def json_value_text(value: Any, what: str) -> bytes:
    """Any Python value as JSON (a str is a JSON string here, not JSON text)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"{what} is not JSON-serializable: {error}") from error


def json_item(item: Any, what: str) -> Any:
    """An element of a list sent as one JSON array (a batch, a trigger's ``submit``):
    JSON text (str or bytes) decoded, anything else as it is. Text that is not JSON
    raises :class:`InvalidJSON` naming the element, as the library would."""
    if not isinstance(item, (str, bytes, bytearray)):
        return item
    try:
        return json.loads(item)
    except json.JSONDecodeError as error:
        raise InvalidJSON(f"{what}: line {error.lineno}, column {error.colno}: {error.msg}") from None
    except UnicodeDecodeError as error:
        raise InvalidJSON(f"{what}: the text is not UTF-8 ({error.reason} at byte {error.start})") from None


def take_string(lib: Any, out: c_void_p) -> Optional[str]:
    """Reads and frees a ``char *`` the library returned."""
    if not out.value:
        return None
    try:
        return string_at(out.value).decode("utf-8")
    finally:
        lib.uf_free(out)
