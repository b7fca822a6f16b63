"""Actions: the five methods, submit, via callables, and every failure they raise."""

from __future__ import annotations

import ctypes
import json
from typing import Any, List

import pytest

import uniflow
from conftest import Recorder


# -- the five action methods --------------------------------------------------------------


def test_initialize_automatically_and_with_a_payload(d: uniflow.Dispatcher) -> None:
    assert d.initialize("Toggle", "Off") is uniflow.OK
    assert d.initialize("Main", "Main", payload={"val": 1}) is uniflow.OK
    assert d.initialize("Counter", "Counting", payload='{"n": 2}') is uniflow.OK  # JSON text
    assert d.state == {"Main": {"state": "Main", "payload": {"val": 1}},
                       "Toggle": {"state": "Off", "payload": {}},
                       "Counter": {"state": "Counting", "payload": {"n": 2}}}
    with pytest.raises(uniflow.Rejected) as info:
        d.initialize("Toggle", "On")
    assert info.value.code == uniflow.Status.REJECTED == -1
    assert info.value.message == "Toggle is already initialized (in state Off)"


def test_initialize_respects_initial_states(d: uniflow.Dispatcher) -> None:
    with pytest.raises(uniflow.Rejected, match="InProgress"):
        d.initialize("FileDownloading", "InProgress", payload={"progress": 1})
    assert d.get("FileDownloading") is None


def test_actualize_replaces_the_payload(d: uniflow.Dispatcher) -> None:
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", "InProgress", from_="Starting", payload={"progress": 10})
    assert d.actualize("FileDownloading", "InProgress", {"progress": 55.5}) is uniflow.OK
    assert d.get("FileDownloading") == uniflow.State("InProgress", {"progress": 55.5})
    with pytest.raises(uniflow.Rejected, match="FileDownloading is in state InProgress"):
        d.actualize("FileDownloading", "Starting")


def test_transition_between_into_and_same(d: uniflow.Dispatcher) -> None:
    d.initialize("Toggle", "Off")
    assert d.transition("Toggle", into="On", from_="Off") is uniflow.OK
    with pytest.raises(uniflow.Rejected, match="Toggle is in state On, not Off"):
        d.transition("Toggle", into="On", from_="Off")
    with pytest.raises(uniflow.Rejected):
        d.transition("Toggle", "On")  # already in On and same is false
    assert d.transition("Toggle", "On", same=True) is uniflow.OK
    assert d.transition("Toggle", "Off") is uniflow.OK
    assert d.get("Toggle") == uniflow.State("Off", {})
    with pytest.raises(uniflow.InvalidArgument) as info:
        d.transition("Toggle", "On", from_="Off", same=True)
    assert info.value.message == "uf_action: 'same' cannot be used with 'from'"


def test_transitions_of_the_definition_are_enforced(d: uniflow.Dispatcher) -> None:
    d.initialize("FileDownloading", "Starting")
    with pytest.raises(uniflow.Rejected) as info:
        d.transition("FileDownloading", "Completed", from_="Starting")
    assert info.value.message == ("FileDownloading cannot transition from Starting into Completed: "
                                  "not a declared transition")


def test_failed_state_fills_defaults(d: uniflow.Dispatcher) -> None:
    d.initialize("FileDownloading", "Starting")
    with pytest.raises(uniflow.SchemaError) as info:
        d.transition("FileDownloading", "Failed")
    assert info.value.message == "FileDownloading.Failed.reason: required field missing"
    d.transition("FileDownloading", "Failed", payload={"reason": "disk full"})
    assert d.get("FileDownloading") == uniflow.State("Failed", {"reason": "disk full", "retries": 0})


