"""Bundles a built libuniflow.so into the package when one is found (metadata is in
pyproject.toml).

``pip install bindings/python`` after building the library copies, first that exists,
``$UNIFLOW_LIBRARY`` or the repository's ``build/prefix/lib``, ``build/release``,
``.build/release`` or ``.build/debug`` library into the installed package as
``uniflow/libuniflow.so``: the package's discovery finds it there (second, after
``UNIFLOW_LIBRARY``); a ``libuniflow_nats.so`` beside it goes along (for
``uniflow.nats``). With no library built, the package installs without one and finds
the library at run time through ``UNIFLOW_LIBRARY`` or the system's search path.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
from pathlib import Path
from typing import Optional

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def header_version() -> str:
    """UNIFLOW_VERSION of Include/uniflow.h, the one place the version is written; built
    away from the source tree, the version of the library being bundled (which was
    built from that header)."""
    header = ROOT / "Include" / "uniflow.h"
    if header.is_file():
        match = re.search(r'^#define UNIFLOW_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"', header.read_text(), re.MULTILINE)
        if match is None:
            raise RuntimeError(f"no UNIFLOW_VERSION in {header}")
        return match.group(1)
    library = built_library()
    if library is None:
        raise RuntimeError("uniflow: neither Include/uniflow.h nor a built libuniflow.so to read the version from")
    lib = ctypes.CDLL(str(library))
    lib.uf_version.restype = ctypes.c_char_p
    return str(lib.uf_version().decode())
FOLDERS = ("build/prefix/lib", "build/release", ".build/release", ".build/debug")


def built_library() -> Optional[Path]:
    env = os.environ.get("UNIFLOW_LIBRARY")
    if env:
        return Path(env) if Path(env).exists() else None
    for folder in FOLDERS:
        candidate = ROOT / folder / "libuniflow.so"
        if candidate.exists():
            return candidate
    return None


class BuildPyWithLibrary(build_py):
    """build_py that also copies the built library into the package."""

    def run(self) -> None:
        super().run()
        # The installed package knows its version without the source tree's header.
        version_file = Path(self.build_lib) / "uniflow" / "_version.py"
        version_file.parent.mkdir(parents=True, exist_ok=True)
        version_file.write_text(f'"""Written by setup.py from Include/uniflow.h."""\nVERSION = "{header_version()}"\n')
        library = built_library()
        if library is None:
            self.announce("uniflow: no built libuniflow.so found; installing without a bundled copy", level=3)
            return
        target = Path(self.build_lib) / "uniflow" / "libuniflow.so"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(library.resolve(), target)  # the file, not the symlink
        self.announce(f"uniflow: bundled {library.resolve()}", level=3)
        # uniflow.nats looks for libuniflow_nats.so beside the core library it loaded:
        # bundled beside the copy when it was built beside the original (only where
        # CMake found libnats). It needs libuniflow.so.0, which the package loads first.
        nats = library.resolve().parent / "libuniflow_nats.so"
        if nats.exists():
            shutil.copyfile(nats.resolve(), target.parent / "libuniflow_nats.so")
            self.announce(f"uniflow: bundled {nats.resolve()}", level=3)


class BinaryDistribution(Distribution):
    """A wheel that bundles a shared library is platform-specific."""

    def has_ext_modules(self) -> bool:
        return built_library() is not None


setup(version=header_version(), cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
