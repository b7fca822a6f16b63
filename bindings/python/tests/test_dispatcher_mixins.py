"""The Dispatcher's methods are defined in ``dispatcher.py`` and in the mixins it
inherits (``uniflow._model``, ``_observers``, ``_timers``, ``_prepared``).
``test_public_surface`` looks at what each public class defines itself; this holds
the inherited public methods to the same rules (documented, fully annotated), and
makes sure no two of these classes define the same public name, which the method
resolution order would settle silently."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any, List, Tuple

import uniflow

_MIXINS = [cls for cls in uniflow.Dispatcher.__mro__[1:] if cls.__module__.startswith("uniflow.")]


def _inherited_public() -> List[Tuple[str, Any]]:
    found: List[Tuple[str, Any]] = []
    for cls in _MIXINS:
        for attr, value in vars(cls).items():
            if attr.startswith("_"):
                continue
            if isinstance(value, property):
                found.append((f"{cls.__name__}.{attr}", value.fget))
            elif inspect.isfunction(value):
                found.append((f"{cls.__name__}.{attr}", value))
    return found


def test_the_dispatcher_inherits_public_methods_from_mixins() -> None:
    # Otherwise the tests below check nothing.
    names = {name.split(".")[1] for name, _ in _inherited_public()}
    assert {"subscribe", "watch", "get", "snapshot", "submit_after", "run_pending"} <= names


def test_inherited_public_methods_are_documented_and_annotated() -> None:
    missing: List[str] = []
    for name, fn in _inherited_public():
        if not (fn.__doc__ or "").strip():
            missing.append(f"{name} (docstring)")
        signature = inspect.signature(fn)
        for parameter in list(signature.parameters.values())[1:]:  # after self
            if parameter.annotation is inspect.Parameter.empty:
                missing.append(f"{name}({parameter.name})")
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} (return)")
    assert missing == []


def test_no_public_name_is_defined_twice_along_the_dispatchers_mro() -> None:
    counts = Counter(attr for cls in [uniflow.Dispatcher, *_MIXINS] for attr in vars(cls)
                     if not attr.startswith("_"))
    assert [attr for attr, count in counts.items() if count > 1] == []
