"""Handlers for model bindings, the reporter, JsonLogic, and observer scenarios in Python."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import uniflow
from conftest import COUNTER, TOGGLE


def counting_definition(then: Dict[str, Any]) -> Dict[str, Any]:
    return {**COUNTER, "bindings": [{
        "scenario": "count up to three",
        "when": "AnySettingOf<Counter>",
        "given": [{"call": "below_three"}],
        "then": then,
    }]}


INCREMENT = {"kind": "actualize", "feature": "Counter", "in": "Counting",
             "payload": {"n": {"$": {"+": [{"var": "mutation.new.payload.n"}, 1]}}}}


# -- handlers -----------------------------------------------------------------------------


def test_handlers_in_given_and_then() -> None:
    calls: List[Any] = []

    def below_three(call: uniflow.BindingCall) -> bool:
        n = call.mutation["new"]["payload"]["n"]
        calls.append(("given", n, call.given))
        call.set_output({"next": n + 1})
        return n < 3

    def note(call: uniflow.BindingCall) -> None:
        calls.append(("then", call.given))
        with pytest.raises(uniflow.Misuse, match="only allowed in a given clause"):
            call.set_output(1)

    with uniflow.Dispatcher() as d:
        d.register_handler("below_three", below_three)
        d.register_handler("note", note)
        d.register(counting_definition({"call": "note", "submit": [INCREMENT]}))
        assert d.initialize("Counter", "Counting", payload={"n": 0}) is uniflow.OK
        assert d.get("Counter") == uniflow.State("Counting", {"n": 3})
    assert calls == [("given", 0, None), ("then", {"next": 1}),
                     ("given", 1, None), ("then", {"next": 2}),
                     ("given", 2, None), ("then", {"next": 3}),
                     ("given", 3, None)]


def test_handler_errors_and_names() -> None:
    with uniflow.Dispatcher() as d:
        d.register_handler("below_three", lambda call: True)
        with pytest.raises(uniflow.AlreadyExists) as exists:
            d.register_handler("below_three", lambda call: True)
        assert exists.value.message == "a handler named 'below_three' is already registered"
        with pytest.raises(uniflow.NotFound) as missing:
            d.register({**TOGGLE, "bindings": [{"when": "AnyMutation", "then": {"call": "nope"}}]})
        assert missing.value.message == "features[0].bindings[0].then.call: unknown handler 'nope'"
        with pytest.raises(TypeError) as not_callable:
            d.register_handler("x", 1)  # type: ignore[arg-type]
        assert str(not_callable.value) == "handler must be callable, got int"
        assert len(d._keep) == 1  # only the registered handler is kept


def test_a_handler_that_raises_fails_its_binding_and_is_re_raised() -> None:
    reports: List[Dict[str, Any]] = []

    def below_three(call: uniflow.BindingCall) -> bool:
        raise LookupError("no such counter")

    with uniflow.Dispatcher() as d:
        d.set_reporter(reports.append)
        d.register_handler("below_three", below_three)
        d.register(counting_definition({"submit": [INCREMENT]}))
        with pytest.raises(LookupError, match="no such counter"):
            d.initialize("Counter", "Counting", payload={"n": 0})
        assert d.get("Counter") == uniflow.State("Counting", {"n": 0})  # applied
        assert reports[0] == {"event": "binding_rejected",
                              "action": {"kind": "initialize", "feature": "Counter", "into": "Counting"},
                              "status": "UF_ECALLBACK", "reason": reports[0]["reason"],
                              "binding": "count up to three"}
        assert reports[1]["event"] == "processed"


def test_a_handler_returning_a_negative_number_fails_quietly() -> None:
    reports: List[Dict[str, Any]] = []
    with uniflow.Dispatcher(report_skipped=True) as d:
        d.set_reporter(reports.append)
        d.register_handler("below_three", lambda call: -2)
        d.register(counting_definition({"submit": [INCREMENT]}))
        assert d.initialize("Counter", "Counting", payload={"n": 0}) is uniflow.OK
        assert [r["event"] for r in reports] == ["binding_rejected", "processed"]
        assert reports[0]["reason"] == "handler 'below_three' failed (returned -2)"  # the value as returned
        d.deinitialize("Counter")
    reports.clear()
    with uniflow.Dispatcher(report_skipped=True) as d:
        d.set_reporter(reports.append)
        d.register_handler("below_three", lambda call: None)  # None stops the binding
        d.register(counting_definition({"submit": [INCREMENT]}))
        d.initialize("Counter", "Counting", payload={"n": 0})
        assert [r["event"] for r in reports] == ["binding_skipped", "processed"]


@pytest.mark.parametrize("result,holds", [
    (True, True), (1, True), (7, True), ("yes", True), ([0], True),
    (False, False), (0, False), (None, False), ("", False), ([], False)])
def test_a_given_handler_holds_on_a_truthy_result(result: Any, holds: bool) -> None:
    reports: List[Dict[str, Any]] = []
    reprs: List[str] = []

    def given(call: uniflow.BindingCall) -> Any:
        reprs.append(repr(call))
        return result if call.mutation["new"]["payload"]["n"] == 0 else False

    with uniflow.Dispatcher(report_skipped=True) as d:
        d.set_reporter(reports.append)
        d.register_handler("below_three", given)
        d.register(counting_definition({"submit": [{**INCREMENT, "payload": {"n": 9}}]}))
        assert d.initialize("Counter", "Counting", payload={"n": 0}) is uniflow.OK
        assert d.get("Counter") == uniflow.State("Counting", {"n": 9 if holds else 0})
        if holds:  # the queued actualization to 9 runs; its binding is skipped
            assert [r["event"] for r in reports] == [
                "binding_processed", "processed", "binding_skipped", "processed"]
        else:
            assert [r["event"] for r in reports] == ["binding_skipped", "processed"]
    assert reprs[0] == "<BindingCall>"


def test_binding_call_kept_by_a_handler_stays_readable() -> None:
    kept: List[uniflow.BindingCall] = []
    with uniflow.Dispatcher() as d:
        d.register_handler("below_three", lambda call: kept.append(call) or False)
        d.register(counting_definition({"submit": [INCREMENT]}))
        d.initialize("Counter", "Counting", payload={"n": 0})
    assert kept[0].mutation["seq"] == 1 and kept[0].given is None
    assert repr(kept[0]) == "<BindingCall (returned)>"
    with pytest.raises(uniflow.Misuse) as info:
        kept[0].set_output(1)
    assert info.value.message == "BindingCall was read after its callback returned"


# -- reporter -----------------------------------------------------------------------------


def test_reporter_receives_dicts_and_can_be_replaced(d: uniflow.Dispatcher) -> None:
    first: List[Dict[str, Any]] = []
    second: List[Dict[str, Any]] = []
    d.set_reporter(first.append)
    d.initialize("Toggle", "Off", id="t-1")
    with pytest.raises(uniflow.Rejected):
        d.transition("Toggle", "Off", from_="On")
    assert first == [
        {"event": "processed", "action": {"kind": "initialize", "feature": "Toggle", "into": "Off", "id": "t-1"}},
        {"event": "rejected", "action": {"kind": "transition", "feature": "Toggle", "from": "On", "into": "Off"},
         "status": "UF_REJECTED", "reason": "Toggle is in state Off, not On"},
    ]
    d.set_reporter(second.append)
    assert len(d._keep) == 1  # the replaced reporter was released
    d.transition("Toggle", "On")
    d.set_reporter(None)  # back to the built-in reporter (silent: reporting "none")
    assert d._keep == {}
    d.transition("Toggle", "Off")
    assert len(first) == 2 and len(second) == 1
    with pytest.raises(TypeError) as not_callable:
        d.set_reporter("print")  # type: ignore[arg-type]
    assert str(not_callable.value) == "reporter must be callable, got str"
    assert d._keep == {}


def test_reporter_exception_is_re_raised(d: uniflow.Dispatcher) -> None:
    def broken(report: Dict[str, Any]) -> None:
        raise RuntimeError(report["event"])

    d.set_reporter(broken)
    with pytest.raises(RuntimeError, match="processed"):
        d.initialize("Toggle", "Off")
    assert d.get("Toggle") == uniflow.State("Off", {})


# -- JsonLogic ----------------------------------------------------------------------------


def test_logic_apply(d: uniflow.Dispatcher) -> None:
    assert uniflow.logic_apply({"+": [{"var": "a"}, 2]}, {"a": 1}) == 3
    assert uniflow.logic_apply({"cat": [False, [1, 2]]}) == "false1,2"
    assert uniflow.logic_apply({"var": "missing"}, {}) is None
    assert uniflow.logic_apply(True) is True
    assert uniflow.logic_apply({"var": ""}, "text") == "text"  # a str is data, not JSON text
    assert uniflow.logic_apply("abc") == "abc"  # ...and a rule: a literal string
    assert uniflow.logic_apply('{"var": "a"}', {"a": 1}) == '{"var": "a"}'
    assert d.logic_apply({"if": [{"<": [{"var": "x"}, 1]}, "small", "big"]}, {"x": 5}) == "big"
    with pytest.raises(uniflow.SchemaError) as zero:
        uniflow.logic_apply({"/": [1, 0]})
    assert zero.value.message == "rule result is not a finite number"
    with pytest.raises(uniflow.SchemaError) as unknown:
        uniflow.logic_apply({"nope": [1]})
    assert unknown.value.message == "unknown operator 'nope'"
    with pytest.raises(uniflow.InvalidArgument):
        uniflow.logic_apply({"var": "x"}, {"x": object()})


def test_parts_missing_from_an_older_library_raise_misuse(d: uniflow.Dispatcher,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A library without uf_logic_apply or uf_register_handler (built before they
    existed) still loads; using them raises Misuse naming the symbol."""
    real = d._lib

    class Older:
        def __getattr__(self, name: str) -> Any:
            if name in ("uf_logic_apply", "uf_register_handler"):
                raise AttributeError(name)
            return getattr(real, name)

    older = Older()
    monkeypatch.setattr(d, "_lib", older)
    with pytest.raises(uniflow.Misuse, match="uf_register_handler is not exported"):
        d.register_handler("h", lambda call: True)
    import uniflow.dispatcher as module

    monkeypatch.setattr(module, "load", lambda: (older, "/old/libuniflow.so"))
    with pytest.raises(uniflow.Misuse, match=r"uf_logic_apply is not exported by the loaded libuniflow \(/old"):
        uniflow.logic_apply({"var": "a"})


