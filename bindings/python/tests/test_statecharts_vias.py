"""Via callables on a statechart's explicit actions (docs/statecharts.md): they get the
current payload and return the fields the action sets; the others keep their values."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import uniflow
from uniflow import Dispatcher, State

PLAYER: Dict[str, Any] = {
    "feature": "Player",
    "fields": {"volume": {"type": "number", "default": 5}},
    "states": {
        "Stopped": {"on": {"play": "Active"}},
        "Active": {"initial": "Playing", "fields": {"track": {"type": "string", "default": ""}},
                   "on": {"stop": "Stopped"},
                   "states": {"Playing": {"on": {"pause": "Paused"}}, "Paused": {"on": {"play": "Playing"}}}},
    },
    "initial": ["Stopped", "Active"],
}


@pytest.fixture
def d() -> Any:
    with Dispatcher() as dispatcher:
        dispatcher.register(PLAYER)
        yield dispatcher


def test_a_transitions_via_gets_the_current_payload_and_sets_the_fields_it_returns(d: Dispatcher) -> None:
    seen: List[Any] = []
    d.initialize("Player", "Stopped", via=lambda cur: seen.append(cur) or {"volume": 3})
    assert d.transition("Player", "Active.Paused", via=lambda cur: seen.append(cur) or {"track": "intro"}) is uniflow.OK
    assert seen == [None, {"volume": 3}]
    assert d.get("Player") == State("Active.Paused", {"volume": 3, "track": "intro"})
    assert d.transition("Player", "Playing", from_="Paused", via=lambda cur: None) is uniflow.OK
    assert d.get("Player") == State("Active.Playing", {"volume": 3, "track": "intro"})


def test_an_actualizations_via_computes_one_field_from_the_current_payload(d: Dispatcher) -> None:
    d.initialize("Player", "Active")
    d.actualize("Player", "Active", via=lambda cur: {"volume": cur["volume"] + 1})
    d.submit({"kind": "actualize", "feature": "Player", "in": "Playing"}, via=lambda cur: {"volume": cur["volume"] * 2})
    assert d.get("Player") == State("Active.Playing", {"volume": 12, "track": ""})


def test_decline_and_a_raising_via_change_nothing(d: Dispatcher) -> None:
    d.initialize("Player", "Stopped")
    with pytest.raises(uniflow.Rejected) as info:
        d.transition("Player", "Active", via=lambda cur: uniflow.DECLINE)
    assert info.value.message == "Player: the via callback declined the action"

    def broken(cur: Any) -> Any:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom") as raised:
        d.transition("Player", "Active", via=broken)
    assert any("UF_ECALLBACK" in note for note in getattr(raised.value, "__notes__", []))
    assert d.get("Player") == State("Stopped", {"volume": 5})


def test_a_via_payload_that_does_not_fit_is_a_schema_error(d: Dispatcher) -> None:
    d.initialize("Player", "Stopped")
    with pytest.raises(uniflow.SchemaError) as info:
        d.transition("Player", "Active", via=lambda cur: {"volume": "loud"})
    assert info.value.message == "Player.Active.volume: expected number, got string"
    with pytest.raises(uniflow.SchemaError) as info:
        d.actualize("Player", "Stopped", via=lambda cur: {"track": "x"})
    assert info.value.message == "Player.Stopped.track: unknown field"
    assert d.get("Player") == State("Stopped", {"volume": 5})


def test_a_via_with_a_payload_is_invalid_and_every_via_is_released(d: Dispatcher) -> None:
    from uniflow import _callbacks

    before = len(_callbacks._vias)
    d.initialize("Player", "Stopped")
    with pytest.raises(uniflow.InvalidArgument) as info:
        d.transition("Player", "Active", payload={"volume": 1}, via=lambda cur: None)
    assert info.value.message == "action has both a JSON payload and a via callback"
    d.transition("Player", "Active", via=lambda cur: {"volume": 1})
    with pytest.raises(uniflow.Rejected):
        d.transition("Player", "Active", via=lambda cur: uniflow.DECLINE)
    assert d.deinitialize("Player", via=lambda cur: {"ignored": True}) is uniflow.OK
    assert d.get("Player") is None
    assert len(_callbacks._vias) == before
