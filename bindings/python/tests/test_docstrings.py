"""The examples in the package's docstrings run as written (``>>>`` lines are
doctests). Each example that uses a ``d`` gets a fresh dispatcher whose
FileDownloading (the README's download feature, as ``conftest.FILE_DOWNLOADING``
writes it out) is in progress at 10."""

from __future__ import annotations

import doctest
import sys
from typing import List

import pytest

import uniflow
import uniflow.scenario
from conftest import FILE_DOWNLOADING, REPO_ROOT

# The Dispatcher's methods are defined in dispatcher.py and in the modules of the
# mixins it inherits (uniflow._observers, ...): each of those modules is searched.
_DISPATCHER_MODULES = [sys.modules[c.__module__] for c in uniflow.Dispatcher.__mro__
                       if c.__module__.startswith("uniflow.")]
MODULES = [uniflow, *dict.fromkeys(_DISPATCHER_MODULES), uniflow.scenario]


def examples() -> List[doctest.DocTest]:
    # The finder keeps to what each module defines: a re-exported name is found once.
    return [test for module in MODULES for test in doctest.DocTestFinder().find(module) if test.examples]


@pytest.mark.parametrize("test", examples(), ids=lambda t: t.name)
def test_a_docstring_example_runs_as_written(test: doctest.DocTest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)  # examples name files relative to the repository
    d = uniflow.Dispatcher()
    d.register(FILE_DOWNLOADING)
    d.initialize("FileDownloading", "Starting")
    d.transition("FileDownloading", into="InProgress", payload={"progress": 10})
    test.globs = dict(test.globs, d=d)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures: List[str] = []
    runner.run(test, out=failures.append)
    d.close()
    assert runner.failures == 0, "".join(failures)


def test_the_package_has_examples_to_run() -> None:
    assert len(examples()) >= 4
