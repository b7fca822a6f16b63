"""Keyed instances from Python: key= on every action and on get, m.key, filters naming
one instance, and d.instance(...) as a context manager."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import uniflow
from uniflow import Dispatcher, State

DOWNLOAD: Dict[str, Any] = {
    "feature": "Download",
    "instances": "keyed",
    "states": {"Starting": {}, "InProgress": {"fields": {"progress": "number"}}, "Completed": {}},
    "initial": ["Starting"],
    "transitions": {"Starting": ["InProgress"], "InProgress": ["InProgress", "Completed"]},
}
LAMP: Dict[str, Any] = {"feature": "Lamp", "states": {"On": {}}}


@pytest.fixture
def d() -> Any:
    with Dispatcher() as d:
        d.register([DOWNLOAD, LAMP])
        yield d


def test_every_action_method_takes_a_key(d: Dispatcher) -> None:
    d.initialize("Download", "Starting", key="a_pdf")
    d.transition("Download", into="InProgress", payload={"progress": 0}, key="a_pdf")
    d.actualize("Download", "InProgress", {"progress": 50}, key="a_pdf")
    d.trigger("Download", key="a_pdf")
    d.submit({"kind": "transition", "feature": "Download", "key": "a_pdf", "into": "Completed"})
    assert d.get("Download", key="a_pdf") == State("Completed", {})
    d.deinitialize("Download", key="a_pdf")
    assert d.get("Download", key="a_pdf") is None


def test_instances_live_side_by_side_in_creation_order(d: Dispatcher) -> None:
    d.initialize("Download", "Starting", key="b")
    d.initialize("Download", "Starting", key="a")
    d.transition("Download", into="InProgress", payload={"progress": 10}, key="a")
    assert list(d.state["Download"]) == ["b", "a"]
    assert d.states() == {"Download": {"b": State("Starting", {}),
                                       "a": State("InProgress", {"progress": 10})}}
    d.deinitialize("Download", key="b")
    d.deinitialize("Download", key="a")
    assert "Download" not in d.state


def test_mutations_carry_their_key_and_filters_name_one_instance(d: Dispatcher) -> None:
    everything: List[Any] = []
    only_b: List[Any] = []
    d.subscribe(lambda m: everything.append(m.key))
    d.subscribe(lambda m: only_b.append((m.kind, m.key, m.new)), when="AnyMutationOf<Download[b]>")
    d.initialize("Download", "Starting", key="a")
    d.initialize("Download", "Starting", key="b")
    d.initialize("Lamp", "On")
    assert everything == ["a", "b", None]
    assert only_b == [(uniflow.MutationKind.INITIALIZATION, "b", State("Starting", {}))]


def test_the_instance_context_manager_deinitializes_on_exit(d: Dispatcher) -> None:
    with d.instance("Download", "a_pdf", into="Starting") as dl:
        assert dl.get() == State("Starting", {})
        dl.transition("InProgress", payload={"progress": 5})
        dl.actualize("InProgress", {"progress": 6})
        assert d.get("Download", key="a_pdf") == State("InProgress", {"progress": 6})
    assert d.get("Download", key="a_pdf") is None


def test_an_instance_ended_inside_the_block_is_not_ended_twice(d: Dispatcher) -> None:
    with d.instance("Download", "a_pdf", into="Starting") as dl:
        dl.deinitialize()
    assert d.get("Download", key="a_pdf") is None


def test_the_instance_is_deinitialized_when_the_block_raises(d: Dispatcher) -> None:
    with pytest.raises(RuntimeError):
        with d.instance("Download", "a_pdf", into="Starting"):
            raise RuntimeError("boom")
    assert d.get("Download", key="a_pdf") is None


def test_keys_are_checked(d: Dispatcher) -> None:
    cases = {
        "": "uf_action.key: a key must not be empty",
        "a.b": "uf_action.key: 'a.b' contains '.'",
        "a b": "uf_action.key: 'a b' contains a blank",
        "a[": "uf_action.key: 'a[' contains '['",
        "a<": "uf_action.key: 'a<' contains '<'",
        "a,": "uf_action.key: 'a,' contains ','",
        "x" * 257: "uf_action.key: a key is at most 256 bytes, got 257",
    }
    for key, message in cases.items():
        with pytest.raises(uniflow.InvalidArgument) as info:
            d.initialize("Download", "Starting", key=key)
        assert str(info.value) == message
    with pytest.raises(uniflow.InvalidArgument) as info:
        d.initialize("Download", "Starting")
    assert str(info.value) == "Download is keyed: an action on it needs a key"
    with pytest.raises(uniflow.InvalidArgument) as info:
        d.initialize("Lamp", "On", key="k")
    assert str(info.value) == "Lamp is a single feature: an action on it takes no key"
    # The same checks on JSON are schema errors.
    with pytest.raises(uniflow.SchemaError) as info:
        d.submit({"kind": "initialize", "feature": "Download", "into": "Starting", "key": "a.b"})
    assert "'a.b' contains '.'" in str(info.value)
    assert d.state == {}


def test_live_and_dead_keys_are_rejections(d: Dispatcher) -> None:
    d.initialize("Download", "Starting", key="z")
    with pytest.raises(uniflow.Rejected) as info:
        d.initialize("Download", "Starting", key="z")
    assert str(info.value) == "Download[z] is already initialized (in state Starting)"
    with pytest.raises(uniflow.Rejected) as info:
        d.transition("Download", into="InProgress", payload={"progress": 1}, key="q")
    assert str(info.value) == "Download[q] is not initialized"


def test_get_names_an_instance(d: Dispatcher) -> None:
    with pytest.raises(uniflow.InvalidArgument) as info:
        d.get("Download")
    assert str(info.value) == "Download is keyed: name an instance with key="
    assert d.get("Download", key="nope") is None
    d.initialize("Download", "Starting", key="x")
    with pytest.raises(uniflow.InvalidArgument):
        d.get("Download")
    with pytest.raises(uniflow.SchemaError) as info:
        d.get("Lamp", key="x")
    assert str(info.value) == "Lamp is a single feature: it has no instances"


def test_a_filter_naming_an_instance_of_a_single_feature_is_refused(d: Dispatcher) -> None:
    with pytest.raises(uniflow.SchemaError) as info:
        d.subscribe(print, when="AnyMutationOf<Lamp[x]>")
    assert "Lamp" in str(info.value)


def test_snapshots_keep_instances(d: Dispatcher) -> None:
    d.initialize("Download", "Starting", key="a")
    d.transition("Download", into="InProgress", payload={"progress": 3}, key="a")
    snapshot = d.snapshot()
    with Dispatcher() as other:
        other.register([DOWNLOAD, LAMP])
        other.restore(snapshot)
        assert other.get("Download", key="a") == State("InProgress", {"progress": 3})
        with pytest.raises(uniflow.NotFound) as info:
            other.restore({"Download": {"a": {"state": "Nowhere", "payload": {}}}})
        assert str(info.value) == "unknown state 'Nowhere' of feature Download"
        with pytest.raises(uniflow.SchemaError):
            other.restore({"Download": {"a": "InProgress"}})
        assert other.get("Download", key="a") == State("InProgress", {"progress": 3})


def test_getting_an_absent_feature_reads_the_definitions_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whether it is keyed decides between None and InvalidArgument; a service polling
    # an absent feature must not pay for every definition on each call.
    with Dispatcher() as d:
        d.register([LAMP, DOWNLOAD])
        reads: List[int] = []
        definitions = type(d).definitions
        monkeypatch.setattr(type(d), "definitions",
                            property(lambda self: reads.append(1) or definitions.fget(self)))  # type: ignore[attr-defined]
        for _ in range(3):
            assert d.get("Lamp") is None
            with pytest.raises(uniflow.InvalidArgument):
                d.get("Download")
        assert len(reads) == 2
