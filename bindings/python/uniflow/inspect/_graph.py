"""The graph: ``uf_graph_dot`` (``Dispatcher.graph``) with each feature's current
state marked, drawn by Graphviz (``dot -Tsvg``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any, Dict, Mapping, Set, Tuple

__all__ = ["marked_dot", "render_svg", "GraphError"]

#: the marking's colours: one current state, or a state some instances are in
FILL = "#ffe28a"
COLOR = "#b8860b"


class GraphError(Exception):
    """Graphviz is missing or refused the drawing."""


def _quote(text: str) -> str:
    return json.dumps(text)  # a DOT string: double quotes, backslash escapes


def occupancy(model: Mapping[str, Any], keyed: Set[str]) -> Dict[Tuple[str, str], int]:
    """(feature, state) -> how many places are in that state."""
    counts: Dict[Tuple[str, str], int] = {}
    for feature, value in model.items():
        places = value.values() if feature in keyed else [value]
        for place in places:
            pair = (feature, place["state"])
            counts[pair] = counts.get(pair, 0) + 1
    return counts


def marked_dot(dot: str, model: Mapping[str, Any], keyed: Set[str]) -> str:
    """``dot`` with the states the model is in marked: filled, bold and with the class
    ``uf-current``; a keyed feature's state labelled with its number of instances."""
    lines = []
    for (feature, state), count in occupancy(model, keyed).items():
        attributes = [f'style="rounded,filled,bold"', f"fillcolor={_quote(FILL)}",
                      f"color={_quote(COLOR)}", "penwidth=2", 'class="uf-current"']
        if feature in keyed:
            attributes.append(f"label={_quote(f'{state} ({count})')}")
        lines.append(f"  {_quote(f'{feature}.{state}')} [{', '.join(attributes)}];\n")
    end = dot.rstrip().rfind("}")
    if end < 0 or not lines:
        return dot
    return dot[:end] + "".join(lines) + dot[end:]


def render_svg(dot: str, timeout: float = 20.0) -> str:
    """SVG text from Graphviz's ``dot -Tsvg`` (its XML prologue and doctype removed,
    so that it can go inline into a page)."""
    program = shutil.which("dot")
    if program is None:
        raise GraphError("Graphviz's dot is not installed (Debian: apt-get install graphviz)")
    try:
        result = subprocess.run([program, "-Tsvg"], input=dot.encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise GraphError(f"dot -Tsvg took more than {timeout:g} s") from error
    if result.returncode != 0:
        raise GraphError(f"dot -Tsvg failed: {result.stderr.decode(errors='replace').strip()}")
    svg = result.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg
