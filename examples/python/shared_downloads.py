#!/usr/bin/env python3
"""Two processes share one model through NATS JetStream; one is killed, the other
takes over its downloads and their stall timers.

    python3 examples/python/shared_downloads.py

Needs ``nats-server`` (Debian: ``apt-get install nats-server``; ``scripts/setup``
installs it) and libuniflow_nats (built where the NATS C client is installed);
without them it prints a note and does nothing.

The script starts a ``nats-server -js`` on a free loopback port with a temporary
store, then two nodes of the model of ``examples/definitions/downloads.json`` (8
partitions; every file is a ``Download`` instance, ``Downloads`` counts them):

* **north**, a child process, owns partitions 0-3 and the global partition, where
  the ``Downloads`` counters live (it starts them);
* **south**, this process, claims the rest.

Each starts three downloads with ``node.submit``, which runs an action at the owner
of its partition. South's finish. North's are half done when north gets SIGKILL:
nobody reports their progress any more. South wins north's partitions once their
leases (1 s here) run out, and with them the downloads' ``after`` timers ("give up
a download that made no progress for a second"), which fire here: north's files
end ``Failed``, counted by the ``Downloads`` bindings that south now runs. The
counters are printed at the end and checked (exit status 1 if wrong).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import uniflow
except ImportError:  # running from the source tree without installing the package
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import uniflow
import uniflow.nats

DEFINITIONS = ROOT / "examples" / "definitions" / "downloads.json"
MODEL = "shared_downloads"
PARTITIONS = 8
NORTH_OWNS: List[Any] = [0, 1, 2, 3, "global"]
LEASE = 1.0     # seconds: a killed node's partitions are free again after this
TIMEOUT = 0.5   # seconds: a publish or request without an answer by then is Unavailable
NORTH_FILES = ["maps_tar", "fonts_zip", "talk_mp4"]
SOUTH_FILES = ["notes_txt", "logo_svg", "data_csv"]
WAIT = 30.0     # seconds: the longest any step may take on a loaded machine


def node(d: uniflow.Dispatcher, url: str, **options: Any) -> uniflow.nats.Node:
    return uniflow.nats.Node(d, url=url, model=MODEL, lease=LEASE, timeout=TIMEOUT, **options)


def submit(n: uniflow.nats.Node, action: Dict[str, Any]) -> None:
    """Runs the action at its partition's owner; while a partition changes hands (its
    owner is gone and another has not claimed it yet), asks again."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            n.submit(action)
            return
        except (uniflow.NotOwner, uniflow.Unavailable, uniflow.Conflict):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def run_download(n: uniflow.nats.Node, file: str, steps: int, pause: float,
                 halfway: Optional[threading.Event] = None) -> None:
    """Queued -> Running, then progress reports; the definition's binding completes the
    download at 100."""
    submit(n, {"kind": "initialize", "feature": "Download", "key": file, "into": "Queued"})
    submit(n, {"kind": "transition", "feature": "Download", "key": file, "from": "Queued", "into": "Running"})
    for step in range(1, steps + 1):
        time.sleep(pause)
        submit(n, {"kind": "actualize", "feature": "Download", "key": file, "in": "Running",
                   "payload": {"progress": step * 10}})
        if step == 4 and halfway is not None:
            halfway.set()


# --- north: the child process ---------------------------------------------------------

def north(url: str) -> int:
    with uniflow.Dispatcher(partitions=PARTITIONS, node="north") as d:
        d.register(str(DEFINITIONS))
        with node(d, url, owns=NORTH_OWNS) as n:
            wait_for(lambda: n.status()["owned"] == [0, 1, 2, 3, PARTITIONS])
            submit(n, {"kind": "initialize", "feature": "Downloads", "into": "Counting"})
            print("ready", flush=True)
            sys.stdin.readline()  # "go"
            marks = [threading.Event() for _ in NORTH_FILES]
            # Ten steps of 0.15 s: a transfer that takes seconds; north is killed
            # long before the end.
            for file, mark in zip(NORTH_FILES, marks):
                threading.Thread(target=run_download, args=(n, file, 10, 0.15, mark), daemon=True).start()
            for mark in marks:
                mark.wait(WAIT)
            print("halfway", flush=True)
            time.sleep(WAIT)  # the parent kills this process
    return 1


# --- south: this process -------------------------------------------------------------

