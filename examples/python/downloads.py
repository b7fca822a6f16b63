#!/usr/bin/env python3
"""Several downloads at once on an asyncio loop; the state lives in libuniflow.

    python3 examples/python/downloads.py

examples/definitions/downloads.json declares Download keyed: every file is an
instance. This script is the host:

* ``@d.intercept("Download")`` sees every action on a download before it applies.
  It refuses a forbidden file with ``uniflow.Veto`` (nothing is created), and
  starts the transfer of any other file as an asyncio task when it is initialized.
* The tasks report progress with ``d.actualize(..., key=file)``; a model binding
  completes a download at 100%.
* One transfer hangs. Its stall timer (``after`` in the definition) fires on the
  event loop, because the dispatcher uses ``timers="host"`` and is attached: the
  library starts no thread.
* ``async for line in d.values(...)`` follows the overall progress, delivered only
  when it changes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import uniflow
except ImportError:  # running from the source tree without installing the package
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import uniflow

DEFINITION_FILE = ROOT / "examples" / "definitions" / "downloads.json"
FILES = ["report_pdf", "photos_zip", "setup_exe", "backup_iso"]
HANGS = "backup_iso"
FORBIDDEN_SUFFIX = "_exe"

OVERALL = {"cat": [{"+": [{"var": "model.Downloads.payload.completed"}, {"var": "model.Downloads.payload.failed"}]},
                   " of ", {"var": "model.Downloads.payload.started"}, " finished"]}


async def transfer(d: uniflow.Dispatcher, file: str) -> None:
    """The real work, simulated: ten progress reports, or silence for the file that hangs."""
    d.transition("Download", into="Running", from_="Queued", key=file)
    if file == HANGS:
        return  # the connection hangs: the stall timer will notice
    for step in range(1, 11):
        await asyncio.sleep(0.002)
        d.actualize("Download", "Running", {"progress": step * 10}, key=file)


async def main() -> int:
    tasks: List["asyncio.Task[None]"] = []
    with uniflow.Dispatcher(timers="host") as d:
        d.register(DEFINITION_FILE)
        d.attach()
        d.initialize("Downloads", "Counting")

        @d.intercept("Download")
        def policy(action: uniflow.Action) -> None:
            if action.kind != uniflow.ActionKind.INITIALIZE:
                return None
            if action.key.endswith(FORBIDDEN_SUFFIX):
                raise uniflow.Veto(f"{action.key}: executables are not downloaded")
            tasks.append(asyncio.ensure_future(transfer(d, action.key)))
            return None

        @d.on("AnyMutationOf<Download>", deferred=True)
        def show(m: uniflow.Mutation) -> None:
            if m.kind == "actualization":
                return
            timer = " (its stall timer fired on the event loop)" if m.action.get("timer") else ""
            print(f"  {m.key:<11} {m.new.name if m.new else '(gone)'} {m.new.payload if m.new else ''}{timer}")

        for file in FILES:
            try:
                d.initialize("Download", "Queued", key=file)
            except uniflow.Rejected as refused:
                print(f"  refused: {refused}")

        async for overall in d.values(OVERALL):
            print(f"overall: {overall}")
            done, _, started = overall.split()[:3]
            if int(started) > 0 and done == started:
                break
        await asyncio.gather(*tasks)
        states: Dict[str, uniflow.State] = d.states()["Download"]
        print("model:", {file: state.name for file, state in states.items()})
        expected = {"report_pdf": "Completed", "photos_zip": "Completed", "backup_iso": "Failed"}
        return 0 if {file: state.name for file, state in states.items()} == expected else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