def test_deinitialize_with_and_without_from(d: uniflow.Dispatcher) -> None:
    d.initialize("Toggle", "Off")
    with pytest.raises(uniflow.Rejected):
        d.deinitialize("Toggle", from_="On")
    assert d.deinitialize("Toggle", from_="Off") is uniflow.OK
    with pytest.raises(uniflow.Rejected, match="Toggle is not initialized"):
        d.deinitialize("Toggle")
    d.initialize("Toggle", "On")
    assert d.deinitialize("Toggle") is uniflow.OK
    assert d.state == {}


def test_trigger_forms(d: uniflow.Dispatcher) -> None:
    ran = []
    assert d.trigger("Toggle", initialized=False, via=lambda cur: ran.append(("absent", cur))) is uniflow.OK
    with pytest.raises(uniflow.Rejected, match="Toggle is not initialized"):
        d.trigger("Toggle")  # neither in_ nor initialized: initialized
    d.initialize("Toggle", "Off")
    assert d.trigger("Toggle", via=lambda cur: ran.append(("initialized", cur))) is uniflow.OK
    assert d.trigger("Toggle", initialized=True) is uniflow.OK
    assert d.trigger("Toggle", in_="Off", via=lambda cur: ran.append(("in", cur))) is uniflow.OK
    with pytest.raises(uniflow.Rejected):
        d.trigger("Toggle", in_="On", via=lambda cur: ran.append("never"))
    with pytest.raises(uniflow.Rejected):
        d.trigger("Toggle", initialized=False)
    assert ran == [("absent", None), ("initialized", {}), ("in", {})]
    with pytest.raises(uniflow.SchemaError):
        d.trigger("Toggle", in_="Off", initialized=True)  # at most one (docs/actions.md)


