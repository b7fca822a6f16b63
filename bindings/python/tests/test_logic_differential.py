"""Differential test of libuniflow's JsonLogic (``uf_logic_apply``) against the PyPI
package ``panzi-json-logic`` (imported as ``json_logic``).

libuniflow follows json-logic-js 2.0.5, JavaScript's coercions included; panzi's
evaluator is a Python port that departs from JavaScript in known places (Python's
``float()``, ``str()``, ``%``, ``==`` and ``in``, and json-logic-js's older
``reduce``). Thousands of seeded random rules and data are evaluated by both. Every
case in which panzi is about to depart from JavaScript is set aside under a named
class (``EXCLUDED``) — found while panzi evaluates, from the very values it is about
to convert or compare, or before it starts, from the rule's shape — and every other
case must give the same result: equal JSON values, and a libuniflow rule error
(``UF_ESCHEMA``) exactly where panzi's result holds a non-finite number.

The generated rules are well-formed in libuniflow's sense, so one more class of
cases is left out of the comparison by construction: rules that json-logic-js
evaluates but libuniflow refuses when it checks them (``REFUSED``: argument counts
an operator cannot use, a literal non-array list, an unknown operator in a branch
that would not run). ``test_rules_refused_at_validation_are_only_the_named_classes``
generates such rules and checks that every refusal belongs to one of those classes.

The library is loaded with ctypes from ``UNIFLOW_LIBRARY``; the test is skipped when
that variable or panzi is missing. ``UNIFLOW_LOGIC_CASES`` and ``UNIFLOW_LOGIC_SEED``
change the number of cases (default 4000) and the random generator's seed.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import random
import re
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

json_logic = pytest.importorskip("json_logic", reason="panzi-json-logic is not installed")
from json_logic import builtins as pz  # noqa: E402

LIBRARY = os.environ.get("UNIFLOW_LIBRARY")
pytestmark = pytest.mark.skipif(not LIBRARY, reason="UNIFLOW_LIBRARY is not set")

CASES = int(os.environ.get("UNIFLOW_LOGIC_CASES", "4000"))
SEED = int(os.environ.get("UNIFLOW_LOGIC_SEED", "20250101"))
UF_ESCHEMA = -4

# Every class of case set aside, with the reason panzi's result is not JavaScript's.
EXCLUDED: Dict[str, str] = {
    "string conversion": "panzi's to_string differs from JavaScript's String(): floats are "
                         "written with '%.15g' (0.1+0.2 as 0.3, 1e21 as 1e+21 but 1e-7 as 1e-07), "
                         "null inside arrays and as a cat argument is 'null' (join writes '')",
    "number conversion": "panzi's to_number uses Python's float(): '' is NaN (JavaScript 0), "
                         "hexadecimal, binary and octal strings are NaN, '1_000' and 'infinity' "
                         "are numbers, an array's single element converts without String()",
    "parseFloat": "+ and * read their arguments with parseFloat in json-logic-js ('12px' is 12, "
                  "null and booleans NaN, arrays by their joined text); panzi uses to_number",
    "* of one argument": "json-logic-js returns the single argument of * unconverted",
    "integer beyond 2^53": "Python integers are exact; JavaScript rounds to doubles",
    "division by zero": "panzi raises ZeroDivisionError where JavaScript gives Infinity or NaN",
    "% with a negative operand": "Python's % takes the divisor's sign, JavaScript's the dividend's",
    "- with null": "panzi treats an explicit null second argument of - as absent (unary minus)",
    "min/max with NaN or booleans": "Python's min/max is order-dependent with NaN and "
                                    "returns a boolean argument as it is",
    "comparison path": "panzi compares a string with null, a boolean or a number-like string "
                       "path differently, and two arrays or objects as numbers "
                       "(JavaScript compares their strings)",
    "between with null": "panzi treats an explicit null third argument of < and <= as absent",
    "non-BMP strings": "Python indexes and orders strings by code point, JavaScript by UTF-16 unit",
    "null == number": "panzi converts null to 0 in ==; in JavaScript null equals only "
                      "null and undefined",
    "strict equality of values": "panzi's === is Python's ==: arrays and objects compare by "
                                 "value (JavaScript: identity), booleans equal 1 and 0",
    "in over an array": "Python's `in` compares with ==: arrays and objects by value, "
                        "booleans equal to 1 and 0 (JavaScript's indexOf uses ===)",
    "in an empty string": "json-logic-js answers false for any falsy haystack",
    "substr arguments": "json-logic-js computes a negative length with JavaScript's + "
                        "(a string or array length concatenates), reads a null length as 0 and "
                        "truncates fractional negative lengths after adding them; panzi does "
                        "none of this and fails on infinite indices",
    "var path": "panzi reads a non-string path (number, boolean, array) as a Python key and "
                "returns an array's or string's length even when the path goes on",
    "var default over null": "json-logic-js returns a member that holds null as null; "
                             "panzi returns the default",
    "missing keys": "json-logic-js runs {\"var\": key} for each key of missing (a non-string "
                    "key is a path through String(), an array key carries a default)",
    "missing_some count": "panzi converts a non-number count with to_number",
    "reduce initial rule": "json-logic-js 2.0.5 evaluates reduce's initial value; panzi "
                           "follows earlier versions and takes it literally",
    "reduce scope object": "panzi reuses one scope object for every step of reduce; "
                           "json-logic-js makes a new one per step",
}


# Rules json-logic-js evaluates that libuniflow refuses with UF_ESCHEMA before it
# evaluates anything (uf_logic_apply in Include/uniflow.h; docs/bindings.md: malformed rules are
# refused at registration, not at run time). Message patterns, with the reason.
REFUSED: Dict[str, Tuple[str, str]] = {
    "argument count": (r"^operator '[^']+' takes .* got \d+",
                       "json-logic-js fills missing arguments with undefined and ignores extra "
                       "ones; a count the operator cannot use is a malformed rule here"),
    "literal list": (r"^operator '(map|filter|reduce|all|none|some|missing_some)' needs an array",
                     "a scalar or literal object where the list goes can only give a constant"),
    "unknown operator": (r"^unknown operator '",
                         "json-logic-js throws only if the branch runs; the check cannot know "
                         "which branch runs, so it refuses every one-key object it cannot evaluate"),
}


class Excluded(Exception):
    """Raised from inside panzi's evaluation: this case belongs to an excluded class."""

    def __init__(self, name: str) -> None:
        assert name in EXCLUDED, name
        super().__init__(name)
        self.name = name


