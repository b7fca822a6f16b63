"""Partitions, owners and records of a partitioned dispatcher (``docs/scale-out.md``):
the methods :class:`uniflow.Dispatcher` inherits from :class:`Partitions`."""

from __future__ import annotations

import json
from ctypes import byref, c_uint32, c_void_p
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from . import _callbacks
from ._encoding import c_text as _c_text
from ._encoding import name as _name
from ._library import FREE_FN, RECORD_FN, require
from .errors import Conflict, Status, Unavailable

__all__ = ["Partitions"]


class Partitions:
    """The Dispatcher's methods for a model shared across processes (a mixin of
    :class:`uniflow.Dispatcher`, made with ``partitions=N, node="name"``)."""

    if TYPE_CHECKING:  # pragma: no cover
        _lib: Any
        _errors: Dict[int, BaseException]
        _keep: Dict[int, Any]

        def _finish(self, rc: int) -> Status: ...

        def _handle_or_raise(self) -> c_void_p: ...

        def _text_result(self, fn: Callable[..., int], *args: Any) -> Optional[str]: ...

        def _keep_callback(self, cfunc: Any, fn: Any) -> int: ...

    def partition_of(self, feature: str, key: Optional[str] = None) -> int:
        """The partition ``feature``'s instance ``key`` lives in (``fnv1a32(key) mod N``),
        or N, the global partition, for a single feature (``key=None``)."""
        p = c_uint32()
        rc = require(self._lib, "uf_partition_of")(
            self._handle_or_raise(), _name(feature, "feature"), None if key is None else _name(key, "key"), byref(p))
        if rc < 0:
            self._finish(rc)
        return p.value

    def partitions(self) -> List[Dict[str, Any]]:
        """Each partition: ``{"p": 0, "version": 12, "owner": "a" or None, "mine": True}``,
        the global partition last."""
        text = self._text_result(require(self._lib, "uf_partitions_get"))
        return json.loads(text) if text else []

    def snapshot_partition(self, p: int) -> str:
        """A snapshot of partition ``p`` as record text (``uf_partition_snapshot``):
        :meth:`apply_record` on a node whose copy of ``p`` is older replaces it."""
        text = self._text_result(require(self._lib, "uf_partition_snapshot"), _partition(p))
        return text or ""

    def claim(self, p: int) -> None:
        """Makes this node the owner of partition ``p`` by writing a claim record through
        the record sink. :class:`uniflow.Conflict` when the log moved on: apply what is
        new (:meth:`apply_record`), then claim again."""
        rc = require(self._lib, "uf_partition_claim")(self._handle_or_raise(), _partition(p))
        if rc < 0 or self._errors:
            self._finish(rc)

    def release(self, p: int) -> None:
        """Stops owning partition ``p`` (a release record): it has no owner then."""
        rc = require(self._lib, "uf_partition_release")(self._handle_or_raise(), _partition(p))
        if rc < 0 or self._errors:
            self._finish(rc)

    def record_sink(self, fn: Optional[Callable[[str], Any]]) -> None:
        """Hands every record to ``fn(text)`` before anything of its call is visible.

        ``fn`` returns to accept the record (the log has it), or raises
        :class:`uniflow.Conflict` (another record got there first) or
        :class:`uniflow.Unavailable` (the log did not answer) to refuse it: the whole
        call is then rolled back and raises the same. Any other exception refuses it
        too, and is re-raised from the call. ``None`` removes the sink (every record is
        then accepted at once)."""
        install = require(self._lib, "uf_record_sink")
        handle = self._handle_or_raise()
        if fn is None:
            rc = install(handle, RECORD_FN(), None, FREE_FN())  # NULLs
        else:
            if not callable(fn):
                raise TypeError(f"record sink must be callable, got {type(fn).__name__}")
            cfunc = _make_sink(self._lib, self._errors, fn)
            token = self._keep_callback(cfunc, fn)
            rc = install(handle, cfunc, token, _callbacks.RELEASE)
            if rc < 0:
                self._keep.pop(token, None)
        if rc < 0:
            self._finish(rc)

    def apply_record(self, text: str) -> None:
        """Applies a record read from the log: duplicates change nothing;
        :class:`uniflow.Gap` when it comes before the ones it follows,
        :class:`uniflow.Conflict` when it follows another history than this node's.
        Subscribers and watches hear of its mutations (``m.foreign`` is true)."""
        rc = require(self._lib, "uf_record_apply")(self._handle_or_raise(), _c_text(text.encode() if isinstance(text, str) else text, "record"))
        if rc < 0 or self._errors:
            self._finish(rc)


def _partition(p: int) -> int:
    if isinstance(p, bool) or not isinstance(p, int) or p < 0 or p > 0xFFFF_FFFF:
        from .errors import InvalidArgument

        raise InvalidArgument(f"a partition is a number from 0, got {p!r}")
    return p


def _make_sink(lib: Any, errors: Dict[int, BaseException], fn: Callable[[str], Any]) -> Any:
    """The C record sink for ``fn``: the record's text in, a status out."""

    def sink(record: Optional[int], _payload: Optional[int]) -> int:
        try:
            fn(lib.uf_record_json(record).decode())
        except Conflict:
            return int(Status.ECONFLICT)
        except Unavailable:
            return int(Status.EUNAVAILABLE)
        except BaseException as exc:
            _callbacks.store_error(errors, exc, "record sink")
            return int(Status.ECALLBACK)
        return int(Status.OK)

    return RECORD_FN(sink)
