#!/usr/bin/env python3
"""A money-transfer flow driven by events, on an asyncio event loop.

    python3 examples/python/transfer_flow.py

The flow lives in examples/definitions/transfer.json: each screen only *sends* an
event ("next", "select", "confirm", ...) and the definition decides the next step,
so the logic could be shipped by a server. This script plays the screens:

* the dispatcher is attached to the running loop (``timers="host"``): deferred
  deliveries, watch values and timers all run on the loop's thread, and no thread of
  the library's is started;
* ``d.values(...)`` follows the flow's current step, delivered only when it changes;
* a timer (``submit_after``) cancels a confirmation the user leaves open too long;
* the first confirmation has no bank reference and is declined; the retry succeeds.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import uniflow
except ImportError:  # running from the source tree without installing the package
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import uniflow

DEFINITION_FILE = ROOT / "examples" / "definitions" / "transfer.json"
CONFIRMATION_TIMEOUT = 0.05  # seconds a confirmation may stay open (short for the demo)


async def follow(d: uniflow.Dispatcher, steps: List[str]) -> None:
    """Prints each step the flow reaches, as the watch delivers it on the loop."""
    async for step in d.values("Transfer.state"):
        if step is None:
            continue
        steps.append(step)
        print(f"  step: {step}")
        if step == "Success":
            return


async def main() -> int:
    with uniflow.Dispatcher(timers="host") as d:
        d.register(DEFINITION_FILE)
        d.attach()
        steps: List[str] = []
        follower = asyncio.ensure_future(follow(d, steps))
        await asyncio.sleep(0)  # let the watch start

        async def screen(event: str, **payload: object) -> None:
            print(f"send {event} {payload or ''}".rstrip())
            d.send("Transfer", event, payload or None)
            await asyncio.sleep(0.001)  # the loop delivers the new step

        d.initialize("Transfer", "Amount")
        await screen("next", amount=50)  # below 100: refused by the flow
        await screen("retry")
        await screen("next", amount=250)
        await screen("select", tariff="express")

        # Left open, the confirmation is cancelled by a timer the loop fires.
        d.submit_after(CONFIRMATION_TIMEOUT, {"kind": "send", "feature": "Transfer", "event": "cancel"},
                       id="confirmation")
        cancelled = await d.wait_for("TransitionInto<Transfer.Amount>", timeout=5)
        print(f"timer {cancelled.action['timer']!r}: the confirmation was left open, back to the amount")

        await screen("next", amount=250)
        await screen("select")
        d.submit_after(CONFIRMATION_TIMEOUT, {"kind": "send", "feature": "Transfer", "event": "cancel"},
                       id="confirmation")
        await screen("confirm")  # no bank reference: declined, the flow stays
        await screen("confirm", reference="TX-42")
        d.cancel_timer("confirmation")  # confirmed in time

        await asyncio.wait_for(follower, 5)
        final = d.get("Transfer")
        print(f"done: {final.name} {final.payload}")
        return 0 if final.name == "Success" and final.payload["tariff"] == "standard" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