# ---------------------------------------------------------------------------
# JavaScript's conversions, to notice where panzi's differ

_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
            "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"


def js_number_string(value: float) -> str:
    """Number.prototype.toString(): shortest round-trip digits, JavaScript's layout."""
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    if value < 0:
        return "-" + js_number_string(-value)
    if math.isinf(value):
        return "Infinity"
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    n = len(whole) + int(exponent or 0) - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    e = n - 1
    return digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e > 0 else "-") + str(abs(e))


def js_string(value: Any) -> str:
    """String(value)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number_string(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def js_number(value: Any) -> float:
    """Number(value)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (list, dict)):
        return js_number(js_string(value))
    text = value.strip(_JS_SPACE)
    if text == "":
        return 0.0
    for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
        if text[:2].lower() == prefix:
            try:
                return float(int(text[2:], base)) if text[2:].isalnum() else math.nan
            except ValueError:
                return math.nan
    if re.fullmatch(_DECIMAL, text):
        return float(text.replace("Infinity", "inf"))
    return math.nan


def js_parse_float(value: Any) -> float:
    """parseFloat(value)."""
    match = re.match(_DECIMAL, js_string(value).lstrip(_JS_SPACE))
    return float(match.group(0).replace("Infinity", "inf")) if match else math.nan


