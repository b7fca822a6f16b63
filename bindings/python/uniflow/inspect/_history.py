"""The inspected model's history: mutations and restores in order, with a copy of
the model every ``SNAPSHOT_EVERY`` events, so that the model after any seq is a
copy of the nearest earlier snapshot plus at most that many events applied.

The model is kept as JSON data in the form ``uf_state_get`` gives it (a single
feature ``{"state", "payload"}``, a keyed one ``{key: {"state", "payload"}}``);
the library puts it in its exact form on the way out (:meth:`Scratch.normalize`).
"""

from __future__ import annotations

import bisect
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

__all__ = ["History", "Event"]

Model = Dict[str, Any]
#: ("m", seq, mutation JSON) or ("r", seq, the model a restore installed)
Event = Tuple[str, int, Any]


def copy_model(model: Mapping[str, Any], keyed: Set[str]) -> Model:
    """A copy of the model's structure (states and payloads are shared: never changed)."""
    return {name: dict(value) if name in keyed else value for name, value in model.items()}


def apply_mutation(model: Model, m: Mapping[str, Any]) -> None:
    feature, key, new = m["feature"], m.get("key"), m.get("new")
    if key is None:
        if new is None:
            model.pop(feature, None)
        else:
            model[feature] = new
        return
    instances = model.get(feature)
    if instances is None:
        if new is None:
            return
        instances = model[feature] = {}
    if new is None:
        instances.pop(key, None)
        if not instances:
            del model[feature]
    else:
        instances[key] = new


def place_value(model: Mapping[str, Any], feature: str, key: Optional[str]) -> Optional[Any]:
    value = model.get(feature)
    if value is None or key is None:
        return value
    return value.get(key)


class History:
    """Thread-safe. ``generation`` changes when the history starts over (a new
    journal session); ``version`` with every change."""

    SNAPSHOT_EVERY = 1000

    def __init__(self, keyed: Set[str]) -> None:
        self.keyed = keyed
        self.lock = threading.RLock()
        self.generation = 0
        self.version = 0
        self.reset({}, 0)

    def reset(self, model: Mapping[str, Any], base_seq: Optional[int]) -> None:
        """Starts over from ``model``, the model after ``base_seq`` (None: not known
        yet; the first mutation's seq tells it, :meth:`rebase`)."""
        with self.lock:
            self.generation += 1
            self.version += 1
            self.base_seq = base_seq
            self.events: List[Event] = []
            self.event_seqs: List[int] = []
            self.mutations: List[Dict[str, Any]] = []
            self.mutation_seqs: List[int] = []
            self.model: Model = copy_model(model, self.keyed)
            #: (number of events applied, the model then)
            self.snapshots: List[Tuple[int, Model]] = [(0, copy_model(model, self.keyed))]

    @property
    def last_seq(self) -> Optional[int]:
        with self.lock:
            return self.event_seqs[-1] if self.event_seqs else self.base_seq

    def rebase(self, base_seq: int) -> None:
        """Sets the seq the first model is after (before any event arrived)."""
        with self.lock:
            if not self.events:
                self.base_seq = base_seq

    def add_mutation(self, m: Dict[str, Any]) -> None:
        with self.lock:
            self._add(("m", int(m["seq"]), m))
            self.mutations.append(m)
            self.mutation_seqs.append(int(m["seq"]))
            apply_mutation(self.model, m)
            self._maybe_snapshot()

    def add_restore(self, seq: int, model: Mapping[str, Any]) -> None:
        with self.lock:
            if not self.events:
                # A session that starts with a restore (a journal resumed by a
                # replay) starts from the model restored, after its seq: the seqs
                # before it are an earlier session's.
                self.base_seq = seq
                self.model = copy_model(model, self.keyed)
                self.snapshots = [(0, copy_model(model, self.keyed))]
                self.version += 1
                return
            self._add(("r", seq, model))
            self.model = copy_model(model, self.keyed)
            self._maybe_snapshot()

    def _add(self, event: Event) -> None:
        self.events.append(event)
        self.event_seqs.append(event[1])
        self.version += 1

    def _maybe_snapshot(self) -> None:
        if len(self.events) % self.SNAPSHOT_EVERY == 0:
            self.snapshots.append((len(self.events), copy_model(self.model, self.keyed)))

    def place(self, feature: str, key: Optional[str]) -> Optional[Any]:
        """The current value of one place (a feature, or an instance)."""
        with self.lock:
            return place_value(self.model, feature, key)

    def knows(self, seq: int) -> bool:
        """Whether ``seq`` is the history's start or one of its events' seqs."""
        with self.lock:
            if self.base_seq is None:
                return False
            if seq == self.base_seq:
                return True
            i = bisect.bisect_left(self.event_seqs, seq)
            return i < len(self.event_seqs) and self.event_seqs[i] == seq

    def model_at(self, seq: Optional[int] = None) -> Model:
        """The model after ``seq`` (every event up to it applied; now when None)."""
        with self.lock:
            if seq is None:
                return copy_model(self.model, self.keyed)
            count = bisect.bisect_right(self.event_seqs, seq)
            index = bisect.bisect_right([n for n, _ in self.snapshots], count) - 1
            start, snapshot = self.snapshots[index]
            events = self.events[start:count]
            model = copy_model(snapshot, self.keyed)
        for kind, _, value in events:
            if kind == "m":
                apply_mutation(model, value)
            else:
                model = copy_model(value, self.keyed)
        return model

    def mutations_since(self, seq: int) -> List[Dict[str, Any]]:
        """The mutations with a seq above ``seq``, oldest first."""
        with self.lock:
            return self.mutations[bisect.bisect_right(self.mutation_seqs, seq):]

    def seqs(self) -> Tuple[Optional[int], Optional[int]]:
        with self.lock:
            return self.base_seq, self.last_seq

    def extend(self, events: Iterable[Event]) -> None:
        for kind, seq, value in events:
            if kind == "m":
                self.add_mutation(value)
            else:
                self.add_restore(seq, value)
