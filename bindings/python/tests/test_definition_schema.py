"""schema/uniflow-definitions.schema.json against the library: every example
definition validates (statecharts too: the charts of docs/statecharts.md and the
XState machines `uniflow import xstate` converts), and on definitions whose fault
is one of shape (what a JSON Schema can decide), the schema and uf_register agree
case by case."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import uniflow

from conftest import DEFINITIONS, REPO_ROOT

jsonschema = pytest.importorskip("jsonschema", reason="the jsonschema package checks the schema (scripts/setup installs it)")

SCHEMA = json.loads((REPO_ROOT / "schema" / "uniflow-definitions.schema.json").read_text())


def ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """The ``pattern`` keyword as ECMA-262, the schema's regex dialect, reads it: a
    final ``$`` matches only at the very end, where Python's matches before a final
    newline too (``"F\\n"`` would pass as a name)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    if validator.is_type(instance, "string") and not re.search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


VALIDATOR = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": ecma_pattern})(SCHEMA)

LAMP = {"feature": "Lamp", "states": {"Off": {}, "On": {}}}


def feature(**overrides: Any) -> Dict[str, Any]:
    base: Dict[str, Any] = {"feature": "F", "states": {"A": {}, "B": {"fields": {"n": "integer"}}}}
    base.update(overrides)
    return base


def state(**members: Any) -> Dict[str, Any]:
    return feature(states={"A": dict(members), "B": {}})


TIMER = {"ms": 10, "submit": [{"kind": "transition", "feature": "F", "into": "B"}]}

