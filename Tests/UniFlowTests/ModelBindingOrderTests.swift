import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Issue 3, "What it must show": ordering across features and within a feature,
/// bindings that cascade across three features, every failure of a binding
/// (a handler returning -1 in `then`), and registration checking shapes (rules
/// included) before names (docs/bindings.md, "Registration checks").
@Suite struct ModelBindingOrder {
    /// Three features whose bindings all watch `Source`; each binding records its
    /// name through a `then.call` handler. `Late` is registered first but declares
    /// its bindings on a feature registered after it in the same call.
    static let watchers = """
    [{"feature": "Early", "states": {"E": {}},
      "bindings": [{"scenario": "early 1", "when": "AnyMutationOf<Source>", "then": {"call": "log"}},
                   {"scenario": "early 2", "when": "Initialization<Source>", "then": {"call": "log"}}]},
     {"feature": "Source", "states": {"S": {}, "T": {}},
      "bindings": [{"scenario": "source 1", "when": "AnyMutation", "then": {"call": "log"}},
                   {"scenario": "source 2", "when": "InitializationInto<Source.S>", "then": {"call": "log"}}]},
     {"feature": "Late", "states": {"L": {}},
      "bindings": [{"scenario": "late 1", "when": "SettingInto<Source.S>", "then": {"call": "log"}}]}]
    """

    /// A dispatcher with the definitions and a `then` handler named `log` that does
    /// nothing: the reporter's `binding_processed` reports give the order.
    private func harness(_ definitions: String) -> Harness {
        let h = Harness()
        precondition(uf_register_handler(h.d, "log", { _, _ in 0 }, nil, nil) == UF_OK)
        precondition(uf_register(h.d, definitions) == UF_OK, String(cString: uf_last_error()))
        h.captureReports()
        return h
    }

