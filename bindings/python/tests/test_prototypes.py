"""The ctypes prototypes the package declares by hand agree with ``Include/uniflow.h``.

ctypes trusts whatever ``argtypes``/``restype`` it is given: a prototype that drifts
from the header (an argument added, an ``int`` become ``uint64_t``) still calls the
function, with garbage. So the header is parsed here (a small regex parser: plain C,
comments and preprocessor lines dropped) and every prototype, callback type and the
``uf_action`` mirror is compared with what the C declarations map to:

==========================  ===================================================
C                           ctypes
==========================  ===================================================
``void`` (a result)         ``None``
``int``, an enum            ``c_int`` (the enums' values all fit an int)
``unsigned [int]``          ``c_uint``
``uint32_t``, ``uint64_t``  ``c_uint32``, ``c_uint64``
``const char *``            ``c_char_p``: NUL-terminated text in, borrowed text
                            out (copied into bytes at once)
``char **``                 ``POINTER(c_void_p)``: a string the caller owns is
                            read as an address, to hand back to ``uf_free``
                            (a ``c_char_p`` would copy it and lose the pointer)
``void *``                  ``c_void_p``
an opaque handle ``T *``    ``c_void_p`` (``T **``: ``POINTER(c_void_p)``)
``const uf_action *``       ``POINTER(UfAction)``, the package's mirror
``int *``, ``uint64_t *``   ``POINTER(c_int)``, ``POINTER(c_uint64)``
a callback typedef          a ``CFUNCTYPE`` with the mapped result and arguments
``void (*)(void *)``        ``CFUNCTYPE(None, c_void_p)`` (``FREE_FN``)
==========================  ===================================================

A C type outside this table fails the test: add its rule rather than guess.
"""

from __future__ import annotations

import ctypes
import re
from ctypes import POINTER, c_char_p, c_int, c_uint, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

import pytest

from conftest import PYTHON_ROOT, REPO_ROOT
from uniflow import _callbacks, _library

HEADER = REPO_ROOT / "Include" / "uniflow.h"


# -- the header --------------------------------------------------------------------------


class CType(NamedTuple):
    """A C type: ``base`` (``const char``) and ``stars`` levels of pointer, or a
    function pointer (``function`` holds its result and parameters)."""

    base: str
    stars: int = 0
    function: Optional[Tuple["CType", Tuple["CType", ...]]] = None

    def __str__(self) -> str:
        if self.function is not None:
            result, params = self.function
            return f"{result} (*)({', '.join(map(str, params)) or 'void'})"
        return self.base + (" " + "*" * self.stars if self.stars else "")


class Header(NamedTuple):
    functions: Dict[str, Tuple[CType, List[CType]]]  # name -> (result, parameters)
    callbacks: Dict[str, CType]  # typedef name -> function pointer type
    opaque: Set[str]  # typedef struct X X;
    enums: Set[str]
    structs: Dict[str, List[Tuple[str, CType]]]  # name -> fields in order


_FUNCTION_POINTER = re.compile(r"^(?P<result>[^()]+?)\(\s*\*\s*(?P<name>\w*)\s*\)\s*\((?P<params>.*)\)$")
_TYPE_WORDS = {"const", "int", "unsigned", "char", "void", "long", "short", "signed"}