# (name, definition file, whether it is valid). Each fault is one of shape.
CASES: List[Tuple[str, Any, bool]] = [
    ("minimal", LAMP, True),
    ("array of features", [LAMP, feature()], True),
    ("features wrapper with $schema", {"$schema": "x.json", "features": [LAMP]}, True),
    ("feature with $schema", dict(LAMP, **{"$schema": "x.json"}), True),
    ("everything", feature(description="d", instances="keyed", initial=["A"], transitions={"A": ["B"]},
                           on={"go": "B"}, bindings=[{"scenario": "s", "when": "AnyMutationOf<F>",
                                                      "given": [{"if": True, "spec": "x"}],
                                                      "then": {"spec": "t", "submit": [{"kind": "trigger", "feature": "F"}]}}]), True),
    ("field forms", feature(states={"A": {"fields": {"a": "string", "b": {"type": "number", "optional": True},
                                                     "c": {"type": "integer", "default": 3, "description": "d"},
                                                     "d": "any", "e": "object", "f": "array", "g": "boolean"}}}), True),
    ("timer", state(after=[dict(TIMER, scenario="s", reset="update", on_restore="resume")]), True),
    ("event target forms", state(on={"a": "B", "b": {"into": "B", "if": {"var": "event.payload.x"}, "spec": "s"},
                                     "c": [{"into": "B", "call": "h"}, "A"], "d": {"into": "A", "actualize": True,
                                                                                   "payload": {"n": 1}}}), True),
    ("then call only", feature(bindings=[{"when": "AnyMutation", "then": {"call": "h"}}]), True),
    ("given map and call", feature(bindings=[{"when": "AnyMutation", "given": [{"map": {"var": "x"}}, {"call": "h"}],
                                              "then": {"call": "h"}}]), True),
    ("missing feature", {"states": {"A": {}}}, False),
    ("missing states", {"feature": "F"}, False),
    ("empty states", {"feature": "F", "states": {}}, False),
    ("bad feature name", {"feature": "1F", "states": {"A": {}}}, False),
    ("bad state name", {"feature": "F", "states": {"a-b": {}}}, False),
    ("unknown feature key", feature(colour="red"), False),
    ("unknown state key", state(colour="red"), False),
    ("unknown type", feature(states={"A": {"fields": {"n": "nubmer"}}}), False),
    ("field object without type", feature(states={"A": {"fields": {"n": {"optional": True}}}}), False),
    ("unknown field key", feature(states={"A": {"fields": {"n": {"type": "number", "min": 0}}}}), False),
    ("instances neither single nor keyed", feature(instances="many"), False),
    ("empty initial", feature(initial=[]), False),
    ("initial not an array", feature(initial="A"), False),
    ("transitions list not an array", feature(transitions={"A": "B"}), False),
    ("timer without ms", state(after=[{"submit": []}]), False),
    ("timer without submit", state(after=[{"ms": 1}]), False),
    ("negative timer ms", state(after=[dict(TIMER, ms=-1)]), False),
    ("fractional timer ms", state(after=[dict(TIMER, ms=1.5)]), False),
    ("bad reset", state(after=[dict(TIMER, reset="later")]), False),
    ("bad on_restore", state(after=[dict(TIMER, on_restore="skip")]), False),
    ("unknown timer key", state(after=[dict(TIMER, delay=3)]), False),
    ("after not an array", state(after=TIMER), False),
    ("256 timers on one state", state(after=[TIMER] * 256), False),
    ("bad event name", state(on={"bad-name": "B"}), False),
    ("empty target list", state(on={"go": []}), False),
    ("unknown target key", state(on={"go": {"into": "B", "when": True}}), False),
    ("binding without when", feature(bindings=[{"then": {"call": "h"}}]), False),
    ("binding without then", feature(bindings=[{"when": "AnyMutation"}]), False),
    ("then without submit or call", feature(bindings=[{"when": "AnyMutation", "then": {"spec": "s"}}]), False),
    ("given with two kinds", feature(bindings=[{"when": "AnyMutation", "given": [{"if": True, "map": 1}],
                                                "then": {"call": "h"}}]), False),
    ("given with none", feature(bindings=[{"when": "AnyMutation", "given": [{"spec": "s"}], "then": {"call": "h"}}]), False),
    ("unknown key next to features", {"features": [LAMP], "version": 2}, False),
    ("feature name not a string", {"feature": 7, "states": {"A": {}}}, False),
    ("feature name too long", {"feature": "F" * 257, "states": {"A": {}}}, False),
    ("feature name with a dot", {"feature": "A.B", "states": {"A": {}}}, False),
    ("feature name ending in a newline", {"feature": "F\n", "states": {"A": {}}}, False),
    ("state name ending in a newline", {"feature": "F", "states": {"A\n": {}}}, False),
    ("states not an object", {"feature": "F", "states": ["A"]}, False),
    ("a state not an object", {"feature": "F", "states": {"A": "B"}}, False),
    ("fields not an object", feature(states={"A": {"fields": ["n"]}}), False),
    ("a field of number type name", feature(states={"A": {"fields": {"n": 3}}}), False),
    ("bad field name", feature(states={"A": {"fields": {"2n": "number"}}}), False),
    ("optional not a boolean", feature(states={"A": {"fields": {"n": {"type": "number", "optional": "yes"}}}}), False),
    ("description not a string", feature(description=3), False),
    ("state description not a string", state(description=["d"]), False),
    ("initial names a bad state name", feature(initial=["a-b"]), False),
    ("transitions not an object", feature(transitions=[["A", "B"]]), False),
    ("a state twice in initial", feature(initial=["A", "A"]), False),
    ("a target twice in transitions", feature(transitions={"A": ["B", "B"]}), False),
    ("a transition target not a string", feature(transitions={"A": [1]}), False),
    ("bindings not an array", feature(bindings={"when": "AnyMutation", "then": {"call": "h"}}), False),
    ("a binding not an object", feature(bindings=["AnyMutation"]), False),
    ("when not a string", feature(bindings=[{"when": 1, "then": {"call": "h"}}]), False),
    ("then not an object", feature(bindings=[{"when": "AnyMutation", "then": [{"call": "h"}]}]), False),
    ("unknown binding key", feature(bindings=[{"when": "AnyMutation", "then": {"call": "h"}, "unless": True}]), False),
    ("unknown then key", feature(bindings=[{"when": "AnyMutation", "then": {"call": "h", "emit": []}}]), False),
    ("given not an array", feature(bindings=[{"when": "AnyMutation", "given": {"if": True}, "then": {"call": "h"}}]), False),
    ("submit not an array", feature(bindings=[{"when": "AnyMutation", "then": {"submit": {"kind": "trigger"}}}]), False),
    ("a submitted action not an object", feature(bindings=[{"when": "AnyMutation", "then": {"submit": ["x"]}}]), False),
    ("timer submit not an array", state(after=[{"ms": 1, "submit": {"kind": "trigger"}}]), False),
    ("timer ms a string", state(after=[dict(TIMER, ms="10")]), False),
    ("timer ms above 2^53", state(after=[dict(TIMER, ms=2 ** 53 + 1)]), False),
    ("timer scenario not a string", state(after=[dict(TIMER, scenario=1)]), False),
    ("on not an object", state(on=["go"]), False),
    ("a target of a number", state(on={"go": 1}), False),
    ("target into a bad name", state(on={"go": {"into": "a-b"}}), False),
    ("target call not a string", state(on={"go": {"into": "B", "call": 1}}), False),
    ("target payload not an object", state(on={"go": {"into": "B", "payload": [1]}}), False),
    ("target actualize not a boolean", state(on={"go": {"into": "B", "actualize": "yes"}}), False),
    ("feature-level on not an object", feature(on="go"), False),
    ("$schema not a string", dict(LAMP, **{"$schema": 1}), False),
    ("features not an array", {"features": LAMP}, False),
    ("a feature of an array", [LAMP, "Lamp"], False),
]


