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
