"""Events from Python: d.send along a definition's `on` targets (the transfer flow of
examples/definitions/transfer.json), with keys, interceptors, and the kinds' spellings."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import uniflow
from uniflow import ActionKind, Dispatcher, MutationKind, State

from conftest import DEFINITIONS

DOOR: Dict[str, Any] = {
    "feature": "Door",
    "instances": "keyed",
    "states": {"Closed": {"on": {"open": "Open"}}, "Open": {"on": {"close": "Closed"}}},
    "initial": ["Closed"],
    "transitions": {"Closed": ["Open"], "Open": ["Closed"]},
}


@pytest.fixture
def transfer() -> Any:
    with Dispatcher() as d:
        d.register(DEFINITIONS / "transfer.json")
        d.initialize("Transfer", "Amount")
        yield d


def test_the_definition_chooses_the_next_state(transfer: Dispatcher) -> None:
    transfer.send("Transfer", "next", {"amount": 50})
    assert transfer.get("Transfer") == State("InvalidAmount", {"country": "DE", "amount": 50})
    transfer.send("Transfer", "retry")
    transfer.send("Transfer", "next", payload={"amount": 500})
    # The flow's data carries forward: country from the current payload, amount from the event.
    assert transfer.get("Transfer") == State("Tariffs", {"country": "DE", "amount": 500})


def test_a_send_mutation_records_the_event_and_the_chosen_state(transfer: Dispatcher) -> None:
    seen: List[uniflow.Mutation] = []
    transfer.subscribe(seen.append)
    transfer.send("Transfer", "next", {"amount": 500})
    [m] = seen
    assert m.kind == MutationKind.TRANSITION
    # As for every kind, the payload lives in the new state, not in the recorded action.
    assert m.action == {"kind": "send", "feature": "Transfer", "event": "next", "into": "Tariffs"}


def test_an_event_without_a_target_is_rejected_naming_state_and_event(transfer: Dispatcher) -> None:
    with pytest.raises(uniflow.Rejected) as info:
        transfer.send("Transfer", "confirm")
    assert str(info.value) == "Transfer in state Amount has no transition for event 'confirm'"
    assert transfer.get("Transfer") == State("Amount", {"country": "DE"})


def test_send_takes_a_key_and_interceptors_see_the_chosen_target() -> None:
    with Dispatcher() as d:
        d.register(DOOR)
        targets: List[Any] = []
        d.intercept(lambda a: targets.append((a.kind, a.key, a.state)))
        d.initialize("Door", "Closed", key="front")
        d.initialize("Door", "Closed", key="back")
        d.send("Door", "open", key="back")
        assert d.states() == {"Door": {"front": State("Closed", {}), "back": State("Open", {})}}
        assert targets[-1] == (ActionKind.SEND, "back", "Open")
        with pytest.raises(uniflow.InvalidArgument) as info:
            d.send("Door", "open")
        assert str(info.value) == "Door is keyed: an action on it needs a key"


def test_an_event_name_is_checked(transfer: Dispatcher) -> None:
    cases = {"": "uf_action.event: '' is not a valid event name",
             None: "uf_action: 'event' is required on a send action"}
    for event, message in cases.items():
        with pytest.raises(uniflow.InvalidArgument) as info:
            transfer.send("Transfer", event)  # type: ignore[arg-type]
        assert str(info.value) == message


def test_kinds_equal_their_c_values_and_their_json_spellings() -> None:
    assert ActionKind.SEND == 6 == ActionKind(6)
    assert ActionKind.SEND == "send" and "send" == ActionKind.SEND
    assert not (ActionKind.SEND != "send")
    assert ActionKind.SEND != "transition"
    assert MutationKind.TRANSITION in ("initialization", "transition")
    assert str(MutationKind.DEINITIALIZATION) == "deinitialization"
    assert MutationKind.parse("actualization") is MutationKind.ACTUALIZATION
    # Hashed as the int: kinds and C values mix in sets, spellings do not.
    assert MutationKind.TRANSITION in {3}
    assert MutationKind.TRANSITION not in {"transition"}