# For each field type, defaults that fit it and defaults that do not: a number,
# string, boolean, null, array and object where each is wrong, and the edges of
# `integer` (a fraction, 2^53 and one past it, spelled as an integer or a real).
DEFAULTS: Dict[str, Tuple[List[Any], List[Any]]] = {
    "string": (["", "zero"], [0, 1.5, True, None, [], {}, ["x"]]),
    "number": ([0, -3, 1.5, -2e300, 1e15], ["0", True, False, None, [1], {}]),
    "integer": ([0, -7, 3.0, 1e15, 2 ** 53, -(2 ** 53), float(2 ** 53)],
                ["zero", "3", 3.5, -0.5, 1e300, 2 ** 53 + 1, -(2 ** 53 + 1), True, None, [3], {}]),
    "boolean": ([True, False], [0, 1, "true", None, [], {}]),
    "object": ([{}, {"a": [1, None]}], [[], "{}", 0, True, None]),
    "array": ([[], [1, "a", None, {}]], [{}, "[]", 0, False, None]),
    "any": ([None, 0, 1.5, "x", True, [], {"a": 1}], []),
}

DEFAULT_CASES: List[Tuple[str, Any, bool]] = [
    (type_name, value, valid)
    for type_name, (right, wrong) in DEFAULTS.items()
    for values, valid in ((right, True), (wrong, False))
    for value in values
]


def with_default(type_name: str, value: Any, **spec: Any) -> Dict[str, Any]:
    return feature(states={"A": {"fields": {"n": dict({"type": type_name, "default": value}, **spec)}}, "B": {}})


def library_accepts(definitions: Any) -> Tuple[bool, str]:
    with uniflow.Dispatcher() as d:
        d.register_handler("h", lambda call: True)
        d.register_service("s", lambda inv: None)
        try:
            d.register(definitions)
        except uniflow.UniflowError as error:
            return False, str(error)
    return True, ""


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


VALID_TEST_DEFINITIONS = [REPO_ROOT / "Tests" / "cli" / "defs" / name
                          for name in ("download.json", "stats.json", "notify.json", "upload.json", "beat.json")]


