"""The public surface: every name in ``uniflow.__all__`` documented and fully annotated,
``py.typed`` shipped, and the small value types (enums, sentinels) behaving as values."""

from __future__ import annotations

import copy
import inspect
import pickle
from typing import Any, Callable, List

import uniflow
from conftest import PYTHON_ROOT

# Dunder methods that are part of what a user calls (the others are Python's protocol).
_PUBLIC_DUNDERS = {"__call__", "__enter__", "__exit__"}


def _public_functions() -> List[Any]:
    """(qualified name, function) for every public function, method and property getter."""
    found: List[Any] = []
    for name in uniflow.__all__:
        obj = getattr(uniflow, name)
        if inspect.isclass(obj):
            found.append((name, obj))
            for attr, value in vars(obj).items():
                if attr.startswith("_") and attr not in _PUBLIC_DUNDERS:
                    continue
                if isinstance(value, property):
                    found.append((f"{name}.{attr}", value))
                elif isinstance(value, (classmethod, staticmethod)):
                    found.append((f"{name}.{attr}", value.__func__))
                elif inspect.isfunction(value):
                    found.append((f"{name}.{attr}", value))
        elif inspect.isfunction(obj):
            found.append((name, obj))
    return found


def test_every_public_name_has_a_docstring() -> None:
    undocumented = [name for name, obj in _public_functions() if not (obj.__doc__ or "").strip()]
    assert undocumented == []


def test_every_public_function_is_fully_annotated() -> None:
    missing: List[str] = []
    for name, obj in _public_functions():
        fn: Callable[..., Any]
        if isinstance(obj, property):
            if obj.fget is None or "return" not in obj.fget.__annotations__:
                missing.append(f"{name} (return)")
            continue
        if inspect.isclass(obj):
            continue
        fn = obj
        signature = inspect.signature(fn)
        for parameter in list(signature.parameters.values())[1 if "." in name else 0:]:
            if parameter.annotation is inspect.Parameter.empty:
                missing.append(f"{name}({parameter.name})")
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} (return)")
    assert missing == []


def test_the_surface_holds_what_the_spec_names() -> None:
    for name in ("Dispatcher", "Subscription", "Mutation", "State", "OK", "QUEUED", "DECLINE", "STOP",
                 "UniflowError", "Rejected", "InvalidArgument", "InvalidJSON", "SchemaError", "NotFound",
                 "AlreadyExists", "CallbackError", "LoopError", "Misuse", "OutOfMemory", "FileError"):
        assert name in uniflow.__all__, name
    for method in ("register", "submit", "initialize", "actualize", "transition", "deinitialize", "trigger",
                   "get", "state", "subscribe", "on", "register_handler", "set_reporter", "logic_apply",
                   "scenario", "close", "closed"):
        assert hasattr(uniflow.Dispatcher, method), method


def test_py_typed_is_in_the_package_and_in_its_package_data() -> None:
    assert (PYTHON_ROOT / "uniflow" / "py.typed").is_file()
    assert '"py.typed"' in (PYTHON_ROOT / "pyproject.toml").read_text()


def test_enums_are_int_enums_spelled_as_in_json() -> None:
    assert uniflow.OK is uniflow.Status.OK and uniflow.OK == 0
    assert uniflow.QUEUED is uniflow.Status.QUEUED and uniflow.QUEUED == 1
    assert uniflow.MutationKind.TRANSITION == 3 and str(uniflow.MutationKind.TRANSITION) == "transition"
    assert uniflow.MutationKind.parse("deinitialization") is uniflow.MutationKind.DEINITIALIZATION
    assert [str(kind) for kind in uniflow.ActionKind] == [
        "initialize", "actualize", "transition", "deinitialize", "trigger", "send"]
    assert [int(kind) for kind in uniflow.ActionKind] == [1, 2, 3, 4, 5, 6]


def test_sentinels_stay_themselves_through_copy_and_pickle() -> None:
    for sentinel, text in ((uniflow.DECLINE, "uniflow.DECLINE"), (uniflow.STOP, "uniflow.STOP")):
        assert repr(sentinel) == text
        assert copy.copy(sentinel) is sentinel
        assert copy.deepcopy(sentinel) is sentinel
        assert pickle.loads(pickle.dumps(sentinel)) is sentinel
    assert uniflow.DECLINE is not uniflow.STOP


def test_the_package_type_checks_strictly() -> None:
    # py.typed promises hints a checker can use: mypy --strict finds nothing to say.
    import subprocess
    import sys

    import pytest

    pytest.importorskip("mypy")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir=/dev/null", "uniflow"],
                            cwd=PYTHON_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_status_prints_as_its_number_on_every_python() -> None:
    # As IntEnum does from Python 3.11 on; the guide's examples print it so.
    assert str(uniflow.OK) == "0" and str(uniflow.Status.ESCHEMA) == "-4"
    assert f"{uniflow.QUEUED}" == "1" and repr(uniflow.OK) == "<Status.OK: 0>"
    assert f"{uniflow.Status.REJECTED:d}|{uniflow.Status.ESCHEMA:03}|{uniflow.QUEUED:x}|{uniflow.OK:.1f}" == "-1|-04|1|0.0"
