import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A payload-free send whose first candidate target is unguarded takes the hot
/// path (Dispatcher+HotPath.swift) — from `uf_send`, `uf_dispatch` and `uf_submit`
/// alike — unless the dispatcher reports or journals; every other send takes the
/// general path. Whichever it takes, the host must see the same status, message,
/// mutations, interceptor calls, timers, watches and model. Three dispatchers run
/// side by side through thousands of generated actions: a reference that
/// journals (so that it never takes the hot path) driven with JSON, one driven
/// with the same JSON, and one driven with `uf_send` and structs.
@Suite struct EventHotPath {
    static let definitions = [
        // Unguarded targets, a feature-level list passed over where `transitions`
        // does not allow it, an actualization, and timers (one reset by updates).
        #"""
        {"feature": "Light",
         "states": {"Green": {"on": {"tick": "Yellow"}},
                    "Yellow": {"on": {"tick": "Red", "back": "Green"},
                               "after": [{"ms": 100, "submit": [{"kind": "send", "feature": "Light", "event": "tick"}]}]},
                    "Red": {"on": {"tick": "Green", "hold": {"into": "Red", "actualize": true}},
                            "after": [{"ms": 150, "reset": "update", "submit": [{"kind": "send", "feature": "Light", "event": "tick"}]}]},
                    "Off": {}},
         "initial": ["Green", "Off"],
         "transitions": {"Green": ["Yellow", "Off"], "Yellow": ["Red", "Green", "Off"], "Red": ["Green", "Off"], "Off": ["Green"]},
         "on": {"panic": ["Red", "Off"], "wake": "Green", "hold": {"into": "Off", "actualize": true}}}
        """#,
        // A guarded first target (the general path), then an unguarded one.
        #"""
        {"feature": "Door",
         "states": {"Closed": {"on": {"open": [{"into": "Open", "if": {"var": "event.payload.key"}}, "Locked"]}},
                    "Open": {"on": {"close": "Closed", "open": {"into": "Open", "actualize": true}}},
                    "Locked": {"on": {"open": "Closed"}}},
         "on": {"close": "Closed"}}
        """#,
        // Targets into states with fields (carried payloads: the general path).
        #"""
        {"feature": "Form",
         "states": {"Editing": {"fields": {"n": {"type": "integer", "default": 0}}, "on": {"submit": "Sent"}},
                    "Sent": {"fields": {"n": {"type": "integer", "optional": true}}, "on": {"edit": "Editing", "submit": {"into": "Sent", "actualize": true}}},
                    "Blank": {"on": {"submit": "Editing"}}}}
        """#,
        // Keyed instances, each its own state.
        #"""
        {"feature": "Task", "instances": "keyed",
         "states": {"Todo": {"on": {"start": "Doing"}}, "Doing": {"on": {"done": "Done", "pause": "Todo"}}, "Done": {}},
         "initial": ["Todo"],
         "transitions": {"Todo": ["Doing"], "Doing": ["Done", "Todo"], "Done": ["Todo"]},
         "on": {"reset": "Todo"}}
        """#,
        // A feature whose transitions a binding watches (the general path), and the
        // binding's own sends.
        #"""
        {"feature": "Bell", "states": {"Quiet": {"on": {"ring": "Ringing"}}, "Ringing": {"on": {"stop": "Quiet", "ring": {"into": "Ringing", "actualize": true}}}}}
        """#,
        #"""
        {"feature": "Stats", "states": {"Counting": {"fields": {"rings": {"type": "integer", "default": 0}},
                                                     "on": {"count": {"into": "Counting", "actualize": true,
                                                                      "payload": {"rings": {"$": {"+": [{"var": "feature.payload.rings"}, 1]}}}}}}},
         "bindings": [{"when": "TransitionInto<Bell.Ringing>", "then": {"submit": [{"kind": "send", "feature": "Stats", "event": "count"}]}}]}
        """#,
    ]

    static let states = ["Light": ["Green", "Yellow", "Red", "Off"], "Door": ["Closed", "Open", "Locked"],
                         "Form": ["Editing", "Sent", "Blank"], "Task": ["Todo", "Doing", "Done"],
                         "Bell": ["Quiet", "Ringing"], "Stats": ["Counting"]]
    static let events = ["Light": ["tick", "back", "hold", "panic", "wake"], "Door": ["open", "close"],
                         "Form": ["submit", "edit"], "Task": ["start", "done", "pause", "reset"],
                         "Bell": ["ring", "stop"], "Stats": ["count"]]
    /// Every event name, and one no feature takes.
    static let anyEvent = events.values.flatMap { $0 }.sorted() + ["nope"]
    static let payloads: [String?] = [nil, nil, nil, nil, "{}", #"{"key":true}"#, #"{"n":3}"#, #"{"n":"x"}"#]

    /// One generated step.
    enum Step: CustomStringConvertible {
        /// A send: JSON on one side, `uf_send` or a struct on the other.
        case send(feature: String, key: String?, event: String, payload: String?, viaStruct: Bool)
        /// Any other action, as JSON on both sides (it keeps the states moving).
        case other(String)
        case advance(UInt64)

        var description: String {
            switch self {
            case .send(let feature, let key, let event, let payload, let viaStruct):
                "send \(feature)[\(key ?? "")] \(event) \(payload ?? "NULL") \(viaStruct ? "struct" : "uf_send")"
            case .other(let json): json
            case .advance(let ms): "advance \(ms)"
            }
        }

        var json: String? {
            switch self {
            case .send(let feature, let key, let event, let payload, _):
                var parts = [#""kind":"send""#, #""feature":"\#(feature)""#]
                if let key { parts.append(#""key":"\#(key)""#) }
                parts.append(#""event":"\#(event)""#)
                if let payload { parts.append(#""payload":\#(payload)"#) }
                return "{" + parts.joined(separator: ",") + "}"
            case .other(let json): return json
            case .advance: return nil
            }
        }
    }

    struct Generator {
        var random: HotPath.Generator

        mutating func step() -> Step {
            let roll = random.next(20)
            if roll == 0 { return .advance(UInt64(random.pick([0, 50, 100, 150]))) }
            let feature = random.pick(["Light", "Light", "Door", "Form", "Task", "Task", "Bell", "Stats", "Nope"])
            let key = feature == "Task" ? random.pick(["a", "b", "c"]) : nil
            let keyPart = key.map { #","key":"\#($0)""# } ?? ""
            let state = random.pick((EventHotPath.states[feature] ?? []) + ["Nope"])
            switch roll {
            case 1, 2:
                let payload = feature == "Form" && random.next(2) == 0 ? #","payload":{"n":1}"# : ""
                return .other(#"{"kind":"initialize","feature":"\#(feature)"\#(keyPart),"into":"\#(state)"\#(payload)}"#)
            case 3:
                return .other(#"{"kind":"deinitialize","feature":"\#(feature)"\#(keyPart)}"#)
            case 4:
                return .other(#"{"kind":"transition","feature":"\#(feature)"\#(keyPart),"into":"\#(state)","same":true}"#)
            default:
                let events = random.next(8) == 0 ? EventHotPath.anyEvent : EventHotPath.events[feature] ?? EventHotPath.anyEvent
                return .send(feature: feature, key: key, event: random.pick(events),
                             payload: random.pick(EventHotPath.payloads), viaStruct: random.next(2) == 0)
            }
        }
    }

    /// What a dispatcher's host saw.
    final class Seen {
        var intercepted: [String] = []
        var watched: [String] = []
    }

    private func make(reports: Bool, journal: String? = nil) -> (Harness, Recorder, Seen) {
        let h = Harness(options: journal.map { #"{"clock":"manual","journal":"\#($0)"}"# } ?? #"{"clock":"manual"}"#)
        for definition in Self.definitions {
            let status = uf_register(h.d, definition)
            precondition(status == UF_OK, h.lastError)
        }
        if reports { h.captureReports() }
        let recorder = h.record()
        let seen = Seen()
        // An interceptor on Light that vetoes every fifth action it sees.
        intercept(h, "Light") { a in
            seen.intercepted.append(String(cString: uf_intercepted_json(a)))
            return seen.intercepted.count % 5 == 0 ? 1 : 0
        }
        let box = Box<(OpaquePointer) -> Int32>({ w in seen.watched.append(String(cString: uf_watch_value_json(w))); return 0 },
                                               freed: FreeCounter())
        #expect(uf_watch(h.d, #"{"cat": [{"var": "model.Light.state"}, "/", {"var": "model.Task.a.state"}]}"#, { w, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(w!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, nil) == UF_OK)
        return (h, recorder, seen)
    }

    private func compare(_ seed: UInt64, steps: Int, reports: Bool = false) {
        let journal = temporaryPath("event-hot-path")
        defer { unlink(journal) }
        let reference = make(reports: reports, journal: journal)
        let subjects = [make(reports: reports), make(reports: reports)]
        let (general, json, structs) = (reference.0, subjects[0].0, subjects[1].0)
        var generator = Generator(random: HotPath.Generator(state: seed))
        var sendsApplied = 0
        for i in 0..<steps {
            let step = generator.step()
            let expected: Int32
            let got: [Int32]
            switch step {
            case .advance(let ms):
                expected = uf_clock_advance(general.d, ms)
                got = [uf_clock_advance(json.d, ms), uf_clock_advance(structs.d, ms)]
            case .other(let text):
                expected = general.submit(text)
                got = [json.submit(text), structs.submit(text)]
            case .send(let feature, let key, let event, let payload, let viaStruct):
                expected = general.submit(step.json!)
                let sent = viaStruct
                    ? CAction(UF_ACTION_SEND, feature: feature, event: event, key: key, payload: payload).dispatch(structs.d)
                    : uf_send(structs.d, feature, key, event, payload)
                got = [json.submit(step.json!), sent]
                if expected == UF_OK { sendsApplied += 1 }
            }
            let expectedError = general.lastError
            #expect(got == [expected, expected], "seed \(seed), step \(i): \(step)")
            if expected != UF_OK {
                #expect(json.lastError == expectedError, "seed \(seed), step \(i): \(step)")
                #expect(structs.lastError == expectedError, "seed \(seed), step \(i): \(step)")
            }
            if got != [expected, expected] { return }
        }
        // The generated sends apply often enough for the comparison to mean something.
        #expect(sendsApplied > steps / 10, "seed \(seed)")
        for (h, recorder, seen) in subjects {
            #expect(recorder.mutations == reference.1.mutations, "seed \(seed)")
            #expect(h.reports == general.reports, "seed \(seed)")
            #expect(seen.intercepted == reference.2.intercepted, "seed \(seed)")
            #expect(seen.watched == reference.2.watched, "seed \(seed)")
            #expect(h.state == general.state, "seed \(seed)")
            #expect(h.timers == general.timers, "seed \(seed)")
        }
    }


    @Test(arguments: [21, 22, 23, 24] as [UInt64])
    func givenTheSameSends_whenTheHotPathTakesThem_thenEverythingMatchesTheGeneralPath(seed: UInt64) {
        compare(seed, steps: 3_000)
    }

    /// A reporter keeps every dispatcher on the general path: JSON, `uf_send` and
    /// structs still give the same reports.
    @Test func withAReporterTheStructsGiveTheSameReports() {
        compare(31, steps: 1_500, reports: true)
    }

    /// Inside a callback a send is queued, as every action there is, and its
    /// target is chosen when it runs; a malformed one is refused at once.
    @Test func aSendFromInsideACallbackIsQueuedAndRunsBeforeTheOuterCallReturns() {
        let h = Harness(Self.definitions[0])
        let recorder = h.record()
        var inner: [Int32] = []
        h.subscribe("TransitionInto<Light.Yellow>") { m in
            inner.append(uf_send(uf_mutation_dispatcher(m), "Light", nil, "tick", nil))
            inner.append(uf_send(uf_mutation_dispatcher(m), "Light", nil, "bad-name", nil))
            return 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Light","into":"Green"}"#) == UF_OK)
        #expect(uf_send(h.d, "Light", nil, "tick", nil) == UF_OK)
        #expect(inner == [UF_QUEUED, UF_EINVAL])
        #expect(h.state == #"{"Light":{"state":"Red","payload":{}}}"#)
        #expect(recorder.mutations.count == 3)
    }
}