    private func bindingOrder(_ reports: [String]) -> [String] {
        reports.compactMap { report -> String? in
            guard report.contains(#""event":"binding_processed""#),
                  let start = report.firstRange(of: #""binding":""#)?.upperBound,
                  let end = report[start...].firstIndex(of: "\"") else { return nil }
            return String(report[start..<end])
        }
    }

    @Test func bindingsRunInFeatureRegistrationOrderThenDeclarationOrderBeforeSubscribers() {
        let h = harness(Self.watchers)
        for feature in ["Early", "Late"] {
            h.submit(#"{"kind":"initialize","feature":"\#(feature)","into":"\#(feature.prefix(1))"}"#)
        }
        final class Marks { var reportsSeen: [Int] = [] }
        let marks = Marks()
        h.subscribe("AnyMutationOf<Source>") { [unowned h] _ in
            marks.reportsSeen.append(h.reports.count)
            return 0
        }
        h.reports.removeAll()
        #expect(h.submit(#"{"kind":"initialize","feature":"Source","into":"S"}"#) == UF_OK)
        // Early (registered first) before Source before Late; in each, array order.
        #expect(bindingOrder(h.reports) == ["early 1", "early 2", "source 1", "source 2", "late 1"])
        // The subscriber ran after the five binding reports, and the action's own
        // report came after the subscriber.
        #expect(marks.reportsSeen == [5])
        #expect(h.reports.count == 6)
        #expect(h.reports.last?.hasPrefix(#"{"event":"processed""#) == true)
    }

    @Test func aCascadeAcrossThreeFeaturesRunsInQueueOrder() {
        let h = Harness("""
        [{"feature": "A", "states": {"Idle": {}, "Go": {}},
          "bindings": [{"scenario": "A starts B", "when": "TransitionInto<A.Go>",
                        "then": {"submit": [{"kind": "initialize", "feature": "B", "into": "Step",
                                             "payload": {"n": {"$": {"+": [1, 0]}}}}]}}]},
         {"feature": "B", "states": {"Step": {"fields": {"n": "integer"}}},
          "bindings": [{"scenario": "B starts C", "when": "InitializationInto<B.Step>",
                        "then": {"submit": [{"kind": "initialize", "feature": "C", "into": "Done",
                                             "payload": {"total": {"$": {"+": [{"var": "mutation.new.payload.n"}, 1]}}}}]}}]},
         {"feature": "C", "states": {"Done": {"fields": {"total": "integer"}}},
          "bindings": [{"scenario": "C resets A", "when": "Initialization<C>",
                        "then": {"submit": [{"kind": "transition", "feature": "A", "from": "Go", "into": "Idle"}]}}]}]
        """)
        let recorder = h.record()
        h.submit(#"{"kind":"initialize","feature":"A","into":"Idle"}"#)
        recorder.mutations.removeAll()
        // After A -> Go, A's binding starts B, B's binding initializes C, and C's
        // binding (active from C's own initialization) sends A back to Idle.
        #expect(h.submit(#"{"kind":"transition","feature":"A","into":"Go"}"#) == UF_OK)
        #expect(h.state == #"{"A":{"state":"Idle","payload":{}},"B":{"state":"Step","payload":{"n":1}},"C":{"state":"Done","payload":{"total":2}}}"#)
        let kinds = recorder.mutations.map { m -> String in
            let feature = m.firstRange(of: #""feature":""#).map { m[$0.upperBound...].prefix(1) } ?? "?"
            let kind = m.firstRange(of: #""kind":""#).map { m[$0.upperBound...].prefix(4) } ?? "?"
            return "\(feature) \(kind)"
        }
        #expect(kinds == ["A tran", "B init", "C init", "A tran"])
    }

    @Test func aThenHandlerReturningMinusOneRejectsTheBindingWithCallbackStatus() {
        let h = Harness()
        #expect(uf_register_handler(h.d, "fails", { _, _ in -1 }, nil, nil) == UF_OK)
        #expect(uf_register(h.d, """
        {"feature": "A", "states": {"X": {}, "Y": {}},
         "bindings": [{"scenario": "call fails", "when": "InitializationInto<A.X>",
                       "then": {"call": "fails",
                                "submit": [{"kind": "transition", "feature": "A", "into": "Y"}]}}]}
        """) == UF_OK)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#) == UF_OK)
        // The call runs first and fails: the submit is not queued.
        #expect(h.state == #"{"A":{"state":"X","payload":{}}}"#)
        let rejected = h.reports.filter { $0.contains(#""event":"binding_rejected""#) }
        #expect(rejected.count == 1)
        #expect(rejected.first?.contains(#""status":"UF_ECALLBACK""#) == true)
        #expect(rejected.first?.contains(#""reason":"handler 'fails' failed (returned -1)""#) == true)
        #expect(rejected.first?.contains(#""binding":"call fails""#) == true)
    }

    @Test func aGivenHandlerReturningMinusOneRejectsTheBindingWithCallbackStatus() {
        let h = Harness()
        #expect(uf_register_handler(h.d, "fails", { _, _ in -1 }, nil, nil) == UF_OK)
        #expect(uf_register(h.d, """
        {"feature": "A", "states": {"X": {}, "Y": {}},
         "bindings": [{"scenario": "given fails", "when": "InitializationInto<A.X>",
                       "given": [{"call": "fails"}],
                       "then": {"submit": [{"kind": "transition", "feature": "A", "into": "Y"}]}}]}
        """) == UF_OK)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#) == UF_OK)
        #expect(h.state == #"{"A":{"state":"X","payload":{}}}"#)
        let rejected = h.reports.filter { $0.contains(#""event":"binding_rejected""#) }
        #expect(rejected.count == 1)
        #expect(rejected.first?.contains(#""status":"UF_ECALLBACK""#) == true)
        #expect(rejected.first?.contains(#""binding":"given fails""#) == true)
    }

    /// FAILING today: UF_EEXISTS ("features[0]: feature 'Toggle' is already
    /// registered") wins over the binding's missing `then`. Registration checks shapes
    /// (rules included) before names (filters, handlers), as actions are checked
    /// (docs/bindings.md, "Registration checks") — and a malformed `initial` already
    /// wins over UF_EEXISTS.
    @Test func aMalformedBindingIsASchemaErrorEvenWhenTheFeatureNameIsTaken() {
        let h = Harness(Seeds.toggle)
        let bad = #"{"feature":"Toggle","states":{"On":{}},"bindings":[{"when":"AnyMutation"}]}"#
        #expect(uf_register(h.d, bad) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].bindings[0]: missing key 'then'")
        // For comparison, a state-level shape error already does win:
        #expect(uf_register(h.d, #"{"feature":"Toggle","states":{"On":{}},"initial":["Nope"]}"#) == UF_ESCHEMA)
    }

    /// A feature's bindings are active from its initialization to its
    /// deinitialization, both included: they see their own feature's init and deinit
    /// (docs/bindings.md, "When bindings run").
    @Test func aFeaturesBindingsSeeItsOwnInitializationAndDeinitialization() {
        let h = Harness("""
        [{"feature": "Log", "states": {"Count": {"fields": {"n": "integer"}}}},
         {"feature": "Own", "states": {"X": {}},
          "bindings": [{"scenario": "saw init", "when": "Initialization<Own>",
                        "then": {"submit": [{"kind": "initialize", "feature": "Log", "into": "Count", "payload": {"n": 1}}]}},
                       {"scenario": "saw deinit", "when": "Deinitialization<Own>",
                        "then": {"submit": [{"kind": "actualize", "feature": "Log", "in": "Count",
                                             "payload": {"n": {"$": {"+": [{"var": "model.Log.payload.n"}, 1]}}}}]}}]}]
        """)
        #expect(h.submit(#"{"kind":"initialize","feature":"Own","into":"X"}"#) == UF_OK)
        #expect(h.state == #"{"Log":{"state":"Count","payload":{"n":1}},"Own":{"state":"X","payload":{}}}"#)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Own"}"#) == UF_OK)
        #expect(h.state == #"{"Log":{"state":"Count","payload":{"n":2}}}"#)
    }
}
