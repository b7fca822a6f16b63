"""The type aliases of the Dispatcher's arguments, shared by the modules that define
its methods (``uniflow.dispatcher`` re-exports them)."""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar, Union

from .values import Payload

__all__ = ["ActionLike", "DefinitionsLike", "Via", "F"]

#: An action as a dict (see ``docs/actions.md``) or as JSON text.
ActionLike = Union[Mapping[str, Any], str, bytes]
#: Feature definitions: a path, JSON text, one definition (dict) or a list of them.
DefinitionsLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Sequence[Mapping[str, Any]], bytes]
#: What a via callable returns: the new payload (dict or JSON text), None, or DECLINE.
Via = Callable[[Optional[Payload]], Any]
F = TypeVar("F", bound=Callable[..., Any])
