"""Threads submitting concurrently, and callbacks surviving garbage collection."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from typing import Any, List

import pytest

import uniflow
from conftest import COUNTER, PYTHON_ROOT, TOGGLE

THREADS = 4
PER_THREAD = 500


def test_four_threads_submitting_concurrently_lose_nothing() -> None:
    with uniflow.Dispatcher() as d:
        d.register([COUNTER, TOGGLE])
        d.initialize("Counter", "Counting", payload={"n": 0})
        seen: List[int] = []
        threads_seen: List[int] = []
        d.subscribe(lambda m: (seen.append(m.seq), threads_seen.append(threading.get_ident())),
                    when="AnyMutationOf<Counter>")
        errors: List[BaseException] = []
        start = threading.Barrier(THREADS)

        def worker() -> None:
            try:
                start.wait()
                for _ in range(PER_THREAD):
                    # A read-modify-write in a via runs under the dispatcher's lock.
                    d.actualize("Counter", "Counting", via=lambda cur: {"n": cur["n"] + 1})
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert d.get("Counter") == uniflow.State("Counting", {"n": THREADS * PER_THREAD})
        # One notification per mutation, in seq order, none lost or doubled.
        assert seen == list(range(2, THREADS * PER_THREAD + 2))
        assert len(set(threads_seen)) > 1  # callbacks ran on the submitting threads


def test_four_threads_sharing_prepared_actions_lose_nothing() -> None:
    """The hot path: every thread dispatches the same cached uf_action structs."""
    with uniflow.Dispatcher() as d:
        d.register(TOGGLE)
        d.initialize("Toggle", "Off")
        seqs: List[int] = []
        d.subscribe(lambda m: seqs.append(m.seq))
        kept: List[uniflow.Mutation] = []
        d.subscribe(lambda m: kept.append(m) if m.seq % 100 == 0 else None)
        results: List[Any] = []
        start = threading.Barrier(THREADS)

        def worker() -> None:
            start.wait()
            mine = [d.transition("Toggle", state, same=True) for _ in range(PER_THREAD) for state in ("On", "Off")]
            results.extend(mine)

        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = THREADS * PER_THREAD * 2
        assert results == [uniflow.OK] * total
        assert seqs == list(range(2, total + 2))  # every transition, none lost or doubled
        assert [m.seq for m in kept] == list(range(100, total + 2, 100))
        assert all(m.kind is uniflow.MutationKind.TRANSITION and m.old is not None for m in kept)


CONTENDED = """
import threading, time, uniflow
with uniflow.Dispatcher() as d:
    d.register({"feature": "A", "states": {"Off": {}, "On": {}}})
    d.register({"feature": "B", "states": {"Off": {}, "On": {}}})
    d.initialize("A", "Off")
    d.initialize("B", "Off")
    order = []
    calling = threading.Event()

    def other() -> None:
        calling.set()
        d.transition("B", "On", from_="Off")  # the dispatcher is busy on the main thread
        order.append("B applied")

    thread = threading.Thread(target=other)

    def slow_subscriber(m: uniflow.Mutation) -> None:
        if m.feature == "A":
            thread.start()
            calling.wait(10)
            time.sleep(0.2)  # let the other thread reach the library and wait there
            order.append("A notified")

    d.subscribe(slow_subscriber)
    d.transition("A", "On", from_="Off")
    thread.join(30)
    assert order == ["A notified", "B applied"], order
    assert d.state == {"A": {"state": "On", "payload": {}}, "B": {"state": "On", "payload": {}}}
