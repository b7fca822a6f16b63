#!/usr/bin/env bash
# Kills a journaling writer with SIGKILL at random moments (UNIFLOW_CRASH_RUNS,
# default 20) and checks that each journal replays to an applied prefix: its
# model and its armed timers.
set -euo pipefail
program="$1"
runs="${UNIFLOW_CRASH_RUNS:-20}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0
for run in $(seq 1 "$runs"); do
    journal="$work/journal-$run.jsonl"
    "$program" write "$journal" > "$work/applied-$run.txt" &
    writer=$!
    # Up to 300 ms; one run in four within the first 10 ms, while the library
    # loads, the header is written or the first lines are.
    if (( RANDOM % 4 == 0 )); then delay=$(( RANDOM % 11 )); else delay=$(( RANDOM % 301 )); fi
    sleep "0.$(printf '%03d' "$delay")"
    kill -KILL "$writer"
    wait "$writer" 2>/dev/null || true
    # The writer's output says what it had after each step (its last line may be
    # torn: the check reads complete lines only).
    if ! "$program" check "$journal" "$work/applied-$run.txt"; then failed=$((failed + 1)); fi
done
echo "journal crash test: $((runs - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
