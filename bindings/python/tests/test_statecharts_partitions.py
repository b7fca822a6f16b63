"""Statecharts on partitioned dispatchers (docs/statecharts.md, "On partitioned
dispatchers"): followers copy an instance's configuration, history, invocations and
status from the records without running services, and services run at the owner
only, once the record holds.

Nodes are dispatchers in one process joined by a list that plays the log, as in
test_partitions.py."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import pytest

import uniflow
from uniflow import Invocation

# Order[a] lives in partition 0 of 4.
ORDER: Dict[str, Any] = {
    "feature": "Order", "instances": "keyed", "fields": {"n": {"type": "any", "default": 1}},
    "states": {
        "Idle": {"on": {"load": "Loading"}},
        "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"n": {"$": {"var": "feature.payload.n"}}},
                               "onDone": {"into": "Active", "actions": [{"assign": {"n": {"$": {"var": "event.payload.output"}}}}]}},
                    "on": {"cancel": "Idle"}},
        "Active": {"initial": "Playing", "on": {"stop": "Idle"},
                   "states": {"Playing": {"on": {"pause": "Paused"}}, "Paused": {}, "Resume": {"type": "history"}}},
    },
}


class Log:
    """Each partition's records in order; ``refuse`` makes the next offer fail."""

    def __init__(self) -> None:
        self.records: Dict[int, List[str]] = {}
        self.refuse: Optional[BaseException] = None

    def sink(self, text: str) -> None:
        if self.refuse is not None:
            refused, self.refuse = self.refuse, None
            raise refused
        record = json.loads(text)
        kept = self.records.setdefault(record["partition"], [])
        if record["version"] != len(kept) + 1:
            raise uniflow.Conflict("another record got there first")
        kept.append(text)


class Node:
    """A partitioned dispatcher whose `fetch` service records what it is asked."""

    def __init__(self, name: str, log: Log) -> None:
        self.log = log
        self.applied: Dict[int, int] = {}
        self.started: List[Invocation] = []
        self.stopped: List[int] = []
        self.d = uniflow.Dispatcher(partitions=4, node=name)
        self.d.register_service("fetch", self.started.append, lambda inv: self.stopped.append(inv.serial))
        self.d.register(ORDER)
        self.d.record_sink(log.sink)

    def catch_up(self) -> None:
        for p in sorted(self.log.records):
            for text in self.log.records[p][self.applied.get(p, 0):]:
                self.d.apply_record(text)
            self.applied[p] = len(self.log.records[p])

    @property
    def model(self) -> str:
        """The model as JSON text: the order of its keys counts too."""
        return json.dumps(self.d.state)


def test_a_follower_has_the_writers_model_and_runs_no_service() -> None:
    log = Log()
    a, b = Node("a", log), Node("b", log)
    a.d.claim(0)
    a.d.initialize("Order", "Idle", key="a")
    a.d.send("Order", "load", key="a")
    assert a.d.state["Order"]["a"]["invocations"] == [{"id": "get", "src": "fetch", "input": {"n": 1}}]
    b.catch_up()
    assert b.model == a.model
    a.started[0].done(7)
    a.d.send("Order", "pause", key="a")
    a.d.send("Order", "stop", key="a")
    b.catch_up()
    assert b.d.state == {"Order": {"a": {"state": "Idle", "payload": {"n": 7},
                                         "history": {"Active.Resume": ["Active.Paused"]}}}}
    assert b.model == a.model
    assert b.started == [] and b.stopped == []


def test_a_refused_record_starts_and_stops_no_service() -> None:
    log = Log()
    a = Node("a", log)
    a.d.claim(0)
    a.d.initialize("Order", "Idle", key="a")
    log.refuse = uniflow.Conflict("another record got there first")
    with pytest.raises(uniflow.Conflict):
        a.d.send("Order", "load", key="a")
    assert a.started == []
    assert a.d.state["Order"]["a"]["state"] == "Idle"
    a.d.send("Order", "load", key="a")
    assert len(a.started) == 1
    log.refuse = uniflow.Unavailable("no answer")
    with pytest.raises(uniflow.Unavailable):
        a.d.send("Order", "cancel", key="a")
    assert a.stopped == []
    assert a.d.state["Order"]["a"]["state"] == "Loading"


def test_a_release_stops_the_service_and_the_next_owner_starts_it_again() -> None:
    log = Log()
    a, b = Node("a", log), Node("b", log)
    a.d.claim(0)
    a.d.initialize("Order", "Idle", key="a")
    a.d.send("Order", "load", key="a")
    first = a.started[0]
    a.d.release(0)
    assert a.stopped == [first.serial]
    with pytest.raises(uniflow.NotOwner) as raised:
        first.done(5)
    assert raised.value.message == (f"uf_service_done: invocation {first.serial} of Order[a] was stopped here: "
                                    "Order[a] lives in partition 0, owned by no node")
    b.catch_up()
    b.d.claim(0)
    assert [(i.key, i.id, i.input) for i in b.started] == [("a", "get", {"n": 1})]
    b.started[0].done(5)
    assert b.d.state["Order"]["a"] == {"state": "Active.Playing", "payload": {"n": 5}}
    a.catch_up()
    assert a.model == b.model
