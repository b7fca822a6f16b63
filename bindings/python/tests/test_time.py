"""Time from Python: state and API timers on the manual clock, deferred delivery with
run_pending(), the deferred queue's limit, and durable snapshots. Nothing here sleeps:
the manual clock moves only when a test says so."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import uniflow
from uniflow import Dispatcher

WORK: Dict[str, Any] = {
    "feature": "Work",
    "states": {
        "Running": {
            "fields": {"progress": {"type": "integer", "default": 0}},
            "after": [{"ms": 1000, "reset": "update",
                       "submit": [{"kind": "transition", "feature": "Work", "into": "Stalled"}]}],
        },
        "Stalled": {},
        "Done": {},
    },
    "initial": ["Running"],
    "transitions": {"Running": ["Running", "Stalled", "Done"]},
}

LAMP: Dict[str, Any] = {"feature": "Lamp", "states": {"Off": {}, "On": {}}}


def manual(**options: Any) -> Dispatcher:
    d = Dispatcher(clock="manual", **options)
    d.register([WORK, LAMP])
    return d


def test_a_state_timer_fires_when_the_manual_clock_reaches_it() -> None:
    with manual() as d:
        seen: List[uniflow.Mutation] = []
        d.subscribe(seen.append)
        d.initialize("Work", "Running")
        assert d.timers() == [{"id": "Work.Running.after[0]", "due_in_ms": 1000, "ms": 1000}]
        d.advance(0.999)
        assert d.get("Work") == uniflow.State("Running", {"progress": 0})
        d.advance(0.001)
        assert d.get("Work") == uniflow.State("Stalled", {})
        assert d.timers() == []
        fired = seen[-1]
        assert fired.kind == uniflow.MutationKind.TRANSITION
        assert fired.action["timer"] == "Work.Running.after[0]"


def test_an_update_timer_is_rearmed_by_each_actualization() -> None:
    with manual() as d:
        d.initialize("Work", "Running")
        d.advance(0.8)
        d.actualize("Work", "Running", {"progress": 50})
        assert d.timers()[0]["due_in_ms"] == 1000
        d.advance(0.8)
        assert d.get("Work") == uniflow.State("Running", {"progress": 50})
        d.advance(0.2)
        assert d.get("Work").name == "Stalled"


def test_leaving_the_state_disarms_its_timer() -> None:
    with manual() as d:
        d.initialize("Work", "Running")
        d.transition("Work", into="Done")
        assert d.timers() == []
        d.advance(5)
        assert d.get("Work").name == "Done"


def test_submit_after_with_an_id_debounces_and_keep_throttles() -> None:
    with manual() as d:
        turn_on = {"kind": "initialize", "feature": "Lamp", "into": "On"}
        d.submit_after(1.0, turn_on, id="lamp")
        d.advance(0.5)
        d.submit_after(1.0, turn_on, id="lamp")  # replaces: due 1 s from now
        assert d.timers() == [{"id": "lamp", "due_in_ms": 1000, "ms": 1000}]
        d.submit_after(0.1, turn_on, id="lamp", keep=True)  # keeps the armed one
        assert d.timers() == [{"id": "lamp", "due_in_ms": 1000, "ms": 1000}]
        d.advance(0.9)
        assert d.get("Lamp") is None
        d.advance(0.1)
        assert d.get("Lamp") == uniflow.State("On", {})


def test_seconds_are_rounded_up_to_whole_milliseconds() -> None:
    with manual() as d:
        d.submit_after(0.0001, {"kind": "initialize", "feature": "Lamp", "into": "On"}, id="t")
        assert d.timers()[0]["ms"] == 1
        # However small, a delay is never 0; 1.5 ms is 2, and 0 stays 0.
        for seconds, ms in ((1e-12, 1), (5e-324, 1), (0.0015, 2), (0.001, 1), (0.0, 0)):
            d.submit_after(seconds, {"kind": "initialize", "feature": "Lamp", "into": "On"}, id="t")
            assert d.timers()[0]["ms"] == ms, seconds


def test_a_cancelled_timer_never_fires() -> None:
    with manual() as d:
        d.submit_after(1, {"kind": "initialize", "feature": "Lamp", "into": "On"}, id="lamp")
        d.cancel_timer("lamp")
        d.advance(2)
        assert d.get("Lamp") is None
        with pytest.raises(uniflow.NotFound) as info:
            d.cancel_timer("lamp")
        assert info.value.status == uniflow.Status.ENOTFOUND
        assert "lamp" in str(info.value)


def test_a_state_timer_cannot_be_cancelled_by_id() -> None:
    with manual() as d:
        d.initialize("Work", "Running")
        with pytest.raises(uniflow.Misuse):
            d.cancel_timer("Work.Running.after[0]")
        assert len(d.timers()) == 1


def test_submit_after_checks_the_action_now() -> None:
    with manual() as d:
        with pytest.raises(uniflow.NotFound) as info:
            d.submit_after(1, {"kind": "initialize", "feature": "Nope", "into": "On"})
        assert "Nope" in str(info.value)
        with pytest.raises(uniflow.InvalidArgument) as info:
            d.submit_after(-1, {"kind": "initialize", "feature": "Lamp", "into": "On"})
        assert str(info.value) == "seconds must be a number of seconds >= 0, got -1"
        assert d.timers() == []


def test_advance_and_now_need_a_manual_clock() -> None:
    with Dispatcher() as d:
        with pytest.raises(uniflow.Misuse) as info:
            d.advance(1)
        assert "manual" in str(info.value)
        assert d.now() >= 0.0
    with manual() as d:
        assert d.now() == 0.0
        d.advance(1.5)
        assert d.now() == 1.5


def test_bad_time_options_are_rejected() -> None:
    with pytest.raises(uniflow.InvalidArgument) as info:
        Dispatcher(clock="sundial")
    assert str(info.value) == 'option \'clock\' must be "monotonic" or "manual", got "sundial"'
    with pytest.raises(uniflow.InvalidArgument) as info:
        Dispatcher(timers="cron")
    assert "timers" in str(info.value)


def test_deferred_subscribers_wait_for_run_pending_on_the_caller_thread() -> None:
    with manual(timers="host") as d:
        seen: List[Any] = []
        d.subscribe(lambda m: seen.append(m.new), deferred=True)
        d.initialize("Lamp", "On")
        d.transition("Lamp", into="Off")
        assert seen == []
        assert d.timeout() == 0.0
        assert d.run_pending() == 2
        assert seen == [uniflow.State("On", {}), uniflow.State("Off", {})]
        assert d.run_pending() == 0
        assert d.timeout() is None


def test_host_timers_fire_in_run_pending() -> None:
    with Dispatcher(timers="host") as d:
        d.register(LAMP)
        d.submit_after(0, {"kind": "initialize", "feature": "Lamp", "into": "On"})
        assert d.get("Lamp") is None  # due, but host timers wait for the host
        assert d.timeout() == 0.0
        assert d.run_pending() == 1
        assert d.get("Lamp") == uniflow.State("On", {})


def test_a_manual_clock_fires_host_timers_as_it_advances() -> None:
    with manual(timers="host") as d:
        d.initialize("Work", "Running")
        # Waiting never moves a manual clock: the loop has nothing to wait for.
        assert d.timeout() is None
        d.advance(1)
        assert d.get("Work").name == "Stalled"


def test_timeout_counts_down_to_the_next_host_timer_on_the_real_clock() -> None:
    with Dispatcher(timers="host") as d:
        d.register(LAMP)
        assert d.timeout() is None
        # Under a second: counted from the precise clock on any kernel.
        d.submit_after(0.9, {"kind": "initialize", "feature": "Lamp", "into": "On"}, id="lamp")
        assert 0.5 < d.timeout() <= 0.9
        assert d.run_pending() == 0  # not due: nothing fires early
        assert d.get("Lamp") is None
        # A minute counts from the coarse clock plus a tick: a few ms either way.
        d.cancel_timer("lamp")
        d.submit_after(60, {"kind": "initialize", "feature": "Lamp", "into": "On"}, id="lamp")
        assert 59.5 < d.timeout() <= 60.1


def test_the_oldest_deferred_delivery_is_dropped_and_counted() -> None:
    with manual(timers="host", deferred_limit=2) as d:
        reports: List[Dict[str, Any]] = []
        d.set_reporter(reports.append)
        seen: List[Any] = []
        d.subscribe(lambda m: seen.append((m.new.name, m.dropped)), deferred=True)
        d.initialize("Lamp", "On")
        d.transition("Lamp", into="Off")
        d.transition("Lamp", into="On")
        d.run_pending()
        assert seen == [("Off", 1), ("On", 0)]
        [dropped] = [r for r in reports if r["event"] == "dropped"]
        assert dropped["status"] == "UF_ENOMEM"
        assert dropped["seq"] == 1
        # Kept and read after its subscriber returned, it says the same. (Both
        # subscriptions share the limit: 6 deliveries, the last 2 are made.)
        kept: List[uniflow.Mutation] = []
        d.subscribe(kept.append, deferred=True)
        for into in ("Off", "On", "Off"):
            d.transition("Lamp", into=into)
        d.run_pending()
        assert [(m.new.name, m.dropped) for m in kept] == [("Off", 2)]
        # Also when the whole record was read first (to_dict() snapshots it).
        whole: List[Any] = []
        d.subscribe(lambda m: whole.append((m.to_dict()["seq"], m)), deferred=True)
        for into in ("On", "Off", "On"):
            d.transition("Lamp", into=into)
        d.run_pending()
        assert [m.dropped for _, m in whole] == [2]


def test_a_durable_snapshot_carries_timers_and_restores_them() -> None:
    with manual() as d:
        d.initialize("Work", "Running")
        d.advance(0.25)
        snapshot = d.snapshot(timers=True)
        assert snapshot["clock"] == "manual"
        assert snapshot["model"] == {"Work": {"state": "Running", "payload": {"progress": 0}}}
        assert [t["id"] for t in snapshot["timers"]] == ["Work.Running.after[0]"]
        # Without timers=True, a snapshot is the model alone, as always.
        assert d.snapshot() == snapshot["model"]
    with manual() as restored:
        restored.restore(json.dumps(snapshot), timers=True)
        assert restored.get("Work") == uniflow.State("Running", {"progress": 0})
        [timer] = restored.timers()
        assert timer["id"] == "Work.Running.after[0]"
        restored.advance(timer["due_in_ms"] / 1000)
        assert restored.get("Work").name == "Stalled"


def test_a_bad_durable_snapshot_changes_nothing() -> None:
    with manual() as d:
        d.initialize("Lamp", "On")
        with pytest.raises(uniflow.SchemaError):
            d.restore({"clock": "manual", "model": {"Lamp": {"state": "On", "payload": {}}},
                       "timers": [{"id": 3}]}, timers=True)
        assert d.state == {"Lamp": {"state": "On", "payload": {}}}
