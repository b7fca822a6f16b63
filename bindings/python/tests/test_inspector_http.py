"""The inspector's HTTP contract (docs/inspector.md), over real HTTP: the token,
the JSON endpoints and each of their errors, a journal followed as another process
writes it, and the command line's own errors. The answers are compared with what
the library says: a replay of the journal, a subscription's mutations, its
filter messages."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

pytest.importorskip("aiohttp", reason="the inspector needs aiohttp (pip install 'uniflow[inspect]')")

import uniflow  # noqa: E402
from conftest import FILE_DOWNLOADING  # noqa: E402
from inspector_support import (  # noqa: E402
    ACTIONS, DEFS, Inspector, Writer, child_env, get_json, request, wait_until)

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Inspector, Writer, Path]]:
    """An inspector following the journal a writer (another process) wrote ACTIONS to."""
    journal = tmp_path_factory.mktemp("inspector") / "journal.jsonl"
    writer = Writer(journal)
    for action in ACTIONS:
        writer.submit(action)
    inspector = Inspector(*DEFS, "--journal", str(journal))
    yield inspector, writer, journal
    inspector.close()
    writer.close()


def replayed(journal: Path, seq: int, tmp_path: Path) -> Dict[str, Any]:
    """The model a replay of the journal's lines up to ``seq`` gives (the library's)."""
    lines = []
    for line in journal.read_text().splitlines():
        value = json.loads(line)
        if "uniflow_journal" in value or value.get("seq", 0) <= seq:
            lines.append(line)
    part = tmp_path / f"upto{seq}.jsonl"
    part.write_text("\n".join(lines) + "\n")
    with uniflow.Dispatcher() as d:
        for path in DEFS:
            d.register(path)
        d.replay(part)
        return d.state


def without_action(mutations: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "action"} for m in mutations]


# -- the first line, the token ---------------------------------------------------------------

def test_the_first_line_is_the_pages_url_with_a_random_token(followed: Any) -> None:
    inspector, _, _ = followed
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{20,}", inspector.url), inspector.url
    status, body, headers = request(inspector.base, "/", inspector.token)
    assert status == 200 and b'data-testid="time"' in body
    assert headers["Content-Type"].startswith("text/html")


PATHS = ["/", "/static/inspector.js", "/static/inspector.css", "/api/info", "/api/model", "/api/mutations",
         "/api/graph.svg", "/api/timers", "/api/events", "/api/submit"]


@pytest.mark.parametrize("path", PATHS)
def test_without_the_token_nothing_is_served(followed: Any, path: str) -> None:
    inspector, _, _ = followed
    assert request(inspector.base, path)[0] == 403
    assert request(inspector.base, path, token="")[0] == 403


@pytest.mark.parametrize("path", PATHS)
def test_a_wrong_token_is_refused(followed: Any, path: str) -> None:
    inspector, _, _ = followed
    assert request(inspector.base, path, token=inspector.token[:-1])[0] == 403
    assert request(inspector.base, path, token=inspector.token + "x")[0] == 403
    assert request(inspector.base, path, headers={"Authorization": "Bearer wrong"})[0] == 403


def test_the_token_may_come_as_a_bearer_header(followed: Any) -> None:
    inspector, _, _ = followed
    status, body, _ = request(inspector.base, "/api/model", headers={"Authorization": f"Bearer {inspector.token}"})
    assert status == 200 and json.loads(body)["FileDownloading"]["state"] == "Completed"


def test_static_files_come_only_from_the_fixed_list(followed: Any) -> None:
    inspector, _, _ = followed
    for path in ("/static/index.html", "/static/__init__.py", "/static/..%2f_server.py", "/static/%2e%2e%2f..%2fetc%2fpasswd"):
        assert request(inspector.base, path, inspector.token)[0] == 404, path


# -- /api/model ----------------------------------------------------------------------------

def test_the_model_now_is_the_one_replay_gives(followed: Any, tmp_path: Path) -> None:
    inspector, writer, journal = followed
    status, model = get_json(inspector.base, "/api/model", inspector.token)
    assert status == 200
    assert model == replayed(journal, 10**9, tmp_path)
    assert list(model) == ["FileDownloading", "Download", "Downloads"]  # registration order


def test_the_model_at_every_seq_is_what_replaying_up_to_it_gives(followed: Any, tmp_path: Path) -> None:
    inspector, writer, journal = followed
    seqs = [m["seq"] for m in writer.mutations]
    for seq in [0] + seqs:
        status, model = get_json(inspector.base, "/api/model", inspector.token, at=seq)
        assert status == 200, model
        assert model == replayed(journal, seq, tmp_path), seq
        # exactly: the same keys in the same order
        assert json.dumps(model) == json.dumps(replayed(journal, seq, tmp_path))


def test_an_unknown_seq_is_404_and_one_that_is_not_a_number_400(followed: Any) -> None:
    inspector, writer, _ = followed
    status, body = get_json(inspector.base, "/api/model", inspector.token, at=writer.mutations[-1]["seq"] + 5)
    assert status == 404 and "no seq" in body["error"]
    assert get_json(inspector.base, "/api/model", inspector.token, at=-3)[0] == 404
    status, body = get_json(inspector.base, "/api/model", inspector.token, at="two")
    assert status == 400 and "integer" in body["error"]
    assert get_json(inspector.base, "/api/graph.svg", inspector.token, at=999)[0] == 404


# -- /api/mutations ------------------------------------------------------------------------

def test_the_mutations_are_the_librarys_json_oldest_first(followed: Any) -> None:
    inspector, writer, _ = followed
    status, mutations = get_json(inspector.base, "/api/mutations", inspector.token)
    assert status == 200
    # The journal records results, not actions: "action" is null when read from one.
    assert without_action(mutations) == without_action(writer.mutations)
    assert [list(m) for m in mutations] == [list(m) for m in writer.mutations]
    assert all(m["action"] is None for m in mutations)
    since = writer.mutations[3]["seq"]
    assert without_action(get_json(inspector.base, "/api/mutations", inspector.token, since=since)[1]) == \
        without_action([m for m in writer.mutations if m["seq"] > since])


@pytest.mark.parametrize("when", ["AnyMutationOf<Download>", "TransitionInto<FileDownloading.Completed>",
                                  "ActualizationIn<Downloads.Counting>", "Deinitialization<Download>",
                                  "AnySettingOf<FileDownloading>", "  TransitionFrom < FileDownloading . InProgress > "])
def test_a_filter_selects_what_the_librarys_subscription_would(followed: Any, when: str) -> None:
    inspector, writer, _ = followed
    # What a subscription with this filter saw, on a dispatcher given the same actions.
    seen: List[int] = []
    with uniflow.Dispatcher(clock="manual") as d:
        for path in DEFS:
            d.register(path)
        d.subscribe(lambda m: seen.append(m.seq), when=when)
        for action in ACTIONS:
            d.submit(action)
    status, mutations = get_json(inspector.base, "/api/mutations", inspector.token, filter=when)
    assert status == 200
    assert [m["seq"] for m in mutations] == seen and seen


@pytest.mark.parametrize("when", ["Foo", "", "AnyMutation<Download>", "TransitionInto<Nope.X>",
                                  "TransitionInto<FileDownloading.X>", "Transition<File-Downloading>"])
def test_a_bad_filter_is_400_with_the_librarys_message(followed: Any, when: str) -> None:
    inspector, _, _ = followed
    if when == "":
        # An empty box is no filter (the page sends none); the library's empty-filter
        # error is for C's "" only.
        assert get_json(inspector.base, "/api/mutations", inspector.token, filter=when)[0] == 200
        return
    with uniflow.Dispatcher() as d:
        for path in DEFS:
            d.register(path)
        with pytest.raises(uniflow.UniflowError) as error:
            d.subscribe(print, when=when)
    status, body = get_json(inspector.base, "/api/mutations", inspector.token, filter=when)
    assert status == 400
    assert body["error"] == error.value.message


# -- the graph, timers, submit ---------------------------------------------------------------

def test_the_graph_is_svg_with_the_current_states_marked(followed: Any) -> None:
    inspector, writer, _ = followed
    status, body, headers = request(inspector.base, "/api/graph.svg", inspector.token)
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml")
    svg = body.decode()
    assert svg.startswith("<svg")
    marked = re.findall(r'<g id="node\d+" class="node uf&#45;current">\s*<title>([^<]+)</title>', svg)
    assert sorted(marked) == ["Download.Queued", "Downloads.Counting", "FileDownloading.Completed"]
    assert "Queued (1)" in svg  # a keyed feature: how many instances are there
    # Earlier: FileDownloading was InProgress and two downloads were queued.
    seq = next(m["seq"] for m in writer.mutations if m.get("key") == "b_zip")
    svg = request(inspector.base, "/api/graph.svg", inspector.token, {"at": seq})[1].decode()
    assert "Queued (2)" in svg
    assert re.search(r'class="node uf&#45;current">\s*<title>FileDownloading.InProgress</title>', svg)


def test_timers_are_a_json_list(followed: Any) -> None:
    inspector, _, _ = followed
    status, timers = get_json(inspector.base, "/api/timers", inspector.token)
    assert status == 200 and timers == []


def test_submit_without_allow_submit_is_403(followed: Any) -> None:
    inspector, _, _ = followed
    status, body, _ = request(inspector.base, "/api/submit", inspector.token, data=json.dumps(ACTIONS[0]).encode(),
                              headers=JSON)
    assert status == 403 and "--allow-submit" in json.loads(body)["error"]


# -- following the journal ------------------------------------------------------------------

def test_a_journal_is_followed_as_another_process_writes_it(tmp_path: Path) -> None:
    journal = tmp_path / "live.jsonl"
    writer = Writer(journal)
    inspector = Inspector(*DEFS, "--journal", str(journal))
    try:
        assert get_json(inspector.base, "/api/model", inspector.token)[1] == {}
        # The page's stream: a change event once something was written.
        stream = urllib.request.urlopen(f"{inspector.base}/api/events?token={inspector.token}", timeout=30)
        assert stream.readline() == b"event: change\n"
        first = json.loads(stream.readline()[len(b"data: "):])
        assert first["reset"] and first["mutations"] == []
        stream.readline()
        started = time.monotonic()
        writer.submit(ACTIONS[0])
        line = stream.readline()
        while line.startswith(b":") or line == b"\n":
            line = stream.readline()
        elapsed = time.monotonic() - started
        assert line == b"event: change\n"
        event = json.loads(stream.readline()[len(b"data: "):])
        assert [m["seq"] for m in event["mutations"]] == [1]
        assert event["model"] == {"Downloads": {"state": "Counting", "payload": {"started": 0, "completed": 0,
                                                                                 "failed": 0}}}
        assert elapsed < 3.0, elapsed  # the design target is 1 s (pushed, not polled, to the page)
        stream.close()
        for action in ACTIONS[1:]:
            writer.submit(action)
        last = writer.mutations[-1]["seq"]
        assert wait_until(lambda: get_json(inspector.base, "/api/info", inspector.token)[1]["last_seq"] == last)
        assert without_action(get_json(inspector.base, "/api/mutations", inspector.token)[1]) == \
            without_action(writer.mutations)
    finally:
        inspector.close()
        writer.close()


def test_a_new_session_starts_the_history_over(tmp_path: Path) -> None:
    journal = tmp_path / "sessions.jsonl"
    first = Writer(journal)
    for action in ACTIONS[:3]:
        first.submit(action)
    first.close()
    inspector = Inspector(*DEFS, "--journal", str(journal))
    try:
        generation = get_json(inspector.base, "/api/info", inspector.token)[1]["generation"]
        second = Writer(journal)  # a new session: an empty model, seqs from 1 again
        second.submit({"kind": "initialize", "feature": "Downloads", "into": "Counting"})
        second.submit({"kind": "initialize", "feature": "Download", "key": "c", "into": "Queued"})
        second.close()
        info = wait_until(lambda: (lambda i: i if i["generation"] != generation and i["last_seq"] == 3 else None)(
            get_json(inspector.base, "/api/info", inspector.token)[1]))
        assert info, "the new session was not followed"
        model = get_json(inspector.base, "/api/model", inspector.token)[1]
        assert model == {"Downloads": {"state": "Counting", "payload": {"started": 1, "completed": 0, "failed": 0}},
                         "Download": {"c": {"state": "Queued", "payload": {}}}}
        assert [m["seq"] for m in get_json(inspector.base, "/api/mutations", inspector.token)[1]] == [1, 2, 3]
    finally:
        inspector.close()


# -- the command line's errors --------------------------------------------------------------

def run_inspect(*args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-m", "uniflow.inspect", *args], capture_output=True, text=True,
                          env=child_env(), timeout=60)


def test_a_file_that_is_not_a_journal_is_refused_at_start(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"note": "not a journal"}\n')
    result = run_inspect(*DEFS, "--journal", str(notes))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"uniflow inspect: '{notes}' is not a journal of these definitions: "
                             f"{notes}: line 1: not a uniflow journal (no header line)\n")


def test_a_journal_of_other_definitions_is_refused_at_start(tmp_path: Path) -> None:
    journal = tmp_path / "other.jsonl"
    with uniflow.Dispatcher(journal=journal) as d:
        d.register(FILE_DOWNLOADING | {"feature": "Other"})
    result = run_inspect(*DEFS, "--journal", str(journal))
    assert result.returncode == 1 and "the journal was written for other definitions" in result.stderr


def test_a_missing_journal_is_refused_at_start(tmp_path: Path) -> None:
    result = run_inspect(*DEFS, "--journal", str(tmp_path / "none.jsonl"))
    assert result.returncode == 1
    assert result.stderr == f"uniflow inspect: cannot read the journal '{tmp_path / 'none.jsonl'}': No such file or directory\n"


def test_a_nats_model_needs_the_adapter_this_build_does_not_have() -> None:
    result = run_inspect(*DEFS, "--nats", "nats://127.0.0.1:4222", "--model", "shop", "--partitions", "4")
    assert result.returncode == 2 and result.stdout == ""
    assert "following a NATS model (--nats) needs the NATS adapter, which this build does not have" in result.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_inspect(*DEFS).returncode == 2  # no --journal
    assert run_inspect("--journal", str(tmp_path / "j")).returncode == 2  # no definitions
    result = run_inspect(*DEFS, "--journal", str(tmp_path / "j"), "--port", "70000")
    assert result.returncode == 2 and "not a port" in result.stderr


def test_a_bad_definition_file_is_refused_with_the_librarys_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"feature": "B", "states": {"A": {"fields": {"x": "nonsense"}}}}')
    journal = tmp_path / "j.jsonl"
    journal.write_text("")
    result = run_inspect(str(bad), "--journal", str(journal))
    assert result.returncode == 1 and result.stderr.startswith(f"uniflow inspect: {bad}: ")


# -- a Python host's inspector ---------------------------------------------------------------

@pytest.fixture
def hosted() -> Iterator[Tuple[uniflow.Dispatcher, Any]]:
    with uniflow.Dispatcher() as d:
        d.register(FILE_DOWNLOADING)
        d.initialize("FileDownloading", "Starting")
        inspector = d.inspect(allow_submit=True)
        try:
            yield d, inspector
        finally:
            inspector.close()


def post(inspector: Any, body: bytes, headers: Dict[str, str] = JSON) -> Tuple[int, Dict[str, Any]]:
    base, _, _ = inspector.url.partition("/?")
    status, answer, _ = request(base, "/api/submit", inspector.token, data=body, headers=headers)
    return status, json.loads(answer)


def expected_error(action: bytes) -> uniflow.UniflowError:
    with uniflow.Dispatcher() as d:
        d.register(FILE_DOWNLOADING)
        d.initialize("FileDownloading", "Starting")
        with pytest.raises(uniflow.UniflowError) as error:
            d.submit(action)
        return error.value


def test_a_hosts_inspector_serves_its_dispatcher(hosted: Any) -> None:
    d, inspector = hosted
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]+", inspector.url)
    base, _, _ = inspector.url.partition("/?")
    assert request(base, "/api/model")[0] == 403
    d.transition("FileDownloading", into="InProgress", payload={"progress": 5})
    assert get_json(base, "/api/model", inspector.token)[1] == d.state
    mutations = get_json(base, "/api/mutations", inspector.token)[1]
    assert [m["seq"] for m in mutations] == [2] and mutations[0]["action"]["kind"] == "transition"
    assert get_json(base, "/api/model", inspector.token, at=1)[1] == {
        "FileDownloading": {"state": "Starting", "payload": {}}}


def test_submit_applies_an_action_and_answers_a_rejection_with_the_librarys_reason(hosted: Any) -> None:
    d, inspector = hosted
    action = {"kind": "transition", "feature": "FileDownloading", "from": "Starting", "into": "InProgress",
              "payload": {"progress": 1}}
    assert post(inspector, json.dumps(action).encode()) == (200, {"status": "UF_OK", "message": ""})
    assert d.get("FileDownloading") == uniflow.State("InProgress", {"progress": 1})
    rejected = json.dumps({"kind": "deinitialize", "feature": "FileDownloading", "from": "Starting"}).encode()
    assert post(inspector, rejected) == (409, {"status": "UF_REJECTED",
                                               "message": "FileDownloading is in state InProgress, not Starting"})


@pytest.mark.parametrize("body", [b"{not json", b'{"kind": "initialize"}', b'{"kind": "transition", "feature": "Nope", "into": "X"}',
                                  b"[1, 2]", b"/etc/passwd"])
def test_a_malformed_action_is_400_with_the_librarys_message(hosted: Any, body: bytes) -> None:
    _, inspector = hosted
    error = expected_error(body)
    assert post(inspector, body) == (400, {"status": error.name, "message": error.message})


def test_another_content_type_is_415(hosted: Any) -> None:
    _, inspector = hosted
    status, answer = post(inspector, json.dumps(ACTIONS[0]).encode(), {"Content-Type": "text/plain"})
    assert status == 415 and "application/json" in answer["error"]
    status, answer = post(inspector, json.dumps(ACTIONS[0]).encode(), {})
    assert status == 415


def test_a_hosts_inspector_without_allow_submit_refuses_to_submit() -> None:
    with uniflow.Dispatcher() as d:
        d.register(FILE_DOWNLOADING)
        with d.inspect() as inspector:
            status, answer = post(inspector, json.dumps(ACTIONS[0]).encode())
            assert status == 403
        assert d.get("FileDownloading") is None


def test_closing_the_inspector_stops_the_server_and_its_subscription(hosted: Any) -> None:
    d, inspector = hosted
    base, _, _ = inspector.url.partition("/?")
    inspector.close()
    inspector.close()  # idempotent
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{base}/api/model?token={inspector.token}", timeout=5)
    d.transition("FileDownloading", into="Failed", payload={"reason": "x"})  # nobody listens any more


# -- the history's snapshots, the package's files --------------------------------------------

def test_the_model_at_a_seq_is_the_same_from_any_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    # Snapshots every 7 events instead of 1,000: every seq is answered from a
    # snapshot plus a few events, and must equal the events applied from the start.
    import random

    from uniflow.inspect._history import History, apply_mutation, copy_model, place_value

    monkeypatch.setattr(History, "SNAPSHOT_EVERY", 7)
    keyed = {"K"}
    history = History(keyed)
    rng = random.Random(3)
    naive: Dict[str, Any] = {}
    models: Dict[int, Dict[str, Any]] = {0: {}}
    for seq in range(1, 300):
        if rng.random() < 0.03:
            restored = copy_model(naive, keyed)
            restored.pop("S", None)
            history.add_restore(seq - 1, restored)
            naive = copy_model(restored, keyed)
            models[seq - 1] = copy_model(naive, keyed)
        feature = rng.choice(["S", "K"])
        key = f"k{rng.randrange(5)}" if feature == "K" else None
        old = place_value(naive, feature, key)
        new = None if old is not None and rng.random() < 0.2 else {"state": rng.choice("ABC"), "payload": {"n": seq}}
        m: Dict[str, Any] = {"seq": seq, "kind": "x", "feature": feature, "old": old, "new": new}
        if key is not None:
            m["key"] = key
        history.add_mutation(m)
        apply_mutation(naive, m)
        models[seq] = copy_model(naive, keyed)
    assert len(history.snapshots) > 40
    for seq, model in models.items():
        assert history.knows(seq)
        assert history.model_at(seq) == model, seq
    assert history.model_at(None) == naive
    assert not history.knows(300) and not history.knows(-1)


def test_the_built_package_holds_the_inspectors_page(tmp_path: Path) -> None:
    import shutil

    from conftest import PYTHON_ROOT

    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(PYTHON_ROOT / name, source / name)
    shutil.copytree(PYTHON_ROOT / "uniflow", source / "uniflow", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "installed"
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
                   cwd=str(source), check=True, capture_output=True)
    static = out / "uniflow" / "inspect" / "static"
    assert sorted(p.name for p in static.iterdir()) == ["index.html", "inspector.css", "inspector.js"]
    assert (out / "uniflow" / "inspect" / "__main__.py").is_file()


def test_a_feature_registered_after_the_inspector_started_is_shown() -> None:
    with uniflow.Dispatcher() as d:
        d.register(FILE_DOWNLOADING)
        with d.inspect() as inspector:
            base, _, _ = inspector.url.partition("/?")
            d.register({"feature": "Late", "instances": "keyed", "states": {"On": {"fields": {"n": "integer"}}}})
            d.initialize("Late", "On", {"n": 1}, key="a")
            d.initialize("FileDownloading", "Starting")
            assert get_json(base, "/api/model", inspector.token, at=1)[1] == {
                "Late": {"a": {"state": "On", "payload": {"n": 1}}}}
            assert get_json(base, "/api/model", inspector.token, at=2)[1] == d.state
            assert [m["seq"] for m in get_json(base, "/api/mutations", inspector.token, filter="AnyMutationOf<Late>")[1]] == [1]
            svg = request(base, "/api/graph.svg", inspector.token)[1].decode()
            assert "On (1)" in svg


def test_a_line_no_writer_would_write_is_skipped_and_the_journal_still_followed(tmp_path: Path) -> None:
    journal = tmp_path / "odd.jsonl"
    writer = Writer(journal)
    writer.submit(ACTIONS[0])
    inspector = Inspector(*DEFS, "--journal", str(journal))
    try:
        with open(journal, "a") as f:
            f.write('{"seq": 2, "feature": 7}\n[1]\nnot json\n')
        writer.submit(ACTIONS[1])
        assert wait_until(lambda: get_json(inspector.base, "/api/info", inspector.token)[1]["last_seq"] == 2)
        assert get_json(inspector.base, "/api/model", inspector.token)[1]["FileDownloading"]["state"] == "Starting"
    finally:
        inspector.close()
        writer.close()


def test_a_session_resumed_by_a_replay_starts_from_the_model_it_restored(tmp_path: Path) -> None:
    journal = tmp_path / "resumed.jsonl"
    first = Writer(journal)
    for action in ACTIONS[:4]:
        first.submit(action)
    first.close()
    last = first.mutations[-1]["seq"]
    resumed = tmp_path / "resume.py"
    resumed.write_text(
        "import sys, uniflow\n"
        "with uniflow.Dispatcher(journal=sys.argv[1]) as d:\n"
        "    for path in sys.argv[2:]:\n"
        "        d.register(path)\n"
        "    d.replay(sys.argv[1])\n"
        "    d.actualize('FileDownloading', 'InProgress', {'progress': 50})\n")
    subprocess.run([sys.executable, str(resumed), str(journal), *DEFS], check=True, env=child_env())
    inspector = Inspector(*DEFS, "--journal", str(journal))
    try:
        info = get_json(inspector.base, "/api/info", inspector.token)[1]
        assert (info["first_seq"], info["last_seq"]) == (last, last + 1)
        status, model = get_json(inspector.base, "/api/model", inspector.token, at=last)
        assert status == 200 and model["FileDownloading"] == {"state": "InProgress", "payload": {"progress": 10}}
        assert get_json(inspector.base, "/api/model", inspector.token, at=1)[0] == 404  # the earlier session's
        assert [m["seq"] for m in get_json(inspector.base, "/api/mutations", inspector.token)[1]] == [last + 1]
        assert get_json(inspector.base, "/api/mutations", inspector.token)[1][0]["old"] == {
            "state": "InProgress", "payload": {"progress": 10}}
    finally:
        inspector.close()


def test_a_journals_armed_timers_are_those_a_replay_arms(tmp_path: Path) -> None:
    journal = tmp_path / "timers.jsonl"
    with uniflow.Dispatcher(journal=journal) as d:  # the real clock: deadlines in wall-clock time
        for path in DEFS:
            d.register(path)
        d.submit_after(60, {"kind": "initialize", "feature": "FileDownloading", "into": "Starting"}, id="later")
        inspector = Inspector(*DEFS, "--journal", str(journal))
        try:
            timers = get_json(inspector.base, "/api/timers", inspector.token)[1]
            assert [(t["id"], t["ms"]) for t in timers] == [("later", 60000)]
            assert 40_000 < timers[0]["due_in_ms"] <= 60_000
            d.cancel_timer("later")
            assert wait_until(lambda: get_json(inspector.base, "/api/timers", inspector.token)[1] == [], timeout=15)
        finally:
            inspector.close()


def test_the_uniflow_command_runs_the_same_module(tmp_path: Path) -> None:
    import os

    library = os.environ.get("UNIFLOW_LIBRARY")
    command = Path(library).resolve().parent.parent / "bin" / "uniflow" if library else None
    if command is None or not command.is_file():
        pytest.skip("no uniflow command beside UNIFLOW_LIBRARY's library (an installed prefix)")
    if subprocess.run([str(command), "help", "inspect"], capture_output=True).returncode != 0:
        pytest.skip(f"{command} predates the inspect command")
    env = dict(child_env(), UNIFLOW_PYTHON=sys.executable)
    result = subprocess.run([str(command), "inspect", *DEFS, "--nats", "nats://127.0.0.1:4222", "--model", "m",
                             "--partitions", "2"], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2 and "needs the NATS adapter" in result.stderr
    notes = tmp_path / "notes.jsonl"
    notes.write_text("{}\n")
    result = subprocess.run([str(command), "inspect", *DEFS, "--journal", str(notes)], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 1 and "not a uniflow journal" in result.stderr


def test_a_hosts_history_starts_with_the_first_mutation_it_sees() -> None:
    with uniflow.Dispatcher(clock="manual") as d:
        d.register(FILE_DOWNLOADING)
        d.initialize("FileDownloading", "Starting")
        with d.inspect() as inspector:
            base, _, _ = inspector.url.partition("/?")
            info = get_json(base, "/api/info", inspector.token)[1]
            # The library does not say which seq the model is after: not until a mutation does.
            assert (info["first_seq"], info["last_seq"], info["clock"]) == (None, None, "manual")
            status, body = get_json(base, "/api/model", inspector.token, at=0)
            assert status == 404 and body["error"] == "no seq 0 in the history (it holds no seq yet)"
            d.transition("FileDownloading", into="InProgress", payload={"progress": 1})
            info = get_json(base, "/api/info", inspector.token)[1]
            assert (info["first_seq"], info["last_seq"]) == (1, 2)
            assert get_json(base, "/api/model", inspector.token, at=1)[1] == {
                "FileDownloading": {"state": "Starting", "payload": {}}}