def _split(text: str, separator: str) -> List[str]:
    """``text`` split at ``separator`` outside parentheses and braces, stripped."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "({"
        depth -= ch in ")}"
        if ch == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def _declarator(text: str, known: Set[str]) -> Tuple[str, CType]:
    """``const char *name`` -> ("name", const char *); ``void (*f)(void *)`` too. The
    name is "" when the declaration has none (``void *``)."""
    pointer = _FUNCTION_POINTER.match(text)
    if pointer:
        result = _declarator(pointer["result"].strip(), known)[1]
        params = tuple(_declarator(p, known)[1] for p in _parameters(pointer["params"]))
        return pointer["name"], CType("", 0, (result, params))
    tokens = re.findall(r"\w+|\*", text)
    name = ""
    if tokens[-1] != "*" and len(tokens) > 1 and tokens[-1] not in _TYPE_WORDS | known:
        name = tokens.pop()
    stars = tokens.count("*")
    base = " ".join(t for t in tokens if t != "*")
    return name, CType(base, stars)


def _parameters(text: str) -> List[str]:
    return [] if text.strip() == "void" else _split(text, ",")


def parse_header(path: Path) -> Header:
    text = path.read_text()
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    text = re.sub(r"#ifdef __cplusplus.*?#endif", " ", text, flags=re.S)  # extern "C" { }
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)  # continued lines too
    header = Header({}, {}, set(), set(), {})
    for statement in _split(text, ";"):
        statement = " ".join(statement.split())
        known = header.opaque | header.enums | set(header.callbacks) | set(header.structs)
        opaque = re.fullmatch(r"typedef struct (\w+) (\w+)", statement)
        enum = re.fullmatch(r"typedef enum \w* ?\{.*\} ?(\w+)", statement)
        struct = re.fullmatch(r"typedef struct (\w+) ?\{(?P<body>.*)\} ?(\w+)", statement)
        callback = re.fullmatch(r"typedef (.*)", statement)
        function = re.fullmatch(r"(?P<result>[\w\s*]+?)\s*\b(?P<name>uf_\w+)\s*\((?P<params>.*)\)", statement)
        if opaque:
            header.opaque.add(opaque[2])
        elif enum:
            header.enums.add(enum[1])
        elif struct:
            fields: List[Tuple[str, CType]] = []
            for field in _split(struct["body"], ";"):
                first, *more = _split(field, ",")
                name, ctype = _declarator(first, known)
                fields.append((name, ctype))
                for other in more:  # const char *scope, *context, *id
                    fields.append((other.lstrip("* "), CType(ctype.base, other.count("*"))))
            header.structs[struct[3]] = fields
        elif callback and _FUNCTION_POINTER.match(callback[1]):
            name, ctype = _declarator(callback[1], known)
            header.callbacks[name] = ctype
        elif function:
            result = _declarator(function["result"], known)[1]
            params = [_declarator(p, known)[1] for p in _parameters(function["params"])]
            header.functions[function["name"]] = (result, params)
        else:
            raise AssertionError(f"{path.name}: the test cannot read this declaration: {statement}")
    return header


# -- what a C type maps to ---------------------------------------------------------------

_SCALARS: Dict[str, Any] = {"void": None, "int": c_int, "unsigned": c_uint, "unsigned int": c_uint,
                            "uint32_t": c_uint32, "uint64_t": c_uint64}
#: The C structs the package mirrors as ctypes Structures.
_MIRRORS = {"uf_action": _library.UfAction}


def expected(ctype: CType, header: Header) -> Any:
    """The ctypes type the table in the module's docstring gives ``ctype``."""
    if ctype.function is not None:
        result, params = ctype.function
        return ctypes.CFUNCTYPE(expected(result, header), *(expected(p, header) for p in params))
    base, stars = ctype.base.replace("const ", ""), ctype.stars  # const changes no ABI
    if base in header.callbacks and stars == 0:
        return expected(header.callbacks[base], header)
    if base in header.enums and stars == 0:
        return c_int
    if base in _SCALARS and stars == 0:
        return _SCALARS[base]
    if stars == 1:
        if base == "char":
            return c_char_p
        if base == "void" or base in header.opaque:
            return c_void_p
        if base in _MIRRORS:
            return POINTER(_MIRRORS[base])
        if base in _SCALARS:
            return POINTER(_SCALARS[base])
    if stars == 2 and (base == "char" or base in header.opaque):
        return POINTER(c_void_p)
    raise AssertionError(f"no rule maps the C type '{ctype}' to ctypes: add one to this test")


