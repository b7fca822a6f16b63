#!/usr/bin/env python3
"""Download a file in chunks with worker threads; the state lives in libuniflow.

    python3 examples/python/file_download.py              # 4 workers, 20 chunks
    python3 examples/python/file_download.py --fail-at 60 # a worker fails at 60%

The FileDownloading feature (examples/definitions/file_downloading.json) goes
Starting -> InProgress {progress} -> Completed (or Failed {reason}). Worker threads
never touch shared Python state: each reports a finished chunk by submitting an
actualization whose `via` adds its share to the current progress, so concurrent
reports cannot lose an update (the dispatcher runs one action at a time). A subscriber
prints the progress. The definition's model binding ("Finish the download when
progress reaches 100") completes the download; an observer scenario in Python
announces it.

Runs from the source tree (it finds the package in bindings/python and the library
in the build folders) or with the package installed.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import uniflow
except ImportError:  # running from the source tree without installing the package
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import uniflow

DEFINITION_FILE = ROOT / "examples" / "definitions" / "file_downloading.json"


class ChunkFailed(Exception):
    """A worker could not fetch its chunk."""


def download(workers: int, chunks: int, fail_at: Optional[float]) -> int:
    share = 100 / chunks
    with uniflow.Dispatcher() as d:
        d.register(str(DEFINITION_FILE))

        @d.on("AnyMutationOf<FileDownloading>")
        def show(m: uniflow.Mutation) -> None:
            new = m.new
            if new is None:
                return
            if new.name == "InProgress":
                percent = new.payload["progress"]
                bar = "#" * int(percent // 5)
                print(f"  [{bar:<20}] {percent:5.1f}%")
            else:
                print(f"{m.feature}: {m.old.name if m.old else '-'} -> {new.name} {new.payload or ''}".rstrip())

        # An observer binding in Python. The model binding of the definition ran before
        # it (model bindings run before subscribers) and has queued the transition into
        # Completed, which is applied once this notification ends.
        (d.scenario("Announce the last chunk")
         .when("ActualizationIn<FileDownloading.InProgress>")
         .given(if_=lambda m: m.new.payload["progress"] >= 100)
         .then(do=lambda m: print("  every chunk is in: the model binding completes the download")))

        d.initialize("FileDownloading", "Starting")
        d.transition("FileDownloading", into="InProgress", from_="Starting", payload={"progress": 0})

        todo: "queue.Queue[int]" = queue.Queue()
        for chunk in range(chunks):
            todo.put(chunk)

        def add_share(current: Optional[Dict[str, Any]]) -> Any:
            progress = current["progress"] if current else 0
            if fail_at is not None and progress + share > fail_at:
                raise ChunkFailed(f"connection reset at {progress:.0f}%")
            # 100 exactly once every share is in: the binding waits for progress >= 100,
            # and three shares of 33.33...% add up to 99.99...% in floating point.
            done = progress + share
            return {"progress": 100.0 if done >= 100 - 1e-9 else done}

        def worker(index: int) -> None:
            while True:
                try:
                    chunk = todo.get_nowait()
                except queue.Empty:
                    return
                time.sleep(0.005)  # "fetch" the chunk
                try:
                    d.actualize("FileDownloading", "InProgress", via=add_share, id=f"chunk-{chunk}")
                except ChunkFailed as error:
                    # Only one worker gets to record the failure; the others are rejected
                    # because the download is no longer InProgress.
                    try:
                        d.transition("FileDownloading", into="Failed", from_="InProgress",
                                     payload={"reason": f"worker {index}: {error}"})
                    except uniflow.Rejected:
                        pass
                    return
                except uniflow.Rejected:
                    return  # the download already failed or completed

        threads = [threading.Thread(target=worker, args=(i,), name=f"worker-{i}") for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        final = d.get("FileDownloading")
        print(f"final state: {final.name if final else 'absent'} {final.payload if final else ''}".rstrip())
        return 0 if final is not None and final.name == "Completed" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--fail-at", type=float, default=None, help="fail once progress would pass this percent")
    args = parser.parse_args()
    status = download(args.workers, args.chunks, args.fail_at)
    if args.fail_at is not None:
        return 0 if status == 1 else 1  # the failure was the point
    return status


if __name__ == "__main__":
    sys.exit(main())
