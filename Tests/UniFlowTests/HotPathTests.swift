import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// `uf_dispatch` takes a hot path for payload-free actions (Dispatcher+HotPath.swift)
/// and the general path for everything else; `uf_submit` takes the same hot path
/// for a plain JSON action. Whichever it takes, a host must see exactly what the
/// general path gives: the same status and message, the same mutations (with
/// their action), reports and model. These tests drive three dispatchers side by
/// side through thousands of generated actions, valid and not: one with structs,
/// one with JSON, and a reference that journals (which keeps every action off the
/// hot path).
@Suite struct HotPath {
    static let definitions = [
        Seeds.toggle,
        #"{"feature": "Door", "states": {"Closed": {}, "Open": {}, "Locked": {}}, "initial": ["Closed"], "transitions": {"Closed": ["Open", "Locked"], "Open": ["Closed"], "Locked": ["Closed", "Locked"]}}"#,
        #"{"feature": "Timer", "states": {"Idle": {}, "Running": {"fields": {"ticks": {"type": "integer", "default": 0}}}}}"#,
        #"{"feature": "Stats", "states": {"Counting": {"fields": {"doors": {"type": "integer", "default": 0}}}}, "bindings": [{"when": "TransitionInto<Door.Open>", "then": {"submit": [{"kind": "actualize", "feature": "Stats", "in": "Counting", "payload": {"doors": {"$": {"+": [{"var": "model.Stats.payload.doors"}, 1]}}}}]}}]}"#,
    ]
    static let names = ["Toggle": ["Off", "On"], "Door": ["Closed", "Open", "Locked"],
                        "Timer": ["Idle", "Running"], "Stats": ["Counting"]]

    /// One generated action, as JSON and as the fields of a `uf_action`.
    struct Step: CustomStringConvertible {
        var kind: uf_action_kind
        var feature: String
        var from: String?
        var into: String?
        var same = false
        var context: String?

