"""What the uniflow.nats tests share: a real nats-server on a free loopback port with
a store of its own, node processes driven line by line (``python3 nats_support.py
node ...``, a uniflow.nats.Node in a process of its own), and polling.

Run as a program, this file is that node:

    python3 nats_support.py node --url URL --model M --name NAME [--owns JSON]
                            [--lease S] [--timeout S]

It prints ``ready NAME`` once started, then answers each command line with one
line, ``OK [text]`` or ``ERR <exception class> <message>``:

    submit ACTION_JSON   node.submit
    sync                 node.sync()
    state                OK <d.state as JSON>
    status               OK <node.status() as JSON>
    quit                 node.close(), d.close(), exit 0 (so does end of input)
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

HERE = Path(__file__).resolve().parent
PYTHON_ROOT = HERE.parent
REPO_ROOT = PYTHON_ROOT.parent.parent
DOWNLOADS = REPO_ROOT / "examples" / "definitions" / "downloads.json"
PARTITIONS = 4
ALL = list(range(PARTITIONS + 1))
#: Generous: CI runs on two shared cores. Tests poll up to this long; they end as
#: soon as what they wait for holds.
WAIT = 30.0


def nats_server() -> Optional[str]:
    """The nats-server program (Debian installs it in /usr/sbin, which PATH may lack)."""
    return shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")


def poll(what: str, fn: Callable[[], Any], limit: float = WAIT, every: float = 0.05) -> Any:
    """Calls ``fn`` until it returns something true, which it returns; fails naming
    ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {limit:.0f} s waiting for {what} (last: {last!r})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``nats-server -js -a 127.0.0.1 -p PORT -sd STORE``, stopped by its process id."""

    def __init__(self, program: str, store: Path) -> None:
        self.program = program
        self.store = store
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        for _ in range(5):
            self.port = free_port()
            self.url = f"nats://127.0.0.1:{self.port}"
            self.log_path = store / f"server-{self.port}.log"
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    [program, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(store / "js")],
                    stdout=log, stderr=subprocess.STDOUT)
            # Ready means: this very process says so (another test's server could hold
            # the port a moment after free_port() found it free).
            if poll("nats-server to be ready", self._ready) is True:
                return
        raise AssertionError(f"nats-server did not start: {self.log_path.read_text()}")

    def _ready(self) -> Any:
        assert self.proc is not None
        if self.proc.poll() is not None:
            return "exited"
        return b"Server is ready" in self.log_path.read_bytes()

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def pause(self) -> None:
        """SIGSTOP, then waits until every thread of the server is stopped: a signal
        stops a process's threads one after the other, and on a loaded machine one
        may still answer a request after kill() returned."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        poll(f"nats-server {self.proc.pid} to stop", lambda: _stopped(self.proc.pid if self.proc else 0))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def publish(self, subject: str, payload: bytes) -> None:
        """A message published over the plain NATS protocol, as any client could: on a
        record subject, the stream takes it like a record (an intruder no node can
        apply)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            f = s.makefile("rb")
            f.readline()  # INFO {...}
            s.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                      + b"PUB %s %d\r\n%s\r\nPING\r\n" % (subject.encode(), len(payload), payload))
            while not f.readline().startswith(b"PONG"):
                pass


def _stopped(pid: int) -> bool:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("T", "t"):
            return False
    return True


class NodeProcess:
    """A uniflow.nats.Node in a process of its own (this file run as ``node``)."""

    def __init__(self, url: str, model: str, name: str, owns: Any = "any", lease: float = 3.0,
                 timeout: float = 2.0, wait: bool = True) -> None:
        self.name = name
        env = dict(os.environ)
        env["PYTHONPATH"] = str(PYTHON_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__)), "node", "--url", url, "--model", model, "--name", name,
             "--owns", json.dumps(owns), "--lease", str(lease), "--timeout", str(timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if wait:
            self.wait_ready()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read()

    def wait_ready(self) -> None:
        first = self.lines.get(timeout=WAIT)
        if first is None or not first.startswith("ready"):
            raise AssertionError(f"node {self.name} did not start: {first!r} {self._stderr()}")

    def cmd(self, line: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        try:
            answer = self.lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"node {self.name}: no answer to {line!r} within {WAIT} s") from None
        if answer is None:
            raise AssertionError(f"node {self.name} exited during {line!r}: {self._stderr()}")
        return answer

    def ok(self, line: str) -> str:
        answer = self.cmd(line)
        if not answer.startswith("OK"):
            raise AssertionError(f"node {self.name}: {line!r} answered {answer!r}")
        return answer[3:]

    def json(self, line: str) -> Any:
        return json.loads(self.ok(line))

    def submit(self, action: Dict[str, Any]) -> str:
        """``OK`` or ``ERR <class> <message>``."""
        return self.cmd(f"submit {json.dumps(action)}")

    def owned(self) -> List[int]:
        return list(self.json("status")["owned"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(WAIT)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def download(key: str, into: str = "Queued") -> Dict[str, Any]:
    return {"kind": "initialize", "feature": "Download", "key": key, "into": into}


COUNTING = {"kind": "initialize", "feature": "Downloads", "into": "Counting"}


def _node_main(argv: List[str]) -> int:
    import argparse

    import uniflow
    import uniflow.nats

    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--owns", default='"any"')
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args(argv)
    d = uniflow.Dispatcher(partitions=PARTITIONS, node=args.name)
    d.register(str(DOWNLOADS))
    node = uniflow.nats.Node(d, url=args.url, model=args.model, owns=json.loads(args.owns), lease=args.lease,
                             timeout=args.timeout)
    node.start()
    print(f"ready {args.name}", flush=True)
    for line in sys.stdin:
        command, _, rest = line.strip().partition(" ")
        try:
            if command == "quit":
                break
            if command == "submit":
                node.submit(rest)
                answer = "OK"
            elif command == "sync":
                node.sync()
                answer = "OK"
            elif command == "state":
                answer = "OK " + json.dumps(d.state)
            elif command == "status":
                answer = "OK " + json.dumps(node.status())
            else:
                answer = f"ERR ValueError unknown command {command!r}"
        except uniflow.UniflowError as error:
            answer = f"ERR {type(error).__name__} {error.message}"
        print(answer, flush=True)
    node.close()
    d.close()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["node"]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(_node_main(sys.argv[2:]))