@pytest.mark.parametrize("path", sorted(DEFINITIONS.glob("*.json")) + VALID_TEST_DEFINITIONS, ids=lambda p: p.name)
def test_every_example_and_test_definition_validates(path: Any) -> None:
    errors = [e.message for e in VALIDATOR.iter_errors(json.loads(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize("name,definitions,valid", CASES, ids=[c[0] for c in CASES])
def test_the_schema_and_the_library_agree(name: str, definitions: Any, valid: bool) -> None:
    accepted, message = library_accepts(definitions)
    assert accepted == valid, f"the library {'accepts' if accepted else 'refuses'} it: {message}"
    assert VALIDATOR.is_valid(definitions) == valid


def test_the_definitions_of_the_python_tests_validate() -> None:
    import conftest

    for name in ("FILE_DOWNLOADING", "MAIN", "SEARCH", "TOGGLE", "COUNTER"):
        definition = getattr(conftest, name)
        assert [e.message for e in VALIDATOR.iter_errors(definition)] == [], name


def test_at_least_fifty_refused_definitions_are_refused_by_both() -> None:
    refused = [c for c in CASES if not c[2]]
    assert len(refused) >= 50


def test_what_the_schema_leaves_to_the_library() -> None:
    # Valid shapes whose names do not resolve: the schema accepts them and says so
    # in its description; uf_register (uniflow check) refuses them.
    # And a target without `into`: a statechart's (it stays), which a flat feature
    # refuses; the schema cannot tell the two kinds of feature apart.
    unresolved = [feature(initial=["Nowhere"]), feature(transitions={"A": ["Nowhere"]}),
                  state(on={"go": "Nowhere"}), state(on={"go": {"if": True}})]
    for definitions in unresolved:
        assert VALIDATOR.is_valid(definitions)
        assert library_accepts(definitions)[0] is False
    assert "uniflow check" in SCHEMA["description"]
    assert library_accepts(chart_state(on={"go": {"if": True}}))[0] is True


def test_every_type_has_right_and_wrong_defaults() -> None:
    assert set(DEFAULTS) == set(SCHEMA["$defs"]["type"]["enum"])
    assert all(wrong for name, (_, wrong) in DEFAULTS.items() if name != "any")


@pytest.mark.parametrize("type_name,value,valid", DEFAULT_CASES,
                         ids=[f"{c[0]} default {json.dumps(c[1])}" for c in DEFAULT_CASES])
def test_the_schema_and_the_library_agree_on_defaults(type_name: str, value: Any, valid: bool) -> None:
    for definitions in (with_default(type_name, value), with_default(type_name, value, optional=True)):
        accepted, message = library_accepts(definitions)
        assert accepted == valid, f"the library {'accepts' if accepted else 'refuses'} it: {message}"
        errors = list(VALIDATOR.iter_errors(definitions))
        assert (errors == []) == valid, [e.message for e in errors]
        if not valid:
            # Among the reasons the schema gives is the default itself, not only
            # that the field matched no form.
            assert any(list(e.absolute_path)[-2:] == ["n", "default"] for e in all_errors(errors)), \
                [e.message for e in errors]


def all_errors(errors: List[Any]) -> List[Any]:
    """The errors and, recursively, those of the branches of each oneOf/anyOf."""
    found: List[Any] = []
    for error in errors:
        found.append(error)
        found.extend(all_errors(list(error.context)))
    return found


# --- statecharts -------------------------------------------------------------------

def chart(**overrides: Any) -> Dict[str, Any]:
    """A statechart: Off, and On with the children Dim and Bright."""
    base: Dict[str, Any] = {"feature": "C",
                            "states": {"Off": {"on": {"go": "On"}},
                                       "On": {"initial": "Dim", "states": {"Dim": {}, "Bright": {}}}}}
    base.update(overrides)
    return base


def chart_state(**members: Any) -> Dict[str, Any]:
    """A chart whose state Off has `members`."""
    return chart(states={"Off": dict(members), "On": {"initial": "Dim", "states": {"Dim": {}, "Bright": {}}}})


EFFECTS: List[Any] = [{"assign": {"n": {"$": {"+": [{"var": "feature.payload.n"}, 1]}}}},
                      {"call": "h"}, {"call": "h", "params": {"level": 2}},
                      {"send": "go"}, {"send": "go", "payload": {"x": 1}, "delay": 10, "id": "later"},
                      {"cancel": "later"}, {"submit": [{"kind": "initialize", "feature": "C", "into": "Off"}]}]

CHART_CASES: List[Tuple[str, Any, bool]] = [
    ("nested states", chart(), True),
    ("a parallel state", chart(states={"Off": {"on": {"go": ["On.A.Y", "On.B.Y"]}},
                                       "On": {"type": "parallel", "states": {
                                           "A": {"initial": "X", "states": {"X": {}, "Y": {}}},
                                           "B": {"initial": "X", "states": {"X": {}, "Y": {}}}}}}), True),
    ("a parallel feature", chart(type="parallel", states={"A": {"initial": "X", "states": {"X": {}}},
                                                          "B": {"initial": "X", "states": {"X": {}}}}), True),
    ("history states", chart(states={"Off": {"on": {"back": "On.H", "deep": "On.D"}},
                                     "On": {"initial": "Dim", "states": {
                                         "Dim": {}, "Bright": {},
                                         "H": {"type": "history"},
                                         "D": {"type": "history", "history": "deep", "default": "On.Bright"}}}}), True),
    ("final states with output and onDone", chart(states={"Off": {"on": {"go": "On"}},
                                                          "On": {"initial": "Dim", "onDone": "Off", "states": {
                                                              "Dim": {"on": {"end": "Done"}},
                                                              "Done": {"type": "final", "output": {"ok": True}}}}}), True),
    ("every effect on entry, exit and actions",
     chart(fields={"n": {"type": "number", "default": 0}},
           states={"Off": {"entry": EFFECTS, "exit": EFFECTS, "on": {"go": {"into": "On", "actions": EFFECTS}}},
                   "On": {"initial": "Dim", "states": {"Dim": {}, "Bright": {}}}}), True),
    ("always, targetless and reentering targets",
     chart_state(always=[{"into": "On.Bright", "if": {"==": [1, 2]}}, "On"],
                 on={"stay": {"actions": [{"call": "h"}]}, "again": {"into": "Off", "reenter": True}}), True),
    ("guard trees", chart_state(on={"go": {"into": "On", "call": {"and": [
        "h", {"or": [{"not": {"in": "On.Dim"}}, {"call": "h", "params": {"x": 1}}]}]}}}), True),
    ("invoke as an object", chart_state(invoke={"src": "s", "id": "load", "input": {"a": {"$": {"var": "feature.payload"}}},
                                                "onDone": {"into": "On", "actions": [{"assign": {}}]}, "onError": "On.Bright"}), True),
    ("invoke as a list", chart_state(invoke=[{"src": "s"}, {"src": "s", "id": "two", "onDone": "On"}]), True),
    ("the feature's own effects, always, invoke, timers and fields",
     chart(entry=[{"call": "h"}], exit=[{"send": "go"}], always={"into": "On", "if": False},
           invoke={"src": "s"}, after=[{"ms": 5, "send": "go"}], fields={"v": "number"}), True),
    ("timers that send, reserved event names",
     chart_state(after=[{"ms": 0, "send": "xstate.after.0.Off"}],
                 on={"xstate.after.0.Off": "On", "xstate.done.actor.load": "On.Bright"}), True),
    ("paths in initial and transitions", chart(initial=["On.Bright"], transitions={"Off": ["On"], "On.Dim": ["Off"]}), True),
    ("an effect of two kinds", chart_state(entry=[{"assign": {"n": 1}, "send": "go"}]), False),
    ("an unknown effect", chart_state(entry=[{"log": "hello"}]), False),
    ("effects not an array", chart_state(entry={"call": "h"}), False),
    ("an effect call not a name", chart_state(entry=[{"call": ["h"]}]), False),
    ("an assign not an object", chart_state(entry=[{"assign": ["n"]}]), False),
    ("a send of a bad event name", chart_state(entry=[{"send": "go-now"}]), False),
    ("a send of a reserved event", chart_state(entry=[{"send": "xstate.done.state.On"}]), False),
    ("a send id without a delay", chart_state(entry=[{"send": "go", "id": "later"}]), False),
    ("a negative delay", chart_state(entry=[{"send": "go", "delay": -1}]), False),
    ("a fractional delay", chart_state(entry=[{"send": "go", "delay": 1.5}]), False),
    ("a send payload not an object", chart_state(entry=[{"send": "go", "payload": 1}]), False),
    ("an empty cancel", chart_state(entry=[{"cancel": ""}]), False),
    ("a submit not an array", chart_state(entry=[{"submit": {"kind": "initialize"}}]), False),
    ("an unknown state type", chart_state(type="orthogonal"), False),
    ("a feature type other than parallel", chart(type="final"), False),
    ("an unknown history kind", chart(states={"Off": {}, "On": {"initial": "Dim", "states": {
        "Dim": {}, "H": {"type": "history", "history": "medium"}}}}), False),
    ("history on a state that is not a history state", chart_state(history="deep"), False),
    ("a history state with transitions", chart(states={"Off": {}, "On": {"initial": "Dim", "states": {
        "Dim": {}, "H": {"type": "history", "on": {"go": "Dim"}}}}}), False),
    ("output on a state that is not final", chart_state(output={"ok": True}), False),
    ("a final state with transitions", chart_state(type="final", on={"go": "On"}), False),
    ("child states without initial", chart(states={"Off": {}, "On": {"states": {"Dim": {}}}}), False),
    ("initial without child states", chart_state(initial="On"), False),
    ("initial of a parallel state", chart(states={"Off": {}, "On": {"type": "parallel", "initial": "A",
                                                                    "states": {"A": {}, "B": {}}}}), False),
    ("a state's initial as a list", chart(states={"Off": {}, "On": {"initial": ["Dim"], "states": {"Dim": {}}}}), False),
    ("onDone on an atomic state", chart_state(onDone="On"), False),
    ("empty child states", chart(states={"Off": {}, "On": {"initial": "Dim", "states": {}}}), False),
    ("an invoke without src", chart_state(invoke={"id": "load"}), False),
    ("an unknown invoke key", chart_state(invoke={"src": "s", "onSuccess": "On"}), False),
    ("an empty invoke id", chart_state(invoke={"src": "s", "id": ""}), False),
    ("an invoke of a string", chart_state(invoke="s"), False),
    ("an empty into list", chart_state(on={"go": {"into": []}}), False),
    ("an into list of numbers", chart_state(on={"go": {"into": [1]}}), False),
    ("reenter not a boolean", chart_state(on={"go": {"into": "On", "reenter": "yes"}}), False),
    ("actions not an array", chart_state(on={"go": {"into": "On", "actions": {"call": "h"}}}), False),
    ("actualize on a statechart", chart_state(on={"go": {"into": "Off", "actualize": True, "actions": []}}), False),
    ("an empty and", chart_state(on={"go": {"into": "On", "call": {"and": []}}}), False),
    ("an unknown guard operator", chart_state(on={"go": {"into": "On", "call": {"xor": ["h", "h"]}}}), False),
    ("a guard call with an unknown key", chart_state(on={"go": {"into": "On", "call": {"call": "h", "args": 1}}}), False),
    ("a guard in of a number", chart_state(on={"go": {"into": "On", "call": {"in": 3}}}), False),
    ("a statechart timer that submits", chart_state(after=[{"ms": 1, "send": "go", "submit": []}]), False),
    ("a timer sending a bad event name", chart_state(after=[{"ms": 1, "send": "go now"}]), False),
    ("a state path with an empty name", chart_state(on={"go": "On..Dim"}), False),
    ("always not a target", chart_state(always=3), False),
    ("a reserved event name without its rest", chart_state(on={"xstate.done.actor.": "On"}), False),
]


@pytest.mark.parametrize("name,definitions,valid", CHART_CASES, ids=[c[0] for c in CHART_CASES])
def test_the_schema_and_the_library_agree_on_statecharts(name: str, definitions: Any, valid: bool) -> None:
    accepted, message = library_accepts(definitions)
    assert accepted == valid, f"the library {'accepts' if accepted else 'refuses'} it: {message}"
    errors = [e.message for e in VALIDATOR.iter_errors(definitions)]
    assert (errors == []) == valid, errors


def test_what_the_schema_leaves_to_the_library_on_statecharts() -> None:
    # Shapes that fit, refused for what needs the tree: an initial that is no
    # child, an ambiguous bare name, two targets in one region.
    unresolved = [chart(states={"Off": {}, "On": {"initial": "Off", "states": {"Dim": {}}}}),
                  chart(states={"A": {"initial": "On", "states": {"On": {}}}, "B": {"initial": "On", "states": {"On": {}}},
                                "C": {"on": {"go": "On"}}}),
                  chart_state(on={"go": {"into": ["On.Dim", "On.Bright"]}})]
    for definitions in unresolved:
        assert VALIDATOR.is_valid(definitions)
        assert library_accepts(definitions)[0] is False


def json_blocks(markdown: Path) -> List[Any]:
    """The JSON code blocks of a page that are whole definitions."""
    found = []
    for block in re.findall(r"```json\n(.*?)```", markdown.read_text(), re.S):
        try:
            value = json.loads(block)
        except json.JSONDecodeError:
            continue  # a fragment (one state), not a definition
        if isinstance(value, dict) and "feature" in value:
            found.append(value)
    return found


def test_the_charts_of_the_statecharts_page_validate() -> None:
    charts = json_blocks(REPO_ROOT / "docs" / "statecharts.md")
    assert len(charts) >= 1
    for definition in charts:
        assert [e.message for e in VALIDATOR.iter_errors(definition)] == [], definition["feature"]


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "Tests" / "cli" / "defs").glob("chart_*.json")), ids=lambda p: p.name)
def test_the_cli_test_charts_validate(path: Path) -> None:
    assert [e.message for e in VALIDATOR.iter_errors(json.loads(path.read_text()))] == []


