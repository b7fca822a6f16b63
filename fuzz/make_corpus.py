#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (committed; rerun after
the tests or examples change, then review the diff).

Seeds come from examples/definitions, from the JSON literals of the Swift tests
(Tests/UniFlowTests: definitions, actions, models, JsonLogic cases, filters) and
from the hand-written scripts below. Each seed file is named after the SHA-1 of
its content, as libFuzzer names the units it adds, so rerunning adds nothing twice.
Files larger than 4 KiB are left out: the corpora stay small, and libFuzzer
grows inputs from there.
"""
import hashlib
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
MAX_SEED = 4096

FILTERS = ["AnyMutation", "AnyMutationOf<FileDownloading>", "AnyUpdateOf<Ping>", "AnySettingOf<Main>",
           "SettingInto<FileDownloading.InProgress>", "Initialization<Login>", "Actualization<Main>",
           "Transition<Search>", "Deinitialization<Stats>", "InitializationInto<Login.LoggedOut>",
           "ActualizationIn<FileDownloading.InProgress>", "TransitionInto<Search.Failed>",
           "TransitionFrom<Login.LoggingIn>", "TransitionBetween<Search.Ready, Search.InProgress>",
           "DeinitializationFrom<FileDownloading.Failed>", " AnyMutationOf < Main > ",
           "TransitionBetween<Login.LoggedOut,Main.Main>", "Transition<Nope>", "SettingInto<Main.Nope>",
           "AnyMutation<Main>", "Transition<Main.Main>", ""]

SUBMIT_SCRIPTS = [
    # A download that completes through its model binding, then counts in Stats.
    '{"kind":"initialize","feature":"Stats","into":"Counting"}\n'
    '{"kind":"initialize","feature":"FileDownloading","into":"Starting","scope":"s","context":"c","id":"1"}\n'
    'V0{"kind":"transition","feature":"FileDownloading","into":"InProgress"}\t{"progress":100}\n'
    '{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":100}}\n',
    # Subscribers that submit, and unsubscribing.
    'S AnyMutationOf<Main>\t{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":9}}\n'
    'SAnyMutation\n'
    '{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1}}\n'
    'U1\nU0\nU99\n'
    '{"kind":"deinitialize","feature":"Main","from":"Main"}\n',
    # The binding cycle that only the cascade limit stops.
    '{"kind":"initialize","feature":"Ping","into":"A"}\n{"kind":"transition","feature":"Ping","into":"B"}\n',
    # A trigger whose binding submits a trigger that submits.
    '{"kind":"initialize","feature":"Gate","into":"Open"}\n'
    '{"kind":"trigger","feature":"Search","in":"Ready","submit":[{"kind":"transition","feature":"Search",'
    '"into":"InProgress","payload":{"query":"q","progress":1}}]}\n',
    # Batches: one that commits, one that rolls back.
    'B[{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1}},'
    '{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":2}}]\n'
    'B[{"kind":"initialize","feature":"Search","into":"Ready"},'
    '{"kind":"transition","feature":"Search","from":"Failed","into":"Ready"}]\n',
    # Restore, then actions on the restored model; uf_dispatch with every field.
    'R{"Main":{"state":"Main","payload":{"val":3}},"Login":{"state":"LoggedIn","payload":{"sessionToken":"t"}}}\n'
    'D2|Main||Main|{"val":4}||id1\nD3|Main|Main|Main||s|\nD4|Login|LoggedIn||||\nD5|Login|||||u\n'
    'D1|Stats||Counting|{"completed":5,"flag":true,"obj":{"a":[1]},"arr":[],"any":null,"ratio":1.5}||\n'
    'D1|Ping||A|||vz\n',
    # Via callbacks: decline, fail, resubmit, free from inside.
    'V1{"kind":"initialize","feature":"Login","into":"LoggedOut"}\n'
    'V-{"kind":"initialize","feature":"Login","into":"LoggedOut"}\n'
    'Vs{"kind":"initialize","feature":"Login","into":"LoggedOut"}\n'
    'Vf{"kind":"transition","feature":"Login","into":"LoggingIn"}\t{"username":"u"}\n'
    'V0{"kind":"transition","feature":"Login","into":"LoggedIn"}\t{"sessionToken":1}\n',
    # Inputs that must fail cleanly.
    '{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":18446744073709551616}}\n'
    '{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1.5}}\n'
    '{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1},"payload":{}}\n'
    '{"kind":"bogus","feature":"Main"}\n{"kind":"initialize","feature":"M\xc3\xa4in","into":"Main"}\n'
    '[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]\n',
]

RESTORE_SEEDS = [
    '{}',
    '{"Main":{"state":"Main","payload":{"val":3}}}',
    '{"FileDownloading":{"state":"Failed","payload":{"reason":"r","code":4}},"Ping":{"state":"A","payload":{}}}',
    '{"Stats":{"state":"Counting","payload":{"completed":1,"note":"n","any":[null]}},'
    '"Search":{"state":"InProgress","payload":{"query":"q","progress":3}}}',
    '{"Login":{"state":"LoggedIn","payload":{}}}',
    '{"Nope":{"state":"A","payload":{}}}',
    '{"Main":{"state":"Main"}}',
    '{"Gate":{"state":"Open","payload":{}},"Gate":{"state":"Closed","payload":{}}}',
    '[]',
]

LOGIC_SEEDS = [
    '{"cat":[false,[1,2]]}',
    '{"var":"a.b"}\n{"a":{"b":[1]}}',
    '{"reduce":[{"var":"xs"},{"+":[{"var":"current"},{"var":"accumulator"}]},0]}\n{"xs":[1,2,3]}',
    '{"map":[{"var":"xs"},{"*":[{"var":""},2]}]}\n{"xs":[1,2]}',
    '{"filter":[[1,2,3],{">":[{"var":""},1]}]}',
    '{"substr":["jsonlogic",-5,2]}',
    '{"missing_some":[1,["a","b"]]}\n{"a":1}',
    '{"if":[{"<":[1,2,3]},"yes",{"in":["x","xyz"]},"maybe","no"]}',
    '{"/":[1,0]}',
    '{"%":[7,{"var":"n"}]}\n{"n":-0}',
]


REPLAY_SEEDS = [
    # Journal bodies for the definitions of fuzz_replay.c (the target writes their
    # header line first), as a journaling dispatcher writes them: keyed instances,
    # state and API timers (armed, cancelled, fired, dropped), a batch, restores.
    "{\"seq\":1,\"feature\":\"Job\",\"key\":\"a\",\"kind\":\"initialization\",\"state\":\"Idle\",\"payload\":{},\"at\":0}\n{\"seq\":2,\"feature\":\"Job\",\"key\":\"a\",\"kind\":\"transition\",\"state\":\"Busy\",\"payload\":{\"n\":0},\"at\":0}\n{\"seq\":3,\"feature\":\"Job\",\"key\":\"a\",\"kind\":\"actualization\",\"state\":\"Busy\",\"payload\":{\"n\":3},\"at\":0}\n{\"seq\":4,\"feature\":\"Counter\",\"kind\":\"initialization\",\"state\":\"Counting\",\"payload\":{\"n\":5},\"at\":0}\n{\"seq\":5,\"feature\":\"Job\",\"key\":\"a\",\"kind\":\"transition\",\"state\":\"Expired\",\"payload\":{},\"at\":50}\n",
    "{\"seq\":1,\"feature\":\"Lamp\",\"kind\":\"initialization\",\"state\":\"On\",\"payload\":{},\"at\":0}\n{\"timer\":\"armed\",\"serial\":2,\"id\":\"save\",\"ms\":20,\"due_at\":20,\"action\":{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Counting\",\"payload\":{\"n\":9}},\"at\":0}\n{\"timer\":\"armed\",\"serial\":3,\"id\":null,\"ms\":30,\"due_at\":30,\"action\":{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Counting\",\"payload\":{\"n\":1}},\"at\":0}\n{\"seq\":2,\"feature\":\"Lamp\",\"kind\":\"transition\",\"state\":\"Off\",\"payload\":{},\"at\":10}\n{\"timer\":\"cancelled\",\"serial\":2,\"at\":10}\n",
    "{\"seq\":2,\"batch\":[{\"seq\":1,\"feature\":\"Job\",\"key\":\"b\",\"kind\":\"initialization\",\"state\":\"Idle\",\"payload\":{},\"at\":0},{\"seq\":2,\"feature\":\"Job\",\"key\":\"b\",\"kind\":\"transition\",\"state\":\"Busy\",\"payload\":{\"n\":0},\"at\":0}]}\n{\"seq\":2,\"restore\":{\"Lamp\":{\"state\":\"On\",\"payload\":{}}},\"at\":0}\n{\"seq\":3,\"feature\":\"Job\",\"key\":\"c\",\"kind\":\"initialization\",\"state\":\"Idle\",\"payload\":{},\"at\":0}\n{\"seq\":4,\"feature\":\"Job\",\"key\":\"c\",\"kind\":\"transition\",\"state\":\"Expired\",\"payload\":{},\"at\":5}\n",
    "{\"seq\":1,\"feature\":\"Counter\",\"kind\":\"initialization\",\"state\":\"Counting\",\"payload\":{\"n\":0},\"at\":0}\n{\"seq\":1,\"restore\":{\"Counter\":{\"state\":\"Counting\",\"payload\":{\"n\":0}},\"Lamp\":{\"state\":\"On\",\"payload\":{}},\"Job\":{\"k\":{\"state\":\"Busy\",\"payload\":{\"n\":1}}}},\"timers\":[{\"id\":\"Lamp.On.after[0]\",\"kind\":\"state\",\"due_at\":12},{\"id\":\"Job[k].Busy.after[0]\",\"kind\":\"state\",\"due_at\":40},{\"serial\":7,\"id\":\"later\",\"kind\":\"api\",\"ms\":5,\"due_at\":5,\"action\":{\"kind\":\"trigger\",\"feature\":\"Counter\"}}],\"at\":3}\n{\"timer\":\"fired\",\"id\":\"Lamp.On.after[0]\",\"at\":12}\n{\"timer\":\"dropped\",\"serial\":7,\"at\":12}\n",
]


def record_definitions():
    """The definitions of fuzz_record.c: its C string literal, joined and unescaped
    (records carry the definitions' fingerprint, so the seeds must be written for
    exactly these)."""
    text = (ROOT / "fuzz" / "fuzz_record.c").read_text()
    block = re.search(r"static const char definitions\[\] =(.*?);\n", text, re.S).group(1)
    return "".join(json.loads('"' + part + '"') for part in re.findall(r'"((?:[^"\\]|\\.)*)"', block))


def record_seeds():
    """Inputs of fuzz_record (a flags byte, then records one a line) written by a
    real writer node through its record sink: the journal corpus's kinds of actions
    (keyed instances, a model binding's cascade (of the single feature: see
    fuzz_record.c), a state timer firing, an API timer,
    a batch) plus claims, a release and a second node taking a partition over. Uses
    the Python package (bindings/python) with the library UNIFLOW_LIBRARY names or
    the one it finds (build/prefix/lib after scripts/setup)."""
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import uniflow

    definitions = record_definitions()
    log = {}  # partition -> [record text]
    order = []  # every record, as written

    def node(name):
        d = uniflow.Dispatcher(partitions=4, node=name, clock="manual")
        d.register(definitions)

        def sink(text):
            record = json.loads(text)
            kept = log.setdefault(record["partition"], [])
            if record["version"] != len(kept) + 1:
                raise uniflow.Conflict("another record got there first")
            kept.append(text)
            order.append(text)

        d.record_sink(sink)
        return d

    w = node("w")
    for p in range(5):
        w.claim(p)
    w.submit({"kind": "initialize", "feature": "Job", "key": "a", "into": "Queued"})
    w.submit({"kind": "transition", "feature": "Job", "key": "a", "into": "Running", "payload": {"progress": 5}})
    w.submit({"kind": "actualize", "feature": "Job", "key": "a", "in": "Running",
              "payload": {"progress": 50, "note": "half \u00e9\n"}, "id": "half"})
    w.submit({"kind": "transition", "feature": "Job", "key": "a", "into": "Done"})
    w.submit({"kind": "deinitialize", "feature": "Job", "key": "a"})
    w.submit({"kind": "initialize", "feature": "Counter", "into": "Idle"})
    w.submit({"kind": "transition", "feature": "Counter", "into": "Busy", "payload": {"n": 2}})
    w.advance(0.02)  # the state timer: Busy -> Idle
    w.batch([{"kind": "initialize", "feature": "Job", "key": "b", "into": "Queued"},
             {"kind": "transition", "feature": "Job", "key": "b", "into": "Running", "payload": {"progress": 1}}])
    w.submit_after(0.005, {"kind": "actualize", "feature": "Job", "key": "b", "in": "Running",
                           "payload": {"progress": 2}}, id="tick")
    w.advance(0.01)
    for key in ("c", "d", "e"):
        w.submit({"kind": "initialize", "feature": "Job", "key": key, "into": "Queued"})
    w.submit({"kind": "deinitialize", "feature": "Job", "key": "c"})
    w.release(1)
    # A second node reads the log, then takes partition 1 over and writes to it.
    v = node("v")
    for p in sorted(log):
        for text in log[p]:
            v.apply_record(text)
    v.claim(1)
    key = next(k for k in "fghijklmnopqrstuvwxyz" if v.partition_of("Job", k) == 1 and v.get("Job", k) is None)
    v.submit({"kind": "initialize", "feature": "Job", "key": key, "into": "Queued"})
    v.submit({"kind": "transition", "feature": "Job", "key": key, "into": "Running", "payload": {"progress": 9}})
    for d in (w, v):
        d.close()

    # Each node draws a random incarnation: fixed ones here (and each partition's
    # "prev" chain recomputed over the new bytes), so that a rerun writes the same
    # seeds.
    incarnations = {}
    for text in order:
        found = re.search(r'"incarnation":"([0-9a-f]{16})"', text).group(1)
        incarnations.setdefault(found, "%016x" % (0x1111111111111111 * (len(incarnations) + 1)))
    last = {}
    fixed = {}
    for text in order:
        p = json.loads(text)["partition"]
        new = re.sub(r'"incarnation":"[0-9a-f]{16}"', lambda m: '"incarnation":"%s"' % incarnations[m.group(0)[15:31]],
                     text)
        prev = "null" if p not in last else '"%08x"' % fnv1a32(last[p].encode())
        new = re.sub(r'"prev":(null|"[0-9a-f]{8}")', '"prev":' + prev, new, count=1)
        last[p] = new
        fixed[text] = new
    order = [fixed[t] for t in order]
    log = {p: [fixed[t] for t in records] for p, records in log.items()}

    def inputs(flags, records):
        return bytes([flags]) + "\n".join(records).encode()

    # The longest beginning of the whole log that fits in a seed: a history too.
    start = []
    for text in order:
        if len(inputs(0, start + [text])) > MAX_SEED:
            break
        start.append(text)
    seeds = [inputs(0, start), inputs(1, start), inputs(4, start), inputs(7 | (4 << 4), start)]
    for p, records in sorted(log.items()):
        seeds.append(inputs(0, records))  # one partition's history
        seeds.append(inputs(2 | (p << 4), records))  # ...that this node claimed first
        seeds.append(inputs(0, records[1:]))  # a gap
        seeds.append(inputs(0, records + records))  # duplicates
        seeds.append(inputs(5, list(reversed(records))))  # out of order, chained
    for text in order:
        seeds.append(inputs(1, [text]))  # one record alone, chained
    return seeds


def fnv1a32(data):
    """FNV-1a, 32 bits: what a record's "prev" is of the record before it."""
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def seed(target, text):
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    if len(data) > MAX_SEED:
        return
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def swift_literals(path):
    """The raw string literals #"..."# and multi-line string literals of a Swift file."""
    text = path.read_text()
    for m in re.finditer(r'#"(.*?)"#', text):
        yield m.group(1)
    for m in re.finditer(r'"""\n(.*?)\n\s*"""', text, re.S):
        yield m.group(1)


