"""What the inspector's tests share: a journal writer in another process, the
inspector as a subprocess (``python3 -m uniflow.inspect``), and HTTP calls."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from conftest import DEFINITIONS, PYTHON_ROOT

DEFS = [str(DEFINITIONS / "file_downloading.json"), str(DEFINITIONS / "downloads.json")]

#: a few actions: FileDownloading runs to completion (its binding completes it at 100),
#: two keyed Downloads appear (each counted by Downloads' binding), one leaves
ACTIONS: List[Dict[str, Any]] = [
    {"kind": "initialize", "feature": "Downloads", "into": "Counting"},
    {"kind": "initialize", "feature": "FileDownloading", "into": "Starting"},
    {"kind": "transition", "feature": "FileDownloading", "from": "Starting", "into": "InProgress",
     "payload": {"progress": 10}},
    {"kind": "initialize", "feature": "Download", "key": "a_pdf", "into": "Queued"},
    {"kind": "actualize", "feature": "FileDownloading", "in": "InProgress", "payload": {"progress": 60}},
    {"kind": "initialize", "feature": "Download", "key": "b_zip", "into": "Queued"},
    {"kind": "deinitialize", "feature": "Download", "key": "a_pdf"},
    {"kind": "actualize", "feature": "FileDownloading", "in": "InProgress", "payload": {"progress": 100}},
]

# The writer: a dispatcher journaling to argv[1] (manual clock: its state timers wait
# for no one), submitting each action line it reads and answering with the mutations
# it made (the library's JSON) or the error, one JSON line each.
WRITER = r"""
import json, sys
import uniflow
journal, defs = sys.argv[1], sys.argv[2:]
made = []
with uniflow.Dispatcher(journal=journal, clock="manual") as d:
    for path in defs:
        d.register(path)
    d.subscribe(lambda m: made.append(m.to_dict()))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        made.clear()
        try:
            d.submit(line.strip().encode())
            print(json.dumps({"mutations": made}), flush=True)
        except uniflow.UniflowError as error:
            print(json.dumps({"error": error.message, "mutations": made}), flush=True)
"""


def child_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PYTHON_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Writer:
    """A journaling dispatcher in another process."""

    def __init__(self, journal: Path, defs: List[str] = DEFS) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", WRITER, str(journal), *defs],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
        assert self._answer() == {"ready": True}
        #: every mutation it made, as its subscriber saw them
        self.mutations: List[Dict[str, Any]] = []

    def _answer(self) -> Dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the writer ended"
        return dict(json.loads(line))

    def submit(self, action: Dict[str, Any]) -> Dict[str, Any]:
        """Submits one action; returns once its journal lines are written."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(action) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        self.mutations += answer["mutations"]
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


class Inspector:
    """``python3 -m uniflow.inspect ...`` as a subprocess; ``url`` is its first line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "uniflow.inspect", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        lines: "queue.Queue[str]" = queue.Queue()
        assert self.process.stdout is not None
        stdout = self.process.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            self.url = lines.get(timeout=30).strip()
        except queue.Empty:
            self.close()
            raise AssertionError("the inspector printed no URL within 30 s")
        if not self.url:
            _, err = self.process.communicate(timeout=30)
            raise AssertionError(f"the inspector ended: {err}")
        parts = urllib.parse.urlsplit(self.url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def request(base: str, path: str, token: Optional[str] = None, params: Optional[Dict[str, Any]] = None,
            data: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None,
            method: Optional[str] = None) -> Tuple[int, bytes, Dict[str, str]]:
    """(status, body, headers) of one request; ``token`` goes in the query."""
    query = dict(params or {})
    if token is not None:
        query["token"] = token
    url = base + path + ("?" + urllib.parse.urlencode(query) if query else "")
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def get_json(base: str, path: str, token: str, **params: Any) -> Tuple[int, Any]:
    status, body, _ = request(base, path, token, params)
    return status, json.loads(body)


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
