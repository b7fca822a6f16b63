"""Shared fixtures. The package is imported from the source tree (``bindings/python``)
unless it is installed; the library is found through ``UNIFLOW_LIBRARY`` or the
package's discovery order (a copy in the package, then the build folders)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

PYTHON_ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = PYTHON_ROOT.parent.parent
if str(PYTHON_ROOT) not in sys.path:
    sys.path.insert(0, str(PYTHON_ROOT))

import uniflow  # noqa: E402

DEFINITIONS = REPO_ROOT / "examples" / "definitions"

# The original UniFlow library's features, written out here (as Tests/c/test_seed.c does) so that bindings
# added to examples/definitions later cannot change these scenarios.
FILE_DOWNLOADING: Dict[str, Any] = {
    "feature": "FileDownloading",
    "states": {
        "Starting": {},
        "InProgress": {"fields": {"progress": "number"}},
        "Completed": {},
        "Failed": {"fields": {"reason": "string",
                              "code": {"type": "integer", "optional": True},
                              "retries": {"type": "integer", "default": 0}}},
    },
    "initial": ["Starting"],
    "transitions": {"Starting": ["InProgress", "Failed"],
                    "InProgress": ["InProgress", "Completed", "Failed"]},
}

MAIN: Dict[str, Any] = {
    "feature": "Main",
    "states": {"Main": {"fields": {"val": "integer"}}},
    "initial": ["Main"],
}

SEARCH: Dict[str, Any] = {
    "feature": "Search",
    "states": {
        "Ready": {},
        "InProgress": {"fields": {"query": "string", "progress": "integer"}},
        "Failed": {"fields": {"reason": "string"}},
    },
    "initial": ["Ready"],
    "transitions": {"Ready": ["InProgress"], "InProgress": ["Ready", "Failed"],
                    "Failed": ["Ready", "InProgress"]},
}

TOGGLE: Dict[str, Any] = {"feature": "Toggle", "states": {"Off": {}, "On": {}}}

COUNTER: Dict[str, Any] = {
    "feature": "Counter",
    "states": {"Counting": {"fields": {"n": "integer"}}},
}


@pytest.fixture
def d() -> Iterator[uniflow.Dispatcher]:
    """A dispatcher with FileDownloading, Main, Search, Toggle and Counter registered."""
    with uniflow.Dispatcher() as dispatcher:
        dispatcher.register([FILE_DOWNLOADING, MAIN, SEARCH, TOGGLE, COUNTER])
        yield dispatcher


class Recorder:
    """A subscriber that records every mutation as JSON data (read during the call)."""

    def __init__(self) -> None:
        self.mutations: List[Dict[str, Any]] = []

    def __call__(self, mutation: uniflow.Mutation) -> None:
        self.mutations.append(mutation.to_dict())

    def kinds(self) -> List[str]:
        return [m["kind"] for m in self.mutations]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
