import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Model bindings declared in definitions (docs/bindings.md).
@Suite struct ModelBindings {
    static let downloads = """
    {"feature": "FileDownloading",
     "states": {"Starting": {}, "InProgress": {"fields": {"progress": "number"}}, "Completed": {}},
     "bindings": [{
        "scenario": "Finish the download when progress reaches 100",
        "when": "ActualizationIn<FileDownloading.InProgress>",
        "given": [{"spec": "progress is complete", "if": {">=": [{"var": "mutation.new.payload.progress"}, 100]}}],
        "then": {"spec": "mark it completed",
                 "submit": [{"kind": "transition", "feature": "FileDownloading", "from": "InProgress", "into": "Completed"}]}}]}
    """

    static let stats = """
    {"feature": "Stats", "states": {"Counting": {"fields": {"completed": {"type": "integer", "default": 0}}}},
     "bindings": [{
        "when": "TransitionInto<FileDownloading.Completed>",
        "then": {"submit": [{"kind": "actualize", "feature": "Stats", "in": "Counting",
                             "payload": {"completed": {"$": {"+": [{"var": "model.Stats.payload.completed"}, 1]}}}}]}}]}
    """

    /// JSON does not tell integers apart: a number is a number in every message.
    @Test(arguments: [
        (#"{"when": 1, "then": {}}"#, "features[0].bindings[0].when: expected string, got number"),
        (#"{"when": "AnyMutation", "then": {"submit": [1]}}"#, "features[0].bindings[0].then.submit[0]: expected object, got number"),
        (#"{"when": "AnyMutation", "given": [2], "then": {}}"#, "features[0].bindings[0].given[0]: a given clause must be an object, got number"),
    ])
    func shapeErrorsNameNumbersAsJSONDoes(binding: String, message: String) {
        let h = Harness()
        #expect(uf_register(h.d, #"{"feature":"F","states":{"A":{}},"bindings":[\#(binding)]}"#) == UF_ESCHEMA)
        #expect(h.lastError == message)
    }

    @Test func progressReaching100CompletesTheDownload() {
        let h = Harness(Self.downloads)
        h.captureReports()
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"InProgress","payload":{"progress":0}}"#)
        h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":50}}"#)
        #expect(h.feature("FileDownloading") == #"{"state":"InProgress","payload":{"progress":50}}"#)
        #expect(h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":100}}"#) == UF_OK)
        #expect(h.feature("FileDownloading") == #"{"state":"Completed","payload":{}}"#)
        let processed = h.reports.filter { $0.contains(#""event":"binding_processed""#) }
        #expect(processed.count == 1)
        #expect(processed[0].contains(#""binding":"Finish the download when progress reaches 100""#))
        // Skipped bindings are not reported unless asked for.
        #expect(!h.reports.contains { $0.contains("binding_skipped") })
    }

    @Test func aCounterInAnotherFeatureCountsCompletions() {
        let h = Harness(Self.downloads, Self.stats)
        h.submit(#"{"kind":"initialize","feature":"Stats","into":"Counting"}"#)
        for _ in 0..<3 {
            h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"InProgress","payload":{"progress":0}}"#)
            h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":100}}"#)
            h.submit(#"{"kind":"deinitialize","feature":"FileDownloading"}"#)
        }
        #expect(h.feature("Stats") == #"{"state":"Counting","payload":{"completed":3}}"#)
    }

    @Test func bindingsAreActiveOnlyWhileTheirFeatureIsInitialized() {
        let h = Harness(Self.downloads, Self.stats)
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"InProgress","payload":{"progress":100}}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"Completed"}"#) == UF_OK)
        #expect(h.feature("Stats") == nil)
    }

    @Test func skippedBindingsAreReportedWhenAskedFor() {
        let h = Harness(options: #"{"report_skipped":true}"#, Self.downloads)
        h.captureReports()
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"InProgress","payload":{"progress":0}}"#)
        h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":10}}"#)
        #expect(h.reports.filter { $0.contains(#""event":"binding_skipped""#) }.count == 1)
    }

    @Test func aTemplateThatProducesAnInvalidActionRejectsTheBindingOnly() {
        let h = Harness("""
        {"feature": "A", "states": {"X": {}, "Y": {"fields": {"n": "integer"}}},
         "bindings": [
           {"scenario": "bad", "when": "InitializationInto<A.X>",
            "then": {"submit": [{"kind": "transition", "feature": "A", "into": "Y", "payload": {"n": {"$": {"cat": ["a", "b"]}}}}]}},
           {"scenario": "good", "when": "InitializationInto<A.X>",
            "then": {"submit": [{"kind": "transition", "feature": "A", "into": "Y", "payload": {"n": {"$": {"+": [1, 1]}}}}]}}]}
        """)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#) == UF_OK)
        #expect(h.feature("A") == #"{"state":"Y","payload":{"n":2}}"#)
        let rejected = h.reports.filter { $0.contains("binding_rejected") }
        #expect(rejected.count == 1)
        #expect(rejected[0].contains(#""binding":"bad""#))
        #expect(rejected[0].contains(#""status":"UF_ESCHEMA""#))
        #expect(rejected[0].contains("A.Y.n: expected integer, got string"))
    }

    @Test func aRuleErrorRejectsTheBinding() {
        let h = Harness("""
        {"feature": "A", "states": {"X": {}},
         "bindings": [{"scenario": "divides", "when": "Initialization<A>",
                       "given": [{"map": {"/": [1, 0]}}], "then": {"submit": []}}]}
        """)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#) == UF_OK)
        #expect(h.reports.contains { $0.contains("binding_rejected") && $0.contains("rule error") && $0.contains(#""status":"UF_ESCHEMA""#) })
    }

    @Test func aRuleErrorInATemplateReadsLikeOneInAGivenClause() {
        let h = Harness("""
        {"feature": "A", "states": {"X": {}, "Y": {"fields": {"n": "number"}}},
         "bindings": [{"scenario": "divides late", "when": "Initialization<A>",
                       "then": {"submit": [{"kind": "transition", "feature": "A", "into": "Y",
                                            "payload": {"n": {"$": {"/": [1, 0]}}}}]}}]}
        """)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#) == UF_OK)
        #expect(h.reports.contains(#"{"event":"binding_rejected","action":{"kind":"initialize","feature":"A","into":"X"},"status":"UF_ESCHEMA","reason":"then.submit[0]: rule error: rule result is not a finite number","binding":"divides late"}"#),
                "\(h.reports)")
        #expect(h.state == #"{"A":{"state":"X","payload":{}}}"#)
    }

    @Test func handlersDecideMapAndAct() {
        let h = Harness()
        final class Log { var entries: [String] = [] }
        let log = Log()
        let payload = Unmanaged.passRetained(log).toOpaque()
        let release: @convention(c) (UnsafeMutableRawPointer?) -> Void = { Unmanaged<Log>.fromOpaque($0!).release() }
        let approve = uf_register_handler(h.d, "approve", { call, payload in
            let log = Unmanaged<Log>.fromOpaque(payload!).takeUnretainedValue()
            log.entries.append("approve given=\(String(cString: uf_binding_call_given_json(call)))")
            log.entries.append("output=\(uf_binding_call_set_output(call, #"{"ok":true}"#))")
            return 1
        }, payload, release)
        #expect(approve == UF_OK)
        let act = uf_register_handler(h.d, "act", { call, payload in
            let log = Unmanaged<Log>.fromOpaque(payload!).takeUnretainedValue()
            log.entries.append("act given=\(String(cString: uf_binding_call_given_json(call)))")
            log.entries.append("output=\(uf_binding_call_set_output(call, "1"))")
            log.entries.append("initialization=\(String(cString: uf_binding_call_mutation_json(call)).contains(#""kind":"initialization""#))")
            return 0
        }, payload, nil)
        #expect(act == UF_OK)
        #expect(uf_register_handler(h.d, "act", { _, _ in 0 }, nil, nil) == UF_EEXISTS)
        #expect(uf_register(h.d, """
        {"feature": "A", "states": {"X": {}},
         "bindings": [{"when": "Initialization<A>", "given": [{"map": 5}, {"call": "approve"}], "then": {"call": "act"}}]}
        """) == UF_OK)
        h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#)
        #expect(log.entries == ["approve given=5", "output=0", #"act given={"ok":true}"#, "output=-9", "initialization=true"])
    }

    @Test func registrationChecksShapesRulesAndNames() {
        let h = Harness(Seeds.toggle)
        func register(_ bindings: String) -> (Int32, String) {
            let status = uf_register(h.d, #"{"feature":"B","states":{"X":{}},"bindings":\#(bindings)}"#)
            return (status, h.lastError)
        }
        #expect(register(#"[{"when":"AnyMutation"}]"#) == (UF_ESCHEMA, "features[0].bindings[0]: missing key 'then'"))
        #expect(register(#"[{"when":"AnyMutation","then":{}}]"#) == (UF_ESCHEMA, "features[0].bindings[0].then: needs 'submit' and/or 'call'"))
        #expect(register(#"[{"when":"AnyMutation","then":{"submit":[]},"given":[{"if":true,"map":1}]}]"#).0 == UF_ESCHEMA)
        #expect(register(#"[{"when":"AnyMutation","then":{"submit":[]},"given":[{"if":{"nope":[1]}}]}]"#).0 == UF_ESCHEMA)
        #expect(register(#"[{"when":"AnyMutation","then":{"submit":[]},"given":[{"if":{"nope":[1]}}]}]"#).1.hasPrefix("features[0].bindings[0].given[0].if"))
        #expect(register(#"[{"when":"AnyMutationOf<Nope>","then":{"submit":[]}}]"#).0 == UF_ENOTFOUND)
        #expect(register(#"[{"when":"AnyMutation","then":{"call":"missing"}}]"#) == (UF_ENOTFOUND, "features[0].bindings[0].then.call: unknown handler 'missing'"))
        #expect(register(#"[{"when":"AnyMutationOf<Toggle>","then":{"submit":[{"kind":"trigger","feature":"B"}]}}]"#).0 == UF_OK)
    }

    @Test func aBindingCycleIsStoppedByTheCascadeLimit() {
        let h = Harness(options: #"{"max_cascade":50}"#, """
        {"feature": "Ping", "states": {"A": {}, "B": {}},
         "bindings": [{"scenario": "flip", "when": "AnyMutationOf<Ping>",
                       "then": {"submit": [{"kind": "transition", "feature": "Ping", "into": {"$": {"if": [{"==": [{"var": "mutation.new.state"}, "A"]}, "B", "A"]}}}]}}]}
        """)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"Ping","into":"A"}"#) == UF_OK)
        #expect(h.reports.filter { $0.contains(#""event":"processed""#) }.count == 50)
        #expect(h.reports.contains { $0.contains(#""event":"dropped""#) && $0.contains("UF_ELOOP") })
    }

    @Test func logicApplyEvaluatesRules() {
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_logic_apply(#"{"cat":[false,[1,2]]}"#, nil, &out) == UF_OK)
        #expect(String(cString: out!) == #""false1,2""#)
        uf_free(out)
        #expect(uf_logic_apply(#"{"var":"a.b"}"#, #"{"a":{"b":[1]}}"#, &out) == UF_OK)
        #expect(String(cString: out!) == "[1]")
        uf_free(out)
        #expect(uf_logic_apply(#"{"nope":1}"#, nil, &out) == UF_ESCHEMA)
        #expect(out == nil)
        #expect(uf_logic_apply(#"{"/":[1,0]}"#, nil, &out) == UF_ESCHEMA)
        #expect(uf_logic_apply(nil, nil, &out) == UF_EINVAL)
    }
}
