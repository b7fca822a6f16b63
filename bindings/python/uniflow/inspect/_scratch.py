"""Scratch dispatchers: the inspector asks the library, never a copy of its rules.

A scratch dispatcher has the inspected model's definitions, a manual clock (its
timers never fire) and placeholder handlers (a ``{"call": name}`` that the
definitions name answers "no"). The inspector uses one to

* put a reconstructed model into the library's own form (``restore`` then
  ``state``: features in registration order, payloads with defaults, keys in
  declaration order), which is what ``uf_state_get`` gives;
* check a filter (``subscribe(when=...)`` raises the library's ``SchemaError`` or
  ``NotFound``) and match mutations against it: a filter looks only at a
  mutation's kind, feature, old state and new state, so for each such signature
  the scratch dispatcher is put where the mutation started and the action that
  makes it is submitted; whether the subscription saw it is the answer, kept for
  the next mutation with the same signature;
* try an action on a copy of the model (the journal follower's ``--allow-submit``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, TypeVar

from ..dispatcher import Dispatcher
from ..errors import NotFound, UniflowError
from ..mutation import Mutation

__all__ = ["Scratch", "new_scratch_dispatcher"]

_UNKNOWN_HANDLER = re.compile(r"unknown handler '(.*)'")
_UNKNOWN_SERVICE = re.compile(r"unknown service '(.*)'")

M = TypeVar("M", bound=Mapping[str, Any])

#: (kind, feature, old state, new state): all that a filter looks at
Signature = Tuple[str, str, Optional[str], Optional[str]]


def _placeholder(call: Any) -> bool:
    return False


def _placeholder_service(invocation: Any) -> None:
    """Runs nothing: a scratch dispatcher shows models, the host's services do the work."""


def register_with_placeholders(d: Dispatcher, definitions: Any) -> None:
    """Registers ``definitions`` on ``d``, adding a placeholder for each host handler
    and statechart service they name (as the ``uniflow`` command does): found from
    the library's own "unknown handler 'NAME'" and "unknown service 'NAME'"
    refusals, one at a time (registration is all or nothing)."""
    added: Set[str] = set()
    while True:
        try:
            d.register(definitions)
            return
        except NotFound as error:
            handler = _UNKNOWN_HANDLER.search(error.message)
            service = _UNKNOWN_SERVICE.search(error.message)
            match = handler or service
            if match is None or match.group(0) in added:
                raise
            added.add(match.group(0))
            if handler is not None:
                d.register_handler(handler.group(1), _placeholder)
            else:
                d.register_service(match.group(1), _placeholder_service)


def new_scratch_dispatcher(features: List[Dict[str, Any]]) -> Dispatcher:
    """A dispatcher with ``features`` registered, a manual clock and host timers."""
    d = Dispatcher(clock="manual", timers="host")
    try:
        if features:
            register_with_placeholders(d, {"features": features})
    except BaseException:
        d.close()
        raise
    return d


def _place_model(feature: str, key: Optional[str], value: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    if value is None:
        return {}
    return {feature: dict(value)} if key is None else {feature: {key: dict(value)}}


def _synthetic_action(m: Mapping[str, Any]) -> Dict[str, Any]:
    """The action that makes mutation ``m`` from its old state."""
    kind = m["kind"]
    old: Any = m.get("old")
    new: Any = m.get("new")
    action: Dict[str, Any] = {"feature": m["feature"]}
    if m.get("key") is not None:
        action["key"] = m["key"]
    if kind == "initialization":
        action.update(kind="initialize", into=new["state"], payload=new["payload"])
    elif kind == "actualization":
        action.update(kind="actualize", payload=new["payload"])
        action["in"] = new["state"]
    elif kind == "transition":
        action.update(kind="transition", into=new["state"], payload=new["payload"])
        action["from"] = old["state"]
    else:
        action.update(kind="deinitialize")
        action["from"] = old["state"]
    return action


def signature(m: Mapping[str, Any]) -> Signature:
    old, new = m.get("old"), m.get("new")
    return (m["kind"], m["feature"], old["state"] if old else None, new["state"] if new else None)


class Scratch:
    """One scratch dispatcher and what the inspector asks of it (thread-safe)."""

    #: filters whose answers are kept
    FILTERS_KEPT = 32

    def __init__(self, features: List[Dict[str, Any]]) -> None:
        self.features = features
        self.keyed = {f["feature"] for f in features if f.get("instances") == "keyed"}
        self._lock = threading.Lock()
        self._d = new_scratch_dispatcher(features)
        self._answers: "OrderedDict[str, Dict[Signature, bool]]" = OrderedDict()

    def close(self) -> None:
        with self._lock:
            self._d.close()

    def normalize(self, model: Mapping[str, Any]) -> Dict[str, Any]:
        """The model as ``uf_state_get`` gives it (the library's order and defaults)."""
        with self._lock:
            self._d.restore(model)
            return self._d.state

    def check_filter(self, when: str) -> None:
        """Raises the library's error for a filter it refuses."""
        with self._lock:
            self._d.subscribe(_ignore, when=when).cancel()

    def matching(self, when: str, mutations: List[M]) -> List[M]:
        """The mutations the filter ``when`` matches (the library's error if it is bad)."""
        with self._lock:
            answers = self._answers.get(when)
            if answers is None:
                self._d.subscribe(_ignore, when=when).cancel()  # raises for a bad filter
                answers = {}
                self._answers[when] = answers
                while len(self._answers) > self.FILTERS_KEPT:
                    self._answers.popitem(last=False)
            self._answers.move_to_end(when)
            result = []
            for m in mutations:
                sig = signature(m)
                answer = answers.get(sig)
                if answer is None:
                    answer = answers[sig] = self._ask(when, m)
                if answer:
                    result.append(m)
            return result

    def _ask(self, when: str, m: Mapping[str, Any]) -> bool:
        """Whether the library's filter ``when`` matches mutations like ``m``."""
        seen: List[Signature] = []

        def record(mutation: Mutation) -> None:
            seen.append(signature(mutation.to_dict()))

        self._d.restore(_place_model(m["feature"], m.get("key"), m.get("old")))
        subscription = self._d.subscribe(record, when=when)
        try:
            self._d.submit(_synthetic_action(m))
        except UniflowError:
            return False  # cannot be made again here: shown as not matching
        finally:
            subscription.cancel()
        return signature(m) in seen

    def trial(self, model: Mapping[str, Any], action: bytes) -> Tuple[Optional[UniflowError], List[Dict[str, Any]]]:
        """Submits ``action`` (JSON text) to a copy of ``model``: the library's error
        (None when it applied) and the mutations it made."""
        made: List[Dict[str, Any]] = []

        def record(mutation: Mutation) -> None:
            made.append(mutation.to_dict())

        with self._lock:
            self._d.restore(model)
            subscription = self._d.subscribe(record)
            try:
                self._d.submit(action)
                return None, made
            except UniflowError as error:
                return error, made
            finally:
                subscription.cancel()


def _ignore(mutation: Mutation) -> None:
    return None
