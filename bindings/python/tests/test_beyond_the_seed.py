"""Issue 8's Python surface: ``Dispatcher.batch(...)``, ``snapshot()``/``restore()``,
the ``journal=`` option, ``replay()`` and ``graph()``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

import uniflow
from conftest import MAIN, TOGGLE

COUNTER: Dict[str, Any] = {
    "feature": "Counter",
    "states": {"Counting": {"fields": {"n": "integer"}}},
    "bindings": [{"scenario": "count toggles", "when": "Transition<Toggle>",
                  "then": {"submit": [{"kind": "actualize", "feature": "Counter", "in": "Counting",
                                       "payload": {"n": {"$": {"+": [{"var": "model.Counter.payload.n"}, 1]}}}}]}}],
}


def test_batch_is_named_as_the_issue_says() -> None:
    with uniflow.Dispatcher() as d:
        d.register(TOGGLE)
        assert d.batch([{"kind": "initialize", "feature": "Toggle", "into": "Off"},
                        {"kind": "transition", "feature": "Toggle", "into": "On"}]) is uniflow.OK
        assert d.get("Toggle") == uniflow.State("On", {})
        with pytest.raises(uniflow.Rejected) as info:
            d.batch([{"kind": "transition", "feature": "Toggle", "into": "Off"},
                     {"kind": "transition", "feature": "Toggle", "into": "Off"}])
        assert info.value.message == "batch[1]: Toggle is already in state Off"
        assert d.get("Toggle") == uniflow.State("On", {})


def test_snapshot_restores_on_a_fresh_dispatcher() -> None:
    with uniflow.Dispatcher() as source:
        source.register([TOGGLE, MAIN])
        source.initialize("Toggle", "On")
        source.initialize("Main", "Main", payload={"val": 7})
        snapshot = source.snapshot()
    with uniflow.Dispatcher() as copy:
        copy.register([TOGGLE, MAIN])
        seen: List[uniflow.Mutation] = []
        copy.subscribe(seen.append)
        assert copy.restore(snapshot) is uniflow.OK
        assert copy.snapshot() == snapshot
        assert seen == []


def test_a_journal_replays_to_the_model_bindings_and_vias_made(tmp_path: Path) -> None:
    journal = tmp_path / "session.jsonl"
    with uniflow.Dispatcher(journal=journal, journal_sync=True) as writer:
        writer.register([TOGGLE, MAIN, COUNTER])
        writer.initialize("Counter", "Counting", payload={"n": 0})
        writer.initialize("Toggle", "Off")
        writer.transition("Toggle", into="On")     # the binding counts it
        writer.initialize("Main", "Main", via=lambda cur: {"val": 41})
        writer.actualize("Main", "Main", via=lambda cur: {"val": cur["val"] + 1})
        expected = writer.state
    assert expected["Counter"]["payload"] == {"n": 1} and expected["Main"]["payload"] == {"val": 42}
    lines = journal.read_text().splitlines()
    assert json.loads(lines[0])["uniflow_journal"] == 1
    with uniflow.Dispatcher() as reader:
        reader.register([TOGGLE, MAIN, COUNTER])
        seen: List[uniflow.Mutation] = []
        reader.subscribe(seen.append)
        assert reader.replay(journal) is uniflow.OK
        assert reader.state == expected
        assert seen == []  # no notifications, no bindings


def test_a_journal_of_other_definitions_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "other.jsonl"
    with uniflow.Dispatcher(journal=str(journal)) as writer:
        writer.register(TOGGLE)
        writer.initialize("Toggle", "On")
    with uniflow.Dispatcher() as reader:
        reader.register([TOGGLE, MAIN])
        with pytest.raises(uniflow.SchemaError) as info:
            reader.replay(journal)
        assert "was written for other definitions" in info.value.message
        assert reader.state == {}
        with pytest.raises(uniflow.FileError):
            reader.replay(tmp_path / "missing.jsonl")


def test_a_journal_that_cannot_be_opened_is_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(uniflow.FileError) as info:
        uniflow.Dispatcher(journal=tmp_path / "no" / "such" / "folder.jsonl")
    assert "cannot open journal" in info.value.message


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_is_dot_that_graphviz_accepts() -> None:
    with uniflow.Dispatcher() as d:
        d.register([TOGGLE, COUNTER])
        for feature in (None, "Toggle", "Counter"):
            dot = d.graph(feature)
            result = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0 and result.stderr == "", result.stderr
            assert result.stdout.lstrip().startswith("<?xml")
        with pytest.raises(uniflow.NotFound):
            d.graph("Nope")


def test_restored_features_bindings_become_active_and_removed_ones_stop() -> None:
    """A restore activates the restored features' model bindings and sends no mutation."""
    with uniflow.Dispatcher() as d:
        d.register([TOGGLE, COUNTER])
        seen: List[uniflow.Mutation] = []
        d.subscribe(seen.append, when="AnyMutationOf<Counter>")
        d.restore({"Toggle": {"state": "On"}, "Counter": {"state": "Counting", "payload": {"n": 5}}})
        assert seen == []
        d.transition("Toggle", into="Off")
        assert d.state == {"Toggle": {"state": "Off", "payload": {}},
                           "Counter": {"state": "Counting", "payload": {"n": 6}}}
        d.restore({"Toggle": {"state": "On"}})  # Counter absent: its binding is inactive
        d.transition("Toggle", into="Off")
        assert d.state == {"Toggle": {"state": "Off", "payload": {}}}
        with pytest.raises(uniflow.SchemaError) as info:
            d.restore({"Toggle": {"state": "On", "extra": 1}})
        assert info.value.message == "Toggle: unknown key 'extra'"
        assert d.state == {"Toggle": {"state": "Off", "payload": {}}}


def test_a_restore_on_a_journaling_dispatcher_is_journaled(tmp_path: Path) -> None:
    """A restore on a journaling dispatcher is journaled too, so that a replay stays exact."""
    journal = tmp_path / "restored.jsonl"
    with uniflow.Dispatcher(journal=journal) as writer:
        writer.register([TOGGLE, MAIN])
        writer.initialize("Toggle", "On")
        writer.restore({"Main": {"state": "Main", "payload": {"val": 3}}})  # Toggle is gone
        writer.actualize("Main", "Main", payload={"val": 4})
        expected = writer.state
    assert expected == {"Main": {"state": "Main", "payload": {"val": 4}}}
    with uniflow.Dispatcher() as reader:
        reader.register([TOGGLE, MAIN])
        reader.replay(journal)
        assert reader.state == expected
