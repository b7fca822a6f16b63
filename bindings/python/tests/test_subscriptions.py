"""Subscribers: the Mutation they receive, cancel and STOP, queued submits, exceptions."""

from __future__ import annotations

import sys
from typing import Any, List

import pytest

import uniflow
from conftest import Recorder


def test_subscriber_sees_every_mutation_with_its_fields(d: uniflow.Dispatcher) -> None:
    seen: List[Any] = []

    def read(m: uniflow.Mutation) -> None:
        seen.append((m.seq, m.kind, m.feature, m.old, m.new, m.action))

    d.subscribe(read)
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", "InProgress", from_="Starting", payload={"progress": 10})
    d.actualize("FileDownloading", "InProgress", {"progress": 20})
    d.deinitialize("FileDownloading")
    S = uniflow.State
    K = uniflow.MutationKind
    assert seen == [
        (1, K.INITIALIZATION, "FileDownloading", None, S("Starting", {}),
         {"kind": "initialize", "feature": "FileDownloading", "into": "Starting"}),
        (2, K.TRANSITION, "FileDownloading", S("Starting", {}), S("InProgress", {"progress": 10}),
         {"kind": "transition", "feature": "FileDownloading", "from": "Starting", "into": "InProgress"}),
        (3, K.ACTUALIZATION, "FileDownloading", S("InProgress", {"progress": 10}), S("InProgress", {"progress": 20}),
         {"kind": "actualize", "feature": "FileDownloading", "in": "InProgress"}),
        (4, K.DEINITIALIZATION, "FileDownloading", S("InProgress", {"progress": 20}), None,
         {"kind": "deinitialize", "feature": "FileDownloading"}),
    ]
    assert str(K.TRANSITION) == "transition"


def test_mutation_kept_by_the_subscriber_stays_usable(d: uniflow.Dispatcher) -> None:
    kept: List[uniflow.Mutation] = []
    d.subscribe(kept.append)  # reads nothing during the call
    d.initialize("Main", "Main", payload={"val": 1})
    d.actualize("Main", "Main", payload={"val": 2})
    first, second = kept
    assert first is not second
    assert first.kind is uniflow.MutationKind.INITIALIZATION
    assert first.new == uniflow.State("Main", {"val": 1}) and first.old is None
    assert second.seq == 2 and second.feature == "Main"
    assert second.old == uniflow.State("Main", {"val": 1})
    assert second.to_dict() == {
        "seq": 2, "kind": "actualization", "feature": "Main",
        "old": {"state": "Main", "payload": {"val": 1}},
        "new": {"state": "Main", "payload": {"val": 2}},
        "action": {"kind": "actualize", "feature": "Main", "in": "Main"}}
    assert repr(second) == "<Mutation #2 actualization Main: Main -> Main>"
    assert '"seq": 2' in second.to_json()


def test_mutation_partly_read_then_kept(d: uniflow.Dispatcher) -> None:
    kept: List[uniflow.Mutation] = []

    def keep_after_reading_kind(m: uniflow.Mutation) -> None:
        assert m.kind is uniflow.MutationKind.INITIALIZATION
        kept.append(m)

    d.subscribe(keep_after_reading_kind, when="Initialization<Toggle>")
    d.initialize("Toggle", "On")
    assert kept[0].new == uniflow.State("On", {}) and kept[0].seq == 1


def test_mutation_kept_through_a_closure_and_an_attribute(d: uniflow.Dispatcher) -> None:
    class Holder:
        last: Any = None

    holder = Holder()

    def keep(m: uniflow.Mutation) -> None:
        holder.last = m

    d.subscribe(keep)
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    assert holder.last.old.name == "Off" and holder.last.new.name == "On"


def test_mutation_is_immutable(d: uniflow.Dispatcher) -> None:
    kept: List[uniflow.Mutation] = []
    d.subscribe(kept.append)
    d.initialize("Toggle", "Off")
    with pytest.raises(AttributeError):
        kept[0].kind = uniflow.MutationKind.TRANSITION  # type: ignore[misc]
    with pytest.raises(AttributeError):
        kept[0].extra = 1  # type: ignore[attr-defined]


