"""Watches (selected values, delivered only when they change) and interceptors
(every action before it applies: let through, veto, or fail) from Python."""

from __future__ import annotations

from typing import Any, Dict, List

import json

import pytest

import uniflow
from uniflow import Dispatcher, State, _callbacks

DOWNLOAD: Dict[str, Any] = {
    "feature": "FileDownloading",
    "states": {"Starting": {}, "InProgress": {"fields": {"progress": "number"}}, "Completed": {}},
    "initial": ["Starting"],
    "transitions": {"Starting": ["InProgress"], "InProgress": ["InProgress", "Completed"]},
}
LAMP: Dict[str, Any] = {"feature": "Lamp", "states": {"Off": {}, "On": {}}}


@pytest.fixture
def d() -> Any:
    with Dispatcher(timers="host") as d:
        d.register([DOWNLOAD, LAMP])
        yield d


def start(d: Dispatcher) -> None:
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", into="InProgress", payload={"progress": 0})


# -- watches ---------------------------------------------------------------------------------


def test_a_watch_sees_the_current_value_then_only_changes(d: Dispatcher) -> None:
    values: List[Any] = []
    d.watch("FileDownloading.payload.progress", values.append)
    assert values == [None]
    start(d)
    d.actualize("FileDownloading", "InProgress", {"progress": 0})  # same value: no call
    d.actualize("FileDownloading", "InProgress", {"progress": 50})
    d.actualize("FileDownloading", "InProgress", {"progress": 50.0})  # equal as JSON
    assert values == [None, 0, 50]


def test_a_watch_takes_a_jsonlogic_selector(d: Dispatcher) -> None:
    values: List[Any] = []
    d.watch({"if": [{"var": "model.Lamp"}, {"var": "model.Lamp.state"}, "unplugged"]}, values.append)
    d.initialize("Lamp", "Off")
    d.transition("Lamp", into="On")
    assert values == ["unplugged", "Off", "On"]


def test_a_watch_never_sees_the_middle_of_a_cascade(d: Dispatcher) -> None:
    values: List[Any] = []
    d.watch("Lamp.state", values.append)

    def flip_back(m: uniflow.Mutation) -> None:
        if m.new is not None and m.new.name == "On":
            d.transition("Lamp", into="Off")  # queued: runs before the outer call returns

    d.initialize("Lamp", "Off")
    d.subscribe(flip_back)
    d.transition("Lamp", into="On")
    assert values == [None, "Off"]  # "On" lived only inside the cascade


def test_a_batch_is_watched_once_after_it_commits(d: Dispatcher) -> None:
    values: List[Any] = []
    d.watch("FileDownloading.payload.progress", values.append)
    d.batch([{"kind": "initialize", "feature": "FileDownloading", "into": "Starting"},
             {"kind": "transition", "feature": "FileDownloading", "into": "InProgress",
              "payload": {"progress": 1}},
             {"kind": "actualize", "feature": "FileDownloading", "in": "InProgress",
              "payload": {"progress": 2}}])
    assert values == [None, 2]


def test_a_watch_returning_stop_ends_and_cancel_ends(d: Dispatcher) -> None:
    values: List[Any] = []
    w = d.watch("Lamp.state", lambda v: (values.append(v), uniflow.STOP if v == "On" else None)[1])
    d.initialize("Lamp", "On")
    d.transition("Lamp", into="Off")
    assert values == [None, "On"]
    assert not w.active
    other: List[Any] = []
    w2 = d.watch("Lamp.state", other.append)
    w2.cancel()
    d.transition("Lamp", into="On")
    assert other == ["Off"]


def test_a_deferred_watch_coalesces_to_the_latest_value(d: Dispatcher) -> None:
    values: List[Any] = []
    d.watch("Lamp.state", values.append, deferred=True)
    assert values == []  # even the first value waits for the host
    d.initialize("Lamp", "Off")
    d.transition("Lamp", into="On")
    d.run_pending()
    assert values == ["On"]


def test_an_exception_in_a_watch_is_raised_from_the_outer_call(d: Dispatcher) -> None:
    def fail(value: Any) -> None:
        if value is not None:
            raise KeyError("watch failed")

    d.watch("Lamp.state", fail)
    with pytest.raises(KeyError):
        d.initialize("Lamp", "On")
    assert d.get("Lamp") == State("On", {})  # the mutation stays applied