# -- observer scenarios -------------------------------------------------------------------


def test_scenario_map_if_then_do(d: uniflow.Dispatcher) -> None:
    done: List[Any] = []
    sub = (d.scenario("Report finished downloads")
           .when("TransitionInto<FileDownloading.Completed>")
           .given(map=lambda m: m.old.payload["progress"])
           .given(if_=lambda progress: progress >= 100)
           .given(map=lambda progress: f"finished at {progress}%")
           .then(do=done.append))
    assert isinstance(sub, uniflow.Subscription) and sub.when == "TransitionInto<FileDownloading.Completed>"
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", "InProgress", payload={"progress": 100})
    d.transition("FileDownloading", "Completed")
    assert done == ["finished at 100%"]
    d.deinitialize("FileDownloading")
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", "InProgress", payload={"progress": 50})
    d.transition("FileDownloading", "Completed")  # the if_ stops the chain
    assert done == ["finished at 100%"]


def test_scenario_then_submit(d: uniflow.Dispatcher) -> None:
    (d.scenario("Turn the counter on with the toggle")
     .when("TransitionInto<Toggle.On>")
     .then(submit={"kind": "initialize", "feature": "Counter", "into": "Counting", "payload": {"n": 0}}))
    (d.scenario("Count each toggle")
     .when("AnyMutationOf<Toggle>")
     .given(if_=lambda m: d.get("Counter") is not None)
     .then(submit=lambda m: [{"kind": "actualize", "feature": "Counter", "in": "Counting",
                              "payload": {"n": d.get("Counter").payload["n"] + 1}}]))
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    d.transition("Toggle", "Off")
    assert d.get("Counter") == uniflow.State("Counting", {"n": 1})


