"""Coroutine services: a service's start that returns a coroutine runs as a task on
the event loop the dispatcher is attached to; its result is the invocation's done,
an exception its error, and leaving the state cancels the task. Each test runs its
own loop with asyncio.run (pytest-asyncio is not needed); waits are for the loop to
turn, bounded by generous timeouts, and no test sleeps for a result."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from typing import Any, Callable, Dict, List

from uniflow import Dispatcher, Invocation

FETCH: Dict[str, Any] = {
    "feature": "Fetch",
    "fields": {"result": {"type": "any", "default": None}, "failure": {"type": "any", "default": None}},
    "states": {"Idle": {"on": {"load": "Loading"}},
               "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"url": "u"},
                                      "onDone": {"into": "Done", "actions": [
                                          {"assign": {"result": {"$": {"var": "event.payload.output"}}}}]},
                                      "onError": {"into": "Failed", "actions": [
                                          {"assign": {"failure": {"$": {"var": "event.payload.error"}}}}]}},
                           "on": {"cancel": "Idle"}},
               "Done": {},
               "Failed": {}},
}


def other_tasks() -> List["asyncio.Task[Any]"]:
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


async def until(condition: Callable[[], bool]) -> None:
    """Lets the loop turn until `condition` holds (TimeoutError after 5 s). In the
    calling task: a task of its own would count among the tasks left."""
    deadline = asyncio.get_running_loop().time() + 5
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the condition did not hold within 5 s")
        await asyncio.sleep(0)


async def settled(d: Dispatcher, *states: str) -> str:
    """The instance's state once it is one of `states`."""
    await until(lambda: d.get("Fetch").name in states)
    return d.get("Fetch").name


def no_other_tasks() -> bool:
    return not other_tasks()


def test_a_coroutine_result_settles_the_invocation_as_done() -> None:
    async def main() -> Dict[str, Any]:
        with Dispatcher() as d:
            d.attach()
            seen: List[Any] = []

            @d.service("fetch")
            async def fetch(inv: Invocation) -> Dict[str, Any]:
                seen.append((inv.id, inv.input, threading.get_ident()))
                await asyncio.sleep(0)
                return {"size": 3}

            d.register(FETCH)
            d.initialize("Fetch", "Idle")
            d.send("Fetch", "load")
            assert d.get("Fetch").name == "Loading"  # the task has not run yet
            await settled(d, "Done", "Failed")
            assert seen == [("get", {"url": "u"}, threading.get_ident())]  # on the loop's thread
            assert other_tasks() == []
            return d.state["Fetch"]

    assert asyncio.run(main()) == {"state": "Done", "payload": {"result": {"size": 3}, "failure": None}}


def test_an_exception_settles_it_as_an_error_with_its_type_and_message() -> None:
    async def main() -> Dict[str, Any]:
        with Dispatcher() as d:
            d.attach()

            async def fetch(inv: Invocation) -> None:
                await asyncio.sleep(0)
                raise ConnectionError("no network")

            d.register_service("fetch", fetch)
            d.register(FETCH)
            d.initialize("Fetch", "Idle")
            d.send("Fetch", "load")  # the exception is the service's, not this call's
            await settled(d, "Done", "Failed")
            assert other_tasks() == []
            return d.state["Fetch"]

    assert asyncio.run(main()) == {
        "state": "Failed",
        "payload": {"result": None, "failure": {"type": "ConnectionError", "message": "no network"}}}


def test_a_result_that_is_not_json_settles_it_as_an_error() -> None:
    async def main() -> Any:
        with Dispatcher() as d:
            d.attach()

            async def fetch(inv: Invocation) -> Any:
                return {1, 2}

            d.register_service("fetch", fetch)
            d.register(FETCH)
            d.initialize("Fetch", "Idle")
            d.send("Fetch", "load")
            await settled(d, "Done", "Failed")
            return d.state["Fetch"]["payload"]["failure"]

    assert asyncio.run(main()) == {"type": "TypeError",
                                   "message": "the service's result is not JSON: Object of type set is not JSON serializable"}


