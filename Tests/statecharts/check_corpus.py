#!/usr/bin/env python3
"""Shape check of the XState golden corpus (Tests/statecharts/xstate).

Not wired into any suite yet.  Run:  python3 Tests/statecharts/check_corpus.py
It checks that every golden file has the keys the format promises, that every
input step is one of the known kinds, that every expected record is well
formed (configuration strings included: atomic state paths joined by ',',
levels by '.'), and that each configuration names states the machine has.
It does not run XState and does not judge behaviour.  Exit status 0 when all
files pass; otherwise each problem is printed as FILE: message.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "xstate")
GEN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STATUSES = {"active", "done", "error", "stopped"}
STEP_KINDS = ("event", "advance", "resolve", "reject")


def atomic_paths(node, prefix=()):
    """Every path (tuple of keys) of an atomic or final state, and every
    state path at all, of a JSON machine config."""
    atomic, every = set(), set()
    states = node.get("states") or {}
    kids = [k for k, v in states.items() if v.get("type") != "history"]
    if prefix:
        every.add(prefix)
    if not kids:
        atomic.add(prefix)
    for k in kids:
        a, e = atomic_paths(states[k], prefix + (k,))
        atomic |= a
        every |= e
    return atomic, every


def check_configuration(conf, atomic, problems, where, anomaly):
    if not isinstance(conf, str):
        problems.append(f"{where}: configuration is not a string")
        return
    if conf == "":
        # a machine without child states: its root is the one atomic state
        if () not in atomic:
            problems.append(f"{where}: empty configuration")
        return
    parts = conf.split(",")
    if len(set(parts)) != len(parts):
        problems.append(f"{where}: a state is listed twice in {conf!r}")
    for p in parts:
        segs = p.split(".")
        if any(s == "" for s in segs):
            problems.append(f"{where}: malformed path {p!r} in {conf!r}")
            continue
        if tuple(segs) not in atomic:
            problems.append(f"{where}: {p!r} is not an atomic state of the machine")
    if not anomaly:
        # siblings of one compound state never appear together: two paths
        # may only share a prefix that ends in a parallel state, which the
        # shape check cannot see; check at least that no path is a prefix
        # of another
        for a in parts:
            for b in parts:
                if a != b and b.startswith(a + "."):
                    problems.append(f"{where}: {a!r} is an ancestor of {b!r}")


def check_step(step, i, problems, where):
    if not isinstance(step, dict):
        problems.append(f"{where}: step {i} is not an object")
        return
    kinds = [k for k in STEP_KINDS if k in step]
    if len(kinds) != 1:
        problems.append(f"{where}: step {i} must have exactly one of {STEP_KINDS}")
        return
    k = kinds[0]
    if k == "event":
        ev = step["event"]
        if not (isinstance(ev, str) or (isinstance(ev, dict) and isinstance(ev.get("type"), str))):
            problems.append(f"{where}: step {i} event must be a name or an object with a type")
    elif k == "advance":
        if not isinstance(step["advance"], (int, float)) or step["advance"] < 0:
            problems.append(f"{where}: step {i} advance must be a non-negative number")
    elif not isinstance(step[k], str):
        problems.append(f"{where}: step {i} {k} must name a service")


def check_file(path):
    problems = []
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError) as e:
        return [f"{path}: not readable JSON: {e}"]
    for key in ("id", "origin", "licence", "machine", "traces", "implementations"):
        if key not in entry:
            problems.append(f"{path}: missing key {key!r}")
    if problems:
        return problems
    machine = entry["machine"]
    if not isinstance(machine, dict):
        return [f"{path}: machine is not an object"]
    if not isinstance(entry["origin"], dict):
        problems.append(f"{path}: origin is not an object")
    elif entry["origin"].get("kind") not in ("generated", "hand-written"):
        for key in ("repository", "path", "commit"):
            if key not in entry["origin"]:
                problems.append(f"{path}: origin lacks {key!r}")
    impl = entry["implementations"]
    for key in ("guards", "actions", "actors", "delays"):
        if not isinstance(impl.get(key), list):
            problems.append(f"{path}: implementations.{key} is not a list")
    generated = entry["origin"].get("kind") == "generated" if isinstance(entry["origin"], dict) else False
    atomic, every = atomic_paths(machine)
    if generated:
        for p in every:
            if not GEN_NAME.match(p[-1]):
                problems.append(f"{path}: generated state name {p[-1]!r} is outside [A-Za-z_][A-Za-z0-9_]*")
    if not isinstance(entry["traces"], list) or not entry["traces"]:
        problems.append(f"{path}: traces must be a non-empty list")
        return problems
    for t in entry["traces"]:
        where = f"{path}: trace {t.get('name')!r}"
        for key in ("name", "steps", "expected"):
            if key not in t:
                problems.append(f"{where}: missing key {key!r}")
        if any(k not in t for k in ("steps", "expected")):
            continue
        guards = t.get("guards", {})
        if not isinstance(guards, dict) or any(
            not isinstance(v, list) or any(not isinstance(b, bool) for b in v) for v in guards.values()
        ):
            problems.append(f"{where}: guards must map names to lists of booleans")
        for i, st in enumerate(t["steps"]):
            check_step(st, i, problems, where)
        exp = t["expected"]
        if not isinstance(exp, list) or not exp:
            problems.append(f"{where}: expected must be a non-empty list")
            continue
        if exp[0].get("step") == "create":
            if "error" not in exp[0]:
                problems.append(f"{where}: a create record needs an error")
            continue
        ended = any("anomaly" in r for r in exp)
        if ended:
            if not all("anomaly" not in r for r in exp[:-1]):
                problems.append(f"{where}: only the last record may carry an anomaly")
            if len(exp) > len(t["steps"]) + 1:
                problems.append(f"{where}: more records than steps")
        elif len(exp) != len(t["steps"]) + 1:
            problems.append(f"{where}: {len(exp)} records for {len(t['steps'])} steps (want one per step plus start)")
        for j, r in enumerate(exp):
            rw = f"{where} record {j}"
            want_step = "start" if j == 0 else j - 1
            if r.get("step") != want_step:
                problems.append(f"{rw}: step is {r.get('step')!r}, want {want_step!r}")
            for key in ("configuration", "status", "actions", "guardCalls"):
                if key not in r:
                    problems.append(f"{rw}: missing key {key!r}")
            if "anomaly" not in r and "context" not in r:
                problems.append(f"{rw}: missing key 'context'")
            if r.get("status") not in STATUSES:
                problems.append(f"{rw}: status {r.get('status')!r}")
            if r.get("status") == "done" and "output" not in r:
                problems.append(f"{rw}: done without output")
            if r.get("status") == "error" and "error" not in r:
                problems.append(f"{rw}: error status without error")
            if not isinstance(r.get("actions"), list) or any(not isinstance(a, str) for a in r.get("actions", [])):
                problems.append(f"{rw}: actions must be a list of names")
            gc = r.get("guardCalls")
            if not isinstance(gc, list) or any(
                not (isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], bool))
                for c in gc
            ):
                problems.append(f"{rw}: guardCalls must be [name, boolean] pairs")
            check_configuration(r.get("configuration"), atomic, problems, rw, "anomaly" in r)
    return problems


def main():
    files = []
    for d, _, names in os.walk(ROOT):
        files += [os.path.join(d, n) for n in names if n.endswith(".json")]
    files.sort()
    if not files:
        print(f"no golden files under {ROOT}")
        return 1
    problems = []
    counts = {}
    steps = 0
    for f in files:
        problems += check_file(f)
        group = os.path.relpath(os.path.dirname(f), ROOT)
        counts[group] = counts.get(group, 0) + 1
        try:
            with open(f, encoding="utf-8") as fh:
                steps += sum(len(t.get("steps", [])) for t in json.load(fh).get("traces", []))
        except (OSError, ValueError):
            pass
    for p in problems:
        print(p)
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    print(f"{len(files)} golden files ({summary}); {steps} input steps; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