def main():
    for path in sorted((ROOT / "examples" / "definitions").glob("*.json")):
        seed("register", path.read_bytes())
    for path in sorted((ROOT / "Tests" / "UniFlowTests").glob("*.swift")):
        for literal in swift_literals(path):
            if "\\(" in literal:  # interpolation: not a literal value
                continue
            try:
                value = json.loads(literal)
            except ValueError:
                value = None
            if "Logic" in path.name:
                if isinstance(value, list) and len(value) == 3:  # [rule, data, expected]
                    seed("logic", json.dumps(value[0]) + "\n" + json.dumps(value[1]))
                else:
                    seed("logic", literal)
            elif '"states"' in literal:
                seed("register", literal)
            elif '"kind"' in literal:
                seed("submit", " ".join(literal.split("\n")) + "\n")
            elif isinstance(value, dict) and value and all(
                    isinstance(v, dict) and "state" in v for v in value.values()):
                seed("restore", literal)
    for f in FILTERS:
        seed("subscribe", f)
    for s in SUBMIT_SCRIPTS:
        seed("submit", s)
    for r in RESTORE_SEEDS:
        seed("restore", r)
    for rule in LOGIC_SEEDS:
        seed("logic", rule)
    for journal in REPLAY_SEEDS:
        seed("replay", journal)
    targets = ["register", "submit", "subscribe", "logic", "restore", "replay"]
    try:
        records = record_seeds()
    except (ImportError, OSError) as error:  # OSError: libuniflow not found
        print(f"fuzz/make_corpus.py: no record seeds (the Python package or libuniflow is missing: {error})",
              file=sys.stderr)
    else:
        for r in records:
            seed("record", r)
        targets.append("record")
    for target in targets:
        count = len(list((CORPUS / target).iterdir()))
        print(f"fuzz/corpus/{target}: {count} files", file=sys.stderr)


if __name__ == "__main__":
    main()
