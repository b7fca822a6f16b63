"""The example examples/python/file_download.py runs and completes (or fails on purpose)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "python" / "file_download.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120)


def test_file_download_completes() -> None:
    result = run()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "FileDownloading: - -> Starting"
    assert [line for line in lines if line.endswith("%")][-1].endswith("100.0%")
    assert lines[-2:] == ["FileDownloading: InProgress -> Completed", "final state: Completed {}"]


def test_file_download_failure_is_recorded() -> None:
    result = run("--fail-at", "50", "--workers", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("final state: Failed {'reason': 'worker ")
    assert "connection reset at 50%" in result.stdout


def test_every_example_definition_has_initial_transitions_and_a_model_binding() -> None:
    """Issue 5: each example feature declares `initial`, `transitions` and at least one
    model binding; together (in file-name order, as `uniflow graph
    examples/definitions/*.json` registers them) they register."""
    import json

    import uniflow
    from conftest import DEFINITIONS

    paths = sorted(DEFINITIONS.glob("*.json"))
    assert paths, "no example definitions"
    for path in paths:
        definition = json.loads(path.read_text())
        assert definition.get("initial"), f"{path.name}: no initial"
        assert "transitions" in definition, f"{path.name}: no transitions"
        assert definition.get("bindings"), f"{path.name}: no model binding"
    with uniflow.Dispatcher() as d:
        for path in paths:
            d.register(str(path))
        assert [f["feature"] for f in d.definitions["features"]] == [
            json.loads(p.read_text())["feature"] for p in paths]
