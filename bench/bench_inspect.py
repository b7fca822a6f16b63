"""Group 10 of libuniflow's benchmark harness (run it through bench/run): the
inspector's time travel on a long history.

Writes a journal of 100,000 mutations (keyed ``Job`` instances going through
their states, about 200 alive at a time, and a single ``Stats`` feature), starts
``python3 -m uniflow.inspect`` on it, and asks ``GET /api/model?at=SEQ`` for
random seqs over HTTP, as the page's time control does. Each repetition asks
20 seqs and reports the slowest answer (``inspect_model_at_100000``, in ms: the
target is 200 ms for any seq); the time from the start of the process to its URL
(reading and checking the whole journal) is reported once
(``inspect_start_100000``, no target). Every answer is checked against a replay
of the journal cut at that seq, for a few seqs, and every answer must be 200:
a wrong one ends the run with an error.

Prints one JSON object per line: {"metric", "value"} (and {"skipped", "reason"}
when aiohttp is not installed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from typing import Any, Dict, List

MUTATIONS = 100_000
QUERIES = 20

JOB = {
    "feature": "Job", "instances": "keyed",
    "states": {"Queued": {}, "Running": {"fields": {"progress": "integer"}}, "Done": {"fields": {"ok": "boolean"}}},
    "initial": ["Queued"],
    "transitions": {"Queued": ["Running"], "Running": ["Running", "Done"]},
}
STATS = {"feature": "Stats", "states": {"Counting": {"fields": {"done": "integer"}}}}


def write_journal(path: str, defs: str) -> int:
    import uniflow  # type: ignore[import-not-found]

    made = 0
    with uniflow.Dispatcher(journal=path) as d:
        d.register(defs)
        d.initialize("Stats", "Counting", {"done": 0})
        made += 1
        rng = random.Random(7)
        done = 0
        job = 0
        live: Dict[str, int] = {}
        while made < MUTATIONS:
            if len(live) < 200:
                key = f"job{job}"
                job += 1
                d.initialize("Job", "Queued", key=key)
                live[key] = 0
                made += 1
                continue
            key = rng.choice(list(live))
            step = live[key]
            if step == 0:
                d.transition("Job", into="Running", from_="Queued", payload={"progress": 0}, key=key)
            elif step < 5:
                d.actualize("Job", "Running", {"progress": step * 20}, key=key)
            elif step == 5:
                d.transition("Job", into="Done", from_="Running", payload={"ok": True}, key=key)
            else:
                d.deinitialize("Job", key=key)
                done += 1
                d.actualize("Stats", "Counting", {"done": done})
                made += 1
                del live[key]
                made += 1
                continue
            live[key] = step + 1
            made += 1
    return made


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        if response.status != 200:
            raise SystemExit(f"bench_inspect: {url}: HTTP {response.status}")
        return json.loads(response.read())


def replayed(path: str, defs: str, seq: int, folder: str) -> Any:
    import uniflow  # type: ignore[import-not-found]

    cut = os.path.join(folder, "cut.jsonl")
    with open(path) as source, open(cut, "w") as out:
        for line in source:
            value = json.loads(line)
            if "uniflow_journal" in value or value.get("seq", 0) <= seq:
                out.write(line)
    with uniflow.Dispatcher() as d:
        d.register(defs)
        d.replay(cut)
        return d.state


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        for name in ("inspect_model_at_100000", "inspect_start_100000"):
            print(json.dumps({"skipped": name, "reason": "aiohttp is not installed (pip install 'uniflow[inspect]')"}))
        return 0
    with tempfile.TemporaryDirectory(prefix="uniflow-bench-inspect-") as folder:
        defs = os.path.join(folder, "defs.json")
        with open(defs, "w") as f:
            json.dump({"features": [JOB, STATS]}, f)
        journal = os.path.join(folder, "journal.jsonl")
        last = write_journal(journal, defs)
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "uniflow.inspect", defs, "--journal", journal],
                                   stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            start_ms = (time.perf_counter() - started) * 1000
            if not url:
                raise SystemExit("bench_inspect: the inspector printed no URL")
            parts = urllib.parse.urlsplit(url)
            base = f"{parts.scheme}://{parts.netloc}/api/model?" + parts.query + "&at="
            info = get(f"{parts.scheme}://{parts.netloc}/api/info?{parts.query}")
            if info["last_seq"] != last:
                raise SystemExit(f"bench_inspect: the inspector holds seqs to {info['last_seq']}, the journal {last}")
            rng = random.Random(11)
            for seq in (1, MUTATIONS // 2 + 1, last):
                if get(base + str(seq)) != replayed(journal, defs, seq, folder):
                    raise SystemExit(f"bench_inspect: the model at {seq} is not what a replay to it gives")
            print(json.dumps({"metric": "inspect_start_100000", "value": round(start_ms, 3)}), flush=True)
            for rep in range(args.reps):
                slowest = 0.0
                for _ in range(QUERIES):
                    seq = rng.randint(1, last)
                    t0 = time.perf_counter()
                    get(base + str(seq))
                    slowest = max(slowest, (time.perf_counter() - t0) * 1000)
                print(json.dumps({"metric": "inspect_model_at_100000", "value": round(slowest, 3)}), flush=True)
        finally:
            process.terminate()
            process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