def test_bad_selectors_are_refused(d: Dispatcher) -> None:
    with pytest.raises(uniflow.SchemaError) as info:
        d.watch({"no_such_operator": []}, print)
    assert "no_such_operator" in str(info.value)
    with pytest.raises(TypeError) as not_callable:
        d.watch("Lamp.state", "not callable")  # type: ignore[arg-type]
    assert str(not_callable.value) == "watch function must be callable, got str"


# -- how a watch decodes its values ---------------------------------------------------------
# A watch remembers the decoded value of short texts whose value is immutable; these check
# that it delivers exactly what json.loads makes, the first time (decoded) and the next
# (remembered), and that dicts and lists are never shared between deliveries.

TRICKY_TEXTS: List[bytes] = [
    b'"A"', b'""', b'"a\\"b\\\\c\\n\\t\\/"', b'"\\u00e9\\ud83d\\ude00\\u2028"', '"é😀"'.encode(),
    b"0", b"-0", b"42", b"-17", b"123456789012345678901234567890", b"-98765432109876543210987654321",
    b"1.5", b"0.0", b"-0.0", b"0.1", b"1e5", b"1E5", b"1e+5", b"-2.5e-3", b"1.7976931348623157e308",
    b"true", b"false", b"null", b"1", b"1.0",
    b"{}", b"[]", b'{"a":[1,{"b":null}],"c":"\\u00e9"}', b'[1,"x",true,null,2.5]',
]


def deliver(monkeypatch: pytest.MonkeyPatch, texts: List[bytes], fn: Any) -> None:
    """Runs a watch trampoline once per text, as C would, with ``texts`` as the values."""
    monkeypatch.setattr(_callbacks, "_watch_value", lambda ptr: texts[ptr - 1])  # NULL is no ptr
    watch = _callbacks.make_watch({}, fn)
    for ptr in range(1, len(texts) + 1):
        assert watch(ptr, None) == 0


def typed(values: List[Any]) -> List[Any]:
    # repr tells -0.0 from 0.0 and True from 1, which == does not.
    return [(type(v), repr(v)) for v in values]


def test_a_watch_decodes_every_json_type_as_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    _callbacks._decoded.clear()
    values: List[Any] = []
    deliver(monkeypatch, TRICKY_TEXTS * 2, values.append)  # decoded, then remembered
    expected = [json.loads(text) for text in TRICKY_TEXTS] * 2
    assert typed(values) == typed(expected)
    assert values == expected
    assert b'"A"' in _callbacks._decoded  # the second round did come from the cache


def test_a_watched_dict_or_list_is_a_new_object_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    values: List[Any] = []

    def spoil(value: Any) -> None:
        values.append(json.dumps(value))
        value.append("spoiled") if isinstance(value, list) else value.update(spoiled=True)

    deliver(monkeypatch, [b'{"a":[1]}', b"[1]"] * 3, spoil)
    assert values == ['{"a": [1]}', "[1]"] * 3


def test_the_decoded_values_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    long_text = json.dumps("x" * (_callbacks._DECODED_TEXT_MAX + 1)).encode()
    texts = [str(n).encode() for n in range(_callbacks._DECODED_MAX + 10)] + [long_text]
    values: List[Any] = []
    deliver(monkeypatch, texts, values.append)
    assert values == [json.loads(text) for text in texts]
    assert 0 < len(_callbacks._decoded) <= _callbacks._DECODED_MAX
    assert long_text not in _callbacks._decoded


def test_values_from_the_library_arrive_with_their_types() -> None:
    box = {"feature": "Box", "states": {"Holding": {"fields": {"v": "any"}}}}
    sent: List[Any] = ["A", 'é\n"x"\\😀', "", 0, -3, 2**40, 1.5, -0.5, 1e-07, True, False, None,
                       {"k": [1, 2]}, [1, "x"]]
    values: List[Any] = []

    def keep_and_spoil(value: Any) -> None:
        values.append(json.loads(json.dumps(value)))
        if isinstance(value, (dict, list)):
            value.clear()

    with Dispatcher() as d:
        d.register(box)
        d.initialize("Box", "Holding", {"v": "start"})
        d.watch("Box.payload.v", keep_and_spoil)
        for v in sent * 2:  # neighbours differ, so each one is a change
            d.actualize("Box", "Holding", {"v": v})
    assert typed(values) == typed(["start"] + sent * 2)


# -- interceptors ----------------------------------------------------------------------------


