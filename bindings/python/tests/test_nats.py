"""uniflow.nats.Node against a real nats-server (never a mock): nodes in processes of
their own (nats_support.py run as a node) and one in this process, sharing
examples/definitions/downloads.json over four partitions.

Each test starts ``nats-server -js`` on a free loopback port with a store in its
temporary folder and stops it by process id. They poll for what they wait for with
generous limits (a loaded machine makes them slower, not red). Skipped, saying so,
only where nats-server is not installed (scripts/setup installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import uniflow
from nats_support import (ALL, COUNTING, DOWNLOADS, PARTITIONS, PYTHON_ROOT, NodeProcess, Server, download,
                          nats_server, poll)

SERVER = nats_server()


def nats_library_missing() -> str:
    try:
        import uniflow.nats

        uniflow.nats.load()
    except uniflow.LibraryNotFoundError as error:
        return str(error)
    return ""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    if SERVER is None:
        pytest.skip("nats-server is not installed (Debian: apt-get install nats-server; scripts/setup installs it)")
    missing = nats_library_missing()
    if missing:
        pytest.fail(f"nats-server is installed but libuniflow_nats is not built: {missing}")
    s = Server(str(SERVER), tmp_path)
    yield s
    s.stop()


@pytest.fixture
def processes() -> Iterator[List[NodeProcess]]:
    started: List[NodeProcess] = []
    yield started
    for p in started:
        p.close()


def dispatcher(name: str) -> uniflow.Dispatcher:
    d = uniflow.Dispatcher(partitions=PARTITIONS, node=name)
    d.register(str(DOWNLOADS))
    return d


def test_routing_a_follower_and_status(server: Server, processes: List[NodeProcess]) -> None:
    """Given an owner of every partition in another process, a follower in this
    process routes its actions there (preconditions checked at the owner), applies
    the owner's records (foreign mutations), and a third node, another process,
    ends with the same model."""
    import uniflow.nats

    a = NodeProcess(server.url, "routing", "a")
    processes.append(a)
    poll("a to own every partition", lambda: a.owned() == ALL)
    with dispatcher("b") as d:
        seen: List[Any] = []
        d.subscribe(lambda m: seen.append((m.foreign, m.key, m.new.name)), when="AnyMutationOf<Download>")
        with uniflow.nats.Node(d, url=server.url, model="routing", owns="none") as b:
            assert b.submit(COUNTING) == uniflow.OK
            assert b.submit(download("k1")) == uniflow.OK
            assert b.submit(json.dumps(download("k2"))) == uniflow.OK  # JSON text too
            with pytest.raises(uniflow.Rejected) as rejected:
                b.submit(download("k1"))  # already there: the owner's precondition refuses it
            assert rejected.value.code == uniflow.Status.REJECTED
            assert "Download[k1]" in rejected.value.message, rejected.value.message

            b.sync()
            poll("b to apply the owner's records", lambda: d.get("Downloads") is not None
                 and d.get("Downloads").payload["started"] == 2)
            assert d.get("Download", key="k1") == uniflow.State("Queued", {})
            assert sorted(seen) == [(True, "k1", "Queued"), (True, "k2", "Queued")]

            status = b.status()
            assert {k: status[k] for k in ("node", "model", "connected", "owned", "blocked", "lag",
                                           "apply_errors", "last_apply_error")} == {
                "node": "b", "model": "routing", "connected": True, "owned": [], "blocked": [], "lag": 0,
                "apply_errors": 0, "last_apply_error": None}
            assert [(p["p"], p["owner"], p["mine"]) for p in status["partitions"]] == [
                (p, "a", False) for p in ALL]
            assert status["partitions"] == d.partitions()

            c = NodeProcess(server.url, "routing", "c", owns="none")
            processes.append(c)

            def same() -> Any:
                c.ok("sync")
                b.sync()
                return c.json("state") == d.state == a.json("state")
            poll("the three nodes to converge", same)
            assert d.state["Downloads"]["payload"] == {"started": 2, "completed": 0, "failed": 0}
            assert "closed" not in repr(b) and "routing" in repr(b)
        assert b.closed and "closed" in repr(b)


def test_an_owner_in_this_process_runs_actions_routed_to_it(server: Server, processes: List[NodeProcess]) -> None:
    """Given this process's node owning everything, another process's actions run here
    (on the adapter's thread, which calls this dispatcher's Python subscribers)."""
    import uniflow.nats

    with dispatcher("a") as d:
        local: List[Any] = []
        d.subscribe(lambda m: local.append((m.foreign, m.key)), when="AnyMutationOf<Download>")
        with uniflow.nats.Node(d, url=server.url, model="owner_here") as a:
            poll("a to own every partition", lambda: a.status()["owned"] == ALL)
            assert a.submit(COUNTING) == uniflow.OK
            b = NodeProcess(server.url, "owner_here", "b", owns="none")
            processes.append(b)
            assert b.submit(download("from_b")) == "OK"
            answer = b.submit(download("from_b"))
            assert answer.startswith("ERR Rejected ") and "Download[from_b]" in answer, answer
            assert local == [(False, "from_b")]
            assert d.get("Downloads").payload["started"] == 1
            b.ok("sync")
            assert b.json("state") == d.state


def test_errors_are_the_packages_exceptions(server: Server) -> None:
    """NotOwner (nobody owns the partition), Conflict (the stream refused the record:
    another message got there first), Misuse (not started, closed), InvalidArgument
    (a bad option): each with the adapter's message."""
    import uniflow.nats

    with dispatcher("a") as d:
        with pytest.raises(uniflow.InvalidArgument, match="owns"):
            uniflow.nats.Node(d, url=server.url, model="errors", owns=[PARTITIONS + 1])
        with pytest.raises(uniflow.InvalidArgument, match="model"):
            uniflow.nats.Node(d, url=server.url, model="not a name")
        follower = uniflow.nats.Node(d, url=server.url, model="errors", owns="none", timeout=0.3)
        with pytest.raises(uniflow.Misuse):
            follower.sync()  # not started
        follower.start()
        with pytest.raises(uniflow.Misuse):
            follower.start()
        started = time.monotonic()
        with pytest.raises(uniflow.NotOwner) as not_owner:
            follower.submit(download("k1"))
        assert time.monotonic() - started < 0.3 + 5.0
        assert not_owner.value.code == uniflow.Status.ENOTOWNER and not_owner.value.message
        follower.close()
        follower.close()  # idempotent
        with pytest.raises(uniflow.Misuse, match="closed"):
            follower.submit(download("k1"))

        with uniflow.nats.Node(d, url=server.url, model="errors") as owner:
            poll("the node to own every partition", lambda: owner.status()["owned"] == ALL)
            assert owner.submit(COUNTING) == uniflow.OK
            p = d.partition_of("Download", "k1")
            # Another client publishes on p's record subject: the stream takes it after
            # the node's last record, and the node's next record, which expects that one
            # to be the last, is refused (JetStream error 10071).
            server.publish(f"uf.errors.p.{p}", b'{"not": "a record"}')
            poll("the node to see the intruder", lambda: owner.status()["apply_errors"] >= 1)
            before = d.state
            with pytest.raises(uniflow.Conflict) as conflict:
                owner.submit(download("k1"))
            assert conflict.value.code == uniflow.Status.ECONFLICT
            assert "10071" in conflict.value.message, conflict.value.message
            assert d.state == before  # the refused record changed nothing
            other = next(k for k in ("x1", "x2", "x3", "x4", "x5", "x6") if d.partition_of("Download", k) != p)
            assert owner.submit(download(other)) == uniflow.OK
            assert owner.status()["last_apply_error"]