def wait_for(condition: Any, limit: float = WAIT) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(f"waited {limit:.0f} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(program: str, store: str) -> "tuple[subprocess.Popen[bytes], str]":
    """nats-server -js on a free loopback port; ready once its log says so."""
    port = free_port()
    log_path = Path(store) / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen([program, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store],
                                  stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: server.poll() is not None or b"Server is ready" in log_path.read_bytes())
    if server.poll() is not None:
        raise RuntimeError(f"nats-server did not start: {log_path.read_text()}")
    return server, f"nats://127.0.0.1:{port}"


def south(program: str) -> int:
    store = tempfile.mkdtemp(prefix="uniflow-shared-downloads-")
    server, url = start_server(program, store)
    child: Optional["subprocess.Popen[str]"] = None
    try:
        print(f"nats-server {url} (store {store}), model {MODEL!r}, {PARTITIONS} partitions, lease {LEASE:g} s")
        child = subprocess.Popen([sys.executable, __file__, "--north", url], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdin is not None and child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            print("north did not start", file=sys.stderr)
            return 1
        print(f"north (pid {child.pid}) owns partitions 0-3 and the global one (the Downloads counters)")
        with uniflow.Dispatcher(partitions=PARTITIONS, node="south") as d:
            d.register(str(DEFINITIONS))
            killed = threading.Event()
            failed_here: List[str] = []

            @d.on("TransitionInto<Download.Failed>")
            def stalled(m: uniflow.Mutation) -> None:
                # Not foreign: south wrote it, its own timer fired.
                if killed.is_set() and not m.foreign:
                    failed_here.append(m.key or "")
                    print(f"  south: {m.key} Failed {m.new.payload if m.new else ''}: "
                          "its stall timer fired here")

            with node(d, url) as s:
                wait_for(lambda: s.status()["owned"] == [4, 5, 6, 7])
                print("south (this process) owns partitions 4-7")
                child.stdin.write("go\n")
                child.stdin.flush()
                print(f"north starts {', '.join(NORTH_FILES)}; south starts {', '.join(SOUTH_FILES)}")
                workers = [threading.Thread(target=run_download, args=(s, file, 10, 0.02)) for file in SOUTH_FILES]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
                if child.stdout.readline().strip() != "halfway":
                    print("north stopped early", file=sys.stderr)
                    return 1
                s.sync()
                progress = {f: d.get("Download", key=f).payload.get("progress") for f in NORTH_FILES}
                child.send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                killed.set()
                child.wait()
                print(f"south's downloads finished; SIGKILL to north, its downloads at {progress}")

                wait_for(lambda: s.status()["owned"] == list(range(PARTITIONS + 1)))
                print(f"south owns every partition {time.monotonic() - killed_at:.1f} s later")

                def finished() -> bool:
                    s.sync()
                    counts = d.get("Downloads").payload
                    return counts["started"] == counts["completed"] + counts["failed"] == 6
                wait_for(finished)
                states = {f: d.get("Download", key=f) for f in NORTH_FILES + SOUTH_FILES}
                for file, state in states.items():
                    print(f"  {file:<10} partition {d.partition_of('Download', file)}: {state.name} {state.payload}")
                counts = d.get("Downloads").payload
                print(f"Downloads: started {counts['started']}, completed {counts['completed']}, "
                      f"failed {counts['failed']}")
                right = (counts == {"started": 6, "completed": 3, "failed": 3}
                         and all(states[f].name == "Completed" for f in SOUTH_FILES)
                         and all(states[f] == uniflow.State("Failed", {"reason": "stalled"}) for f in NORTH_FILES)
                         and sorted(failed_here) == sorted(NORTH_FILES))
                if not right:
                    print(f"unexpected: north's files failed here: {failed_here}", file=sys.stderr)
                return 0 if right else 1
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        server.terminate()
        server.wait()
        shutil.rmtree(store, ignore_errors=True)


def main() -> int:
    if sys.argv[1:2] == ["--north"]:
        return north(sys.argv[2])
    program = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")
    if program is None:
        print("note: nats-server is not installed (Debian: apt-get install nats-server): nothing to show")
        return 0
    try:
        uniflow.nats.load()
    except uniflow.LibraryNotFoundError as error:
        print(f"note: libuniflow_nats is not built, nothing to show ({error.attempts[0][0]}: {error.attempts[0][1]})")
        return 0
    return south(program)


if __name__ == "__main__":
    sys.exit(main())
