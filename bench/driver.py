"""Runs libuniflow's benchmark scenarios and prints the table (called by bench/run).

Every scenario runs in this one invocation: the C action scenarios of every
topic (bench_c, repetitions interleaved), the threads scenario (bench_c threads),
timers firing (bench_c timers-fire), the memory and instance scenarios (bench_c
mem-* and instances-churn, each in a fresh child process), the Python
scenarios (bench_py.py), the inspector's time travel (bench_inspect.py) and the
NATS adapter (bench_nats, against a nats-server started here). Each row gets the median of its repetitions, its spread,
and its ratio to each baseline measured in the same run, with the target and
whether it is met. --json prints the same table as JSON (for regression checks);
--check FILE also compares with FILE and exits 1 when a target is missed; --show
FILE prints the table of an earlier --json run. --callgrind instead counts
instructions per action under valgrind: two runs that differ only in the number
of actions, so setup and warm-up cancel out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Comparison:
    against: str
    kind: str              # "ratio": value/baseline; "speedup": baseline/value; "throughput": base_ns/value_ns
    target_max: float | None = None
    target_min: float | None = None


@dataclass
class Row:
    name: str
    group: str
    what: str
    unit: str = "ns/action"
    comparisons: list[Comparison] = field(default_factory=list)


C_LOCKED = [Comparison("c_locked", "ratio", target_max=6.0), Comparison("c_bare", "ratio")]
AT_MOST_256_BYTES = [Comparison("", "value", target_max=256)]

# The sizes of the scenarios that run in processes of their own (the rows'
# names carry them).
TIMERS_FIRED = 100_000          # timers-fire: this many, and a tenth as many
INSTANCES = 1_000_000           # mem-instances; instances-churn: this many and a tenth
NATS_RECORDS = 100_000          # bench_nats: records written before a node joins
NATS_FAILOVER_LEASE_MS = 1000   # bench_nats.c's FAILOVER_LEASE_MS

ROWS = [
    Row("c_bare", "1 C hot path", "hand-written C toggle + fn-pointer callback, no lock (floor)"),
    Row("c_locked", "1 C hot path", "hand-written C toggle + callback behind a pthread mutex"),
    # uf_short's 3x and py_uniflow's 1.5x are issue 17's (the first round's were 6x and 2x).
    Row("uf_short", "1 C hot path", "uf_dispatch T: A<->B, 1 feature, 1 C subscriber",
        comparisons=[Comparison("c_locked", "ratio", target_max=3.0), Comparison("c_bare", "ratio")]),
    Row("uf_realistic", "1 C hot path", "uf_dispatch FileDownloading: InProgress<->Suspended",
        comparisons=C_LOCKED),
    Row("uf_other_subs_1", "1 C hot path", "uf_short + 1 subscription on another feature",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.5)]),
    Row("uf_other_subs_1000", "1 C hot path", "uf_short + 1,000 subscriptions on other features",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.5), Comparison("uf_other_subs_1", "ratio")]),
    Row("uf_features_10", "1 C hot path", "uf_short with 10 registered features",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.5)]),
    Row("uf_features_100000", "1 C hot path", "uf_short with 100,000 registered features",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.5), Comparison("uf_features_10", "ratio")]),
    Row("uf_bindings_elsewhere", "1 C hot path", "uf_short + 1,000 model bindings on other features",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.5)]),
    Row("uf_binding_other_kind", "1 C hot path", "uf_short + a binding on T watching another kind",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.5)]),
    Row("uf_binding_rule", "1 C hot path", "uf_short + a binding on T whose rule runs (false)",
        comparisons=[Comparison("uf_short", "ratio"), Comparison("uf_binding_other_kind", "ratio")]),
    Row("jansson_toggle", "2 JSON path", "json_loads + json_decref of the toggle text"),
    Row("uf_submit_toggle", "2 JSON path", "uf_submit of the same toggle text",
        comparisons=[Comparison("jansson_toggle", "ratio", target_max=1.5)]),
    Row("jansson_actualize", "2 JSON path", "json_loads + json_decref of the 5-field actualize text"),
    Row("uf_submit_actualize", "2 JSON path", "uf_submit actualize, 5-field payload",
        comparisons=[Comparison("jansson_actualize", "ratio", target_max=1.5)]),
    Row("uf_dispatch_actualize", "2 JSON path", "uf_dispatch actualize, same payload as payload_json",
        comparisons=[Comparison("jansson_actualize", "ratio")]),
    Row("uf_binding_cascade", "2 JSON path", "a binding (if rule, templated actualize) per action",
        comparisons=[Comparison("c_subscriber_cascade", "ratio", target_max=2.0)]),
    Row("c_subscriber_cascade", "2 JSON path", "the same by a C subscriber calling uf_dispatch"),
    Row("uf_batch_10", "2 JSON path", "uf_submit_batch of 10 JSON transitions", unit="ns/batch",
        comparisons=[Comparison("uf_submits_10", "ratio", target_max=1.2)]),
    Row("uf_submits_10", "2 JSON path", "10 uf_submit calls of the same transitions", unit="ns/10 actions"),
    Row("py_redux_store", "3 Python", "pure-Python Redux-style store, 1 subscriber"),
    Row("py_transitions", "3 Python", "transitions (PyPI), 1 callback"),
    Row("py_uniflow", "3 Python", "uniflow package: d.transition(...), 1 Python subscriber",
        comparisons=[Comparison("py_redux_store", "ratio", target_max=1.5),
                     Comparison("py_transitions", "speedup", target_min=8.0)]),
    Row("py_uniflow_watch", "3 Python", "the same with d.watch('T.state', fn) instead of the subscriber",
        unit="ns/mutation", comparisons=[Comparison("py_uniflow", "ratio", target_max=2.0)]),
    Row("threads_uf_1", "4 Threads", "uf_dispatch, 1 thread (wall ns per action)"),
    Row("threads_uf_4", "4 Threads", "uf_dispatch, 4 threads on one dispatcher (wall ns per action)",
        comparisons=[Comparison("threads_uf_1", "throughput", target_min=0.5)]),
    Row("threads_c_locked_1", "4 Threads", "C locked baseline, 1 thread"),
    Row("threads_c_locked_4", "4 Threads", "C locked baseline, 4 threads, one mutex",
        comparisons=[Comparison("threads_c_locked_1", "throughput")]),
    Row("mem_feature_total", "5 Memory", "peak RSS per feature, registered + initialized (100,000)",
        unit="bytes", comparisons=[Comparison("", "value", target_max=256)]),
    Row("mem_feature_registered", "5 Memory", "  of which registering it", unit="bytes"),
    Row("mem_feature_initialized", "5 Memory", "  of which initializing it (auto state)", unit="bytes",
        comparisons=[Comparison("", "value", target_max=256)]),
    Row("mem_subscription", "5 Memory", "peak RSS per subscription (100,000)", unit="bytes",
        comparisons=[Comparison("", "value", target_max=256)]),
    # Issue 13: timers and the host's loop (scenarios_time.c)
    Row("uf_submit_after_cancel", "6 Time", "uf_submit_after + uf_timer_cancel of uf_submit_toggle's text",
        unit="ns/arm+cancel", comparisons=[Comparison("uf_submit_toggle", "ratio", target_max=1.5)]),
    Row("c_clock_read", "6 Time", "clock_gettime(CLOCK_MONOTONIC): what arming a timer under 4 s reads (no target)",
        unit="ns/read"),
    Row("c_clock_read_coarse", "6 Time", "clock_gettime(CLOCK_MONOTONIC_COARSE): what arming a longer one reads",
        unit="ns/read"),
    Row("uf_untimed_toggle", "6 Time", "uf_dispatch Timed: A<->B, no timer"),
    Row("uf_timed_toggle", "6 Time", "the same, B has an `after` timer (armed on entry, disarmed on exit)",
        comparisons=[Comparison("uf_untimed_toggle", "ratio", target_max=1.3)]),
    Row("uf_timed_toggle_loop", "6 Time", "  the same with the loop's descriptor made (a host that polls it)",
        comparisons=[Comparison("uf_timed_toggle", "ratio")]),
    Row("uf_deferred_1000", "6 Time", "uf_short's toggle, deferred subscriber, uf_loop_run per 1,000",
        unit="ns/mutation", comparisons=[Comparison("uf_short", "ratio", target_max=2.0)]),
    Row("mem_api_timer", "6 Time", "peak RSS per armed API timer beyond its action's text (100,000)",
        unit="bytes", comparisons=AT_MOST_256_BYTES),
    Row("mem_api_timer_named", "6 Time", "  the same, each with its own id (beyond text and id)", unit="bytes"),
    Row(f"timers_fire_{TIMERS_FIRED // 10}", "6 Time",
        f"one uf_clock_advance firing {TIMERS_FIRED // 10:,} due timers, per timer", unit="ns/timer"),
    Row(f"timers_fire_{TIMERS_FIRED}", "6 Time", f"the same with {TIMERS_FIRED:,} timers (linear)",
        unit="ns/timer", comparisons=[Comparison(f"timers_fire_{TIMERS_FIRED // 10}", "ratio", target_max=1.5)]),
    Row(f"timers_fire_{TIMERS_FIRED}_total", "6 Time", "  that uf_clock_advance in all", unit="ms",
        comparisons=[Comparison("", "value", target_max=1000)]),
    # Issue 14: keyed instances (scenarios_instances.c)
    Row("uf_instance_1", "7 Instances", "uf_dispatch toggle of K[k50000], keyed, 1 live instance",
        comparisons=[Comparison("uf_short", "ratio")]),
    Row("uf_instance_100000", "7 Instances", "the same with 100,000 live instances",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.3), Comparison("uf_instance_1", "ratio")]),
    Row("uf_instance_subs_0", "7 Instances", "toggle K[k0] of 10,001 live, subscriber on AnyMutationOf<K[k0]>"),
    Row("uf_instance_subs_10000", "7 Instances", "the same + AnyMutationOf<K[kj]> on each of the 10,000 others",
        comparisons=[Comparison("uf_instance_subs_0", "ratio", target_max=1.5)]),
    Row("mem_instance", "7 Instances", f"peak RSS per live instance beyond its key ({INSTANCES:,})", unit="bytes",
        comparisons=AT_MOST_256_BYTES),
    Row(f"instances_churn_{INSTANCES // 10}", "7 Instances",
        f"initialize {INSTANCES // 10:,} instances, deinitialize them, per instance", unit="ns/instance"),
    Row(f"instances_churn_{INSTANCES}", "7 Instances", f"the same with {INSTANCES:,} (linear)", unit="ns/instance",
        comparisons=[Comparison(f"instances_churn_{INSTANCES // 10}", "ratio", target_max=1.5)]),
    Row(f"instances_churn_{INSTANCES}_rss", "7 Instances", "  RSS after they are all gone, above the RSS before",
        unit="%", comparisons=[Comparison("", "value", target_max=10)]),
    # Issue 15: watches and interceptors (scenarios_watch.c)
    Row("uf_others_10", "8 Watches, interceptors", "uf_short's toggle + 10 other features initialized",
        comparisons=[Comparison("uf_short", "ratio")]),
    Row("uf_watches_other_1000", "8 Watches, interceptors", "uf_others_10 + 1,000 watches on the other features",
        comparisons=[Comparison("uf_others_10", "ratio", target_max=1.1)]),
    Row("uf_watch_unchanged", "8 Watches, interceptors", "uf_others_10 + a watch on model.T.payload (never changes)",
        comparisons=[Comparison("uf_others_10", "ratio", target_max=2.0)]),
    Row("uf_watch_unchanged_actualize", "8 Watches, interceptors",
        "uf_dispatch_actualize + a watch on the unchanged url field",
        comparisons=[Comparison("uf_dispatch_actualize", "ratio", target_max=2.0)]),
    Row("uf_watch_state", "8 Watches, interceptors", "uf_others_10 + a watch on model.T.state reading each value",
        comparisons=[Comparison("uf_others_10", "ratio")]),
    Row("uf_interceptor_other", "8 Watches, interceptors", "uf_others_10 + an interceptor on Other0",
        comparisons=[Comparison("uf_others_10", "ratio", target_max=1.1)]),
    Row("uf_interceptor_pass", "8 Watches, interceptors", "uf_others_10 + a C interceptor on T returning 0",
        comparisons=[Comparison("uf_others_10", "ratio", target_max=1.5)]),
    # Issue 16: events (scenarios_events.c)
    Row("uf_send_transition", "9 Events", "uf_dispatch transition Flow: A<->B"),
    Row("uf_send_guarded", "9 Events", "uf_dispatch send: 2 guarded targets, the second taken",
        comparisons=[Comparison("uf_send_transition", "ratio", target_max=3.0)]),
    Row("uf_send_unguarded", "9 Events", "uf_dispatch send: 1 target, no guard",
        comparisons=[Comparison("uf_send_transition", "ratio", target_max=1.3)]),
    # The inspector's time travel (bench_inspect.py; needs aiohttp)
    Row("inspect_model_at_100000", "10 Inspector",
        "GET /api/model?at=SEQ on a journal of 100,000 mutations: the slowest of 20 random seqs", unit="ms",
        comparisons=[Comparison("", "value", target_max=200)]),
    Row("inspect_start_100000", "10 Inspector", "  starting on that journal: until its URL is printed (no target)",
        unit="ms"),
    # Partitioned dispatchers (scenarios_partitions.c): uf_submit_actualize's action on a node
    # owning every partition, and its records applied by a follower.
    # The goals are 2x and 1.5x (bench/README.md, group 11): records are
    # written straight as text and read without jansson.
    Row("uf_partitioned_submit", "11 Partitions", "uf_submit_actualize on a node owning all partitions, sink accepts",
        comparisons=[Comparison("uf_submit_actualize", "ratio", target_max=2.0)]),
    Row("uf_record_apply_one", "11 Partitions", "a follower's uf_record_apply of that actualize's record (1 mutation)",
        unit="ns/record", comparisons=[Comparison("uf_submit_actualize", "ratio", target_max=1.5)]),
    # libuniflow_nats against a real nats-server that the driver starts (bench_nats.c;
    # bench/README.md, group 12). Skipped, with a note, without libnats or nats-server.
    Row("nats_raw_publish", "12 NATS", "js_PublishMsg of a node's record: same bytes, Nats-Msg-Id, expected last seq",
        unit="ns/record"),
    Row("nats_raw_publish_following", "12 NATS", "  the same with an ordered consumer of the subject, as a node has",
        unit="ns/record", comparisons=[Comparison("nats_raw_publish", "throughput")]),
    # At least 0.8x the raw publish's throughput (bench/README.md, group 12).
    Row("nats_node_submit", "12 NATS", "uf_nats_submit: actualize of 1 keyed instance (1 record), owner of all",
        comparisons=[Comparison("nats_raw_publish", "throughput", target_min=0.8),
                     Comparison("nats_raw_publish_following", "throughput")]),
    Row("nats_threads_1", "12 NATS", "uf_nats_submit from 1 thread on 1 partition (wall ns per action)"),
    # The goal is 2x; the sink is called with the dispatcher held, so one record of
    # a node is in flight at a time: shown, not checked (bench/README.md, group 12).
    Row("nats_threads_4", "12 NATS", "  4 threads, each on its own partition of the same node (goal 2x: see README)",
        comparisons=[Comparison("nats_threads_1", "throughput")]),
    Row("nats_failover_ms", "12 NATS", "SIGKILL of the writer -> the survivor's first accepted write (lease 1 s)",
        unit="ms", comparisons=[Comparison("", "value", target_max=2 * NATS_FAILOVER_LEASE_MS)]),
    Row(f"nats_catchup_{NATS_RECORDS}_ms", "12 NATS",
        f"a node joining after {NATS_RECORDS:,} records of 1,000 instances: new + start + sync (snapshots)",
        unit="ms", comparisons=[Comparison("", "value", target_max=5000)]),
    # Statecharts (scenarios_charts.c): sends of "go" against the flat toggle.
    Row("uf_chart_flat_beside", "13 Statecharts", "uf_short with a statechart feature registered next to T",
        comparisons=[Comparison("uf_short", "ratio", target_max=1.1)]),
    Row("uf_chart_nested_3", "13 Statecharts", "uf_dispatch send go: A<->B in a 3-level compound state",
        comparisons=[Comparison("uf_short", "ratio", target_max=2.0), Comparison("uf_send_unguarded", "ratio")]),
    Row("uf_chart_parallel_2", "13 Statecharts", "uf_dispatch send go: A<->B and C<->D in 2 parallel regions",
        comparisons=[Comparison("uf_short", "ratio", target_max=3.0), Comparison("uf_send_unguarded", "ratio")]),
]

# The runner alone, for a scenario whose prepare step (not timed) does work per
# action: valgrind counts only inside it.
def only_in(runner: str) -> list[str]:
    return [f"--toggle-collect={runner}"]


CALLGRIND_SCENARIOS = [
    # (scenario, small N, large N[, more valgrind options])
    ("c_bare", 100_000, 300_000),
    ("c_locked", 100_000, 300_000),
    ("uf_short", 20_000, 60_000),
    ("uf_realistic", 20_000, 60_000),
    ("uf_other_subs_1000", 20_000, 60_000),
    ("uf_features_100000", 20_000, 60_000),
    ("uf_bindings_elsewhere", 20_000, 60_000),
    ("uf_binding_other_kind", 20_000, 60_000),
    ("uf_binding_rule", 2_000, 6_000),
    ("jansson_toggle", 2_000, 6_000),
    ("uf_submit_toggle", 2_000, 6_000),
    ("jansson_actualize", 2_000, 6_000),
    ("uf_submit_actualize", 2_000, 6_000),
    ("uf_binding_cascade", 2_000, 6_000),
    ("c_subscriber_cascade", 2_000, 6_000),
    ("uf_batch_10", 500, 1_500),
    ("uf_submits_10", 500, 1_500),
    ("uf_dispatch_actualize", 2_000, 6_000),
    ("uf_submit_after_cancel", 2_000, 6_000),
    ("uf_untimed_toggle", 20_000, 60_000),
    ("uf_timed_toggle", 20_000, 60_000),
    ("uf_timed_toggle_loop", 20_000, 60_000),
    ("uf_deferred_1000", 20_000, 60_000),
    ("uf_instance_1", 20_000, 60_000),
    ("uf_instance_100000", 20_000, 60_000),
    ("uf_instance_subs_0", 20_000, 60_000),
    ("uf_instance_subs_10000", 20_000, 60_000),
    ("uf_others_10", 20_000, 60_000),
    ("uf_watches_other_1000", 20_000, 60_000),
    ("uf_watch_unchanged", 20_000, 60_000),
    ("uf_watch_unchanged_actualize", 2_000, 6_000),
    ("uf_watch_state", 20_000, 60_000),
    ("uf_interceptor_other", 20_000, 60_000),
    ("uf_interceptor_pass", 20_000, 60_000),
    ("uf_send_transition", 20_000, 60_000),
    ("uf_send_guarded", 2_000, 6_000),
    ("uf_send_unguarded", 20_000, 60_000),
    ("uf_partitioned_submit", 2_000, 6_000),
    ("uf_record_apply_one", 2_000, 6_000, only_in("run_record_apply")),
    ("uf_chart_flat_beside", 20_000, 60_000),
    ("uf_chart_nested_3", 2_000, 6_000),
    ("uf_chart_parallel_2", 2_000, 6_000),
]


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run_lines(cmd: list[str], env: dict[str, str] | None = None) -> list[dict]:
    log(" ".join(cmd))
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise SystemExit(f"bench: {' '.join(cmd)} failed with status {result.returncode}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def machine() -> dict:
    info: dict = {"nproc": os.cpu_count(), "kernel": platform.release()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return info


def collect(args: argparse.Namespace) -> tuple[dict[str, list[float]], list[dict], list[str]]:
    samples: dict[str, list[float]] = {}
    checks: list[dict] = []
    notes: list[str] = []

    def take(lines: list[dict]) -> None:
        for line in lines:
            if "scenario" in line:
                samples.setdefault(line["scenario"], []).append(line["ns"])
            elif "memory" in line:
                samples.setdefault("mem_" + line["memory"], []).append(line["bytes_each"])
            elif "metric" in line:
                samples.setdefault(line["metric"], []).append(line["value"])
            elif "check" in line:
                checks.append(line)
            elif "skipped" in line:
                note = f"{line['skipped']} skipped: {line['reason']}"
                if note not in notes:   # each action process says it
                    notes.append(note)

    reps, ms = str(args.reps), str(args.time_ms)
    # --only: the action scenarios named, and a mode or script only when one of
    # its rows is named (by the rows' prefix); the other rows are "not run".
    only = args.only.split(",") if args.only else None

    def wanted(*prefixes: str) -> bool:
        return not only or any(name.startswith(prefix) for name in only for prefix in prefixes)

    selection = ["--only", args.only] if only else []
    # The action scenarios' repetitions are spread over several processes, each
    # with its allocations at another offset within their pages (bench.c's
    # --placement; ASLR moves the heap by whole pages only): where the data lands
    # changes how the caches behave, and one placement's luck must not decide a
    # row.
    for i in range(args.processes):
        placement = str(i * 4096 // args.processes // 64 * 64)
        take(run_lines([args.bench_c, "--reps", str(action_reps_per_process(args)), "--time-ms", ms,
                        "--placement", placement, *selection]))
    if wanted("threads_"):
        take(run_lines([args.bench_c, "threads", "--reps", reps, "--time-ms", str(args.time_ms * 2)]))
    if wanted("timers_fire_"):
        take(run_lines([args.bench_c, "timers-fire", str(TIMERS_FIRED), "--reps", reps]))
    if not args.skip_memory:
        for _ in range(args.memory_reps):
            for mode, count, prefix in (("mem-features", args.count, "mem_feature_"),
                                        ("mem-subs", args.count, "mem_subscription"),
                                        ("mem-timers", TIMERS_FIRED, "mem_api_timer"),
                                        ("mem-timers-named", TIMERS_FIRED, "mem_api_timer_named"),
                                        ("mem-instances", INSTANCES, "mem_instance"),
                                        ("instances-churn", INSTANCES // 10, "instances_churn_"),
                                        ("instances-churn", INSTANCES, "instances_churn_")):
                if wanted(prefix):
                    take(run_lines([args.bench_c, mode, str(count)]))
    if wanted("nats_"):
        run_nats(args, take, notes)
    if not args.skip_python and wanted("py_", "inspect_"):
        env = dict(os.environ)
        env["UNIFLOW_LIBRARY"] = args.lib
        if args.python_path:
            env["PYTHONPATH"] = args.python_path + os.pathsep + env.get("PYTHONPATH", "")
        if wanted("py_"):
            take(run_lines([args.python, os.path.join(HERE, "bench_py.py"), "--reps", reps, "--time-ms", ms], env=env))
        if wanted("inspect_"):
            take(run_lines([args.python, os.path.join(HERE, "bench_inspect.py"), "--reps", reps], env=env))
    return samples, checks, notes


def nats_server_program() -> str | None:
    # Debian installs it in /usr/sbin, which a user's PATH may lack.
    return shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")


def run_nats(args: argparse.Namespace, take, notes: list[str]) -> None:
    """bench_nats against a nats-server -js started here on a free loopback port with
    a temporary store, stopped by its process id afterwards."""
    if not args.bench_nats:
        notes.append(f"nats rows skipped: {args.bench_nats_missing or 'bench_nats was not built'}")
        return
    program = nats_server_program()
    if not program:
        notes.append("nats rows skipped: no nats-server (Debian: apt-get install nats-server)")
        return
    import socket
    import time

    with tempfile.TemporaryDirectory(prefix="uniflow-bench-nats-") as store:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log_path = os.path.join(store, "server.log")
        with open(log_path, "wb") as log_file:
            server = subprocess.Popen([program, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd",
                                       os.path.join(store, "js")], stdout=log_file, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                with open(log_path, "rb") as f:
                    if b"Server is ready" in f.read():
                        break
                if server.poll() is not None or time.monotonic() > deadline:
                    with open(log_path) as f:
                        raise SystemExit(f"bench: nats-server did not start: {f.read()}")
                time.sleep(0.05)
            selection = ["--only", args.only] if args.only else []
            take(run_lines([args.bench_nats, "--url", f"nats://127.0.0.1:{port}", "--reps", str(args.reps),
                            "--time-ms", str(args.time_ms * 3), "--records", str(NATS_RECORDS), *selection]))
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def action_reps_per_process(args: argparse.Namespace) -> int:
    return max(1, -(-args.reps // args.processes))


def build_table(samples: dict[str, list[float]]) -> list[dict]:
    medians = {name: statistics.median(values) for name, values in samples.items()}
    table = []
    for row in ROWS:
        values = samples.get(row.name)
        entry: dict = {"scenario": row.name, "group": row.group, "what": row.what, "unit": row.unit}
        if not values:
            entry["median"] = None
            table.append(entry)
            continue
        entry.update(median=round(medians[row.name], 3), min=round(min(values), 3), max=round(max(values), 3),
                     samples=[round(v, 3) for v in values])
        comparisons = []
        for c in row.comparisons:
            value = medians[row.name]
            if c.kind == "value":
                ratio, label = value, "absolute"
            elif c.against not in medians:
                comparisons.append({"vs": c.against, "kind": c.kind, "ratio": None, "met": None})
                continue
            elif c.kind == "ratio":
                ratio, label = value / medians[c.against], f"x {c.against}"
            elif c.kind == "speedup":
                ratio, label = medians[c.against] / value, f"faster than {c.against}"
            else:
                ratio, label = medians[c.against] / value, f"throughput of {c.against}"
            met = None
            if c.target_max is not None:
                met = ratio <= c.target_max
            elif c.target_min is not None:
                met = ratio >= c.target_min
            comparisons.append({"vs": c.against or None, "kind": c.kind, "label": label, "ratio": round(ratio, 3),
                                "target": (f"<= {c.target_max:g}" if c.target_max is not None else
                                           f">= {c.target_min:g}" if c.target_min is not None else None),
                                "met": met})
        entry["comparisons"] = comparisons
        table.append(entry)
    return table


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return f"{value:.0f} B"
    if unit == "ms":
        return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"
    if unit == "%":
        return f"{value:+.1f} %"
    if value >= 10_000:
        return f"{value / 1000:.1f} us"
    if value >= 1000:
        return f"{value / 1000:.2f} us"
    return f"{value:.1f} ns"


def print_table(table: list[dict], out=sys.stdout) -> None:
    header = f"{'scenario':<28} {'median':>10} {'spread':>21}  {'ratio':>8}  {'compared with':<34} {'target':<7} verdict"
    print(header, file=out)
    group = None
    for entry in table:
        if entry["group"] != group:
            group = entry["group"]
            print(f"-- {group} " + "-" * (len(header) - len(group) - 4), file=out)
        unit = entry["unit"]
        if entry.get("median") is None:
            print(f"{entry['scenario']:<28} {'not run':>10}", file=out)
            continue
        spread = f"{format_value(entry['min'], unit)}..{format_value(entry['max'], unit)}"
        lead = f"{entry['scenario']:<28} {format_value(entry['median'], unit):>10} {spread:>21}"
        comparisons = entry.get("comparisons") or []
        if not comparisons:
            print(lead.rstrip(), file=out)
        for i, c in enumerate(comparisons):
            prefix = lead if i == 0 else " " * len(lead)
            if c["ratio"] is None:
                print(f"{prefix}  {'-':>8}  {c['vs'] + ' (not run)':<34}", file=out)
                continue
            verdict = {True: "met", False: "MISSED", None: ""}[c["met"]]
            ratio = format_value(c["ratio"], unit) if c["kind"] == "value" else f"{c['ratio']:.2f}x"
            print(f"{prefix}  {ratio:>8}  {c['label']:<34} {c['target'] or '':<7} {verdict}".rstrip(), file=out)


# ----------------------------------------------------------------- callgrind mode

def callgrind_totals(bench_c: str, scenario: str, iters: int, tmp: str,
                     options: list[str] | None = None) -> tuple[int, dict[str, int]]:
    out = os.path.join(tmp, f"cg.{scenario}.{iters}")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *(options or []), bench_c,
           "--only", scenario, "--iters", str(iters), "--reps", "1", "--warmup", "1000"]
    log(" ".join(cmd))
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
        raise SystemExit(f"bench: callgrind of {scenario} failed")
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", out],
                               stdout=subprocess.PIPE, text=True, check=True).stdout
    total = 0
    functions: dict[str, int] = {}
    for line in annotated.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        count, name = int(m.group(1).replace(",", "")), m.group(2)
        if name == "PROGRAM TOTALS":
            total = count
            continue
        name = re.sub(r" \[[^\]]*\]$", "", name)       # the object file
        symbol = name.split(":", 1)[1] if ":" in name else name
        functions[symbol] = functions.get(symbol, 0) + count
    return total, functions


def demangle(symbols: list[str]) -> dict[str, str]:
    tool = shutil.which("swift-demangle")
    if not tool or not symbols:
        return {s: s for s in symbols}
    result = subprocess.run([tool, "--simplified", "--compact"], input="\n".join(symbols), stdout=subprocess.PIPE,
                            text=True)
    names = result.stdout.splitlines()
    return {s: (n if n else s) for s, n in zip(symbols, names)} if len(names) == len(symbols) else {s: s for s in symbols}


def run_callgrind(args: argparse.Namespace) -> dict:
    if not shutil.which("valgrind"):
        raise SystemExit("bench: --callgrind needs valgrind (apt-get install valgrind)")
    only = set(args.only.split(",")) if args.only else None
    results = []
    with tempfile.TemporaryDirectory(prefix="uniflow-callgrind-") as tmp:
        for scenario, small, large, *options in CALLGRIND_SCENARIOS:
            if only and scenario not in only:
                continue
            extra = options[0] if options else None
            total_small, funcs_small = callgrind_totals(args.bench_c, scenario, small, tmp, extra)
            total_large, funcs_large = callgrind_totals(args.bench_c, scenario, large, tmp, extra)
            n = large - small
            per_function = {k: (funcs_large.get(k, 0) - funcs_small.get(k, 0)) / n
                            for k in set(funcs_small) | set(funcs_large)}
            top = sorted(((v, k) for k, v in per_function.items() if v >= 0.5), reverse=True)[:args.top]
            names = demangle([k for _, k in top])
            alloc = sum(v for k, v in per_function.items()
                        if re.search(r"(^|[^a-z])(malloc|calloc|realloc|_int_malloc|_int_free|free|cfree)(@|$)", k))
            results.append({"scenario": scenario, "instructions_per_action": round((total_large - total_small) / n, 1),
                            "allocator_instructions_per_action": round(alloc, 1) + 0.0 if abs(alloc) >= 0.05 else 0.0,
                            "top_functions": [{"function": names[k], "instructions_per_action": round(v, 1)}
                                              for v, k in top]})
    for r in results:
        # A name looked up in the library's hash table on every action: its cache
        # of the caller's name pointers missed (which depends on where this
        # binary's strings were loaded; see bench/README.md).
        r["name_lookups_per_action"] = round(sum(f["instructions_per_action"] for f in r["top_functions"]
                                                 if "NameTable.lookUp" in f["function"]), 1)
    counted = {r["scenario"]: r["instructions_per_action"] for r in results}
    rows = {row.name: row for row in ROWS}
    for r in results:
        row = rows.get(r["scenario"])
        r["ratios"] = [{"vs": c.against, "ratio": round(r["instructions_per_action"] / counted[c.against], 2),
                        "time_target": (f"<= {c.target_max:g}" if c.target_max is not None else None)}
                       for c in (row.comparisons if row else [])
                       if c.kind == "ratio" and counted.get(c.against)]
    return {"mode": "callgrind", "library": args.lib, "machine": machine(), "scenarios": results}


def print_callgrind(report: dict) -> None:
    print(f"{'scenario':<28} {'instructions/action':>20} {'in malloc/free':>15}  instructions vs the row's baselines"
          " (time target)")
    for r in report["scenarios"]:
        ratios = "; ".join(f"{x['ratio']:.2f}x {x['vs']}" + (f" ({x['time_target']})" if x["time_target"] else "")
                           for x in r.get("ratios", []))
        print(f"{r['scenario']:<28} {r['instructions_per_action']:>20.1f} "
              f"{r['allocator_instructions_per_action']:>15.1f}  {ratios}".rstrip())
    missed = [r["scenario"] for r in report["scenarios"] if r.get("name_lookups_per_action", 0) >= 20]
    if missed:
        print(f"\nnote: the library's name cache missed on every action (NameTable.lookUp) in: {', '.join(missed)}"
              "\n      (it depends on where this binary's strings were loaded: see bench/README.md)")
    for r in report["scenarios"]:
        print(f"\n{r['scenario']}: {r['instructions_per_action']:.1f} instructions per action, self cost by function")
        for f in r["top_functions"]:
            print(f"  {f['instructions_per_action']:8.1f}  {f['function'][:140]}")


# --------------------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-c", required=True, help="the compiled C harness")
    parser.add_argument("--lib", required=True, help="the libuniflow.so being measured")
    parser.add_argument("--bench-nats", default="", help="the compiled NATS harness (bench_nats.c), if built")
    parser.add_argument("--bench-nats-missing", default="", help="why bench_nats was not built")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--python-path", default="", help="prepended to PYTHONPATH for the uniflow package")
    parser.add_argument("--reps", type=int, default=9, help="repetitions per scenario (median is reported)")
    parser.add_argument("--processes", type=int, default=5,
                        help="processes the action scenarios' repetitions are spread over")
    parser.add_argument("--time-ms", type=float, default=100, help="target duration of one repetition")
    parser.add_argument("--count", type=int, default=100_000, help="features / subscriptions for memory")
    parser.add_argument("--memory-reps", type=int, default=3, help="child processes per memory scenario")
    parser.add_argument("--skip-python", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the table as JSON on stdout")
    parser.add_argument("--callgrind", action="store_true", help="instructions per action under callgrind")
    parser.add_argument("--only", default="",
                        help="comma-separated scenarios: only these run (the table's other rows are not run); "
                             "with --callgrind, only these are counted")
    parser.add_argument("--top", type=int, default=15, help="callgrind: functions shown per scenario")
    parser.add_argument("--build-info", default="", help="how the library was built (for the report)")
    parser.add_argument("--compare", default="", metavar="OLD_JSON",
                        help="after the table, compare with an earlier --json run; exit status 1 if a "
                             "target met there is missed now")
    parser.add_argument("--check", nargs="?", const=os.path.join(HERE, "baseline.json"), default=None,
                        metavar="FILE",
                        help="after the table, compare with FILE (default bench/baseline.json) and list every "
                             "target missed; exit status 1 if any is")
    parser.add_argument("--show", default="", metavar="JSON",
                        help="print the table of an earlier --json run (nothing is run)")
    args = parser.parse_args()

    if args.check and not os.path.exists(args.check):
        raise SystemExit(f"bench: --check: no baseline at {args.check} (make one with bench/run --json > FILE)")
    if args.show:
        with open(args.show) as f:
            shown = json.load(f)
        print_report(shown, sys.stdout)
        if args.check:
            compare(shown, args.check, sys.stdout)
            return check(shown, sys.stdout)
        return 0

    if args.callgrind:
        report = run_callgrind(args)
        report["build"] = args.build_info
        if args.json:
            json.dump(report, sys.stdout, indent=2)
            print()
        else:
            print_callgrind(report)
        return 0

    samples, checks, notes = collect(args)
    table = build_table(samples)
    verdicts = [c["met"] for e in table for c in e.get("comparisons", []) if c.get("met") is not None]
    report = {"library": args.lib, "build": args.build_info, "machine": machine(), "reps": args.reps,
              "processes": args.processes, "action_reps": args.processes * action_reps_per_process(args),
              # (none ran under --only without a memory row)
              "memory_reps": args.memory_reps if any(name.startswith(("mem_", "instances_churn_")) for name in samples)
              else None,
              "table": table, "checks": checks, "notes": notes,
              "targets": {"met": verdicts.count(True), "missed": verdicts.count(False)}}
    status = 0
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        out = sys.stderr
    else:
        print_report(report, sys.stdout)
        out = sys.stdout
    if args.compare:
        status = compare(report, args.compare, out)
    if args.check:
        compare(report, args.check, out)
        status = check(report, out) or status
    return status


def print_report(report: dict, out) -> int:
    """The table as bench/run prints it, from a report (this run's or a --json file's)."""
    m = report.get("machine", {})
    build = report.get("build")
    print(f"libuniflow benchmark: {report.get('library', '?')}" + (f" ({build})" if build else ""), file=out)
    memory_reps = report.get("memory_reps")
    print(f"machine: {m.get('cpu', '?')}, {m.get('nproc')} CPUs, {m.get('memory_gib', '?')} GiB; "
          f"medians of {report.get('reps')} interleaved repetitions"
          + (f" (C actions: {report['action_reps']} in {report['processes']} processes)"
             if report.get("processes", 1) > 1 else "")
          + (f" (memory: {memory_reps} child processes each)" if memory_reps else ""), file=out)
    print(file=out)
    print_table(report["table"], out)
    print(file=out)
    for note in report.get("notes", []):
        print(f"note: {note}", file=out)
    print(f"every action accounted for: {len(report.get('checks', []))} checks passed (applied == notified)",
          file=out)
    targets = report.get("targets", {})
    print(f"targets: {targets.get('met', 0)} met, {targets.get('missed', 0)} missed", file=out)
    return 0


def check(report: dict, out) -> int:
    """--check: lists every target missed, and every target this run could not
    measure (a row or its baseline did not run); 1 if one was missed."""
    entries = {e["scenario"]: e for e in report["table"]}
    missed, unmeasured, met = [], [], 0
    for row in ROWS:
        for c in row.comparisons:
            if c.target_max is None and c.target_min is None:
                continue
            entry = entries.get(row.name) or {}
            got = next((x for x in entry.get("comparisons", []) if (x.get("vs") or "") == c.against), None)
            if not got or got.get("met") is None:
                unmeasured.append(f"{row.name} (vs {c.against or 'absolute'})")
            elif got["met"]:
                met += 1
            else:
                value = format_value(got["ratio"], row.unit) if c.kind == "value" else f"{got['ratio']:.2f}x"
                missed.append(f"{row.name}: {value} {got['label']}, target {got['target']}"
                              + best_repetitions(entries, row.name, c))
    print(file=out)
    for line in unmeasured:
        print(f"check: not measured in this run: {line}", file=out)
    for line in missed:
        print(f"check: MISSED {line}", file=out)
    print(f"check: {met} targets met, {len(missed)} missed"
          + (f", {len(unmeasured)} not measured" if unmeasured else ""), file=out)
    return 1 if missed else 0


def best_repetitions(entries: dict, name: str, c: Comparison) -> str:
    """For a ratio missed, the same ratio of the two rows' best repetitions. On a
    host whose speed changes from minute to minute, a row's median falls in whichever
    phase most of its repetitions did; the best repetitions do not depend on that.
    Within the target, the miss is the host's: run again. Missed there too, it is
    the code's."""
    mine, theirs = (entries.get(name) or {}).get("min"), (entries.get(c.against) or {}).get("min")
    if c.kind == "value" or not mine or not theirs:
        return ""
    best = mine / theirs if c.kind == "ratio" else theirs / mine
    within = best <= c.target_max if c.target_max is not None else best >= c.target_min
    return (f" (best repetitions {best:.2f}x: " +
            ("within the target: the medians likely fell in different phases of the host; run again)" if within
             else "missed there too)"))


