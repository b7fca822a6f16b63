"""The original UniFlow library's scenarios, in Python: given a model, when actions are submitted, then these
mutations and this whole GlobalModel (TCA-style exhaustive assertions)."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import uniflow
from conftest import Recorder


def test_file_downloading_runs_from_start_to_finish(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    d.subscribe(recorder, when="AnyMutationOf<FileDownloading>")
    assert d.get("FileDownloading") is None

    d.initialize("FileDownloading", "Starting")
    assert d.state == {"FileDownloading": {"state": "Starting", "payload": {}}}

    d.transition("FileDownloading", into="InProgress", from_="Starting", payload={"progress": 10})
    assert d.state == {"FileDownloading": {"state": "InProgress", "payload": {"progress": 10}}}

    d.actualize("FileDownloading", "InProgress", via=lambda cur: {"progress": cur["progress"] + 5}, id="chunk-2")
    assert d.get("FileDownloading") == uniflow.State("InProgress", {"progress": 15})

    d.actualize("FileDownloading", "InProgress", {"progress": 100})
    d.transition("FileDownloading", into="Completed", from_="InProgress", scope="test_seed", context="finish")
    assert d.state == {"FileDownloading": {"state": "Completed", "payload": {}}}

    with pytest.raises(uniflow.Rejected) as dead_end:
        d.transition("FileDownloading", into="Starting", from_="Completed")
    assert dead_end.value.message == ("FileDownloading cannot transition from Completed into Starting: "
                                      "not a declared transition")

    d.deinitialize("FileDownloading", from_="Completed")
    assert d.state == {} and d.get("FileDownloading") is None

    assert recorder.mutations == [
        {"seq": 1, "kind": "initialization", "feature": "FileDownloading", "old": None,
         "new": {"state": "Starting", "payload": {}},
         "action": {"kind": "initialize", "feature": "FileDownloading", "into": "Starting"}},
        {"seq": 2, "kind": "transition", "feature": "FileDownloading",
         "old": {"state": "Starting", "payload": {}}, "new": {"state": "InProgress", "payload": {"progress": 10}},
         "action": {"kind": "transition", "feature": "FileDownloading", "from": "Starting", "into": "InProgress"}},
        {"seq": 3, "kind": "actualization", "feature": "FileDownloading",
         "old": {"state": "InProgress", "payload": {"progress": 10}},
         "new": {"state": "InProgress", "payload": {"progress": 15}},
         "action": {"kind": "actualize", "feature": "FileDownloading", "in": "InProgress", "id": "chunk-2"}},
        {"seq": 4, "kind": "actualization", "feature": "FileDownloading",
         "old": {"state": "InProgress", "payload": {"progress": 15}},
         "new": {"state": "InProgress", "payload": {"progress": 100}},
         "action": {"kind": "actualize", "feature": "FileDownloading", "in": "InProgress"}},
        {"seq": 5, "kind": "transition", "feature": "FileDownloading",
         "old": {"state": "InProgress", "payload": {"progress": 100}}, "new": {"state": "Completed", "payload": {}},
         "action": {"kind": "transition", "feature": "FileDownloading", "from": "InProgress", "into": "Completed",
                    "scope": "test_seed", "context": "finish"}},
        {"seq": 6, "kind": "deinitialization", "feature": "FileDownloading",
         "old": {"state": "Completed", "payload": {}}, "new": None,
         "action": {"kind": "deinitialize", "feature": "FileDownloading", "from": "Completed"}},
    ]


def test_file_downloading_fails_with_defaults_filled_in(d: uniflow.Dispatcher) -> None:
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", "Failed", payload={"reason": "disk full"})
    assert d.state == {"FileDownloading": {"state": "Failed", "payload": {"reason": "disk full", "retries": 0}}}


def test_arithmetic_begin_set_explicit_then_inc_five(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    """begin: initialize Main via { val: 0 } and queue setExplicit(10) then incFive;
    the outer call returns once both ran: val is 15."""
    d.subscribe(recorder, when="AnyMutationOf<Main>")
    queued: List[Any] = []
    seen_by_inc_five: List[Any] = []

    def inc_five(cur: Dict[str, Any]) -> Dict[str, Any]:
        seen_by_inc_five.append(cur)
        return {"val": cur["val"] + 5}

    def begin(cur: Any) -> Dict[str, Any]:
        assert cur is None  # Main is absent
        queued.append(d.actualize("Main", "Main", {"val": 10}, context="setExplicit"))
        queued.append(d.actualize("Main", "Main", via=inc_five, context="incFive"))
        return {"val": 0}

    assert d.initialize("Main", "Main", via=begin, context="begin") is uniflow.OK
    assert queued == [uniflow.QUEUED, uniflow.QUEUED]
    assert seen_by_inc_five == [{"val": 10}]
    assert d.state == {"Main": {"state": "Main", "payload": {"val": 15}}}
    assert [(m["seq"], m["kind"], m["new"]["payload"]["val"], m["action"].get("context"))
            for m in recorder.mutations] == [
        (1, "initialization", 0, "begin"), (2, "actualization", 10, "setExplicit"),
        (3, "actualization", 15, "incFive")]


def test_search_progress_fails_then_cleans_up(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    d.subscribe(recorder, when="AnyMutationOf<Search>")
    progress: List[int] = []
    d.subscribe(lambda m: progress.append(m.new.payload["progress"]), when="SettingInto<Search.InProgress>")

    d.initialize("Search", "Ready")
    d.transition("Search", "InProgress", from_="Ready", payload={"query": "uniflow", "progress": 10})
    for percent in (30, 70):
        d.actualize("Search", "InProgress", via=lambda cur, p=percent: {**cur, "progress": p})
    assert d.state == {"Search": {"state": "InProgress", "payload": {"query": "uniflow", "progress": 70}}}

    d.transition("Search", "Failed", from_="InProgress", payload={"reason": "network down"})
    assert d.state == {"Search": {"state": "Failed", "payload": {"reason": "network down"}}}
    with pytest.raises(uniflow.Rejected):
        d.actualize("Search", "InProgress", {"query": "uniflow", "progress": 80})

    # Cleanup: back to Ready, then out of the model.
    d.transition("Search", "Ready", from_="Failed")
    d.deinitialize("Search", from_="Ready")
    assert d.state == {}

    assert progress == [10, 30, 70]
    assert [(m["kind"], m["old"] and m["old"]["state"], m["new"] and m["new"]["state"])
            for m in recorder.mutations] == [
        ("initialization", None, "Ready"), ("transition", "Ready", "InProgress"),
        ("actualization", "InProgress", "InProgress"), ("actualization", "InProgress", "InProgress"),
        ("transition", "InProgress", "Failed"), ("transition", "Failed", "Ready"),
        ("deinitialization", "Ready", None)]


def test_search_progress_must_be_an_integer(d: uniflow.Dispatcher) -> None:
    d.initialize("Search", "Ready")
    with pytest.raises(uniflow.SchemaError) as info:
        d.transition("Search", "InProgress", payload={"query": "q", "progress": 10.5})
    assert "Search.InProgress.progress" in info.value.message
    assert d.get("Search") == uniflow.State("Ready", {})


def test_arithmetic_set_explicit_to_the_current_value_is_declined(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    """setExplicit(value): actualize via { value }, declining when it would change nothing."""
    d.initialize("Main", "Main", payload={"val": 15})
    d.subscribe(recorder)

    def set_explicit(value: int) -> Any:
        return lambda cur: uniflow.DECLINE if cur["val"] == value else {"val": value}

    with pytest.raises(uniflow.Rejected) as declined:
        d.actualize("Main", "Main", via=set_explicit(15), context="setExplicit")
    assert declined.value.message == "Main: the via callback declined the action"
    assert d.state == {"Main": {"state": "Main", "payload": {"val": 15}}}
    assert recorder.mutations == []

    assert d.actualize("Main", "Main", via=set_explicit(20), context="setExplicit") is uniflow.OK
    assert d.state == {"Main": {"state": "Main", "payload": {"val": 20}}}
    assert recorder.mutations == [
        {"seq": 2, "kind": "actualization", "feature": "Main",
         "old": {"state": "Main", "payload": {"val": 15}}, "new": {"state": "Main", "payload": {"val": 20}},
         "action": {"kind": "actualize", "feature": "Main", "in": "Main", "context": "setExplicit"}}]


def test_actions_on_an_uninitialized_feature_are_rejected_naming_it(d: uniflow.Dispatcher,
                                                                      recorder: Recorder) -> None:
    d.subscribe(recorder)
    ran: List[Any] = []
    rejected = [
        (lambda: d.actualize("Main", "Main", {"val": 1}), "Main is not initialized (expected state Main)"),
        (lambda: d.deinitialize("Main"), "Main is not initialized"),
        (lambda: d.transition("Main", "Main", same=True, payload={"val": 1}), "Main is not initialized"),
        (lambda: d.trigger("Main"), "Main is not initialized"),
        # A via never runs when the precondition fails.
        (lambda: d.actualize("Main", "Main", via=ran.append), "Main is not initialized (expected state Main)"),
        (lambda: d.deinitialize("Main", from_="Main", via=ran.append), "Main is not initialized (expected state Main)"),
    ]
    for submit, message in rejected:
        with pytest.raises(uniflow.Rejected) as info:
            submit()
        assert info.value.message == message
    assert ran == []
    assert d.state == {} and recorder.mutations == []