def test_leaving_the_state_cancels_the_task_and_it_reports_nothing() -> None:
    async def main() -> List[str]:
        with Dispatcher() as d:
            d.attach()
            events: List[str] = []
            stopped: List[int] = []
            started = asyncio.Event()

            async def fetch(inv: Invocation) -> str:
                started.set()
                try:
                    await asyncio.Event().wait()  # never set: only a cancel ends it
                except asyncio.CancelledError:
                    events.append("cancelled")
                    raise
                return "never"

            d.register_service("fetch", fetch, stop=lambda inv: stopped.append(inv.serial))
            d.register(FETCH)
            d.subscribe(lambda m: events.append(m.new.name if m.new else "-"))
            d.initialize("Fetch", "Idle")
            d.send("Fetch", "load")
            await asyncio.wait_for(started.wait(), 5)
            d.send("Fetch", "cancel")
            assert len(stopped) == 1  # the host's own stop still runs
            # The cancel reaches the task on the loop's next turns.
            await until(no_other_tasks)
            assert d.get("Fetch").name == "Idle"
            return events

    assert asyncio.run(main()) == ["Idle", "Loading", "Idle", "cancelled"]


def test_a_result_after_the_state_was_left_is_dropped() -> None:
    async def main() -> List[str]:
        with Dispatcher() as d:
            d.attach()
            events: List[str] = []
            started = asyncio.Event()
            release = asyncio.Event()

            async def fetch(inv: Invocation) -> str:
                started.set()
                # Ignores the cancel, as a careless coroutine may, and returns later.
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    events.append("ignored the cancel")
                    await asyncio.wait_for(release.wait(), 5)
                return "late"

            d.register_service("fetch", fetch)
            d.register(FETCH)
            d.subscribe(lambda m: events.append(m.new.name if m.new else "-"))
            d.initialize("Fetch", "Idle")
            d.send("Fetch", "load")
            await asyncio.wait_for(started.wait(), 5)
            d.send("Fetch", "cancel")
            await until(lambda: "ignored the cancel" in events)
            release.set()
            await until(no_other_tasks)
            assert d.state["Fetch"] == {"state": "Idle", "payload": {"result": None, "failure": None}}
            return events

    # No Done: the result came for an invocation that had stopped.
    assert asyncio.run(main()) == ["Idle", "Loading", "Idle", "ignored the cancel"]


def test_closing_the_dispatcher_cancels_its_running_services() -> None:
    async def main() -> List[str]:
        events: List[str] = []
        started = asyncio.Event()

        async def fetch(inv: Invocation) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                events.append("cancelled")
                raise

        d = Dispatcher()
        d.attach()
        d.register_service("fetch", fetch)
        d.register(FETCH)
        d.initialize("Fetch", "Idle")
        d.send("Fetch", "load")
        await asyncio.wait_for(started.wait(), 5)
        d.close()
        await until(no_other_tasks)
        return events

    assert asyncio.run(main()) == ["cancelled"]


def test_a_service_started_from_another_thread_runs_on_the_loop() -> None:
    async def main() -> Any:
        with Dispatcher() as d:
            d.attach()
            threads: List[int] = []

            async def fetch(inv: Invocation) -> str:
                threads.append(threading.get_ident())
                return "ok"

            d.register_service("fetch", fetch)
            d.register(FETCH)
            d.initialize("Fetch", "Idle")
            worker = threading.Thread(target=lambda: d.send("Fetch", "load"))
            worker.start()
            worker.join()
            await settled(d, "Done", "Failed")
            assert threads == [threading.get_ident()]
            return d.state["Fetch"]["payload"]["result"]

    assert asyncio.run(main()) == "ok"


def test_without_an_attached_loop_a_coroutine_service_settles_as_an_error() -> None:
    ran: List[str] = []

    async def fetch(inv: Invocation) -> str:
        ran.append("ran")
        return "ok"

    with Dispatcher() as d:
        d.register_service("fetch", fetch)
        d.register(FETCH)
        d.initialize("Fetch", "Idle")
        with _no_warnings():
            d.send("Fetch", "load")
            gc.collect()
        assert d.state["Fetch"] == {
            "state": "Failed",
            "payload": {"result": None, "failure": {
                "type": "Misuse",
                "message": "a coroutine service needs a dispatcher attached to an event loop: call d.attach() first"}}}
    assert ran == []


class _no_warnings:
    """The coroutine that never runs is closed: no "was never awaited" warning."""

    def __enter__(self) -> None:
        self._catch = warnings.catch_warnings(record=True)
        self._seen = self._catch.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc: Any) -> None:
        self._catch.__exit__(*exc)
        assert [str(w.message) for w in self._seen] == []


def test_a_plain_start_is_unchanged_by_the_loop() -> None:
    async def main() -> Any:
        with Dispatcher() as d:
            d.attach()
            invocations: List[Invocation] = []
            d.register_service("fetch", invocations.append)
            d.register(FETCH)
            d.initialize("Fetch", "Idle")
            d.send("Fetch", "load")
            invocations[0].done(7)
            assert other_tasks() == []
            return d.state["Fetch"]["payload"]["result"]

    assert asyncio.run(main()) == 7
