#!/bin/sh
# Every unguarded path `uniflow paths` prints for the example definitions, run
# through `uniflow run --clock manual` on a fresh model, ends in its state.
#
#   Tests/cli/paths_run.sh BUILD_BIN_DIR DEFS...
#
# The definitions are given together (a binding may watch a feature of another
# file). A path ends in its state when the last mutation of its feature that
# `uniflow run` prints has that state as its new state (on a statechart: has it
# active at some level, or a mutation of the run entered it). The manual clock keeps
# state timers from firing while a path runs. Then all those paths run at once,
# in one file, must print the same mutations (but for their seq): a path header
# starts from an empty model. Exit status 0 when every path does; the test fails
# too when no path was checked.
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_BIN_DIR DEFS..." >&2
    exit 2
fi
uniflow="$(cd "$1" && pwd)/uniflow"
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uniflow-paths.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

if ! "$uniflow" paths "$@" >"$tmp/paths" 2>"$tmp/err"; then
    echo "FAIL: uniflow paths $*" >&2
    cat "$tmp/err" >&2
    exit 1
fi

checked=0
failures=0
: >"$tmp/all.jsonl"
: >"$tmp/one-by-one"
# The mutations a run printed, without their seq (one dispatcher counts on).
unseq() {
    python3 -c 'import json,sys
for line in open(sys.argv[1]):
    m = json.loads(line); m.pop("seq", None); print(json.dumps(m, sort_keys=True))' "$1"
}
# Split into one file per path: the header line, then its actions.
python3 - "$tmp" <<'EOF' || exit 2
import json, pathlib, sys
tmp = pathlib.Path(sys.argv[1])
current = None
index = 0
for line in (tmp / "paths").read_text().splitlines():
    value = json.loads(line)
    if "path" in value and "kind" not in value:
        index += 1
        current = tmp / f"path{index:04d}"
        current.with_suffix(".head").write_text(json.dumps(value))
        current.with_suffix(".jsonl").write_text(line + "\n")
    else:
        with current.with_suffix(".jsonl").open("a") as out:
            out.write(line + "\n")
EOF

for head in "$tmp"/path*.head; do
    [ -e "$head" ] || continue
    actions="${head%.head}.jsonl"
    target=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v["path"] if not v["guarded"] else "")' "$head")
    [ -n "$target" ] || continue
    checked=$((checked + 1))
    if ! "$uniflow" run --clock manual "$@" "$actions" >"$tmp/out" 2>"$tmp/run-err"; then
        failures=$((failures + 1))
        echo "FAIL $target: uniflow run failed" >&2
        cat "$tmp/run-err" >&2
        continue
    fi
    ended=$(python3 - "$tmp/out" "$target" <<'EOF'
import json, sys
feature, _, path = sys.argv[2].partition(".")
state, entered = None, False
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m["feature"] == feature:
        state = m["new"]["state"] if m["new"] else None
        entered = entered or path in m.get("entered", [])
# A statechart's state is a configuration ("A.B,C"): the path's state is in it
# at some level, or a mutation entered it on the way (`always` left it).
active = [p for p in (state or "").split(",") if p == path or p.startswith(path + ".")]
print(sys.argv[2] if active or entered else f"{feature}.{state}")
EOF
)
    if [ "$ended" != "$target" ]; then
        failures=$((failures + 1))
        echo "FAIL $target: the path ends in $ended" >&2
        cat "$actions" >&2
    fi
    cat "$actions" >>"$tmp/all.jsonl"
    unseq "$tmp/out" >>"$tmp/one-by-one"
done

if [ "$checked" -gt 0 ]; then
    if ! "$uniflow" run --clock manual "$@" "$tmp/all.jsonl" >"$tmp/out" 2>"$tmp/run-err"; then
        failures=$((failures + 1))
        echo "FAIL: the $checked paths in one file: uniflow run failed" >&2
        cat "$tmp/run-err" >&2
    elif ! unseq "$tmp/out" | cmp -s - "$tmp/one-by-one"; then
        failures=$((failures + 1))
        echo "FAIL: the $checked paths in one file print other mutations than one by one" >&2
        unseq "$tmp/out" | diff "$tmp/one-by-one" - | head -20 >&2
    fi
fi

echo "paths_run: $checked unguarded paths run, $failures failed"
[ "$checked" -gt 0 ] && [ "$failures" -eq 0 ]