def test_trigger_applies_nothing_and_queues_its_submit_list(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    d.initialize("Toggle", "Off")
    d.subscribe(recorder)
    assert d.trigger("Toggle", in_="Off", submit=[
        {"kind": "transition", "feature": "Toggle", "into": "On"},
        json.dumps({"kind": "transition", "feature": "Toggle", "into": "Off"}),
    ]) is uniflow.OK
    assert recorder.kinds() == ["transition", "transition"]
    assert d.get("Toggle") == uniflow.State("Off", {})
    # Not processed: nothing is queued.
    with pytest.raises(uniflow.Rejected):
        d.trigger("Toggle", in_="On", submit=[{"kind": "transition", "feature": "Toggle", "into": "On"}])
    assert len(recorder.mutations) == 2
    # One invalid action refuses the whole trigger at once.
    with pytest.raises(uniflow.NotFound):
        d.trigger("Toggle", in_="Off", submit=[{"kind": "transition", "feature": "Toggle", "into": "Nope"}])


# -- the prepared hot path ----------------------------------------------------------------
# Payload-free, via-free actions without scope/context/id go through a cached uf_action.


def test_every_action_form_works_through_its_prepared_struct(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    d.subscribe(recorder)
    for _ in range(2):  # the second round reuses the cached structs
        assert d.initialize("Toggle", "Off") is uniflow.OK
        assert d.actualize("Toggle", "Off") is uniflow.OK  # an auto state: no payload needed
        assert d.transition("Toggle", "On", from_="Off") is uniflow.OK
        assert d.transition("Toggle", "On", same=True) is uniflow.OK
        assert d.transition("Toggle", "Off") is uniflow.OK
        assert d.deinitialize("Toggle", from_="Off") is uniflow.OK
        d.initialize("Toggle", "On")
        assert d.deinitialize("Toggle") is uniflow.OK
    assert [(m["kind"], m["action"]) for m in recorder.mutations[:7]] == [
        ("initialization", {"kind": "initialize", "feature": "Toggle", "into": "Off"}),
        ("actualization", {"kind": "actualize", "feature": "Toggle", "in": "Off"}),
        ("transition", {"kind": "transition", "feature": "Toggle", "from": "Off", "into": "On"}),
        ("transition", {"kind": "transition", "feature": "Toggle", "into": "On", "same": True}),
        ("transition", {"kind": "transition", "feature": "Toggle", "into": "Off", "same": False}),
        ("deinitialization", {"kind": "deinitialize", "feature": "Toggle", "from": "Off"}),
        ("initialization", {"kind": "initialize", "feature": "Toggle", "into": "On"})]
    assert recorder.mutations[7]["action"] == {"kind": "deinitialize", "feature": "Toggle"}
    assert len(recorder.mutations) == 16


def test_prepared_actions_fail_like_any_other(d: uniflow.Dispatcher) -> None:
    for _ in range(2):  # failures do not poison the cache
        with pytest.raises(uniflow.Rejected) as info:
            d.transition("Toggle", "On", from_="Off")
        assert info.value.message == "Toggle is not initialized (expected state Off)"
        with pytest.raises(uniflow.NotFound) as state:
            d.initialize("Toggle", "Nope")
        assert state.value.message == "unknown state 'Nope' of feature Toggle"
        with pytest.raises(uniflow.SchemaError) as schema:
            d.initialize("Counter", "Counting")
        assert schema.value.message == "Counter.Counting.n: required field missing"
    d.initialize("Toggle", "Off")
    assert d.get("Toggle") == uniflow.State("Off", {})


def test_prepared_actions_inside_a_callback_are_queued(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    results: List[Any] = []

    def chain(m: uniflow.Mutation) -> None:
        if m.kind is uniflow.MutationKind.INITIALIZATION:
            results.append(d.transition("Toggle", "On", from_="Off"))
            results.append(d.actualize("Toggle", "On"))
            results.append(d.deinitialize("Toggle", from_="On"))
            results.append(d.transition("Toggle", "Off", from_="On"))  # rejected when it runs
            with pytest.raises(uniflow.SchemaError) as info:  # checked up to the payload at once
                d.initialize("Main", "Main")
            results.append(info.value.message)

    d.subscribe(chain, when="Initialization<Toggle>")
    d.subscribe(recorder)
    assert d.initialize("Toggle", "Off") is uniflow.OK
    assert results == [uniflow.QUEUED] * 4 + ["Main.Main.val: required field missing"]
    assert [(m["kind"], m["new"] and m["new"]["state"]) for m in recorder.mutations] == [
        ("initialization", "Off"), ("transition", "On"), ("actualization", "On"), ("deinitialization", None)]


def test_the_prepared_cache_is_bounded_and_refills(d: uniflow.Dispatcher, monkeypatch: pytest.MonkeyPatch) -> None:
    from uniflow import _prepared

    monkeypatch.setattr(_prepared, "_PREPARED_LIMIT", 3)
    d.initialize("Toggle", "Off")
    for i in range(20):
        d.transition("Toggle", "On" if i % 2 == 0 else "Off", from_="Off" if i % 2 == 0 else "On")
        d.actualize("Toggle", "Off" if i % 2 else "On")
        assert d._prepared_count <= 3
    assert d.get("Toggle") == uniflow.State("Off", {})


def test_prepared_actions_of_a_closed_dispatcher_raise_misuse() -> None:
    d = uniflow.Dispatcher()
    d.register({"feature": "Toggle", "states": {"Off": {}, "On": {}}})
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On", from_="Off")  # now cached
    d.close()
    for call in (lambda: d.transition("Toggle", "On", from_="Off"), lambda: d.actualize("Toggle", "On"),
                 lambda: d.deinitialize("Toggle"), lambda: d.initialize("Toggle", "Off")):
        with pytest.raises(uniflow.Misuse, match="the Dispatcher is closed"):
            call()


def test_scope_context_and_id_reach_the_mutation(d: uniflow.Dispatcher) -> None:
    seen = []
    d.subscribe(lambda m: seen.append(m.action))
    d.initialize("Toggle", "Off", scope="test_actions.py", context="setup", id="a-1")
    d.transition("Toggle", "On", from_="Off", id="a-2")
    assert seen == [
        {"kind": "initialize", "feature": "Toggle", "into": "Off", "scope": "test_actions.py",
         "context": "setup", "id": "a-1"},
        {"kind": "transition", "feature": "Toggle", "from": "Off", "into": "On", "id": "a-2"},
    ]


# -- submit -------------------------------------------------------------------------------


def test_submit_dicts_and_json_text(d: uniflow.Dispatcher) -> None:
    assert d.submit({"kind": "initialize", "feature": "Main", "into": "Main", "payload": {"val": 0}}) is uniflow.OK
    assert d.submit('{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":7}}') is uniflow.OK
    assert d.submit(b'{"kind":"deinitialize","feature":"Main","from":"Main"}') is uniflow.OK
    assert d.state == {}


def test_a_str_that_is_not_json_text_is_a_path_for_every_document(d: uniflow.Dispatcher, tmp_path: Any) -> None:
    # As register tells a path from JSON text: a str starting with { or [ (after blanks) is text.
    action = tmp_path / "action.json"
    action.write_text('{"kind": "initialize", "feature": "Toggle", "into": "Off"}')
    assert d.submit(str(action)) is uniflow.OK
    batch = tmp_path / "batch.json"
    batch.write_text('[{"kind": "transition", "feature": "Toggle", "into": "On"}]')
    assert d.batch(batch) is uniflow.OK and d.get("Toggle").name == "On"
    batch.write_text('[{"kind": "transition", "feature": "Toggle", "into": "Off"}]')
    assert d.batch(str(batch)) is uniflow.OK and d.get("Toggle").name == "Off"
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text('{"Toggle": {"state": "Off", "payload": {}}}')
    assert d.restore(str(snapshot)) is uniflow.OK
    assert d.state == {"Toggle": {"state": "Off", "payload": {}}}
    # Nothing changes when the file cannot be read: FileError names the path.
    with pytest.raises(uniflow.FileError) as missing:
        d.submit(str(tmp_path / "nope.json"))
    assert missing.value.message == f"cannot read '{tmp_path / 'nope.json'}': No such file or directory"
    with pytest.raises(uniflow.FileError) as directory:
        d.restore(str(tmp_path))
    assert directory.value.message == f"cannot read '{tmp_path}': Is a directory"
    with pytest.raises(uniflow.FileError):
        d.submit_after(1, "not json at all")
    for call in (d.submit, d.batch, d.restore, lambda path: d.submit_after(1, path)):
        with pytest.raises(uniflow.InvalidArgument) as nul:
            call("a\0.json")
        assert nul.value.message == "path contains a NUL character"
    assert d.state == {"Toggle": {"state": "Off", "payload": {}}} and d.timers() == []


def test_submit_errors(d: uniflow.Dispatcher) -> None:
    with pytest.raises(uniflow.InvalidJSON) as bad:
        d.submit("{")
    assert bad.value.message == "line 1, column 1: string or '}' expected near end of file"
    with pytest.raises(uniflow.SchemaError):
        d.submit({"kind": "initialize", "feature": "Toggle", "into": "On", "typo": 1})
    with pytest.raises(uniflow.SchemaError):
        d.submit("[1]")
    with pytest.raises(uniflow.NotFound) as nf:
        d.submit({"kind": "initialize", "feature": "Nope", "into": "On"})
    assert nf.value.message == "unknown feature 'Nope'"
    with pytest.raises(uniflow.NotFound) as state:
        d.initialize("Toggle", "Nope")
    assert state.value.message == "unknown state 'Nope' of feature Toggle"
    with pytest.raises(uniflow.SchemaError) as field:
        d.initialize("Toggle", "On", payload={"x": 1})
    assert field.value.message == "Toggle.On.x: unknown field"
    with pytest.raises(uniflow.InvalidArgument, match="not JSON-serializable"):
        d.initialize("Main", "Main", payload={"val": object()})
    with pytest.raises(TypeError):
        d.initialize(42, "Main")  # type: ignore[arg-type]
    with pytest.raises(uniflow.InvalidArgument, match="NUL"):
        d.initialize("Tog\0gle", "On")


def test_batch_is_all_or_nothing(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    d.subscribe(recorder)
    with pytest.raises(uniflow.Rejected) as info:
        d.batch([{"kind": "initialize", "feature": "Toggle", "into": "On"},
                        {"kind": "initialize", "feature": "Toggle", "into": "On"}])
    assert info.value.message == "batch[1]: Toggle is already initialized (in state On)"
    assert d.state == {} and recorder.mutations == []
    assert d.batch([{"kind": "initialize", "feature": "Toggle", "into": "On"},
                           '{"kind": "transition", "feature": "Toggle", "into": "Off"}']) is uniflow.OK
    assert recorder.kinds() == ["initialization", "transition"]
    assert d.batch("[]") is uniflow.OK


def test_action_text_in_a_list_that_is_not_json_raises_invalid_json(d: uniflow.Dispatcher) -> None:
    # A batch or a trigger's submit list names the element, as the library's batch[i] does.
    with pytest.raises(uniflow.InvalidJSON) as info:
        d.batch([{"kind": "initialize", "feature": "Toggle", "into": "On"}, '{"kind": '])
    assert info.value.code == uniflow.Status.EJSON
    assert info.value.message == "batch[1]: line 1, column 10: Expecting value"
    with pytest.raises(uniflow.InvalidJSON, match=r"^submit\[0\]: line 1, column 1: Expecting value$"):
        d.trigger("Toggle", initialized=False, submit=["nope"])
    with pytest.raises(uniflow.InvalidJSON, match=r"^batch\[0\]: the text is not UTF-8"):
        d.batch([b'{"kind": "\xff"}'])
    with pytest.raises(TypeError, match="list of actions"):
        d.batch({"kind": "initialize", "feature": "Toggle", "into": "On"})  # type: ignore[arg-type]
    assert d.state == {}


# -- via callables ------------------------------------------------------------------------


def test_via_receives_the_current_payload_and_returns_the_new_one(d: uniflow.Dispatcher) -> None:
    seen = []

    def start(cur):
        seen.append(cur)
        return {"val": 1}

    d.initialize("Main", "Main", via=start)
    d.actualize("Main", "Main", via=lambda cur: seen.append(cur) or {"val": cur["val"] + 1})
    d.actualize("Main", "Main", via=lambda cur: json.dumps({"val": cur["val"] * 10}))  # JSON text
    assert seen == [None, {"val": 1}]
    assert d.get("Main") == uniflow.State("Main", {"val": 20})


def test_via_on_transition_and_submit(d: uniflow.Dispatcher) -> None:
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", "InProgress", from_="Starting", via=lambda cur: {"progress": 1})
    d.submit({"kind": "actualize", "feature": "FileDownloading", "in": "InProgress"},
             via=lambda cur: {"progress": cur["progress"] + 1})
    assert d.get("FileDownloading") == uniflow.State("InProgress", {"progress": 2})
    d.submit('{"kind":"transition","feature":"FileDownloading","into":"Completed"}', via=lambda cur: None)
    assert d.get("FileDownloading") == uniflow.State("Completed", {})


def test_via_result_is_ignored_for_triggers_and_deinitializations(d: uniflow.Dispatcher) -> None:
    d.initialize("Toggle", "Off")
    assert d.trigger("Toggle", via=lambda cur: {"ignored": True}) is uniflow.OK
    assert d.submit({"kind": "trigger", "feature": "Toggle"}, via=lambda cur: {"ignored": True}) is uniflow.OK
    assert d.deinitialize("Toggle", via=lambda cur: {"ignored": True}) is uniflow.OK
    assert d.state == {}


def test_via_none_into_an_auto_state_and_into_required_fields(d: uniflow.Dispatcher) -> None:
    assert d.initialize("Toggle", "Off", via=lambda cur: None) is uniflow.OK
    with pytest.raises(uniflow.Rejected) as info:
        d.initialize("Counter", "Counting", via=lambda cur: None)
    assert info.value.message == ("Counter.Counting has required fields and the via callback "
                                  "did not become a payload")


def test_via_decline_rejects_without_an_exception_of_its_own(d: uniflow.Dispatcher) -> None:
    d.initialize("Toggle", "Off")
    with pytest.raises(uniflow.Rejected) as info:
        d.transition("Toggle", "On", via=lambda cur: uniflow.DECLINE)
    assert info.value.message == "Toggle: the via callback declined the action"
    assert d.get("Toggle") == uniflow.State("Off", {})
    assert repr(uniflow.DECLINE) == "uniflow.DECLINE"


def test_via_payload_that_does_not_fit(d: uniflow.Dispatcher) -> None:
    with pytest.raises(uniflow.SchemaError) as info:
        d.initialize("Counter", "Counting", via=lambda cur: {"n": "x"})
    assert info.value.message == "Counter.Counting.n: expected integer, got string"
    with pytest.raises(uniflow.SchemaError):
        d.initialize("Counter", "Counting", via=lambda cur: "{not json")
    assert d.state == {}


def test_via_that_raises_is_re_raised_and_nothing_changes(d: uniflow.Dispatcher) -> None:
    d.initialize("Main", "Main", payload={"val": 1})

    def broken(cur):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom") as info:
        d.actualize("Main", "Main", via=broken)
    notes = getattr(info.value, "__notes__", [])
    assert any("UF_ECALLBACK" in note for note in notes)
    assert d.get("Main") == uniflow.State("Main", {"val": 1})
    # The error does not linger: the next call succeeds.
    assert d.actualize("Main", "Main", payload={"val": 2}) is uniflow.OK


def test_via_returning_an_unserializable_value_is_invalid_argument(d: uniflow.Dispatcher) -> None:
    # As a payload= argument that json.dumps cannot write is.
    with pytest.raises(uniflow.InvalidArgument, match="payload is not JSON-serializable"):
        d.initialize("Main", "Main", via=lambda cur: {"val": object()})
    with pytest.raises(uniflow.InvalidArgument, match="NUL"):
        d.initialize("Main", "Main", via=lambda cur: '{"val": 1}\x00 and the rest')
    assert d.get("Main") is None
    with pytest.raises(TypeError, match="callable"):
        d.initialize("Main", "Main", via=42)  # type: ignore[arg-type]


def test_via_with_a_payload_is_invalid(d: uniflow.Dispatcher) -> None:
    with pytest.raises(uniflow.InvalidArgument) as info:
        d.initialize("Toggle", "On", payload={}, via=lambda cur: None)
    assert info.value.message == "action has both a JSON payload and a via callback"
    with pytest.raises(uniflow.InvalidArgument):
        d.submit({"kind": "initialize", "feature": "Toggle", "into": "On", "payload": {}}, via=lambda c: None)


def test_via_objects_are_released_whatever_the_outcome(d: uniflow.Dispatcher) -> None:
    from uniflow import _callbacks

    before = len(_callbacks._vias)
    d.initialize("Toggle", "Off", via=lambda c: None)
    with pytest.raises(uniflow.Rejected):
        d.initialize("Toggle", "Off", via=lambda c: None)
    with pytest.raises(uniflow.NotFound):
        d.initialize("Nope", "Off", via=lambda c: None)
    with pytest.raises(uniflow.InvalidJSON):
        d.submit("{", via=lambda c: None)
    assert len(_callbacks._vias) == before


# -- status codes and exception classes ---------------------------------------------------


EXCEPTIONS = [
    (uniflow.Rejected, -1, "UF_REJECTED"),
    (uniflow.InvalidArgument, -2, "UF_EINVAL"),
    (uniflow.InvalidJSON, -3, "UF_EJSON"),
    (uniflow.SchemaError, -4, "UF_ESCHEMA"),
    (uniflow.NotFound, -5, "UF_ENOTFOUND"),
    (uniflow.AlreadyExists, -6, "UF_EEXISTS"),
    (uniflow.CallbackError, -7, "UF_ECALLBACK"),
    (uniflow.LoopError, -8, "UF_ELOOP"),
    (uniflow.Misuse, -9, "UF_EMISUSE"),
    (uniflow.OutOfMemory, -10, "UF_ENOMEM"),
    (uniflow.FileError, -11, "UF_EIO"),
]


@pytest.mark.parametrize("cls,code,name", EXCEPTIONS)
def test_each_code_maps_to_its_exception(cls, code, name) -> None:
    from uniflow.errors import error_for

    error = error_for(code, "the message")
    assert type(error) is cls
    assert isinstance(error, uniflow.UniflowError)
    assert error.code == code and error.message == "the message" and str(error) == "the message"
    assert error.name == name
    lib = ctypes.CDLL(uniflow.library_path())
    lib.uf_status_name.restype = ctypes.c_char_p
    assert lib.uf_status_name(code).decode() == name
    assert repr(error) == f"{cls.__name__}('the message', code={name})"
    import pickle

    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is cls and clone.code == code and clone.message == "the message"


def test_unknown_code_is_a_plain_uniflow_error() -> None:
    from uniflow.errors import error_for

    error = error_for(-99, "odd")
    assert type(error) is uniflow.UniflowError and error.code == -99 and error.name == "UF_UNKNOWN"


def test_callback_error_from_a_c_via() -> None:
    """A via that fails without a Python exception (here a C-level one returning -1)
    surfaces as CallbackError with the library's message."""
    from uniflow._library import FREE_FN, VIA_FN, load
    from uniflow.errors import check

    lib, _ = load()
    with uniflow.Dispatcher() as d:
        d.register({"feature": "Toggle", "states": {"Off": {}, "On": {}}})
        failing = VIA_FN(lambda ctx, payload: -1)
        rc = lib.uf_submit_via(d._handle, b'{"kind":"initialize","feature":"Toggle","into":"On"}',
                               failing, None, FREE_FN())
        assert rc == uniflow.Status.ECALLBACK
        with pytest.raises(uniflow.CallbackError) as info:
            check(rc)
        assert info.value.code == -7
        assert info.value.message == "Toggle: the via callback failed (returned -1)"


def test_loop_error_when_submitting_while_dropping() -> None:
    """Past max_cascade the queue is dropped; a submit made then is refused with
    UF_ELOOP, and here it is raised by the reporter that made it."""
    with uniflow.Dispatcher(max_cascade=2) as d:
        d.register({"feature": "Toggle", "states": {"Off": {}, "On": {}}})
        d.initialize("Toggle", "Off")
        events = []

        def flip(m):
            d.transition("Toggle", "Off" if m.new.name == "On" else "On")

        def reporter(report):
            events.append(report["event"])
            if report["event"] == "dropped":
                d.transition("Toggle", "On", same=True)

        d.subscribe(flip)
        d.set_reporter(reporter)
        with pytest.raises(uniflow.LoopError) as info:
            d.transition("Toggle", "On")
        assert info.value.code == -8
        assert info.value.message == "the cascade limit (2) was reached; action refused"
        assert "dropped" in events


def test_misuse_from_the_library_inside_a_callback(d: uniflow.Dispatcher) -> None:
    def batch_inside(m):
        d.batch([])

    d.subscribe(batch_inside)
    with pytest.raises(uniflow.Misuse) as info:
        d.initialize("Toggle", "Off")
    assert info.value.code == -9
    assert info.value.message == "uf_submit_batch is not allowed inside a callback of the same dispatcher"
    assert d.get("Toggle") == uniflow.State("Off", {})  # the mutation stays applied
