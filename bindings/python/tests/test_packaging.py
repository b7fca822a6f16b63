"""Packaging and library discovery, each in a fresh interpreter: what ``pip install``
builds (``py.typed`` and a bundled library), and the discovery order the README gives
(``UNIFLOW_LIBRARY`` alone, else the package's copy, else the build folders), with an
error listing every path tried."""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import uniflow
from conftest import PYTHON_ROOT

FOLDERS = ("build/prefix/lib", "build/release", ".build/release", ".build/debug")

# Loads the library the way a user does, then prints where it came from.
PROBE = """
import uniflow
try:
    with uniflow.Dispatcher() as d:
        d.register({"feature": "T", "states": {"A": {}}})
        d.initialize("T", "A")
    print("loaded", uniflow.library_path())
except uniflow.LibraryNotFoundError as error:
    print(error)
"""


def _run(pythonpath: Path, library_variable: Optional[str] = None) -> List[str]:
    env: Dict[str, str] = {key: value for key, value in os.environ.items() if key != "UNIFLOW_LIBRARY"}
    env["PYTHONPATH"] = str(pythonpath)
    if library_variable is not None:
        env["UNIFLOW_LIBRARY"] = library_variable
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                            check=True, cwd=str(pythonpath))
    return result.stdout.splitlines()


def _library() -> Path:
    return Path(uniflow.library_path()).resolve()


def _tree(root: Path) -> Path:
    """A copy of the package laid out as in the repository: root/bindings/python/uniflow
    (without any library). Returns root/bindings/python."""
    python = root / "bindings" / "python"
    shutil.copytree(PYTHON_ROOT / "uniflow", python / "uniflow",
                    ignore=shutil.ignore_patterns("__pycache__", "libuniflow.so*"))
    return python


def test_the_built_package_ships_py_typed_and_the_library_and_loads_its_copy(tmp_path: Path) -> None:
    # setup.py's build_py is what `pip install bindings/python` runs; built in a copy so
    # that the source tree gets no egg-info.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(PYTHON_ROOT / name, source / name)
    shutil.copytree(PYTHON_ROOT / "uniflow", source / "uniflow", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "installed"
    env = {**os.environ, "UNIFLOW_LIBRARY": str(_library())}
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
                   cwd=str(source), env=env, check=True, capture_output=True)
    package = out / "uniflow"
    assert (package / "py.typed").is_file()
    assert (package / "libuniflow.so").read_bytes() == _library().read_bytes()
    # No UNIFLOW_LIBRARY: the copy inside the package is what loads.
    assert _run(out) == [f"loaded {package / 'libuniflow.so'}"]
    # libuniflow_nats, built beside the library, goes along; uniflow.nats finds it
    # beside the copy.
    nats = _library().parent / "libuniflow_nats.so"
    if nats.exists():
        assert (package / "libuniflow_nats.so").read_bytes() == nats.resolve().read_bytes()
        env = {key: value for key, value in os.environ.items() if not key.startswith("UNIFLOW_")}
        probe = "import uniflow.nats; print(uniflow.nats.library_path())"
        found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                               env={**env, "PYTHONPATH": str(out)}, cwd=str(out)).stdout.split()
        assert found == [str(package / "libuniflow_nats.so")]


def test_the_package_copy_comes_before_the_build_folders(tmp_path: Path) -> None:
    python = _tree(tmp_path)
    built = tmp_path / "build" / "prefix" / "lib" / "libuniflow.so"
    built.parent.mkdir(parents=True)
    shutil.copy(_library(), built)
    assert _run(python) == [f"loaded {built}"]  # only the build folder has one
    shutil.copy(_library(), python / "uniflow" / "libuniflow.so")
    assert _run(python) == [f"loaded {python / 'uniflow' / 'libuniflow.so'}"]
    # UNIFLOW_LIBRARY, when set, is the only path tried.
    assert _run(python, str(built)) == [f"loaded {built}"]
    missing = tmp_path / "nowhere" / "libuniflow.so"
    out = _run(python, str(missing))
    assert out[0] == "libuniflow could not be loaded; tried:"
    assert out[1:-1] == [f"  {missing}: no such file"]


def test_the_error_lists_every_path_tried(tmp_path: Path) -> None:
    if ctypes.util.find_library("uniflow"):
        pytest.skip("a libuniflow is installed on the system search path")
    python = _tree(tmp_path)
    package = python / "uniflow"
    broken = package / "libuniflow.so.0"
    broken.write_text("not a library")
    out = _run(python)
    assert out[0] == "libuniflow could not be loaded; tried:"
    assert out[1] == f"  {package / 'libuniflow.so'}: no such file"
    assert out[2].startswith(f"  {broken}: ") and "no such file" not in out[2]  # why it failed
    assert out[3:7] == [f"  {tmp_path / folder / 'libuniflow.so'}: no such file" for folder in FOLDERS]
    assert out[7] == "  system search path (ctypes.util.find_library('uniflow')): not found"
    assert "UNIFLOW_LIBRARY" in out[8]
    assert len(out) == 9


def _loaded_path(name: str) -> Optional[str]:
    """The path this process loaded the shared library ``name`` (``"m"``) from, or None."""
    found = ctypes.util.find_library(name)
    if not found:
        return None
    ctypes.CDLL(found)
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            base = os.path.basename(fields[-1])
            # libm.so.6 itself, or the file it links to on an older glibc (libm-2.31.so).
            if len(fields) == 6 and (base == found or base.startswith(f"lib{name}-")):
                return fields[5]
    return None


def test_a_library_that_is_not_libuniflow_names_the_missing_symbol() -> None:
    libm = _loaded_path("m")
    if libm is None:
        pytest.skip("no libm found to stand in for a library that is not libuniflow")
    out = _run(PYTHON_ROOT, libm)
    assert out == ["libuniflow could not be loaded; tried:",
                   f"  {libm}: missing required symbol uf_version",
                   "Build it (swift build, or the CMake build) or set UNIFLOW_LIBRARY to its path."]


def test_the_source_tree_finds_its_build_folder_without_the_variable() -> None:
    root = PYTHON_ROOT.parent.parent
    built = [root / folder / "libuniflow.so" for folder in FOLDERS if (root / folder / "libuniflow.so").exists()]
    if not built or list((PYTHON_ROOT / "uniflow").glob("libuniflow.so*")):
        pytest.skip("no library in this tree's build folders, or a copy in the package comes first")
    assert _run(PYTHON_ROOT) == [f"loaded {built[0]}"]