def same(a: Any, b: Any) -> bool:
    """Whether two ctypes types are the same (function pointer types by their parts)."""
    if isinstance(a, type) and isinstance(b, type) and issubclass(a, ctypes._CFuncPtr) \
            and issubclass(b, ctypes._CFuncPtr):
        return (a._flags_ == b._flags_ and same(a._restype_, b._restype_)
                and len(a._argtypes_) == len(b._argtypes_)
                and all(same(x, y) for x, y in zip(a._argtypes_, b._argtypes_)))
    return a is b


_NAMES = [(c_int, "c_int"), (c_uint, "c_uint"), (c_uint64, "c_uint64"), (c_char_p, "c_char_p"),
          (c_void_p, "c_void_p")]


def describe(t: Any) -> str:
    """A ctypes type as the package would write it."""
    if t is None:
        return "None"
    for known, name in _NAMES:
        if t is known:
            return name
    if isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
        return f"CFUNCTYPE({', '.join(describe(x) for x in (t._restype_, *t._argtypes_))})"
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        return f"POINTER({describe(t._type_)})"
    return getattr(t, "__name__", repr(t))


def mismatches(name: str, restype: Any, argtypes: List[Any], header: Header) -> List[str]:
    """What is wrong with the prototype ``name``; empty when it matches the header."""
    if name not in header.functions:
        return [f"{name}: not declared in {HEADER.name}"]
    result, params = header.functions[name]
    found = []
    if not same(restype, expected(result, header)):
        found.append(f"{name}: result {describe(restype)}, but the header returns {result} "
                     f"({describe(expected(result, header))})")
    if len(argtypes) != len(params):
        found.append(f"{name}: {len(argtypes)} argtypes, but the header takes {len(params)} "
                     f"({', '.join(map(str, params))})")
    else:
        for i, (declared, param) in enumerate(zip(argtypes, params)):
            if not same(declared, expected(param, header)):
                found.append(f"{name}: argument {i} is {describe(declared)}, but the header takes "
                             f"{param} ({describe(expected(param, header))})")
    return found


@pytest.fixture(scope="module")
def header() -> Header:
    return parse_header(HEADER)


# -- the tests ---------------------------------------------------------------------------


def test_the_parser_reads_the_whole_header(header: Header) -> None:
    # Enough that a parser gone blind (finding nothing, so checking nothing) fails here:
    # every name called like a function outside comments is a declared function.
    code = re.sub(r"/\*.*?\*/", " ", HEADER.read_text(), flags=re.S)
    assert set(header.functions) == set(re.findall(r"\b(uf_\w+)\s*\(", code))
    assert len(header.functions) >= 75
    assert header.functions["uf_submit_after"] == (CType("int"), [
        CType("uf_dispatcher", 1), CType("const char", 1), CType("uint64_t"), CType("const char", 1),
        CType("unsigned")])
    free = CType("", 0, (CType("void"), (CType("void", 1),)))
    assert header.functions["uf_set_reporter"][1] == [
        CType("uf_dispatcher", 1), CType("uf_report_fn"), CType("void", 1), free]
    assert header.functions["uf_version"] == (CType("const char", 1), [])
    assert set(header.callbacks) == {"uf_via_fn", "uf_subscriber_fn", "uf_report_fn", "uf_handler_fn",
                                     "uf_watch_fn", "uf_interceptor_fn", "uf_record_fn", "uf_service_fn"}
    assert {"uf_dispatcher", "uf_context", "uf_mutation", "uf_binding_call", "uf_watch_event",
            "uf_intercepted"} <= header.opaque
    assert header.enums == {"uf_action_kind", "uf_mutation_kind"}
    assert [name for name, _ in header.structs["uf_action"]][-6:] == [
        "id", "via", "via_payload", "via_payload_free", "key", "event"]


