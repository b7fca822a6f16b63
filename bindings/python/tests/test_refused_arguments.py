"""Arguments the binding refuses before C sees them: each refusal is a clear
exception, leaves the model and the dispatcher's callbacks as they were, and never
hands C something it would read differently (text cut at a NUL, a delay that wraps)."""

from __future__ import annotations

from typing import Any

import pytest

import uniflow
from conftest import DEFINITIONS, TOGGLE


def test_text_with_a_nul_is_refused_where_c_would_cut_it(d: uniflow.Dispatcher, tmp_path: Any) -> None:
    d.initialize("Toggle", "On")
    before = d.state
    cut = [
        lambda: d.restore('{}\x00{"Toggle": {"state": "Off", "payload": {}}}'),
        lambda: d.submit('{"kind": "transition", "feature": "Toggle", "into": "Off"}\x00'),
        lambda: d.batch(b'[]\x00[{"kind": "deinitialize", "feature": "Toggle"}]'),
        lambda: d.initialize("Counter", "Counting", payload='{"n": 1}\x00 garbage'),
        lambda: d.register('{"feature": "Extra", "states": {"A": {}}}\x00 not JSON'),
        lambda: d.register(str(DEFINITIONS / "login.json") + "\x00.does-not-exist"),
        lambda: d.replay(str(tmp_path / "journal.jsonl") + "\x00.other"),
        lambda: d.watch('{"var": "model.Toggle"}\x00{"var": "model"}', print),
    ]
    for call in cut:
        with pytest.raises(uniflow.InvalidArgument, match="NUL"):
            call()
    assert d.state == before
    assert [f["feature"] for f in d.definitions["features"]] == ["FileDownloading", "Main", "Search", "Toggle",
                                                                 "Counter"]


def test_a_name_that_is_not_a_str_is_a_type_error(d: uniflow.Dispatcher) -> None:
    d.initialize("Toggle", "On")
    with pytest.raises(TypeError, match="feature must be a str, got bytes"):
        d.deinitialize(b"Toggle\x00Main")  # type: ignore[arg-type]
    assert d.get("Toggle") == uniflow.State("On", {})


def test_a_refused_registration_keeps_no_callback(d: uniflow.Dispatcher) -> None:
    kept = len(d._keep)
    refused = [
        lambda: d.subscribe(print, when=7),  # type: ignore[arg-type]
        lambda: d.subscribe(print, when="Any\x00Mutation"),
        lambda: d.watch(object(), print),
        lambda: d.intercept(print, feature=3),  # type: ignore[arg-type]
        lambda: d.register_handler("h\x00", print),
        lambda: d.subscribe(print, when="NoSuchFilter"),  # refused by the library
    ]
    for call in refused:
        with pytest.raises((TypeError, uniflow.UniflowError)):
            call()
    assert len(d._keep) == kept


def test_a_watch_whose_first_call_raises_is_not_left_registered(d: uniflow.Dispatcher) -> None:
    calls = []

    def fail(value: Any) -> None:
        calls.append(value)
        raise ValueError("first value")

    kept = len(d._keep)
    with pytest.raises(ValueError, match="first value"):
        d.watch("Toggle.state", fail)
    assert calls == [None]
    d.initialize("Toggle", "On")  # raises nothing: no watch calls fail again
    assert calls == [None]
    assert len(d._keep) == kept


@pytest.mark.parametrize("seconds", [1e300, 2.0 ** 64 / 1000, 2 ** 53 / 1000 + 1, 10 ** 400])
def test_a_delay_past_2_to_53_ms_is_refused_not_wrapped(seconds: float) -> None:
    with uniflow.Dispatcher(clock="manual", timers="host") as d:
        d.register(TOGGLE)
        with pytest.raises(uniflow.InvalidArgument) as info:
            d.submit_after(seconds, {"kind": "initialize", "feature": "Toggle", "into": "On"})
        assert info.value.message == f"seconds is {seconds!r}, more than 2^53 ms"
        with pytest.raises(uniflow.InvalidArgument):
            d.advance(seconds)
        assert d.timers() == [] and d.now() == 0


def test_a_watch_whose_first_call_raises_inside_a_callback_is_not_left_either(d: uniflow.Dispatcher) -> None:
    calls = []

    def fail(value: Any) -> None:
        calls.append(value)
        raise ValueError("first value")

    # Inside a subscriber the exception is the outer call's to raise; the watch goes.
    d.subscribe(lambda m: d.watch("Toggle.state", fail), when="InitializationInto<Toggle.On>")
    kept = len(d._keep)
    with pytest.raises(ValueError, match="first value"):
        d.initialize("Toggle", "On")
    assert calls == ["On"]
    d.transition("Toggle", into="Off")
    assert calls == ["On"] and len(d._keep) == kept


def test_a_false_initialized_means_absent_with_or_without_a_submit_list(d: uniflow.Dispatcher) -> None:
    # Toggle is absent: a trigger that requires it absent holds, either way.
    assert d.trigger("Toggle", initialized=0) == uniflow.Status.OK  # type: ignore[arg-type]
    assert d.trigger("Toggle", initialized=0, submit=[]) == uniflow.Status.OK  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="submit takes a list of actions, got dict"):
        d.trigger("Toggle", submit={"kind": "initialize", "feature": "Toggle", "into": "On"})  # type: ignore[arg-type]


def test_an_option_json_cannot_write_is_invalid_argument() -> None:
    with pytest.raises(uniflow.InvalidArgument, match="options is not JSON-serializable"):
        uniflow.Dispatcher(max_cascade=float("nan"))  # type: ignore[arg-type]
