"""docs/architecture.md, its picture and the core's folders agree.

A newcomer finds a concern's code by its folder (docs/architecture.md); these
tests fail when a folder is added without a row and a node in the picture, when
the page names a file that moved, when the picture was not drawn again from its
DOT source, or when the lower layers start to depend on the dispatcher.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

CORE = REPO_ROOT / "Sources" / "UniFlow"
DOCS = REPO_ROOT / "docs"
PAGE = DOCS / "architecture.md"
DOT = DOCS / "architecture.dot"
SVG = DOCS / "architecture.svg"

# Folders whose code must not extend or name the dispatcher.
INDEPENDENT = ("Actions", "Mutations", "Model")


def folders() -> list[str]:
    return sorted(p.name for p in CORE.iterdir() if p.is_dir())


def test_every_folder_of_the_core_has_a_row_in_the_page() -> None:
    rows = set(re.findall(r"^\| `(\w+)/` \|", PAGE.read_text(), re.M))
    assert rows == set(folders()), "docs/architecture.md's table and Sources/UniFlow differ"


def test_every_folder_of_the_core_is_in_the_picture() -> None:
    labels = set(re.findall(r'label="(\w+)/', DOT.read_text()))
    assert set(folders()) <= labels, f"not in docs/architecture.dot: {sorted(set(folders()) - labels)}"
    assert labels <= set(folders()), f"no such folder: {sorted(labels - set(folders()))}"


def test_every_file_the_page_names_exists() -> None:
    text = PAGE.read_text()
    named = set(re.findall(r"`((?:[A-Za-z]+/)+[A-Za-z+_]+\.(?:swift|py|md|dot|svg))`", text))
    assert named, "the page names no file"
    missing = []
    for path in named:
        candidates = [REPO_ROOT / path, CORE / path, DOCS / path]
        if not any(c.exists() for c in candidates):
            missing.append(path)
    assert not missing, f"docs/architecture.md names files that do not exist: {sorted(missing)}"


def test_lower_layers_do_not_depend_on_the_dispatcher() -> None:
    offenders = []
    for folder in INDEPENDENT:
        for source in sorted((CORE / folder).rglob("*.swift")):
            for number, line in enumerate(source.read_text().splitlines(), 1):
                code = line.split("//", 1)[0]
                if re.search(r"\bDispatcher\b", code):
                    offenders.append(f"{source.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not offenders, "Actions/, Mutations/ and Model/ must not use Dispatcher:\n" + "\n".join(offenders)


def test_the_picture_is_drawn_from_its_source() -> None:
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz's dot is not installed (scripts/test installs it)")
    drawn = subprocess.run([dot, "-Tsvg", str(DOT)], capture_output=True, check=True).stdout
    assert drawn == SVG.read_bytes(), (
        "docs/architecture.svg is not docs/architecture.dot as drawn now: run "
        "`dot -Tsvg docs/architecture.dot -o docs/architecture.svg`")