def compare(new: dict, old_path: str, out) -> int:
    """Prints each scenario's change against an earlier --json report; 1 if a target regressed."""
    with open(old_path) as f:
        old = json.load(f)
    before = {e["scenario"]: e for e in old.get("table", [])}
    regressions = 0
    print(f"\ncompared with {old_path} ({old.get('library', '?')}):", file=out)
    for entry in new["table"]:
        was = before.get(entry["scenario"])
        if not was or was.get("median") is None or entry.get("median") is None:
            continue
        if entry["unit"] == "%":
            change = f"{entry['median'] - was['median']:+5.1f} pts"
        else:
            change = f"{entry['median'] / was['median']:5.2f}x" if was["median"] else "    -"
        flags = []
        old_met = {c.get("vs"): c.get("met") for c in was.get("comparisons", [])}
        for c in entry.get("comparisons", []):
            if old_met.get(c.get("vs")) is True and c.get("met") is False:
                flags.append(f"target {c['target']} vs {c['vs'] or 'absolute'} now missed")
                regressions += 1
        print(f"  {entry['scenario']:<28} {format_value(was['median'], entry['unit']):>10} -> "
              f"{format_value(entry['median'], entry['unit']):>10}  {change}  {'; '.join(flags)}".rstrip(), file=out)
    print(f"{regressions} target(s) regressed", file=out)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
