"""The ctypes prototypes of ``uniflow.nats`` agree with ``Include/uniflow_nats.h``,
checked as test_prototypes.py checks the core's against ``uniflow.h`` (same parser,
same table of C types to ctypes)."""

from __future__ import annotations

from typing import List

import pytest

from conftest import REPO_ROOT
from test_prototypes import Header, mismatches, parse_header
from uniflow import nats

NATS_HEADER = REPO_ROOT / "Include" / "uniflow_nats.h"


@pytest.fixture(scope="module")
def header() -> Header:
    # uniflow_nats.h includes uniflow.h (uf_dispatcher, UF_ statuses): read both, and
    # keep the functions of the NATS header alone.
    core = parse_header(REPO_ROOT / "Include" / "uniflow.h")
    own = parse_header(NATS_HEADER)
    return Header(own.functions, {**core.callbacks, **own.callbacks}, core.opaque | own.opaque,
                  core.enums | own.enums, {**core.structs, **own.structs})


def test_the_parser_reads_the_whole_nats_header(header: Header) -> None:
    import re

    code = re.sub(r"/\*.*?\*/", " ", NATS_HEADER.read_text(), flags=re.S)
    assert set(header.functions) == set(re.findall(r"\b(uf_nats_\w+)\s*\(", code))
    assert len(header.functions) == 8
    assert "uf_nats_node" in header.opaque


def test_every_prototype_matches_the_nats_header(header: Header) -> None:
    found: List[str] = []
    for name, (restype, argtypes) in nats._PROTOTYPES.items():
        found += mismatches(name, restype, argtypes, header)
    assert found == []


def test_the_table_declares_every_function_of_the_nats_header(header: Header) -> None:
    assert set(header.functions) == set(nats._PROTOTYPES)