def uniflow_cli() -> Optional[str]:
    """The built `uniflow` command: beside the library in use, else in build/prefix."""
    if os.environ.get("UNIFLOW_CLI"):
        return os.environ["UNIFLOW_CLI"]
    candidates = []
    if os.environ.get("UNIFLOW_LIBRARY"):
        candidates.append(Path(os.environ["UNIFLOW_LIBRARY"]).resolve().parent.parent / "bin" / "uniflow")
    candidates.append(REPO_ROOT / "build" / "prefix" / "bin" / "uniflow")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("uniflow")


def converted_machines() -> List[Tuple[str, Any]]:
    """Every XState machine of the golden corpus and of the CLI's chart fixtures that
    `uniflow import xstate` converts, as converted."""
    cli = uniflow_cli()
    if cli is None:
        pytest.skip("the uniflow command is not built (scripts/setup)")
    machines: List[Tuple[str, Any]] = []
    for path in sorted((REPO_ROOT / "Tests" / "statecharts" / "xstate").rglob("*.json")):
        machines.append((str(path.relative_to(REPO_ROOT)), json.loads(path.read_text())["machine"]))
    for path in sorted((REPO_ROOT / "Tests" / "cli" / "xstate" / "charts").glob("*.json")):
        machines.append((str(path.relative_to(REPO_ROOT)), json.loads(path.read_text())))
    converted = []
    for name, machine in machines:
        if name.endswith("root_without_target.json"):
            continue  # converted into a flat feature with a target the library refuses
        done = subprocess.run([cli, "import", "xstate", "--feature", "M", "/dev/stdin"], input=json.dumps(machine),
                              capture_output=True, text=True, timeout=60)
        if done.returncode == 0:
            converted.append((name, json.loads(done.stdout)))
    return converted


def test_every_converted_xstate_machine_validates() -> None:
    converted = converted_machines()
    # Most of the corpus converts; a drop here means the importer refuses more.
    assert len(converted) >= 50
    invalid = {name: [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(definition)]
               for name, definition in converted}
    assert {name: errors for name, errors in invalid.items() if errors} == {}