def test_a_stopped_server_is_unavailable(server: Server) -> None:
    """The server stopped (SIGSTOP) during a submit: Unavailable within the timeout;
    once it resumes, the node writes again."""
    import uniflow.nats

    with dispatcher("a") as d, uniflow.nats.Node(d, url=server.url, model="away", timeout=0.5) as node:
        poll("the node to own every partition", lambda: node.status()["owned"] == ALL)
        assert node.submit(COUNTING) == uniflow.OK
        server.pause()
        try:
            started = time.monotonic()
            with pytest.raises(uniflow.Unavailable) as away:
                node.submit(download("k1"))
            assert time.monotonic() - started < 0.5 + 5.0
            assert away.value.code == uniflow.Status.EUNAVAILABLE and away.value.message
            with pytest.raises(uniflow.Unavailable):
                node.sync(0.3)
        finally:
            server.signal(signal.SIGCONT)

        def writes() -> bool:
            try:
                return node.submit(download("k2")) == uniflow.OK
            except (uniflow.Unavailable, uniflow.NotOwner, uniflow.Conflict):
                return False
        poll("the node to write again", writes)
        node.sync()


def test_close_releases_the_leases_at_once(server: Server, processes: List[NodeProcess]) -> None:
    """Closing a node releases what it owns: another node claims it within a tick of
    its lease thread (a third of the lease), long before the lease would run out."""
    import uniflow.nats

    lease = 9.0
    with dispatcher("a") as d:
        a = uniflow.nats.Node(d, url=server.url, model="release", lease=lease)
        a.start()
        poll("a to own every partition", lambda: a.status()["owned"] == ALL)
        assert a.submit(COUNTING) == uniflow.OK
        b = NodeProcess(server.url, "release", "b", lease=lease)
        processes.append(b)
        b.ok("sync")
        assert b.owned() == []
        a.close()
        closed = time.monotonic()
        poll("b to own every partition", lambda: b.owned() == ALL)
        took = time.monotonic() - closed
        # A lease left to run out would last at least lease * 2/3 after close (its last
        # renewal was at most a third of a lease before).
        assert took < lease * 2 / 3, f"b took over {took:.1f} s after close, lease {lease} s"
        assert d.partitions() and all(not p["mine"] for p in d.partitions())
        assert b.submit(download("after")) == "OK"