def test_an_interceptor_sees_each_action_before_it_applies(d: Dispatcher) -> None:
    seen: List[Any] = []

    @d.intercept("FileDownloading")
    def log(a: uniflow.Action) -> None:
        seen.append((a.kind, a.feature, a.key, a.state, d.get("FileDownloading")))

    start(d)
    d.initialize("Lamp", "On")  # another feature: not seen
    assert seen == [
        (uniflow.ActionKind.INITIALIZE, "FileDownloading", None, "Starting", None),
        (uniflow.ActionKind.TRANSITION, "FileDownloading", None, "InProgress", State("Starting", {})),
    ]
    assert log.interceptor.active  # type: ignore[attr-defined]
    # The decorated function can end itself, as the plain form's result can.
    log.cancel()  # type: ignore[attr-defined]
    assert not log.interceptor.active  # type: ignore[attr-defined]
    d.deinitialize("FileDownloading")
    assert len(seen) == 2


def test_reject_vetoes_with_the_interceptor_id(d: Dispatcher) -> None:
    interceptor = d.intercept(lambda a: uniflow.REJECT, feature="Lamp")
    with pytest.raises(uniflow.Rejected) as info:
        d.initialize("Lamp", "On")
    assert str(info.value) == f"intercepted by {interceptor.id}"
    assert d.get("Lamp") is None


def test_veto_gives_its_reason(d: Dispatcher) -> None:
    def forbid(a: uniflow.Action) -> None:
        if a.action.get("into") == "On":
            raise uniflow.Veto("the lamp stays off after midnight")

    d.intercept(forbid)
    d.initialize("Lamp", "Off")
    with pytest.raises(uniflow.Rejected) as info:
        d.transition("Lamp", into="On")
    assert str(info.value) == "the lamp stays off after midnight"
    assert d.get("Lamp") == State("Off", {})


def test_another_exception_fails_the_action_and_is_raised(d: Dispatcher) -> None:
    def broken(a: uniflow.Action) -> None:
        raise ZeroDivisionError("interceptor bug")

    d.intercept(broken)
    with pytest.raises(ZeroDivisionError):
        d.initialize("Lamp", "On")
    assert d.get("Lamp") is None


def test_a_veto_inside_a_batch_fails_the_whole_batch(d: Dispatcher) -> None:
    d.intercept(lambda a: uniflow.REJECT if a.feature == "Lamp" else None)
    with pytest.raises(uniflow.Rejected):
        d.batch([{"kind": "initialize", "feature": "FileDownloading", "into": "Starting"},
                 {"kind": "initialize", "feature": "Lamp", "into": "On"}])
    assert d.state == {}


def test_an_interceptor_can_end_itself(d: Dispatcher) -> None:
    calls: List[str] = []
    handle: List[uniflow.Interceptor] = []

    def once(a: uniflow.Action) -> None:
        calls.append(a.feature)
        handle[0].cancel()

    handle.append(d.intercept(once))
    d.initialize("Lamp", "On")
    d.transition("Lamp", into="Off")
    assert calls == ["Lamp"]
    assert not handle[0].active


def test_interceptors_never_see_restores(d: Dispatcher) -> None:
    calls: List[Any] = []
    d.intercept(calls.append)
    d.restore({"Lamp": {"state": "On", "payload": {}}})
    assert calls == []


def test_an_unknown_feature_is_not_found(d: Dispatcher) -> None:
    with pytest.raises(uniflow.NotFound) as info:
        d.intercept(print, feature="Nope")
    assert "Nope" in str(info.value)


def test_an_interceptor_that_is_not_callable_is_a_type_error(d: Dispatcher) -> None:
    kept = len(d._keep)
    with pytest.raises(TypeError) as info:
        d.intercept(42, feature="Lamp")
    assert str(info.value) == "interceptor must be callable, got int"
    assert len(d._keep) == kept
    d.initialize("Lamp", "On")  # nothing intercepts it
    assert d.get("Lamp") == State("On", {})


def test_an_action_kept_after_the_call_stays_readable(d: Dispatcher) -> None:
    kept: List[uniflow.Action] = []
    d.intercept(kept.append)
    d.initialize("Lamp", "On")
    [action] = kept
    assert (action.kind, action.feature, action.state) == (uniflow.ActionKind.INITIALIZE, "Lamp", "On")
    assert action.action == {"kind": "initialize", "feature": "Lamp", "into": "On"}
