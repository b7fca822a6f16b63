"""Where the inspected history comes from: a journal file that grows (another
process writes it), or a dispatcher of this process (``Dispatcher.inspect``)."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..dispatcher import Dispatcher
from ..errors import UniflowError
from ..mutation import Mutation
from ..subscription import Subscription
from ._history import History
from ._scratch import Scratch, new_scratch_dispatcher, register_with_placeholders

__all__ = ["Source", "JournalSource", "HostSource", "SubmitResult"]

#: (HTTP status, {"status": name, "message": text, ...})
SubmitResult = Tuple[int, Dict[str, Any]]

# A malformed action is the client's error; a refused one (well formed, but its
# precondition failed or its processing did) is a conflict with the model's state.
_MALFORMED = {"UF_EJSON", "UF_ESCHEMA", "UF_ENOTFOUND", "UF_EINVAL"}


def submit_status(error: Optional[UniflowError]) -> int:
    if error is None:
        return 200
    return 400 if error.name in _MALFORMED else 409


class Source:
    """What a source gives the server."""

    kind = "source"
    history: History
    scratch: Scratch
    #: what the page should know is wrong (a journal of other definitions), or None
    warning: Optional[str] = None

    def start(self, notify: Callable[[], None]) -> None:
        raise NotImplementedError

    def refresh(self) -> None:
        """Takes in definitions registered since the last call (a host's)."""

    def normalize(self, model: Dict[str, Any]) -> Dict[str, Any]:
        """The model in the library's form; as it is when the library refuses it
        (a session of other definitions: the warning says so)."""
        try:
            return self.scratch.normalize(model)
        except UniflowError:
            return model

    def poll(self) -> bool:
        """Reads what is new (a journal); True when something changed."""
        return False

    def live_model(self) -> Dict[str, Any]:
        return self.normalize(self.history.model_at(None))

    def timers(self) -> List[Dict[str, Any]]:
        return []

    def clock(self) -> str:
        """The clock the timers' ``due_in_ms`` counts on: "manual" stands still."""
        return "monotonic"

    def submit(self, action: bytes) -> SubmitResult:
        raise NotImplementedError

    def close(self) -> None:
        self.scratch.close()


class JournalSource(Source):
    """Follows a journal file: the history of its last session, read as it grows."""

    kind = "journal"
    #: seconds between two replays that refresh the armed timers
    TIMERS_EVERY = 1.0

    def __init__(self, features: List[Dict[str, Any]], path: str) -> None:
        self.path = path
        self.scratch = Scratch(features)
        self.history = History(self.scratch.keyed)
        self._offset = 0
        self._identity: Optional[Tuple[int, int]] = None
        self._partial = b""
        self._session: Optional[str] = None
        self._has_timers = any("after" in s for f in features for s in f.get("states", {}).values()
                               if isinstance(s, dict))
        self._timers: List[Dict[str, Any]] = []
        self._timers_read_at = 0.0
        self._timers_every = self.TIMERS_EVERY
        self._timers_dirty = True
        self._timers_lock = threading.Lock()
        self.bad_lines = 0

    def check(self) -> None:
        """Raises the library's error when the file is not a journal of these
        definitions (a replay into a scratch dispatcher reads and checks every line);
        an empty file is a journal still to be written. ``OSError`` when it cannot be read."""
        with open(self.path, "rb") as f:
            empty = not f.read(1)
        if empty:
            return
        d = new_scratch_dispatcher(self.scratch.features)
        try:
            d.replay(self.path)
        finally:
            d.close()

    def start(self, notify: Callable[[], None]) -> None:
        self.poll()

    def poll(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        identity = (st.st_dev, st.st_ino)
        if identity != self._identity or st.st_size < self._offset:
            # Another file, or one cut shorter than what was read: read it again.
            self._identity = identity
            self._offset = 0
            self._partial = b""
            self._session = None
            self.history.reset({}, 0)
        if st.st_size == self._offset:
            return False
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read(st.st_size - self._offset)
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()  # a line counts once its newline is written
        for line in lines:
            try:
                self._line(line)
            except (KeyError, TypeError, ValueError, AttributeError):
                self.bad_lines += 1  # not what a journaling dispatcher writes: skipped
        self._timers_dirty = True
        return bool(lines)

    def _line(self, raw: bytes) -> None:
        try:
            line = json.loads(raw)
        except ValueError:
            self.bad_lines += 1
            return
        if not isinstance(line, dict):
            self.bad_lines += 1
        elif "uniflow_journal" in line:
            features = line.get("features")
            names = [f["feature"] for f in self.scratch.features]
            if isinstance(features, list) and features != names[:len(features)]:
                self.warning = (f"the journal's session {line.get('session')} has the features {features}, "
                                f"the inspector's definitions {names}: its models may not be shown right")
            elif features == names:
                self.warning = None
            session = line.get("session")
            if session != self._session:
                # A new session starts from an empty model, as a replay does.
                if self._session is not None or self.history.events:
                    self.history.reset({}, 0)
                self._session = session
        elif "batch" in line:
            for item in line["batch"]:
                # A batch holds its timers' lines and its statecharts' invocation lines too.
                if "seq" in item and "feature" in item:
                    self._mutation(item)
        elif "restore" in line:
            self.history.add_restore(int(line["seq"]), line["restore"])
        elif "timer" in line:
            self._has_timers = True
        elif "seq" in line and "feature" in line:
            self._mutation(line)

    def _mutation(self, line: Dict[str, Any]) -> None:
        """The library's mutation JSON of a journal line: ``old`` is the place's
        value before it."""
        feature, key = line["feature"], line.get("key")
        m: Dict[str, Any] = {"seq": line["seq"], "kind": line["kind"], "feature": feature}
        if key is not None:
            m["key"] = key
        m["old"] = self.history.place(feature, key)
        m["new"] = None if line.get("state") is None else {"state": line["state"], "payload": line.get("payload", {})}
        m["action"] = line.get("action")
        if not self.history.events:
            self.history.rebase(int(line["seq"]) - 1)
        self.history.add_mutation(m)

    def timers(self) -> List[Dict[str, Any]]:
        """The timers a replay of the journal arms (the library re-arms them by their
        rules), read again at most every ``TIMERS_EVERY`` seconds, or five times as
        long as the last replay took."""
        with self._timers_lock:
            now = time.monotonic()
            if self._timers_dirty and now - self._timers_read_at >= self._timers_every:
                self._timers_dirty = False
                self._timers_read_at = now
                if self._has_timers:
                    # Host timers: armed, never fired (nothing runs its loop).
                    d = Dispatcher(timers="host")
                    try:
                        register_with_placeholders(d, {"features": self.scratch.features})
                        d.replay(self.path)
                        self._timers = d.timers()
                        # A long journal takes long to replay: at most a fifth of the time.
                        self._timers_every = max(self.TIMERS_EVERY, 5 * (time.monotonic() - now))
                    except (UniflowError, OSError):
                        pass  # a session of other definitions, or a line being written
                    finally:
                        d.close()
            # Read at _timers_read_at: what each has left now.
            elapsed = int((time.monotonic() - self._timers_read_at) * 1000)
            return [dict(t, due_in_ms=max(0, int(t.get("due_in_ms", 0)) - elapsed)) for t in self._timers]

    def submit(self, action: bytes) -> SubmitResult:
        """A trial: the action on a copy of the model now (the journal's writer is
        another process, which this one does not change)."""
        error, made = self.scratch.trial(self.live_model(), action)
        body: Dict[str, Any] = {"status": "UF_OK" if error is None else error.name,
                                "message": "" if error is None else error.message,
                                "trial": True, "mutations": made}
        return submit_status(error), body


class HostSource(Source):
    """A dispatcher of this process: every mutation from its subscription."""

    kind = "dispatcher"

    def __init__(self, d: Dispatcher) -> None:
        self.d = d
        self.scratch = Scratch(d.definitions.get("features", []))
        self.history = History(self.scratch.keyed)
        self._subscription: Optional[Subscription] = None
        self._notify: Callable[[], None] = lambda: None
        self._known = {f["feature"] for f in self.scratch.features}
        self._stale = False

    def start(self, notify: Callable[[], None]) -> None:
        self._notify = notify
        # Subscribed first: a mutation made meanwhile is in the model read next and
        # applied again, which changes nothing.
        self._subscription = self.d.subscribe(self._record)
        # The seq the model is after is told by the next mutation (the library
        # has no call for it): until then the history holds no seq.
        self.history.reset(self.d.state, None)

    def _record(self, mutation: Mutation) -> None:
        m = mutation.to_dict()
        m.pop("dropped", None)
        if m["feature"] not in self._known:
            self._stale = True  # registered after the inspector started
        if not self.history.events:
            self.history.rebase(int(m["seq"]) - 1)
        self.history.add_mutation(m)
        self._notify()

    def refresh(self) -> None:
        if not self._stale:
            return
        self._stale = False
        old, self.scratch = self.scratch, Scratch(self.d.definitions.get("features", []))
        self._known = {f["feature"] for f in self.scratch.features}
        self.history.keyed.update(self.scratch.keyed)
        old.close()

    def live_model(self) -> Dict[str, Any]:
        return self.d.state

    def clock(self) -> str:
        return str(self.d.snapshot(timers=True).get("clock", "monotonic"))

    def timers(self) -> List[Dict[str, Any]]:
        return self.d.timers()

    def submit(self, action: bytes) -> SubmitResult:
        try:
            status = self.d.submit(action)
        except UniflowError as error:
            return submit_status(error), {"status": error.name, "message": error.message}
        return 200, {"status": "UF_OK" if status == 0 else "UF_QUEUED", "message": ""}

    def close(self) -> None:
        if self._subscription is not None and not self.d.closed:
            self._subscription.cancel()
        super().close()