print("ok")
"""


def test_a_thread_waiting_for_a_busy_dispatcher_does_not_block_its_callbacks() -> None:
    """Thread B dispatches (the prepared hot path) while the main thread is inside a
    subscriber of the same dispatcher: B must wait without holding the GIL, or the
    subscriber could never resume. In a child process, so a deadlock fails the test."""
    import os
    import subprocess
    import sys

    from conftest import PYTHON_ROOT

    env = {**os.environ, "PYTHONPATH": str(PYTHON_ROOT)}
    result = subprocess.run([sys.executable, "-c", CONTENDED], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_threads_with_exceptions_keep_them_per_thread() -> None:
    with uniflow.Dispatcher() as d:
        d.register(COUNTER)
        d.initialize("Counter", "Counting", payload={"n": 0})
        raised: List[str] = []
        lock = threading.Lock()

        def worker(index: int) -> None:
            def fail(cur: Any) -> Any:
                raise ValueError(f"{index}")

            for i in range(100):
                try:
                    d.actualize("Counter", "Counting", via=fail if i % 2 else lambda cur: {"n": cur["n"] + 1})
                except ValueError as error:
                    with lock:
                        raised.append(str(error))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(raised) == sorted(str(i) for i in range(THREADS) for _ in range(50))
        assert d.get("Counter") == uniflow.State("Counting", {"n": THREADS * 50})
        assert d._errors == {}


def test_exceptions_raised_on_the_timer_thread_go_to_unraisablehook(monkeypatch: Any) -> None:
    # No Python call runs on the library's timer thread to re-raise them: each one
    # goes to the hook at once, and none is left pending for the dispatcher.
    unraisable: List[Any] = []
    all_three = threading.Event()

    def hook(info: Any) -> None:
        unraisable.append(info)
        if len(unraisable) == 3:
            all_three.set()

    monkeypatch.setattr(sys, "unraisablehook", hook)
    with uniflow.Dispatcher() as d:
        d.register(TOGGLE)
        d.initialize("Toggle", "Off")

        def fail(m: uniflow.Mutation) -> None:
            raise ValueError(f"seq {m.seq}")

        d.subscribe(fail, when="AnyMutationOf<Toggle>")
        for into in ("On", "Off", "On"):
            d.submit_after(0.001, {"kind": "transition", "feature": "Toggle", "into": into})
        assert all_three.wait(10), f"the hook saw {len(unraisable)} of 3"
        assert sorted(str(u.exc_value) for u in unraisable) == ["seq 2", "seq 3", "seq 4"]
        assert all("timer thread" in u.err_msg and "uniflow subscriber" in u.err_msg for u in unraisable)
        assert d._errors == {}
        # On the main thread, the call raises its own exception, not an old one.
        with pytest.raises(ValueError, match="seq 5"):
            d.transition("Toggle", "Off", from_="On")
        assert len(unraisable) == 3 and d._errors == {}


@pytest.mark.parametrize("stderr", [True, False])
def test_with_the_default_hook_exceptions_on_the_timer_thread_are_printed(stderr: bool) -> None:
    # The interpreter's own hook refuses any argument but its own type: what the
    # binding hands it must still reach stderr, not vanish; without a stderr, as
    # the default hook does, nothing is printed (stdout is not a place for it).
    script = ("" if stderr else "import sys; sys.stderr = None\n") + textwrap.dedent("""
        import threading, uniflow
        done = threading.Event()
        with uniflow.Dispatcher() as d:
            d.register({"feature": "Toggle", "states": {"Off": {}, "On": {}}})
            def fail(m):
                done.set()
                raise ValueError("raised on the timer thread")
            d.subscribe(fail)
            d.submit_after(0.001, {"kind": "initialize", "feature": "Toggle", "into": "On"})
            assert done.wait(10)
    """)
    env = dict(os.environ, PYTHONPATH=str(PYTHON_ROOT))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    if stderr:
        assert "Exception ignored in uniflow subscriber" in result.stderr
        assert "ValueError: raised on the timer thread" in result.stderr


def test_callbacks_survive_garbage_collection() -> None:
    with uniflow.Dispatcher() as d:
        d.register(TOGGLE)
        counts = {"any": 0, "on": 0, "reports": 0}

        # Lambdas and Subscriptions whose only references are the dispatcher's.
        d.subscribe(lambda m: counts.__setitem__("any", counts["any"] + 1))
        d.subscribe(lambda m: counts.__setitem__("on", counts["on"] + 1), when="TransitionInto<Toggle.On>")
        d.set_reporter(lambda r: counts.__setitem__("reports", counts["reports"] + 1))
        gc.collect()
        gc.collect()

        d.initialize("Toggle", "Off")
        for i in range(200):
            d.transition("Toggle", "On" if i % 2 == 0 else "Off")
            if i % 50 == 0:
                gc.collect()
                # Per-action callables come and go meanwhile (a trigger notifies no
                # subscriber but is reported).
                d.trigger("Toggle", via=lambda cur: None)
        assert counts == {"any": 201, "on": 100, "reports": 205}


def test_cancelled_subscriptions_are_freed_and_not_called() -> None:
    class Subscriber:
        def __init__(self) -> None:
            self.calls = 0

        def __call__(self, m: Any) -> None:
            self.calls += 1

    with uniflow.Dispatcher() as d:
        d.register(TOGGLE)
        subscriber = Subscriber()
        ref = weakref.ref(subscriber)
        sub = d.subscribe(subscriber)
        d.initialize("Toggle", "Off")
        sub.cancel()
        del subscriber, sub
        gc.collect()
        assert ref() is None  # released when unsubscribed
        d.transition("Toggle", "On")


def test_a_dispatcher_in_a_reference_cycle_is_collected_and_freed() -> None:
    calls: List[int] = []

    def make() -> "weakref.ref[uniflow.Dispatcher]":
        d = uniflow.Dispatcher()
        d.register(TOGGLE)
        d.subscribe(lambda m: calls.append(m.seq) or d)  # the subscriber refers back to d
        d.initialize("Toggle", "Off")
        return weakref.ref(d)

    ref = make()
    gc.collect()
    assert ref() is None  # collected: __del__ freed the C side and its callbacks
    assert calls == [1]


def test_via_lambdas_are_released_after_each_action() -> None:
    from uniflow import _callbacks

    with uniflow.Dispatcher() as d:
        d.register(COUNTER)
        d.initialize("Counter", "Counting", payload={"n": 0})
        before = len(_callbacks._vias)
        for _ in range(100):
            d.actualize("Counter", "Counting", via=lambda cur: {"n": cur["n"] + 1})
        gc.collect()
        assert len(_callbacks._vias) == before
        assert d.get("Counter") == uniflow.State("Counting", {"n": 100})


SESSION: Any = {"feature": "Session",
                "states": {"Active": {"after": [{"ms": 1, "submit": [{"kind": "transition", "feature": "Session",
                                                                      "into": "Expired"}]}]},
                           "Expired": {}}}


@pytest.mark.parametrize("where", ["in the subscriber", "with its result"])
def test_a_dispatcher_whose_last_reference_goes_in_its_own_timer_callback_is_freed_after_it(where: str) -> None:
    # A heartbeat's subscriber, on the library's timer thread, drops the last
    # reference to its own dispatcher: while it runs, or when the trampoline lets go
    # of what it returned (no Python frame left then). It must not be freed under the
    # callback (the callbacks it keeps would go while C still calls them, a second
    # subscriber included), but after it returns. Then nothing beats any more.
    holder: Any = {}
    beats: List[int] = []
    dropped = threading.Event()

    class Owner:
        def __init__(self) -> None:
            self.d = uniflow.Dispatcher()
            self.d.register({"feature": "Beat", "states": {"On": {"after": [{"ms": 1, "submit": [
                {"kind": "transition", "feature": "Beat", "into": "On", "same": True}]}]}}})
            self.d.subscribe(self.beat, when="Transition<Beat>")
            self.d.subscribe(lambda m: None)  # called after the first
            self.d.initialize("Beat", "On")

        @staticmethod
        def beat(m: uniflow.Mutation) -> Any:
            beats.append(m.seq)
            if len(beats) != 3:
                return None
            dropped.set()
            if where == "in the subscriber":
                holder.clear()
                return None
            return holder.pop("owner")

    holder["owner"] = Owner()
    assert dropped.wait(10)
    # Freed once the callback returned (a few more beats may come first, on a busy
    # machine): then the heart stops, where one still beating adds ~500 in 0.5 s.
    count = -1
    for _ in range(20):
        threading.Event().wait(0.5)
        if len(beats) == count:
            break
        count = len(beats)
    assert len(beats) == count, beats


def test_a_dispatcher_left_open_with_a_timer_firing_does_not_hang_the_exit(tmp_path: Any) -> None:
    import os
    import subprocess

    script = tmp_path / "left_open.py"
    script.write_text(
        "import uniflow\n"
        "d = uniflow.Dispatcher()\n"
        "d.register({'feature': 'Beat', 'states': {'On': {'after': [{'ms': 1, 'submit': [\n"
        "    {'kind': 'transition', 'feature': 'Beat', 'into': 'On', 'same': True}]}]}}})\n"
        "d.subscribe(lambda m: sum(range(1000)))\n"
        "d.initialize('Beat', 'On')\n"
        "import time; time.sleep(0.05)\n"
        "print('end of script')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "end of script\n"), done.stderr


def test_a_kept_mutation_read_on_another_thread_while_lent_stays_right() -> None:
    import queue

    with uniflow.Dispatcher() as d:
        d.register(COUNTER)
        d.initialize("Counter", "Counting", payload={"n": 0})
        handed: "queue.Queue[Any]" = queue.Queue()
        d.subscribe(handed.put, when="ActualizationIn<Counter.Counting>")
        wrong: List[Any] = []

        def reader() -> None:
            while True:
                m = handed.get()
                if m is None:
                    return
                # Read while the subscriber may be returning: the lent record or the
                # snapshot, never freed memory.
                if m.new != uniflow.State("Counting", {"n": m.seq - 1}) or m.feature != "Counter":
                    wrong.append((m.seq, m.new))

        thread = threading.Thread(target=reader)
        thread.start()
        for n in range(1, 3001):
            d.actualize("Counter", "Counting", payload={"n": n})
        handed.put(None)
        thread.join()
        assert wrong == []


def test_an_exception_of_a_call_made_in_a_timer_callback_is_raised_by_that_call(monkeypatch: Any) -> None:
    unraisable: List[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    raised: List[BaseException] = []
    done = threading.Event()
    with uniflow.Dispatcher() as d, uniflow.Dispatcher() as other:
        d.register(SESSION)
        other.register(COUNTER)

        def on_expired(m: uniflow.Mutation) -> None:
            # A call of another dispatcher, inside a callback on the timer thread: its
            # via's exception is that call's to raise.
            try:
                other.initialize("Counter", "Counting", via=lambda cur: 1 / 0)
            except BaseException as error:
                raised.append(error)
            done.set()

        d.subscribe(on_expired, when="TransitionInto<Session.Expired>")
        d.initialize("Session", "Active")
        assert done.wait(10)
    assert [type(e) for e in raised] == [ZeroDivisionError]
    assert unraisable == []


def test_closing_a_dispatcher_whose_callback_holds_the_last_reference_to_another() -> None:
    # Freeing A releases its subscriber, which was all that held B: B is closed from
    # inside A's close (its __del__), which must not wait for A's.
    closed = []

    def make() -> uniflow.Dispatcher:
        a = uniflow.Dispatcher()
        b = uniflow.Dispatcher()
        a.register(TOGGLE)
        b.register(TOGGLE)
        ref = weakref.ref(b)
        weakref.finalize(b, closed.append, "b")
        a.subscribe(lambda m, b=b: b.initialize("Toggle", "On"))
        del b
        assert ref() is not None
        return a

    a = make()
    done = threading.Event()
    threading.Thread(target=lambda: (a.close(), done.set()), daemon=True).start()
    assert done.wait(10), "a.close() hung"
    gc.collect()
    assert closed == ["b"]