def test_every_prototype_in_the_table_matches_the_header(header: Header) -> None:
    found: List[str] = []
    for name, (restype, argtypes) in _library._PROTOTYPES.items():
        found += mismatches(name, restype, argtypes, header)
    assert found == []


def test_the_table_declares_every_function_of_the_header(header: Header) -> None:
    # _library says its table holds "every function of uniflow.h"; the one exception
    # is called without a prototype (next test).
    assert set(header.functions) - set(_library._PROTOTYPES) == {"uf_dispatch_try"}
    assert set(_library.REQUIRED) <= set(_library._PROTOTYPES)


def test_the_hot_path_calls_without_prototypes_fit_the_header(header: Header) -> None:
    # Dispatcher's hot path calls uf_dispatch (lib["uf_dispatch"], a fresh function
    # object: no argtypes) or uf_dispatch_try (holding_the_gil: no argtypes, no restype,
    # so ctypes reads a C int) with the same ready-made (handle, action) arguments.
    assert header.functions["uf_dispatch_try"] == header.functions["uf_dispatch"]
    assert header.functions["uf_dispatch"] == (CType("int"), [CType("uf_dispatcher", 1),
                                                              CType("const uf_action", 1)])
    assert not hasattr(_library._HoldingTheGil, "_restype_")


def test_prototypes_set_outside_the_table_match_the_header(header: Header) -> None:
    lib, _ = _library.load()
    _callbacks.bind(lib)
    watch_value = _callbacks._watch_value
    assert mismatches("uf_watch_value_json", watch_value.restype, watch_value.argtypes, header) == []


def test_no_other_module_sets_a_prototype_this_test_does_not_check() -> None:
    # A new `.restype =`/`.argtypes =` outside _library's table must be added above.
    checked = {("_callbacks.py", "_watch_value.restype, _watch_value.argtypes = c_char_p, [c_void_p]")}
    found = set()
    for path in sorted((PYTHON_ROOT / "uniflow").glob("*.py")):
        for line in path.read_text().splitlines():
            if re.search(r"\.(restype|argtypes)\b.*=", line) and path.name != "_library.py":
                found.add((path.name, line.strip()))
    assert found == checked


def test_each_callback_type_matches_its_typedef(header: Header) -> None:
    # CFUNCTYPE caches its classes: VIA_FN is SUBSCRIBER_FN (both int(void *, void *)),
    # so the names are matched to the typedefs here, by the comments in _library.
    package = {"uf_via_fn": _library.VIA_FN, "uf_subscriber_fn": _library.SUBSCRIBER_FN,
               "uf_report_fn": _library.REPORT_FN, "uf_handler_fn": _library.HANDLER_FN,
               "uf_watch_fn": _library.WATCH_FN, "uf_interceptor_fn": _library.INTERCEPTOR_FN,
               "uf_record_fn": _library.RECORD_FN, "uf_service_fn": _library.SERVICE_FN}
    assert set(package) == set(header.callbacks)
    for name, declared in package.items():
        assert same(declared, expected(header.callbacks[name], header)), \
            f"{name}: {describe(declared)}, but the header says {header.callbacks[name]}"
    payload_free = CType("", 0, (CType("void"), (CType("void", 1),)))
    assert same(_library.FREE_FN, expected(payload_free, header))


def test_the_uf_action_mirror_matches_the_struct(header: Header) -> None:
    # Same fields, in the same order, of the same types; Python spells `from` from_.
    fields = _library.UfAction._fields_
    struct = header.structs["uf_action"]
    assert [name.rstrip("_") for name, _ in fields] == [name for name, _ in struct]
    for (name, declared), (_, ctype) in zip(fields, struct):
        assert same(declared, expected(ctype, header)), \
            f"UfAction.{name}: {describe(declared)}, but uf_action has {ctype}"
    assert _library.UF_ACTION_SIZE == ctypes.sizeof(_library.UfAction)
