"""A model shared across processes: partitions, owners and records (docs/scale-out.md).

Nodes here are dispatchers in one process joined by a list that plays the log: it
accepts a record only when its version follows the partition's last, as the real
log's compare-and-swap does."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import uniflow

DOWNLOAD: Dict[str, Any] = {
    "feature": "Download", "instances": "keyed",
    "states": {"Queued": {}, "Running": {"fields": {"progress": "number"}}, "Done": {}},
}
COUNTER: Dict[str, Any] = {"feature": "Counter", "states": {"Idle": {}, "Busy": {}}}


class Log:
    """Each partition's records in order; a record whose version does not follow is refused."""

    def __init__(self) -> None:
        self.records: Dict[int, List[str]] = {}

    def sink(self, text: str) -> None:
        record = json.loads(text)
        kept = self.records.setdefault(record["partition"], [])
        if record["version"] != len(kept) + 1:
            raise uniflow.Conflict("another record got there first")
        kept.append(text)


def node(name: str, log: Log) -> uniflow.Dispatcher:
    d = uniflow.Dispatcher(partitions=4, node=name)
    d.register([DOWNLOAD, COUNTER])
    d.record_sink(log.sink)
    return d


def catch_up(d: uniflow.Dispatcher, log: Log) -> None:
    for p in sorted(log.records):
        for text in log.records[p]:
            d.apply_record(text)


def test_where_instances_live() -> None:
    with uniflow.Dispatcher(partitions=4, node="a") as d:
        d.register([DOWNLOAD, COUNTER])
        assert [d.partition_of("Download", k) for k in ("a", "b", "c", "d")] == [0, 1, 2, 3]
        assert d.partition_of("Counter") == 4
        with pytest.raises(uniflow.InvalidArgument, match="Download is keyed: a key is required"):
            d.partition_of("Download")
        with pytest.raises(uniflow.NotFound):
            d.partition_of("Nope")


def test_options_go_together() -> None:
    with pytest.raises(uniflow.InvalidArgument, match="option 'partitions' needs option 'node'"):
        uniflow.Dispatcher(partitions=4)
    with pytest.raises(uniflow.InvalidArgument, match="must be an integer from 1 to 1024"):
        uniflow.Dispatcher(partitions=0, node="a")


def test_a_dispatcher_without_partitions_refuses_their_methods() -> None:
    with uniflow.Dispatcher() as d:
        with pytest.raises(uniflow.Misuse, match="not partitioned"):
            d.partitions()
        with pytest.raises(uniflow.Misuse, match="not partitioned"):
            d.claim(0)


def test_only_the_owner_writes_and_followers_end_with_its_model() -> None:
    log = Log()
    with node("a", log) as a, node("b", log) as b:
        with pytest.raises(uniflow.NotOwner, match=r"Counter lives in the global partition \(4\), owned by no node"):
            a.initialize("Counter", "Idle")
        a.claim(4)
        a.claim(1)
        a.initialize("Counter", "Idle")
        a.initialize("Download", "Queued", key="b")
        a.transition("Download", into="Running", key="b", payload={"progress": 5})
        heard: List[uniflow.Mutation] = []
        b.subscribe(heard.append)
        catch_up(b, log)
        assert b.state == a.state
        assert [m.foreign for m in heard] == [True, True, True]
        assert [m.new for m in heard if m.feature == "Download"][-1] == uniflow.State("Running", {"progress": 5})
        assert {"p": 4, "version": 2, "owner": "a", "mine": False} in b.partitions()
        with pytest.raises(uniflow.NotOwner, match="owned by node 'a'"):
            b.transition("Counter", into="Busy")


def test_a_refused_record_changes_nothing_and_raises_as_the_sink_did() -> None:
    log = Log()
    with node("a", log) as a:
        a.claim(4)
        seen: List[uniflow.Mutation] = []
        a.subscribe(seen.append)

        def unavailable(text: str) -> None:
            raise uniflow.Unavailable("no answer")

        a.record_sink(unavailable)
        with pytest.raises(uniflow.Unavailable, match="its outcome is unknown until the log is read"):
            a.initialize("Counter", "Idle")
        assert a.state == {}
        assert seen == []

        def broken(text: str) -> None:
            raise KeyError("the sink's own bug")

        a.record_sink(broken)
        with pytest.raises(KeyError, match="the sink's own bug"):
            a.initialize("Counter", "Idle")
        assert a.state == {}
        a.record_sink(log.sink)
        a.initialize("Counter", "Idle")
        assert [m.foreign for m in seen] == [False]


def test_a_stale_owner_gets_a_conflict_then_learns_it_owns_nothing() -> None:
    log = Log()
    with node("a", log) as a, node("b", log) as b:
        a.claim(4)
        a.initialize("Counter", "Idle")
        catch_up(b, log)
        b.claim(4)
        with pytest.raises(uniflow.Conflict):
            a.transition("Counter", into="Busy")
        catch_up(a, log)
        with pytest.raises(uniflow.NotOwner, match="owned by node 'b'"):
            a.transition("Counter", into="Busy")


def test_applying_refuses_gaps() -> None:
    log = Log()
    with node("a", log) as a, node("b", log) as b:
        a.claim(4)
        a.initialize("Counter", "Idle")
        with pytest.raises(uniflow.Gap, match="this node has applied up to version 0"):
            b.apply_record(log.records[4][1])
        b.apply_record(log.records[4][0])
        b.apply_record(log.records[4][0])
        b.apply_record(log.records[4][1])
        assert b.state == a.state


def test_a_partition_snapshot_starts_a_fresh_node() -> None:
    log = Log()
    with node("a", log) as a, node("c", log) as c:
        a.claim(4)
        a.claim(0)
        a.initialize("Counter", "Idle")
        a.initialize("Download", "Queued", key="a")
        for p in (0, 4):
            c.apply_record(a.snapshot_partition(p))
        assert c.state == a.state
        assert {"p": 0, "version": 2, "owner": "a", "mine": False} in c.partitions()
        a.transition("Download", into="Done", key="a")
        catch_up(c, log)
        assert c.state == a.state
