"""The Dispatcher's lifetime, registration, state reads and options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import uniflow
from conftest import DEFINITIONS, FILE_DOWNLOADING, MAIN, PYTHON_ROOT, TOGGLE


# -- lifetime -----------------------------------------------------------------------------


def test_context_manager_closes_and_close_is_idempotent() -> None:
    with uniflow.Dispatcher() as d:
        assert not d.closed
        assert repr(d).startswith("<uniflow.Dispatcher open at 0x")
    assert d.closed
    assert repr(d) == "<uniflow.Dispatcher closed>"
    d.close()
    d.close()
    assert d.closed


def test_calls_on_a_closed_dispatcher_raise_misuse() -> None:
    d = uniflow.Dispatcher()
    d.register(TOGGLE)
    d.close()
    for call in (lambda: d.initialize("Toggle", "On"),
                 lambda: d.transition("Toggle", "On", payload={}),
                 lambda: d.submit({"kind": "initialize", "feature": "Toggle", "into": "On"}),
                 lambda: d.register(MAIN),
                 lambda: d.get("Toggle"),
                 lambda: d.state,
                 lambda: d.subscribe(print),
                 lambda: d.set_reporter(print),
                 lambda: d.logic_apply({"+": [1, 2]}),
                 lambda: d.__enter__()):
        with pytest.raises(uniflow.Misuse, match="closed"):
            call()


def test_del_frees_an_unclosed_dispatcher_with_live_subscriptions() -> None:
    calls = []
    d = uniflow.Dispatcher()
    d.register(TOGGLE)
    d.subscribe(calls.append)
    d.initialize("Toggle", "On")
    del d  # __del__ frees the C side and releases the callbacks; nothing crashes
    import gc

    gc.collect()
    assert len(calls) == 1


def test_options_are_passed_to_the_library(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    with uniflow.Dispatcher(reporting="none", max_cascade=10, report_skipped=True,
                            journal=journal, journal_sync=False) as d:
        d.register(TOGGLE)
        d.initialize("Toggle", "On")
    lines = journal.read_text().splitlines()
    assert len(lines) == 2  # the definitions' header, then one mutation


def test_bad_options_raise_invalid_argument() -> None:
    with pytest.raises(uniflow.InvalidArgument) as info:
        uniflow.Dispatcher(reporting="loud")
    assert info.value.code == uniflow.Status.EINVAL
    assert info.value.message == 'option \'reporting\' must be "none", "short" or "verbose", got "loud"'
    with pytest.raises(uniflow.InvalidArgument, match="max_cascade"):
        uniflow.Dispatcher(max_cascade=0)


def test_reporting_short_prints_to_stderr() -> None:
    code = textwrap.dedent("""
        import uniflow
        with uniflow.Dispatcher(reporting="short") as d:
            d.register({"feature": "Toggle", "states": {"Off": {}, "On": {}}})
            d.initialize("Toggle", "Off")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(PYTHON_ROOT)}, check=True)
    assert "Toggle" in result.stderr


# -- registration -------------------------------------------------------------------------


def test_register_accepts_a_dict_a_list_json_text_and_a_path(tmp_path: Path) -> None:
    with uniflow.Dispatcher() as d:
        assert d.register(TOGGLE) is uniflow.OK
        assert d.register([MAIN]) is uniflow.OK
        assert d.register(json.dumps({"feature": "A", "states": {"S": {}}})) is uniflow.OK
        assert d.register("  " + json.dumps([{"feature": "B", "states": {"S": {}}}])) is uniflow.OK
        assert d.register({"features": [{"feature": "C", "states": {"S": {}}}]}) is uniflow.OK
        path = tmp_path / "file_downloading.json"
        path.write_text(json.dumps(FILE_DOWNLOADING))
        assert d.register(str(path)) is uniflow.OK
        path2 = tmp_path / "e.json"
        path2.write_text(json.dumps({"feature": "E", "states": {"S": {}}}))
        assert d.register(path2) is uniflow.OK  # os.PathLike
        names = [f["feature"] for f in d.definitions["features"]]
        assert names == ["Toggle", "Main", "A", "B", "C", "FileDownloading", "E"]


def test_register_the_example_definitions() -> None:
    if not (DEFINITIONS / "file_downloading.json").exists():
        pytest.skip("examples/definitions is not written yet")
    with uniflow.Dispatcher() as d:
        d.register(str(DEFINITIONS / "file_downloading.json"))
        assert d.definitions["features"][0]["feature"] == "FileDownloading"


def test_register_errors_carry_code_and_message(tmp_path: Path) -> None:
    with uniflow.Dispatcher() as d:
        with pytest.raises(uniflow.InvalidJSON) as info:
            d.register("{bad")
        assert info.value.code == uniflow.Status.EJSON == -3
        assert info.value.message.startswith("line 1, column 4:")
        assert info.value.name == "UF_EJSON"
        # Bytes are the library's to judge: text that is not UTF-8 is its UF_EJSON.
        with pytest.raises(uniflow.InvalidJSON, match=r"^line 1, column \d+: unable to decode byte 0xff"):
            d.register(b'{"feature":"\xff","states":{"S":{}}}')
        assert d.register(b' {"feature":"Bytes","states":{"S":{}}}') is uniflow.OK

        with pytest.raises(uniflow.SchemaError) as schema:
            d.register({"feature": "X"})
        assert schema.value.code == -4
        assert schema.value.message == "features[0]: missing key 'states'"

        with pytest.raises(uniflow.SchemaError, match=r"features\[0\]\.states\.S\.fields\.f: unknown type 'nubmer'"):
            d.register({"feature": "X", "states": {"S": {"fields": {"f": "nubmer"}}}})

        d.register(TOGGLE)
        with pytest.raises(uniflow.AlreadyExists) as exists:
            d.register(TOGGLE)
        assert exists.value.code == -6
        assert exists.value.message == "features[0]: feature 'Toggle' is already registered"

        missing = tmp_path / "missing.json"
        with pytest.raises(uniflow.FileError) as io:
            d.register(str(missing))
        assert io.value.code == -11
        assert io.value.message == f"cannot read '{missing}': No such file or directory"

        with pytest.raises(uniflow.InvalidArgument, match="not JSON-serializable"):
            d.register({"feature": {1, 2}})