def test_reading_nothing_reuses_one_object_and_reads_are_not_stale(d: uniflow.Dispatcher) -> None:
    ids: List[int] = []
    names: List[str] = []
    d.subscribe(lambda m: ids.append(id(m)))
    d.subscribe(lambda m: names.append(m.new.name if m.new else "-"))
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    d.transition("Toggle", "Off")
    assert len(set(ids)) == 1  # lent, not kept: no allocation per call
    assert names == ["Off", "On", "Off"]  # the cache is reset between calls


def test_a_reading_subscriber_reuses_its_object_until_it_keeps_one(d: uniflow.Dispatcher) -> None:
    ids: List[int] = []
    kept: List[uniflow.Mutation] = []

    def read_and_keep_on(m: uniflow.Mutation) -> None:
        ids.append(id(m))
        assert m.new is not None
        if m.new.name == "On":
            kept.append(m)

    d.subscribe(read_and_keep_on)
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    d.transition("Toggle", "Off")
    d.transition("Toggle", "On")
    assert ids[0] == ids[1]  # read, not kept: lent again
    assert ids[2] != ids[1] and ids[2] == ids[3]  # the kept one was replaced
    assert [(m.seq, m.old, m.new) for m in kept] == [
        (2, uniflow.State("Off", {}), uniflow.State("On", {})),
        (4, uniflow.State("Off", {}), uniflow.State("On", {}))]
    assert kept[0].action == {"kind": "transition", "feature": "Toggle", "into": "On", "same": False}


def test_filters(d: uniflow.Dispatcher) -> None:
    into_on, toggles, any_ = Recorder(), Recorder(), Recorder()
    d.subscribe(into_on, when="TransitionInto<Toggle.On>")
    d.subscribe(toggles, when="AnyMutationOf< Toggle >")
    d.subscribe(any_)
    d.initialize("Toggle", "Off")
    d.initialize("Main", "Main", payload={"val": 1})
    d.transition("Toggle", "On")
    d.transition("Toggle", "Off")
    assert [m["seq"] for m in into_on.mutations] == [3]
    assert [m["seq"] for m in toggles.mutations] == [1, 3, 4]
    assert [m["seq"] for m in any_.mutations] == [1, 2, 3, 4]


def test_bad_filters(d: uniflow.Dispatcher) -> None:
    with pytest.raises(uniflow.SchemaError) as empty:
        d.subscribe(print, when="")
    assert empty.value.message == "cannot parse filter '': empty filter"
    with pytest.raises(uniflow.NotFound) as unknown:
        d.subscribe(print, when="AnyMutationOf<Nope>")
    assert unknown.value.message == "filter 'AnyMutationOf<Nope>': unknown feature 'Nope'"
    with pytest.raises(TypeError) as not_callable:
        d.subscribe(42)  # type: ignore[arg-type]
    assert str(not_callable.value) == "subscriber must be callable, got int"
    assert d._keep == {}  # nothing kept for the failed subscriptions