def same_number(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def has_non_bmp(value: Any) -> bool:
    if isinstance(value, str):
        return any(ord(c) > 0xFFFF for c in value)
    if isinstance(value, list):
        return any(has_non_bmp(v) for v in value)
    if isinstance(value, dict):
        return any(has_non_bmp(v) for v in value.values())
    return False


def check_string(value: Any, joined: bool = False) -> None:
    """Excludes when panzi's string of the value is not JavaScript's (joined: as an
    element of Array.prototype.join, where null is empty)."""
    expected = "" if joined and value is None else js_string(value)
    if pz.to_string(value) != expected:
        raise Excluded("string conversion")


def check_number(value: Any) -> None:
    if not same_number(float(pz.to_number(value)), js_number(value)):
        raise Excluded("number conversion")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_integer_result(result: Any) -> Any:
    if isinstance(result, int) and not isinstance(result, bool) and abs(result) > 2 ** 53:
        raise Excluded("integer beyond 2^53")
    return result


# ---------------------------------------------------------------------------
# panzi's operations, each refusing the arguments it would treat unlike JavaScript


def _plus_times(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    def op(data: Any, *args: Any) -> Any:
        if name == "*" and len(args) == 1:
            raise Excluded("* of one argument")
        for arg in args:
            if not same_number(float(pz.to_number(arg)), js_parse_float(arg)):
                raise Excluded("parseFloat")
        return check_integer_result(original(data, *args))
    return op


def _minus(data: Any, *args: Any) -> Any:
    if len(args) >= 2 and args[1] is None:
        raise Excluded("- with null")
    for arg in args[:2]:
        check_number(arg)
    return check_integer_result(pz.BUILTINS["-"](data, *args))


def _divide(name: str) -> Callable[..., Any]:
    def op(data: Any, *args: Any) -> Any:
        for arg in args[:2]:
            check_number(arg)
        a, b = (js_number(args[i]) if i < len(args) else math.nan for i in range(2))
        if b == 0:
            raise Excluded("division by zero")
        if name == "%" and (a < 0 or b < 0):
            raise Excluded("% with a negative operand")
        return pz.BUILTINS[name](data, *args)
    return op


def _extremum(name: str) -> Callable[..., Any]:
    def op(data: Any, *args: Any) -> Any:
        for arg in args:
            check_number(arg)
            if isinstance(arg, bool) or math.isnan(js_number(arg)):
                raise Excluded("min/max with NaN or booleans")
        return pz.BUILTINS[name](data, *args)
    return op


def _js_primitive(value: Any) -> Any:
    return js_string(value) if isinstance(value, (list, dict)) else value


def _check_order(a: Any, b: Any) -> None:
    """Excludes a comparison panzi makes on another path than JavaScript's
    (both strings after ToPrimitive: by code units; otherwise as numbers)."""
    js_strings = isinstance(_js_primitive(a), str) and isinstance(_js_primitive(b), str)
    if isinstance(a, (int, float)) or isinstance(b, (int, float)):
        panzi_strings = False
    elif isinstance(a, str) or isinstance(b, str):
        panzi_strings = True
    else:
        panzi_strings = False
    if js_strings != panzi_strings:
        raise Excluded("comparison path")
    if js_strings:
        check_string(a)
        check_string(b)
        if has_non_bmp(a) or has_non_bmp(b):
            raise Excluded("non-BMP strings")
    else:
        check_number(a)
        check_number(b)


def _order(name: str, between: bool) -> Callable[..., Any]:
    def op(data: Any, *args: Any) -> Any:
        padded = list(args) + [None] * (3 - len(args))
        a, b, c = padded[:3]
        _check_order(a, b)
        if between and len(args) >= 3:
            if c is None:
                raise Excluded("between with null")
            _check_order(b, c)
        return pz.BUILTINS[name](data, *args)
    return op


def _equals(name: str) -> Callable[..., Any]:
    def op(data: Any, *args: Any) -> Any:
        a, b = (args + (None, None))[:2]
        if (a is None and isinstance(b, (int, float))) or (b is None and isinstance(a, (int, float))):
            raise Excluded("null == number")
        for x, y in ((a, b), (b, a)):
            if isinstance(x, (int, float)) and not isinstance(y, (int, float)) and y is not None:
                check_number(y)  # panzi: x == to_number(y)
            if isinstance(x, str) and isinstance(y, (list, dict)):
                check_string(y)  # panzi: x == to_string(y)
        return pz.BUILTINS[name](data, *args)
    return op


def _strict(name: str) -> Callable[..., Any]:
    def op(data: Any, *args: Any) -> Any:
        a, b = (args + (None, None))[:2]
        if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
            raise Excluded("strict equality of values")
        if isinstance(a, bool) != isinstance(b, bool) and (is_number(a) or is_number(b)):
            raise Excluded("strict equality of values")
        return pz.BUILTINS[name](data, *args)
    return op


def _in(data: Any, *args: Any) -> Any:
    needle, haystack = (args + (None, None))[:2]
    if isinstance(haystack, str):
        if haystack == "":
            raise Excluded("in an empty string")
        check_string(needle)
    elif isinstance(haystack, list):
        if isinstance(needle, (list, dict)):
            raise Excluded("in over an array")
        for item in haystack:
            if (isinstance(needle, bool) and is_number(item)) or (is_number(needle) and isinstance(item, bool)):
                raise Excluded("in over an array")
    return pz.BUILTINS["in"](data, *args)


def _cat(data: Any, *args: Any) -> Any:
    for arg in args:
        check_string(arg, joined=True)
    return pz.BUILTINS["cat"](data, *args)


def _substr(data: Any, *args: Any) -> Any:
    source = args[0] if args else None
    check_string(source)
    if has_non_bmp(js_string(source)):
        raise Excluded("non-BMP strings")
    for position, arg in enumerate(args[1:3], start=1):
        check_number(arg)
        number = js_number(arg)
        if math.isinf(number):
            raise Excluded("substr arguments")
        if position == 2:
            if arg is None or isinstance(arg, (str, list, dict)):
                raise Excluded("substr arguments")
            if number < 0 and number != int(number):
                raise Excluded("substr arguments")
    return pz.BUILTINS["substr"](data, *args)


def _js_walk(data: Any, path: str) -> Tuple[bool, Any]:
    """JavaScript's reading of a var path: (found, value)."""
    current = data
    for key in path.split("."):
        if current is None:
            return False, None
        if isinstance(current, dict):
            if key not in current:
                return False, None
            current = current[key]
        elif isinstance(current, (list, str)):
            if key == "length":
                current = len(current)
            elif re.fullmatch(r"0|[1-9]\d*", key) and int(key) < len(current):
                current = current[int(key)]
            else:
                return False, None
        else:
            return False, None
    return True, current


def _check_path(data: Any, path: Any, has_default: bool) -> None:
    if path is None or path == "":
        return
    if not isinstance(path, str):
        raise Excluded("var path")
    current = data
    keys = path.split(".")
    for i, key in enumerate(keys):
        if isinstance(current, (list, str)):
            if key == "length" and i < len(keys) - 1:
                raise Excluded("var path")
            if isinstance(current, str) and has_non_bmp(current):
                raise Excluded("non-BMP strings")
        found, current = _js_walk(current, key)
        if not found:
            return
    if has_default and current is None:
        raise Excluded("var default over null")


def _var(data: Any, *args: Any) -> Any:
    _check_path(data, args[0] if args else None, len(args) >= 2 and args[1] is not None)
    return pz.BUILTINS["var"](data, *args)


def _missing(data: Any, *args: Any) -> Any:
    keys = args[0] if args and isinstance(args[0], list) else args
    for key in keys:
        if not isinstance(key, str):
            raise Excluded("missing keys")
        _check_path(data, key, False)
    return pz.BUILTINS["missing"](data, *args)


def _missing_some(data: Any, *args: Any) -> Any:
    need, keys = (args + (None, None))[:2]
    if not is_number(need):
        raise Excluded("missing_some count")
    if not isinstance(keys, list):
        raise Excluded("missing keys")
    _missing(data, keys)
    return pz.BUILTINS["missing_some"](data, *args)


OPERATIONS: Dict[str, Any] = dict(pz.BUILTINS)
OPERATIONS.update({
    "+": _plus_times(pz.BUILTINS["+"], "+"), "*": _plus_times(pz.BUILTINS["*"], "*"),
    "-": _minus, "/": _divide("/"), "%": _divide("%"),
    "min": _extremum("min"), "max": _extremum("max"),
    "<": _order("<", True), "<=": _order("<=", True), ">": _order(">", False), ">=": _order(">=", False),
    "==": _equals("=="), "!=": _equals("!="), "===": _strict("==="), "!==": _strict("!=="),
    "in": _in, "cat": _cat, "substr": _substr, "var": _var,
    "missing": _missing, "missing_some": _missing_some,
})
del OPERATIONS["log"]


def _contains_logic(value: Any) -> bool:
    if isinstance(value, list):
        return any(_contains_logic(v) for v in value)
    return isinstance(value, dict) and len(value) == 1


def _reads_whole_scope(rule: Any) -> bool:
    if isinstance(rule, list):
        return any(_reads_whole_scope(r) for r in rule)
    if not (isinstance(rule, dict) and len(rule) == 1):
        return False
    (op, args), = rule.items()
    if op == "var":
        first = args[0] if isinstance(args, list) and args else ([] if isinstance(args, list) else args)
        return first in ("", None, []) or _reads_whole_scope(args)
    return _reads_whole_scope(args)


def static_exclusion(rule: Any) -> Optional[str]:
    """Classes visible from the rule's shape alone."""
    if isinstance(rule, list):
        for item in rule:
            found = static_exclusion(item)
            if found:
                return found
        return None
    if not (isinstance(rule, dict) and len(rule) == 1):
        return None
    (op, args), = rule.items()
    if op == "reduce" and isinstance(args, list):
        if len(args) > 2 and _contains_logic(args[2]):
            return "reduce initial rule"
        if len(args) > 1 and _reads_whole_scope(args[1]):
            return "reduce scope object"
    return static_exclusion(args)


# ---------------------------------------------------------------------------
# Random rules and data (well-formed, so that libuniflow's validation accepts them)

_STRINGS = ["", "0", "1", "2", "10", "9", " 12 ", "0x10", "1e3", "abc", "a", "b", "apple", "pineapple",
            "Infinity", "infinity", "1,2", "12px", "-0", ".5", "true", "null", "é", "😀x", "1_0", "-2", "3.5"]
_SCALARS: List[Any] = [None, True, False, 0, 1, -1, 2, 3, 7, 10, 100, -2.5, 1.5, 0.1, 0.2, 1e21, 1e-7,
                       123456789, 2 ** 40] + _STRINGS
_LITERALS: List[Any] = [[], [1], [1, 2], ["a"], [[]], [None], [1, [2, 3]], ["apple", "b"], [0], [""],
                        {}, {"a": 1, "b": 2}, [True]]
_PATHS = ["a", "b", "c", "c.0", "c.1", "c.length", "c.length.x", "d", "d.e", "d.f", "d.f.1", "s", "s.length",
          "s.1", "x", "n", "n.x", "", "arr", "arr.0.qty", "arr.1", "t", "z", "e", "q", "c.01", "d.f.5",
          "emp", "sp", 1, "1", None, True]
_ARRAYS = ["c", "arr", "d.f", "emp", "q", "a"]


def make_data(rnd: random.Random) -> Any:
    if rnd.random() < 0.08:
        return rnd.choice([None, [1, 2], "str", 5])
    return {
        "a": rnd.choice([1, 2, 0, -3, 1.5, "5", "x", None, True]),
        "b": rnd.choice(["apple", "", "0", "12", "1e2", " 3 "]),
        "c": rnd.choice([[1, 2, 3], [], ["1", 2], [0], [1, [2]], [[1, 2], 3], [True, None]]),
        "d": {"e": rnd.choice([5, "e", None, [], {}]), "f": [10, 20, "30"]},
        "s": rnd.choice(["hello", "", "1,2", "😀ab", "ab"]),
        "n": None, "t": True, "z": 0, "e": "",
        "q": rnd.choice([[], [None], "q", 0]),
        "arr": [{"qty": rnd.choice([1, 2, "3", None]), "name": "x"}, {"qty": rnd.choice([0, 5, "a"])}],
        "emp": [], "sp": " ",
    }


class RuleMaker:
    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def value(self, depth: int) -> Any:
        r = self.rnd.random()
        if r < 0.35 or depth <= 0:
            return self.rnd.choice(_SCALARS)
        if r < 0.45:
            return json.loads(json.dumps(self.rnd.choice(_LITERALS)))
        if r < 0.6:
            path = self.rnd.choice(_PATHS)
            return {"var": path if self.rnd.random() < 0.8 else [path, self.rnd.choice(_SCALARS)]}
        return self.rule(depth - 1)

    def element_rule(self, depth: int) -> Any:
        r = self.rnd.random()
        if r < 0.3:
            return {"var": ""}
        if r < 0.45:
            return {"var": self.rnd.choice(["qty", "0", "length", "name"])}
        op = self.rnd.choice(["==", "<", ">", "+", "*", "!", "cat", "in", "%", "if"])
        args = [{"var": ""} if self.rnd.random() < 0.6 else self.value(depth), self.value(min(depth, 1))]
        return {op: [args[0]] if op == "!" else args}

    def args(self, count: int, depth: int) -> List[Any]:
        return [self.value(depth) for _ in range(count)]

    def rule(self, depth: int) -> Any:
        rnd = self.rnd
        op = rnd.choice(["==", "===", "!=", "!==", "!", "!!", "or", "and", "<", "<=", ">", ">=", "+", "-",
                         "*", "/", "%", "min", "max", "merge", "in", "cat", "substr", "if", "?:", "var",
                         "missing", "missing_some", "map", "filter", "reduce", "all", "none", "some"])
        if op in ("map", "filter", "all", "none", "some"):
            source = {"var": rnd.choice(_ARRAYS)} if rnd.random() < 0.7 else rnd.choice(
                [json.loads(json.dumps(rnd.choice(_LITERALS[:10]))), self.rule(max(depth - 1, 0))])
            return {op: [source, self.element_rule(depth)]}
        if op == "reduce":
            step = {rnd.choice(["+", "*", "cat", "max", "merge", "-"]): [
                {"var": rnd.choice(["current", "accumulator", "current.qty"])},
                {"var": rnd.choice(["accumulator", "current"])}]}
            args = [{"var": rnd.choice(_ARRAYS[:5])}, step]
            if rnd.random() < 0.8:
                args.append(self.value(depth))
            return {"reduce": args}
        if op == "missing_some":
            return {op: [rnd.choice([0, 1, 2, "1", 3]), [rnd.choice(_PATHS) for _ in range(3)]]}
        if op == "var":
            return {"var": self.args(rnd.choice([1, 2]), depth)}
        count = {
            "!": 1, "!!": 1, "==": 2, "===": 2, "!=": 2, "!==": 2, ">": 2, ">=": 2, "/": 2, "%": 2, "in": 2,
            "<": rnd.choice([2, 3]), "<=": rnd.choice([2, 3]), "substr": rnd.choice([2, 3]),
            "-": rnd.choice([1, 2]), "or": rnd.randint(1, 4), "and": rnd.randint(1, 4),
            "*": rnd.randint(1, 4), "min": rnd.randint(1, 4), "max": rnd.randint(1, 4),
        }.get(op, rnd.randint(0, 4))
        args = self.args(count, depth)
        if count == 1 and rnd.random() < 0.4 and not isinstance(args[0], list):
            return {op: args[0]}
        return {op: args}


# ---------------------------------------------------------------------------
# The two evaluators


class Library:
    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path)
        self.lib.uf_logic_apply.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.uf_logic_apply.restype = ctypes.c_int
        self.lib.uf_free.argtypes = [ctypes.c_void_p]
        self.lib.uf_free.restype = None

    def apply(self, rule_text: str, data_text: str) -> Tuple[int, Any]:
        out = ctypes.c_void_p()
        rc = self.lib.uf_logic_apply(rule_text.encode(), data_text.encode(), ctypes.byref(out))
        if rc < 0:
            return rc, None
        try:
            return rc, json.loads(ctypes.string_at(out.value).decode())
        finally:
            self.lib.uf_free(out)


def has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(has_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(has_non_finite(v) for v in value.values())
    return False


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (1 equals 1.0), booleans apart from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def test_json_logic_agrees_with_panzi_outside_the_excluded_classes() -> None:
    assert LIBRARY is not None
    library = Library(LIBRARY)
    rnd = random.Random(SEED)
    maker = RuleMaker(rnd)
    excluded: Counter[str] = Counter()
    compared = 0
    failures: List[str] = []
    for _ in range(CASES):
        rule = maker.rule(3)
        data = make_data(rnd)
        rule_text = json.dumps(rule, ensure_ascii=False)
        data_text = json.dumps(data, ensure_ascii=False)
        reason = static_exclusion(rule)
        if reason:
            excluded[reason] += 1
            continue
        try:
            expected = json_logic.jsonLogic(json.loads(rule_text), json.loads(data_text), OPERATIONS)
        except Excluded as exclusion:
            excluded[exclusion.name] += 1
            continue
        rc, actual = library.apply(rule_text, data_text)
        compared += 1
        if has_non_finite(expected):
            if rc != UF_ESCHEMA:
                failures.append(f"{rule_text} over {data_text}: panzi {expected!r} (non-finite), "
                                f"libuniflow rc {rc} {actual!r}")
        elif rc != 0 or not same_json(expected, actual):
            failures.append(f"{rule_text} over {data_text}: panzi {expected!r}, libuniflow rc {rc} {actual!r}")
    summary = ", ".join(f"{name}: {n}" for name, n in excluded.most_common())
    print(f"\n{CASES} cases (seed {SEED}): {compared} compared; excluded: {summary}")
    assert not failures, f"{len(failures)} of {compared} compared cases differ:\n" + "\n".join(failures[:20])
    # The exclusions must leave most of the cases compared, or the test proves little.
    assert compared >= CASES // 2, f"only {compared} of {CASES} cases were compared ({summary})"


def test_the_js_conversion_helpers_match_javascript() -> None:
    """The helpers that decide the exclusions, checked against values node prints."""
    assert [js_number_string(v) for v in (1e21, 1e20, 0.1 + 0.2, 1e-7, 1e-6, 100.0, -1.5, 5e-324)] == [
        "1e+21", "100000000000000000000", "0.30000000000000004", "1e-7", "0.000001", "100", "-1.5", "5e-324"]
    assert js_string([None, [1, [True]], {}]) == ",1,true,[object Object]"
    assert [js_number(v) for v in ("", " 12 ", "0x10", "1e3", "1_0")][:4] == [0, 12, 16, 1000]
    assert math.isnan(js_number("1_0")) and math.isnan(js_number("infinity")) and js_number([[" 2 "]]) == 2
    assert js_parse_float("12px") == 12 and js_parse_float(" .5e1x") == 5 and math.isnan(js_parse_float(None))


def test_rules_refused_at_validation_are_only_the_named_classes() -> None:
    """Rules with any argument count, any argument kind and operators json-logic-js
    knows: every one libuniflow refuses is refused for a reason named in REFUSED,
    and nothing else (no run-time error) is hidden behind a refusal."""
    assert LIBRARY is not None
    lib = ctypes.CDLL(LIBRARY)
    lib.uf_logic_apply.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.uf_last_error.restype = ctypes.c_char_p
    lib.uf_free.argtypes = [ctypes.c_void_p]
    rnd = random.Random(SEED + 1)
    operators = ["==", "===", "!=", "!==", "!", "!!", "or", "and", "<", "<=", ">", ">=", "+", "-", "*", "/",
                 "%", "min", "max", "merge", "in", "cat", "substr", "if", "?:", "var", "missing",
                 "missing_some", "map", "filter", "reduce", "all", "none", "some"]
    scalars: List[Any] = [None, True, 0, 1, "a", "", [], [1, 2], {}, {"a": 1}]

    def value(depth: int) -> Any:
        if depth <= 0 or rnd.random() < 0.5:
            return json.loads(json.dumps(rnd.choice(scalars)))
        return rule(depth - 1)

    def rule(depth: int) -> Any:
        args = [value(depth) for _ in range(rnd.choice([0, 1, 2, 3, 4]))]
        return {rnd.choice(operators): args[0] if len(args) == 1 and rnd.random() < 0.5 else args}

    refused: Counter[str] = Counter()
    unexplained: List[str] = []
    for _ in range(2000):
        text = json.dumps(rule(3))
        out = ctypes.c_void_p()
        rc = lib.uf_logic_apply(text.encode(), None, ctypes.byref(out))
        if rc >= 0:
            lib.uf_free(out)
            continue
        message = lib.uf_last_error().decode()
        if rc != UF_ESCHEMA:
            unexplained.append(f"{text}: rc {rc}: {message}")
            continue
        for name, (pattern, _reason) in REFUSED.items():
            if re.search(pattern, message):
                refused[name] += 1
                break
        else:
            # Run-time errors (a non-finite result, what json-logic-js throws on) are
            # not refusals: they are rule errors with their own messages.
            if not re.search(r"not a finite number|'\*' needs at least one argument|missing_some needs a list|"
                             r"indexOf member", message):
                unexplained.append(f"{text}: {message}")
    print(f"\nrefused at validation: {dict(refused)}")
    assert not unexplained, "refusals outside REFUSED:\n" + "\n".join(unexplained[:20])