# -- reading state ------------------------------------------------------------------------


def test_get_state_and_states(d: uniflow.Dispatcher) -> None:
    assert d.get("Toggle") is None
    assert d.state == {}
    d.initialize("Toggle", "On")
    d.initialize("Main", "Main", payload={"val": 3})
    assert d.get("Toggle") == uniflow.State("On", {})
    assert d.get("Main") == uniflow.State(name="Main", payload={"val": 3})
    # Registration order, not submission order: FileDownloading, Main, Search, Toggle, Counter.
    assert d.state == {"Main": {"state": "Main", "payload": {"val": 3}},
                       "Toggle": {"state": "On", "payload": {}}}
    assert list(d.state) == ["Main", "Toggle"]
    assert d.states() == {"Main": uniflow.State("Main", {"val": 3}), "Toggle": uniflow.State("On", {})}
    with pytest.raises(uniflow.NotFound) as info:
        d.get("Nope")
    assert info.value.code == -5
    assert info.value.message == "unknown feature 'Nope'"


def test_state_is_a_small_immutable_value() -> None:
    s = uniflow.State("InProgress", {"progress": 10})
    assert s.name == "InProgress" and s.payload == {"progress": 10}
    with pytest.raises(AttributeError):
        s.name = "Other"  # type: ignore[misc]
    assert uniflow.State.from_json({"state": "A", "payload": {}}) == uniflow.State("A", {})
    assert uniflow.State.from_json(None) is None
    assert s.to_json() == {"state": "InProgress", "payload": {"progress": 10}}


def test_restore_and_graph(d: uniflow.Dispatcher) -> None:
    d.initialize("Toggle", "On")
    snapshot = d.state
    d.transition("Toggle", "Off")
    assert d.restore(snapshot) is uniflow.OK
    assert d.get("Toggle") == uniflow.State("On", {})
    assert d.restore(json.dumps({})) is uniflow.OK
    assert d.state == {}
    with pytest.raises(uniflow.NotFound):
        d.restore({"Nope": {"state": "A", "payload": {}}})
    dot = d.graph("Toggle")
    assert dot.startswith("digraph") and '"Toggle.On"' in dot
    assert "cluster_Main" in d.graph()
    with pytest.raises(uniflow.NotFound):
        d.graph("Nope")


def test_replay_a_journal(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    with uniflow.Dispatcher(journal=str(journal)) as writer:
        writer.register(TOGGLE)
        writer.initialize("Toggle", "Off")
        writer.transition("Toggle", "On")
    with uniflow.Dispatcher() as reader:
        reader.register(TOGGLE)
        assert reader.replay(journal) is uniflow.OK
        assert reader.state == {"Toggle": {"state": "On", "payload": {}}}
        with pytest.raises(uniflow.FileError):
            reader.replay(tmp_path / "missing.jsonl")


# -- the library --------------------------------------------------------------------------


def test_version_and_library_path() -> None:
    # The header is the one place the version is written: the library and the package agree.
    assert uniflow.library_version() == "0.2.0"
    assert uniflow.__version__ == uniflow.library_version()
    assert os.path.exists(uniflow.library_path())


def test_unloadable_library_lists_every_path_tried(tmp_path: Path) -> None:
    bogus = tmp_path / "libuniflow.so"
    code = "import uniflow\ntry:\n    uniflow.Dispatcher()\nexcept uniflow.LibraryNotFoundError as e:\n    print(e)\n"
    env = {**os.environ, "PYTHONPATH": str(PYTHON_ROOT), "UNIFLOW_LIBRARY": str(bogus)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert f"{bogus}: no such file" in out
    tried = [line for line in out.splitlines() if line.startswith("  ")]
    assert tried == [f"  {bogus}: no such file"]  # UNIFLOW_LIBRARY alone is tried

    bogus.write_text("not a library")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert str(bogus) in out and "UNIFLOW_LIBRARY" in out


def test_discovery_order_without_the_variable() -> None:
    env = dict(os.environ)
    env.pop("UNIFLOW_LIBRARY", None)
    code = "import uniflow; print('\\n'.join(uniflow.candidate_paths()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "PYTHONPATH": str(PYTHON_ROOT)}, check=True).stdout.split()
    package = PYTHON_ROOT / "uniflow"
    root = PYTHON_ROOT.parent.parent
    assert out == [str(package / "libuniflow.so"), str(package / "libuniflow.so.0")] + [
        str(root / folder / "libuniflow.so")
        for folder in ("build/prefix/lib", "build/release", ".build/release", ".build/debug")]


def test_functions_called_holding_the_gil_return_the_c_int_with_its_sign() -> None:
    # They have no restype (ctypes then reads a C int); a failure must stay negative.
    from uniflow._library import holding_the_gil

    dispatch_try = holding_the_gil("uf_dispatch_try")
    assert dispatch_try is not None
    rc = dispatch_try(None, None)
    assert type(rc) is int and rc == uniflow.Status.EINVAL
    assert holding_the_gil("uf_not_exported") is None