def test_cancel_is_idempotent_and_releases_the_callback(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    sub = d.subscribe(recorder)
    assert sub.id > 0 and sub.active and sub.when is None
    assert repr(sub) == f"<uniflow.Subscription id={sub.id} when=AnyMutation active>"
    d.initialize("Toggle", "Off")
    sub.cancel()
    sub.cancel()
    assert not sub.active and d._keep == {}
    d.transition("Toggle", "On")
    assert len(recorder.mutations) == 1
    other = d.subscribe(recorder)
    assert other.id != sub.id  # ids are never reused
    with other:
        pass
    assert not other.active


def test_subscriber_returning_stop_ends_its_subscription(d: uniflow.Dispatcher) -> None:
    calls: List[int] = []

    def once(m: uniflow.Mutation) -> Any:
        calls.append(m.seq)
        return uniflow.STOP

    sub = d.subscribe(once)
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    assert calls == [1]
    assert not sub.active
    sub.cancel()  # no-op, no error
    assert repr(uniflow.STOP) == "uniflow.STOP"


def test_subscriber_cancels_itself(d: uniflow.Dispatcher) -> None:
    calls: List[int] = []
    subs: List[uniflow.Subscription] = []

    def self_cancelling(m: uniflow.Mutation) -> None:
        calls.append(m.seq)
        subs[0].cancel()
        subs[0].cancel()

    subs.append(d.subscribe(self_cancelling))
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    assert calls == [1]
    assert d._keep == {}  # released after it returned


def test_subscriber_cancels_a_later_one_in_the_same_notification(d: uniflow.Dispatcher) -> None:
    calls: List[str] = []
    later: List[uniflow.Subscription] = []
    d.subscribe(lambda m: (calls.append("first"), later[0].cancel()))
    later.append(d.subscribe(lambda m: calls.append("second")))
    d.initialize("Toggle", "Off")
    assert calls == ["first"]


def test_subscribe_inside_a_subscriber_starts_with_the_next_mutation(d: uniflow.Dispatcher) -> None:
    late = Recorder()
    added: List[bool] = []

    def add_one(m: uniflow.Mutation) -> None:
        if not added:
            added.append(True)
            d.subscribe(late)

    d.subscribe(add_one)
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    assert [m["seq"] for m in late.mutations] == [2]


def test_subscriber_that_submits_is_queued_in_order(d: uniflow.Dispatcher, recorder: Recorder) -> None:
    results: List[Any] = []

    def chain(m: uniflow.Mutation) -> None:
        if m.kind is uniflow.MutationKind.INITIALIZATION:
            results.append(d.transition("Toggle", "On", from_="Off"))
            results.append(d.transition("Toggle", "Off", from_="On"))
            results.append(d.get("Toggle"))  # reads act at once: still Off, the initial state

    d.subscribe(chain, when="AnyMutationOf<Toggle>")
    d.subscribe(recorder)
    assert d.initialize("Toggle", "Off") is uniflow.OK
    assert results == [uniflow.QUEUED, uniflow.QUEUED, uniflow.State("Off", {})]
    # Every subscriber sees the initialization before either queued action runs.
    assert [(m["seq"], m["kind"], m["new"]["state"]) for m in recorder.mutations] == [
        (1, "initialization", "Off"), (2, "transition", "On"), (3, "transition", "Off")]


def test_on_decorator(d: uniflow.Dispatcher) -> None:
    seen: List[str] = []

    @d.on("TransitionInto<Toggle.On>")
    def switched_on(m: uniflow.Mutation) -> None:
        seen.append(m.feature)

    assert callable(switched_on)
    assert isinstance(switched_on.subscription, uniflow.Subscription)  # type: ignore[attr-defined]
    d.initialize("Toggle", "Off")
    d.transition("Toggle", "On")
    switched_on.subscription.cancel()  # type: ignore[attr-defined]
    d.transition("Toggle", "Off")
    d.transition("Toggle", "On")
    assert seen == ["Toggle"]

    @d.on()
    def everything(m: uniflow.Mutation) -> None:
        seen.append("any")

    d.transition("Toggle", "Off")
    assert seen == ["Toggle", "any"]


# -- exceptions in subscribers ------------------------------------------------------------


def test_subscriber_exception_leaves_the_mutation_applied_and_is_re_raised(d: uniflow.Dispatcher) -> None:
    after: List[int] = []

    def broken(m: uniflow.Mutation) -> None:
        raise ValueError(f"bad subscriber at {m.seq}")

    d.subscribe(broken)
    d.subscribe(lambda m: after.append(m.seq))  # later subscribers still run
    with pytest.raises(ValueError, match="bad subscriber at 1"):
        d.initialize("Toggle", "Off")
    assert d.get("Toggle") == uniflow.State("Off", {})
    assert after == [1]
    with pytest.raises(ValueError, match="bad subscriber at 2"):
        d.transition("Toggle", "On")
    assert d._errors == {}


def test_only_the_first_exception_is_raised_the_others_go_to_unraisablehook(
        d: uniflow.Dispatcher, monkeypatch: pytest.MonkeyPatch) -> None:
    unraisable: List[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def first(m: uniflow.Mutation) -> None:
        raise KeyError("first")

    def second(m: uniflow.Mutation) -> None:
        raise KeyError("second")

    d.subscribe(first)
    d.subscribe(second)
    with pytest.raises(KeyError, match="first"):
        d.initialize("Toggle", "Off")
    assert [str(u.exc_value) for u in unraisable] == ["'second'"]
    assert "uniflow subscriber" in unraisable[0].err_msg


def test_exception_in_a_queued_action_is_raised_by_the_outermost_call(d: uniflow.Dispatcher) -> None:
    inner: List[Any] = []

    def queue_a_failing_via(m: uniflow.Mutation) -> None:
        if m.feature == "Toggle":
            inner.append(d.initialize("Main", "Main", via=lambda cur: 1 / 0))

    d.subscribe(queue_a_failing_via)
    with pytest.raises(ZeroDivisionError):
        d.initialize("Toggle", "Off")
    assert inner == [uniflow.QUEUED]  # the submit inside the callback returned normally
    assert d.get("Toggle") == uniflow.State("Off", {}) and d.get("Main") is None


def test_an_earlier_exception_is_not_raised_by_a_nested_submit(d: uniflow.Dispatcher) -> None:
    """A subscriber that raises, then another that submits: the submit returns QUEUED
    (the pending exception belongs to the outer call), the queued action runs, and
    the outer call raises."""
    results: List[Any] = []

    def broken(m: uniflow.Mutation) -> None:
        if m.kind is uniflow.MutationKind.INITIALIZATION:
            raise RuntimeError("boom")

    def submitter(m: uniflow.Mutation) -> None:
        if m.kind is uniflow.MutationKind.INITIALIZATION:
            results.append(d.transition("Toggle", "On"))

    d.subscribe(broken)
    d.subscribe(submitter)
    with pytest.raises(RuntimeError, match="boom"):
        d.initialize("Toggle", "Off")
    assert results == [uniflow.QUEUED]
    assert d.get("Toggle") == uniflow.State("On", {})


def test_subscriber_errors_from_a_submit_inside_a_callback_raise_there(d: uniflow.Dispatcher) -> None:
    """A submit inside a callback that fails at once (an input error) raises in the
    callback; uncaught, it is re-raised by the outer call."""
    caught: List[Any] = []

    def bad_submit(m: uniflow.Mutation) -> None:
        try:
            d.initialize("Toggle", "Nope")
        except uniflow.NotFound as error:
            caught.append(error.message)
        d.submit("{")

    d.subscribe(bad_submit, when="Initialization<Main>")
    with pytest.raises(uniflow.InvalidJSON):
        d.initialize("Main", "Main", payload={"val": 0})
    assert caught == ["unknown state 'Nope' of feature Toggle"]


def test_close_inside_a_callback_is_refused(d: uniflow.Dispatcher) -> None:
    def closer(m: uniflow.Mutation) -> None:
        d.close()

    d.subscribe(closer)
    with pytest.raises(uniflow.Misuse, match="inside one of the dispatcher's own callbacks"):
        d.initialize("Toggle", "Off")
    assert not d.closed
    assert d.get("Toggle") == uniflow.State("Off", {})


def test_keyboard_interrupt_in_a_subscriber_is_re_raised(d: uniflow.Dispatcher) -> None:
    def interrupt(m: uniflow.Mutation) -> None:
        raise KeyboardInterrupt

    d.subscribe(interrupt)
    with pytest.raises(KeyboardInterrupt):
        d.initialize("Toggle", "Off")


def test_exception_in_a_subscriber_that_kept_nothing_does_not_expire_the_mutation(d: uniflow.Dispatcher) -> None:
    def broken(m: uniflow.Mutation) -> None:
        raise RuntimeError("x")

    d.subscribe(broken)
    with pytest.raises(RuntimeError) as info:
        d.initialize("Toggle", "Off")
    # The traceback holds the subscriber's frame, hence the Mutation: it was snapshotted.
    tb = info.value.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    mutation = next(f.f_locals["m"] for f in frames if f.f_code is broken.__code__)
    assert mutation.new == uniflow.State("Off", {})
