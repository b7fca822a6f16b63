"""Statecharts from Python (docs/statecharts.md): configurations as a state's name,
State.active and Dispatcher.state_active, and services with register_service."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import uniflow
from uniflow import Dispatcher, Invocation, State

SOUND: Dict[str, Any] = {
    "feature": "Sound", "type": "parallel",
    "states": {"Audio": {"initial": "Off", "states": {"On": {"on": {"toggle": "Audio.Off"}}, "Off": {"on": {"toggle": "Audio.On"}}}},
               "Video": {"initial": "Off", "states": {"On": {}, "Off": {}}}},
}

FETCH: Dict[str, Any] = {
    "feature": "Fetch", "fields": {"result": {"type": "any", "default": None}},
    "states": {"Idle": {"on": {"load": "Loading"}},
               "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"url": "u"},
                                      "onDone": {"into": "Done", "actions": [{"assign": {"result": {"$": {"var": "event.payload.output"}}}}]},
                                      "onError": "Idle"}},
               "Done": {"type": "final"}},
}


def test_the_configuration_is_the_state_name_and_any_level_can_be_asked() -> None:
    with Dispatcher() as d:
        d.register(SOUND)
        d.initialize("Sound", "Audio")
        d.send("Sound", "toggle")
        state = d.get("Sound")
        assert state == State("Audio.On,Video.Off", {})
        assert state.active("Audio") and state.active("Audio.On") and state.active("Video.Off")
        assert not state.active("Video.On")
        assert d.state_active("Sound", "Audio.On")
        assert not d.state_active("Sound", "Video.On")
        with pytest.raises(uniflow.SchemaError, match=r"ambiguous state 'On' \(Audio.On, Video.On\)"):
            d.state_active("Sound", "On")
        with pytest.raises(uniflow.NotFound):
            d.state_active("Sound", "Nope")


def test_a_service_starts_with_its_input_and_its_result_is_an_event() -> None:
    started: List[Invocation] = []
    with Dispatcher() as d:
        @d.service("fetch")
        def fetch(inv: Invocation) -> None:
            started.append(inv)

        d.register(FETCH)
        d.initialize("Fetch", "Idle")
        d.send("Fetch", "load")
        assert [(i.feature, i.key, i.id, i.input) for i in started] == [("Fetch", None, "get", {"url": "u"})]
        assert d.state["Fetch"]["invocations"] == [{"id": "get", "src": "fetch", "input": {"url": "u"}}]
        started[0].done({"size": 3})
        assert d.state["Fetch"] == {"state": "Done", "payload": {"result": {"size": 3}}, "status": "done"}


def test_a_service_that_raises_fails_its_start_and_the_exception_comes_back() -> None:
    with Dispatcher() as d:
        def broken(inv: Invocation) -> None:
            raise RuntimeError("no network")

        d.register_service("fetch", broken)
        d.register(FETCH)
        d.initialize("Fetch", "Idle")
        with pytest.raises(RuntimeError, match="no network"):
            d.send("Fetch", "load")
        # The start failed: onError took the instance back.
        assert d.get("Fetch").name == "Idle"


def test_stop_runs_when_the_state_is_left() -> None:
    stopped: List[int] = []
    definition = dict(FETCH, states=dict(FETCH["states"], Loading=dict(FETCH["states"]["Loading"], on={"cancel": "Idle"})))
    with Dispatcher() as d:
        d.register_service("fetch", lambda inv: None, stop=lambda inv: stopped.append(inv.serial))
        d.register(definition)
        d.initialize("Fetch", "Idle")
        d.send("Fetch", "load")
        d.send("Fetch", "cancel")
        assert len(stopped) == 1
        assert d.service_done(stopped[0], 1) == uniflow.Status.OK
        assert d.get("Fetch").name == "Idle"


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="Graphviz's dot is not installed")
def test_dot_accepts_a_statechart_drawn_as_nested_clusters() -> None:
    import subprocess
    with Dispatcher() as d:
        d.register_service("fetch", lambda inv: None)
        d.register([SOUND, FETCH])
        text = d.graph()
        assert 'subgraph "cluster_Sound.Audio"' in text and "newrank=true" in text
        drawn = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True)
        assert drawn.returncode == 0, drawn.stderr


def test_a_replay_starts_what_ran_with_the_input_it_started_with(tmp_path: Any) -> None:
    journal = str(tmp_path / "fetch.jsonl")
    fetch = {"feature": "Fetch", "fields": {"n": {"type": "number", "default": 1}},
             "states": {"Idle": {"on": {"load": "Loading"}},
                        "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"n": {"$": {"var": "feature.payload.n"}}}},
                                    "on": {"bump": {"actions": [{"assign": {"n": 2}}]}}}}}
    with Dispatcher(journal=journal) as d:
        d.register_service("fetch", lambda inv: None)
        d.register(fetch)
        d.batch([{"kind": "initialize", "feature": "Fetch", "into": "Idle"},
                        {"kind": "send", "feature": "Fetch", "event": "load"}])
        d.send("Fetch", "bump")
        written = d.state
    assert written["Fetch"]["invocations"] == [{"id": "get", "src": "fetch", "input": {"n": 1}}]
    started: List[Invocation] = []
    with Dispatcher() as d:
        d.register_service("fetch", started.append)
        d.register(fetch)
        d.replay(journal)
        assert d.state == written
        assert [(i.id, i.input) for i in started] == [("get", {"n": 1})]


def test_the_inspector_follows_a_journal_of_statecharts_with_services(tmp_path: Any) -> None:
    from uniflow.inspect._sources import JournalSource

    journal = str(tmp_path / "fetch.jsonl")
    seen: List[int] = []
    with Dispatcher(journal=journal) as d:
        d.register_service("fetch", lambda inv: None)
        d.register(FETCH)
        d.subscribe(lambda m: seen.append(m.seq))
        d.batch([{"kind": "initialize", "feature": "Fetch", "into": "Idle"},
                        {"kind": "send", "feature": "Fetch", "event": "load"}])
        invocation_lines = [line for line in open(journal) if '"invocations"' in line]
        assert invocation_lines and all('"batch"' in line for line in invocation_lines)
        written = d.state
    source = JournalSource([FETCH], journal)
    source.check()  # its scratch dispatcher runs a placeholder for `fetch`
    source.poll()
    assert source.bad_lines == 0
    assert source.history.last_seq == seen[-1]
    assert source.history.place("Fetch", None)["state"] == written["Fetch"]["state"]