def test_scenario_do_runs_before_submit_and_errors_name_the_scenario(d: uniflow.Dispatcher) -> None:
    order: List[str] = []
    (d.scenario("Both")
     .when("Initialization<Toggle>")
     .then(do=lambda m: order.append("do"),
           submit=lambda m: order.append("submit") or None))
    d.initialize("Toggle", "Off")
    assert order == ["do", "submit"]

    d.scenario("Broken").when("Deinitialization<Toggle>").then(do=lambda m: 1 / 0)
    with pytest.raises(ZeroDivisionError) as info:
        d.deinitialize("Toggle")
    assert "uniflow: in scenario 'Broken'" in getattr(info.value, "__notes__", [])


def test_scenario_builder_misuse(d: uniflow.Dispatcher) -> None:
    scenario = d.scenario("x")
    for given in (scenario.given, lambda: scenario.given(map=str, if_=bool)):
        with pytest.raises(TypeError) as info:
            given()
        assert str(info.value) == "given() takes exactly one of map= or if_="
    with pytest.raises(TypeError) as info:
        scenario.then()
    assert str(info.value) == "then() needs do= and/or submit="
    scenario.then(do=print)
    with pytest.raises(TypeError, match="already subscribed"):
        scenario.when("AnyMutation")
    assert repr(scenario) == "<uniflow.Scenario 'x' when=AnyMutation subscribed>"
    with pytest.raises(uniflow.NotFound):
        d.scenario("y").when("AnyMutationOf<Nope>").then(do=print)