def test_closing_the_dispatcher_closes_its_node_first(server: Server) -> None:
    import uniflow.nats

    d = dispatcher("a")
    node = uniflow.nats.Node(d, url=server.url, model="order")
    node.start()
    d.close()
    assert node.closed
    node.close()


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(PYTHON_ROOT) + os.pathsep + environment.get("PYTHONPATH", "")
    environment.pop("UNIFLOW_NATS_LIBRARY", None)
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=environment)


MAKE_A_NODE = """
import uniflow, uniflow.nats
d = uniflow.Dispatcher(partitions=2, node="a")
try:
    uniflow.nats.Node(d, model="m")
except uniflow.LibraryNotFoundError as error:
    print(error)
"""


def test_without_the_library_the_error_names_where_it_looked(tmp_path: Path) -> None:
    # UNIFLOW_NATS_LIBRARY, when set, is the only path tried.
    result = run_python(MAKE_A_NODE, UNIFLOW_NATS_LIBRARY=str(tmp_path / "nope.so"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["libuniflow_nats could not be loaded; tried:",
                                              f"  {tmp_path / 'nope.so'}: no such file"]
    assert "UNIFLOW_NATS_LIBRARY" in result.stdout
    # Otherwise: beside the core library the package loaded (here a copy alone).
    core = Path(uniflow.library_path()).resolve()
    shutil.copyfile(core, tmp_path / "libuniflow.so")
    result = run_python(MAKE_A_NODE, UNIFLOW_LIBRARY=str(tmp_path / "libuniflow.so"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "libuniflow_nats could not be loaded; tried:"
    assert f"  {tmp_path / 'libuniflow_nats.so'}: no such file" in lines
    assert f"  {tmp_path / 'libuniflow_nats.so.0'}: no such file" in lines
