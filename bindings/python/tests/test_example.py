"""The Python examples run and end as they say (file_download.py also fails on purpose)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

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
    def features(path: Path) -> List[Dict[str, Any]]:
        document = json.loads(path.read_text())
        return document["features"] if "features" in document else [document]

    for path in paths:
        for definition in features(path):
            name = f"{path.name}: {definition['feature']}"
            assert definition.get("initial"), f"{name}: no initial"
            assert "transitions" in definition, f"{name}: no transitions"
            assert definition.get("bindings"), f"{name}: no model binding"
    with uniflow.Dispatcher() as d:
        for path in paths:
            d.register(str(path))
        assert [f["feature"] for f in d.definitions["features"]] == [
            f["feature"] for p in paths for f in features(p)]


def run_example(name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO_ROOT / "examples" / "python" / name)],
                          capture_output=True, text=True, timeout=120)


def test_downloads_refuses_an_executable_and_fails_the_stalled_one() -> None:
    result = run_example("downloads.py")
    assert result.returncode == 0, result.stderr + result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == "  refused: setup_exe: executables are not downloaded"
    assert "  backup_iso  Failed {'reason': 'stalled'} (its stall timer fired on the event loop)" in lines
    assert lines[-2:] == ["overall: 3 of 3 finished",
                          "model: {'report_pdf': 'Completed', 'photos_zip': 'Completed', 'backup_iso': 'Failed'}"]


def test_the_transfer_flow_ends_in_success() -> None:
    result = run_example("transfer_flow.py")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "timer 'confirmation': the confirmation was left open, back to the amount" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("done: Success {")


def test_shared_downloads_survives_a_killed_node() -> None:
    """Two nodes on a nats-server; north is killed, south takes over its downloads and
    their stall timers (a note and nothing else without nats-server)."""
    result = run_example("shared_downloads.py")
    assert result.returncode == 0, result.stderr + result.stdout
    lines = result.stdout.splitlines()
    if lines[0].startswith("note: "):
        return
    assert lines[-1] == "Downloads: started 6, completed 3, failed 3"
    assert sorted(line.split()[1] for line in lines if line.startswith("  south: ")) == [
        "fonts_zip", "maps_tar", "talk_mp4"]
