"""asyncio: an attached dispatcher delivers deferred mutations, watch values and host
timers on the event loop's thread. Each test runs its own loop with asyncio.run; the
few waits are for the loop to turn, bounded by generous timeouts."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Dict, List

import pytest

import uniflow
from uniflow import Dispatcher

LAMP: Dict[str, Any] = {"feature": "Lamp", "states": {"Off": {}, "On": {}}}
COUNTER: Dict[str, Any] = {"feature": "Counter",
                           "states": {"Counting": {"fields": {"n": {"type": "integer", "default": 0}}}}}


def native_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_deferred_subscribers_run_on_the_loop_thread() -> None:
    async def main() -> List[Any]:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            loop_thread = threading.get_ident()
            seen: List[Any] = []
            done = asyncio.Event()

            def on_mutation(m: uniflow.Mutation) -> None:
                seen.append((m.new.name, threading.get_ident() == loop_thread))
                if len(seen) == 2:
                    done.set()

            d.subscribe(on_mutation, deferred=True)
            # Submitted from another thread: delivered on the loop's.
            worker = threading.Thread(target=lambda: (d.initialize("Lamp", "On"),
                                                      d.transition("Lamp", into="Off")))
            worker.start()
            worker.join()
            await asyncio.wait_for(done.wait(), 5)
            return seen

    assert asyncio.run(main()) == [("On", True), ("Off", True)]


def test_mutations_iterates_until_the_loop_is_left_and_then_unsubscribes() -> None:
    async def main() -> List[str]:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            names: List[str] = []

            async def consume() -> None:
                async for m in d.mutations("AnyMutationOf<Lamp>"):
                    names.append(m.new.name)
                    if len(names) == 3:
                        break

            task = asyncio.ensure_future(consume())
            await asyncio.sleep(0)  # let the iterator subscribe
            d.initialize("Lamp", "On")
            d.transition("Lamp", into="Off")
            d.transition("Lamp", into="On")
            await asyncio.wait_for(task, 5)
            # Leaving the loop ended the subscription: a later mutation is not queued.
            d.transition("Lamp", into="Off")
            assert d.run_pending() == 0
            return names

    assert asyncio.run(main()) == ["On", "Off", "On"]


def test_mutations_and_values_start_at_the_call_not_at_the_first_step() -> None:
    async def main() -> Any:
        with Dispatcher(timers="host") as d:
            d.register(COUNTER)
            d.attach()
            stream = d.mutations("AnyMutationOf<Counter>")
            watched = d.values("Counter.payload.n")
            d.initialize("Counter", "Counting")  # before either is iterated
            first = await asyncio.wait_for(stream.__anext__(), 5)
            # A deferred watch keeps only its latest value: 0, not the None before it.
            values = [await asyncio.wait_for(watched.__anext__(), 5)]
            await stream.aclose()  # type: ignore[attr-defined]
            await watched.aclose()  # type: ignore[attr-defined]
            # Closed: unsubscribed, and iterating ends.
            d.actualize("Counter", "Counting", {"n": 5})
            assert d.run_pending() == 0
            with pytest.raises(StopAsyncIteration):
                await stream.__anext__()
            return first.new, values

    new, values = asyncio.run(main())
    assert new == uniflow.State("Counting", {"n": 0})
    assert values == [0]


def test_wait_for_returns_the_first_matching_mutation_after_the_call() -> None:
    async def main() -> uniflow.Mutation:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            d.initialize("Lamp", "Off")  # before the call: not the one awaited
            asyncio.get_running_loop().call_soon(lambda: d.transition("Lamp", into="On"))
            return await d.wait_for("TransitionInto<Lamp.On>", timeout=5)

    m = asyncio.run(main())
    assert m.kind == uniflow.MutationKind.TRANSITION
    assert m.new == uniflow.State("On", {})


def test_wait_for_sees_a_mutation_made_between_the_call_and_the_await() -> None:
    async def main() -> uniflow.Mutation:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            d.initialize("Lamp", "Off")
            waiting = d.wait_for("TransitionInto<Lamp.On>", timeout=5)
            d.transition("Lamp", into="On")  # made before the await
            return await waiting

    m = asyncio.run(main())
    assert m.new == uniflow.State("On", {})


def test_wait_for_times_out() -> None:
    async def main() -> None:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            await d.wait_for("TransitionInto<Lamp.On>", timeout=0.05)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())


def test_values_yields_the_current_value_then_each_change() -> None:
    async def main() -> List[Any]:
        with Dispatcher(timers="host") as d:
            d.register(COUNTER)
            d.attach()
            values: List[Any] = []
            async for n in d.values("Counter.payload.n"):
                values.append(n)
                if n is None:
                    d.initialize("Counter", "Counting")
                elif n < 2:
                    d.actualize("Counter", "Counting", {"n": n + 1})
                else:
                    break
            return values

    assert asyncio.run(main()) == [None, 0, 1, 2]


def test_the_async_helpers_need_an_attached_dispatcher() -> None:
    async def main() -> None:
        with Dispatcher() as d:
            d.register(LAMP)
            with pytest.raises(uniflow.Misuse) as info:
                d.wait_for("TransitionInto<Lamp.On>")  # at the call, not at the await
            assert str(info.value) == ("wait_for() needs a dispatcher attached to an event loop: "
                                       "call d.attach() first")
            # At the call, not at the first step of an `async for`.
            with pytest.raises(uniflow.Misuse) as info:
                d.mutations()
            assert str(info.value) == ("mutations() needs a dispatcher attached to an event loop: "
                                       "call d.attach() first")
            with pytest.raises(uniflow.Misuse) as info:
                d.values("Lamp")
            assert str(info.value) == ("values() needs a dispatcher attached to an event loop: "
                                       "call d.attach() first")

    asyncio.run(main())


def test_attach_twice_is_harmless_and_another_loop_is_misuse() -> None:
    async def main() -> None:
        with Dispatcher(timers="host") as d:
            d.attach()
            d.attach()
            other = asyncio.new_event_loop()
            try:
                with pytest.raises(uniflow.Misuse) as info:
                    d.attach(other)
                assert str(info.value) == "the dispatcher is attached to another event loop; detach() it first"
                assert d._loop is asyncio.get_running_loop()  # still attached to the first
            finally:
                other.close()
            d.detach()
            d.detach()

    asyncio.run(main())


def test_host_timers_fire_on_the_loop_and_no_thread_is_started() -> None:
    before = native_threads()

    async def main() -> uniflow.State:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            d.submit_after(0.02, {"kind": "initialize", "feature": "Lamp", "into": "On"})
            # The loop wakes on the dispatcher's descriptor once the timer is due.
            await d.wait_for("InitializationInto<Lamp.On>", timeout=5)
            assert native_threads() == before
            return d.get("Lamp")

    assert asyncio.run(main()) == uniflow.State("On", {})


def test_close_detaches_from_the_loop() -> None:
    async def main() -> None:
        d = Dispatcher(timers="host")
        d.attach()
        fd = d.fileno()
        loop = asyncio.get_running_loop()
        d.close()
        # The reader is gone: removing it again reports that nothing was registered.
        assert loop.remove_reader(fd) is False

    asyncio.run(main())


def test_closing_the_dispatcher_ends_what_waits_on_the_loop() -> None:
    async def main() -> List[Any]:
        d = Dispatcher(timers="host")
        d.register(LAMP)
        d.attach()
        d.initialize("Lamp", "Off")

        async def iterate(stream: Any) -> str:
            async for _ in stream:
                pass
            return "ended"

        mutations = asyncio.ensure_future(iterate(d.mutations()))
        values = asyncio.ensure_future(iterate(d.values("Lamp.state")))
        waiting = asyncio.ensure_future(d.wait_for("TransitionInto<Lamp.On>"))
        await asyncio.sleep(0.01)  # every one waits now
        d.close()
        done = await asyncio.wait_for(asyncio.gather(mutations, values, waiting, return_exceptions=True), 5)
        return [d if isinstance(d, str) else (type(d).__name__, str(d)) for d in done]

    assert asyncio.run(main()) == [
        "ended", "ended",
        ("Misuse", "wait_for(): the dispatcher was closed before a matching mutation")]


def test_a_dispatcher_attaches_again_once_its_loop_is_closed() -> None:
    with Dispatcher(timers="host") as d:
        d.register(LAMP)

        async def turn(into: str) -> str:
            d.attach()
            waiting = d.wait_for(f"TransitionInto<Lamp.{into}>", timeout=5)
            d.transition("Lamp", into=into)
            m = await waiting
            return m.new.name

        d.initialize("Lamp", "Off")
        assert asyncio.run(turn("On")) == "On"
        # The first loop is closed; the dispatcher, still attached to it, goes to the new one.
        assert asyncio.run(turn("Off")) == "Off"


def test_waiting_in_a_later_asyncio_run_attaches_to_it_without_attach() -> None:
    with Dispatcher(timers="host") as d:
        d.register(LAMP)

        async def first() -> None:
            d.attach()

        async def second() -> List[str]:
            waiting = d.wait_for("AnyMutationOf<Lamp>", timeout=5)
            iterator = d.mutations("AnyMutationOf<Lamp>")
            d.initialize("Lamp", "On")
            m = await waiting
            n = await asyncio.wait_for(iterator.__anext__(), 5)
            await iterator.aclose()
            return [m.new.name, n.new.name]

        asyncio.run(first())
        assert asyncio.run(second()) == ["On", "On"]
        # Outside any loop, a dispatcher whose loop closed is not attached.
        with pytest.raises(uniflow.Misuse):
            d.mutations()


def test_a_slow_consumer_keeps_at_most_deferred_limit_mutations_and_the_latest_value() -> None:
    async def main() -> Any:
        with Dispatcher(timers="host", deferred_limit=3) as d:
            d.register(LAMP)
            d.attach()
            mutations = d.mutations("AnyMutationOf<Lamp>")
            latest = d.values("Lamp.state")
            d.initialize("Lamp", "Off")
            into = "On"
            for _ in range(3):
                for _ in range(3):
                    d.transition("Lamp", into=into)
                    into = "Off" if into == "On" else "On"
                await asyncio.sleep(0.02)  # the loop hands these over; nobody takes them
            got = [await mutations.__anext__() for _ in range(3)]
            value = await latest.__anext__()
            return [(m.seq, m.dropped) for m in got], value, latest._queue.qsize()

    # Seq 1 went in the library (four waited for three places), 2 to 7 here; the
    # first one left says seven were lost before it. Of the values, the latest.
    assert asyncio.run(main()) == ([(8, 7), (9, 0), (10, 0)], "On", 0)


def test_a_wait_for_never_awaited_ends_its_subscription() -> None:
    import gc
    import warnings

    async def main() -> int:
        with Dispatcher(timers="host") as d:
            d.register(LAMP)
            d.attach()
            before = len(d._keep)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # "never awaited"
                for _ in range(100):
                    d.wait_for("TransitionInto<Lamp.On>")
                gc.collect()
            return len(d._keep) - before

    assert asyncio.run(main()) == 0

