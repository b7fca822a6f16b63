"""Scenario 3 of libuniflow's benchmark harness (run it through bench/run).

The same toggle with one counting subscriber, in one process, four ways:

* ``py_uniflow``       -- the ``uniflow`` package (bindings/python) over libuniflow;
* ``py_uniflow_watch`` -- the same with a watch on the path ``T.state`` instead of
  the subscriber (``d.watch``: called with each new value);
* ``py_redux_store``   -- a minimal pure-Python Redux-style store: a reducer that
  checks the precondition and returns a new state dict, and a subscriber list;
* ``py_transitions``   -- the ``transitions`` package (PyPI), one callback.

Repetitions are interleaved so that every variant sees the same machine. Prints
one JSON object per line, like bench_c: {"scenario", "rep", "ns", "iters"}, and
{"skipped": name, "reason": ...} for a variant that cannot run. Every variant
checks that its subscriber saw exactly as many changes as were made.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable


class Skip(Exception):
    """A variant that cannot run here; its message is the reason reported."""


class Scenario:
    """A toggle variant: ``step(n)`` makes n transitions; ``seen`` counts callbacks."""

    name = ""

    def __init__(self) -> None:
        self.seen = 0
        self.made = 0

    def count(self, *args: object, **kwargs: object) -> None:
        self.seen += 1

    def step(self, n: int) -> None:
        raise NotImplementedError

    def check(self) -> None:
        if self.seen != self.made:
            raise SystemExit(f"bench_py: {self.name}: made {self.made} transitions, subscriber saw {self.seen}")


class ReduxStore(Scenario):
    """The smallest store that does the same work: precondition, new state, notify."""

    name = "py_redux_store"

    class Store:
        def __init__(self, reducer: Callable[[dict, dict], dict], state: dict) -> None:
            self._reducer = reducer
            self._state = state
            self._subscribers: list[Callable[[dict, dict], None]] = []

        def subscribe(self, fn: Callable[[dict, dict], None]) -> None:
            self._subscribers.append(fn)

        def dispatch(self, action: dict) -> None:
            old = self._state
            new = self._reducer(old, action)
            if new is old:
                raise RuntimeError("rejected")
            self._state = new
            for fn in self._subscribers:
                fn(action, new)

    @staticmethod
    def reducer(state: dict, action: dict) -> dict:
        if action["kind"] == "transition" and state.get(action["feature"]) == action["from"]:
            return {**state, action["feature"]: action["into"]}
        return state

    def __init__(self) -> None:
        super().__init__()
        self.store = self.Store(self.reducer, {"T": "A"})
        self.store.subscribe(self.count)
        self.actions = (
            {"kind": "transition", "feature": "T", "from": "A", "into": "B"},
            {"kind": "transition", "feature": "T", "from": "B", "into": "A"},
        )
        self.phase = 0

    def step(self, n: int) -> None:
        dispatch, actions, phase = self.store.dispatch, self.actions, self.phase
        for _ in range(n):
            dispatch(actions[phase])
            phase ^= 1
        self.phase = phase
        self.made += n


class Transitions(Scenario):
    name = "py_transitions"

    def __init__(self) -> None:
        super().__init__()
        from transitions import Machine  # type: ignore[import-not-found]

        class Model:
            pass

        self.model = Model()
        Machine(model=self.model, states=["A", "B"], initial="A", auto_transitions=False,
                transitions=[{"trigger": "go", "source": "A", "dest": "B", "after": self.count},
                             {"trigger": "back", "source": "B", "dest": "A", "after": self.count}])
        self.phase = 0

    def step(self, n: int) -> None:
        go, back, phase = self.model.go, self.model.back, self.phase
        for _ in range(n):
            if phase == 0:
                go()
            else:
                back()
            phase ^= 1
        self.phase = phase
        self.made += n


class Uniflow(Scenario):
    """The public API as docs/python-guide.md shows it: d.transition(feature, into=, from_=)."""

    name = "py_uniflow"

    def __init__(self) -> None:
        super().__init__()
        import uniflow  # type: ignore[import-not-found]

        self.d = uniflow.Dispatcher()
        self.d.register({"feature": "T", "states": {"A": {}, "B": {}}})
        self.d.subscribe(self.count, when="AnyMutationOf<T>")
        self.d.initialize("T", "A")
        self.seen = 0
        self.phase = 0

    def step(self, n: int) -> None:
        transition, phase = self.d.transition, self.phase
        for _ in range(n):
            if phase == 0:
                transition("T", into="B", from_="A")
            else:
                transition("T", into="A", from_="B")
            phase ^= 1
        self.phase = phase
        self.made += n


class UniflowWatch(Uniflow):
    """``py_uniflow`` with ``d.watch("T.state", fn)`` in place of the subscriber: the
    value changes with every transition, so ``fn`` runs once per mutation."""

    name = "py_uniflow_watch"

    def __init__(self) -> None:
        Scenario.__init__(self)
        import uniflow  # type: ignore[import-not-found]

        if not hasattr(uniflow.Dispatcher, "watch"):
            raise Skip("Dispatcher.watch not available in this uniflow package")
        self.d = uniflow.Dispatcher()
        self.d.register({"feature": "T", "states": {"A": {}, "B": {}}})
        self.d.initialize("T", "A")
        self.last: object = None
        self.d.watch("T.state", self.count)
        if self.seen != 1:
            raise SystemExit(f"bench_py: {self.name}: the watch's first call was not made")
        self.seen = 0
        self.phase = 0

    def count(self, value: object) -> None:  # type: ignore[override]
        self.seen += 1
        self.last = value

    def check(self) -> None:
        super().check()
        expected = "B" if self.phase else "A"
        if self.last != expected:
            raise SystemExit(f"bench_py: {self.name}: last value {self.last!r}, T is in {expected}")


def calibrate(s: Scenario, ms: float) -> int:
    n = 100
    while True:
        t0 = time.perf_counter_ns()
        s.step(n)
        elapsed = time.perf_counter_ns() - t0
        if elapsed >= 10_000_000:
            return max(100, int(ms * 1e6 / (elapsed / n)) // 2 * 2)
        n *= 4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--time-ms", type=float, default=100)
    args = parser.parse_args()

    scenarios: list[Scenario] = []
    for kind in (Uniflow, UniflowWatch, ReduxStore, Transitions):
        try:
            scenarios.append(kind())
        except Skip as skip:
            print(json.dumps({"skipped": kind.name, "reason": str(skip)}), flush=True)
        except Exception as error:  # a missing package is a skipped row, not a failed run
            print(json.dumps({"skipped": kind.name, "reason": f"{type(error).__name__}: {error}"}), flush=True)
    iters = {}
    for s in scenarios:
        s.step(1000)
        iters[s.name] = calibrate(s, args.time_ms)
    for rep in range(args.reps):
        for s in scenarios:
            n = iters[s.name]
            t0 = time.perf_counter_ns()
            s.step(n)
            ns = (time.perf_counter_ns() - t0) / n
            print(json.dumps({"scenario": s.name, "rep": rep, "ns": round(ns, 3), "iters": n}), flush=True)
    for s in scenarios:
        s.check()
        print(json.dumps({"check": s.name, "applied": s.made, "notified": s.seen, "ok": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