        var json: String {
            var parts = [#""kind":"\#(kindName)""#, #""feature":"\#(feature)""#]
            if let from { parts.append(#""from":"\#(from)""#) }
            if let into { parts.append(#""into":"\#(into)""#) }
            if same { parts.append(#""same":true"#) }
            if let context { parts.append(#""context":"\#(context)""#) }
            return "{" + parts.joined(separator: ",") + "}"
        }

        var kindName: String {
            switch kind {
            case UF_ACTION_INITIALIZE: "initialize"
            case UF_ACTION_TRANSITION: "transition"
            default: "deinitialize"
            }
        }

        var description: String { json }

        /// Calls `uf_dispatch` with C strings that live as long as the call.
        func dispatch(_ d: OpaquePointer) -> Int32 {
            func cString(_ s: String?) -> UnsafeMutablePointer<CChar>? { s.map { strdup($0)! } }
            let strings = [cString(feature), cString(from), cString(into), cString(context)]
            defer { strings.forEach { free($0) } }
            var a = uf_action()
            a.size = UInt32(MemoryLayout<uf_action>.size)
            a.kind = kind
            a.feature = UnsafePointer(strings[0])
            a.from = UnsafePointer(strings[1])
            a.into = UnsafePointer(strings[2])
            a.context = UnsafePointer(strings[3])
            a.same = same ? 1 : 0
            return uf_dispatch(d, &a)
        }
    }

    /// A deterministic generator (SplitMix64), so that a failure names its seed.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
        mutating func pick<T>(_ items: [T]) -> T { items[next(items.count)] }

        mutating func step() -> Step {
            let features = ["Toggle", "Door", "Timer", "Stats", "Nope"]
            let feature = pick(features)
            let states = (HotPath.names[feature] ?? []) + ["Nope"]
            let kinds = [UF_ACTION_INITIALIZE, UF_ACTION_TRANSITION, UF_ACTION_TRANSITION, UF_ACTION_DEINITIALIZE]
            var step = Step(kind: pick(kinds), feature: feature)
            switch step.kind {
            case UF_ACTION_INITIALIZE:
                step.into = pick(states)
            case UF_ACTION_TRANSITION:
                step.into = pick(states)
                if next(2) == 0 { step.from = pick(states) } else { step.same = next(3) == 0 }
            default:
                if next(2) == 0 { step.from = pick(states) }
            }
            if next(4) == 0 { step.context = "step" }
            return step
        }
    }

    private func dispatcher(options: String?) -> Harness {
        Harness(options: options, HotPath.definitions[0], HotPath.definitions[1], HotPath.definitions[2], HotPath.definitions[3])
    }

    /// The reference's options: the same, plus a journal.
    private func journaling(_ options: String?, _ path: String) -> String {
        let journal = #""journal":"\#(path)""#
        guard let options, options.count > 2 else { return "{\(journal)}" }
        return "{\(journal)," + options.dropFirst()
    }

    private func compare(_ seed: UInt64, steps: Int, options: String? = nil, reports: Bool = false) {
        let path = temporaryPath("hotpath-reference")
        defer { unlink(path) }
        let reference = dispatcher(options: journaling(options, path))
        let json = dispatcher(options: options)
        let structs = dispatcher(options: options)
        if reports {
            for h in [reference, json, structs] { h.captureReports() }
        }
        let seenByReference = reference.record()
        let seenByJSON = json.record()
        let seenByStructs = structs.record()
        var generator = Generator(state: seed)
        for i in 0..<steps {
            let step = generator.step()
            let expected = reference.submit(step.json)
            let expectedError = reference.lastError
            for (h, got) in [(json, json.submit(step.json)), (structs, step.dispatch(structs.d))] {
                #expect(got == expected, "seed \(seed), step \(i): \(step)")
                if expected != UF_OK {
                    #expect(h.lastError == expectedError, "seed \(seed), step \(i): \(step)")
                }
                if got != expected { return }
            }
        }
        // The generated actions apply often enough for the comparison to mean something.
        #expect(seenByReference.mutations.count > steps / 20, "seed \(seed)")
        #expect(seenByStructs.mutations == seenByReference.mutations, "seed \(seed)")
        #expect(seenByJSON.mutations == seenByReference.mutations, "seed \(seed)")
        #expect(structs.reports == reference.reports, "seed \(seed)")
        #expect(json.reports == reference.reports, "seed \(seed)")
        #expect(structs.state == reference.state, "seed \(seed)")
        #expect(json.state == reference.state, "seed \(seed)")
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func givenTheSameActions_whenDispatchedAsStructs_thenEverythingMatchesTheirJSON(seed: UInt64) {
        compare(seed, steps: 3_000)
    }

    @Test func withAReporterTheStructsGiveTheSameReports() {
        compare(11, steps: 1_000, reports: true)
    }

    @Test func withBuiltInReportingTheStructsGiveTheSameOutcomes() {
        compare(12, steps: 500, options: #"{"reporting":"none","max_cascade":3}"#)
    }

    @Test func aSubscriberThatSubmitsDuringADispatchIsQueuedAndRunBeforeItReturns() {
        let h = Harness(Seeds.toggle)
        let recorder = h.record()
        h.subscribe("TransitionInto<Toggle.On>") { m in
            #expect(uf_submit(uf_mutation_dispatcher(m), #"{"kind":"transition","feature":"Toggle","from":"On","into":"Off"}"#) == UF_QUEUED)
            return 0
        }
        #expect(Step(kind: UF_ACTION_INITIALIZE, feature: "Toggle", into: "Off").dispatch(h.d) == UF_OK)
        #expect(Step(kind: UF_ACTION_TRANSITION, feature: "Toggle", from: "Off", into: "On", context: "flip").dispatch(h.d) == UF_OK)
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        #expect(recorder.mutations == [
            #"{"seq":1,"kind":"initialization","feature":"Toggle","old":null,"new":{"state":"Off","payload":{}},"action":{"kind":"initialize","feature":"Toggle","into":"Off"}}"#,
            #"{"seq":2,"kind":"transition","feature":"Toggle","old":{"state":"Off","payload":{}},"new":{"state":"On","payload":{}},"action":{"kind":"transition","feature":"Toggle","from":"Off","into":"On","context":"flip"}}"#,
            #"{"seq":3,"kind":"transition","feature":"Toggle","old":{"state":"On","payload":{}},"new":{"state":"Off","payload":{}},"action":{"kind":"transition","feature":"Toggle","from":"On","into":"Off"}}"#,
        ])
    }

    @Test func aDispatchFromInsideASubscriberIsQueued() {
        let h = Harness(Seeds.toggle)
        var inner: Int32 = 99
        h.subscribe("InitializationInto<Toggle.Off>") { m in
            inner = Step(kind: UF_ACTION_TRANSITION, feature: "Toggle", into: "On").dispatch(uf_mutation_dispatcher(m))
            return 0
        }
        #expect(Step(kind: UF_ACTION_INITIALIZE, feature: "Toggle", into: "Off").dispatch(h.d) == UF_OK)
        #expect(inner == UF_QUEUED)
        #expect(h.state == #"{"Toggle":{"state":"On","payload":{}}}"#)
    }

    @Test func aBindingWatchingOneKindStillRunsForItWhateverPathTheOthersTake() {
        // Counter counts Toggle's deinitializations; transitions of Toggle are of a
        // kind no binding watches.
        let h = Harness(Seeds.toggle, #"{"feature":"Counter","states":{"Counting":{"fields":{"n":{"type":"integer","default":0}}}},"initial":["Counting"],"bindings":[{"when":"DeinitializationFrom<Toggle.Off>","then":{"submit":[{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":{"$":{"+":[{"var":"model.Counter.payload.n"},1]}}}}]}}]}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Counter","into":"Counting"}"#) == UF_OK)
        for _ in 0..<3 {
            #expect(Step(kind: UF_ACTION_INITIALIZE, feature: "Toggle", into: "Off").dispatch(h.d) == UF_OK)
            #expect(Step(kind: UF_ACTION_TRANSITION, feature: "Toggle", from: "Off", into: "On").dispatch(h.d) == UF_OK)
            #expect(Step(kind: UF_ACTION_TRANSITION, feature: "Toggle", from: "On", into: "Off").dispatch(h.d) == UF_OK)
            #expect(Step(kind: UF_ACTION_DEINITIALIZE, feature: "Toggle").dispatch(h.d) == UF_OK)
        }
        #expect(h.state == #"{"Counter":{"state":"Counting","payload":{"n":3}}}"#)
    }

    @Test func theCascadeLimitCountsHotPathActions() {
        // Each mutation queues the next toggle; max_cascade 5 lets the outer action and 4 queued ones run.
        let h = Harness(options: #"{"max_cascade":5}"#, Seeds.toggle)
        h.captureReports()
        var applied = 0
        h.subscribe(nil) { m in
            applied += 1
            let next = String(cString: uf_mutation_new_state(m)) == "On" ? "Off" : "On"
            _ = Step(kind: UF_ACTION_TRANSITION, feature: "Toggle", into: next).dispatch(uf_mutation_dispatcher(m))
            return 0
        }
        #expect(Step(kind: UF_ACTION_INITIALIZE, feature: "Toggle", into: "Off").dispatch(h.d) == UF_OK)
        #expect(applied == 5)
        #expect(h.reports.filter { $0.contains(#""event":"dropped""#) }.count == 1)
    }
}
