import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A guard shortcut answers what the JsonLogic evaluator answers, or nothing: every
/// rule below, over every pair of payloads, is decided by the shortcut (when it
/// decides) exactly as `uf_logic_apply` decides it over `{event, feature}`.
@Suite struct GuardShortcutTests {
    static let rules = [
        #"{"var": "event.payload.ok"}"#,
        #"{"var": ["feature.payload.ok"]}"#,
        #"{"!": {"var": "event.payload.ok"}}"#,
        #"{"!": [{"var": "feature.payload.ok"}]}"#,
        #"{"!!": {"var": "event.payload.ok"}}"#,
        #"{"<": [{"var": "event.payload.n"}, 100]}"#,
        #"{"<=": [{"var": "event.payload.n"}, 100]}"#,
        #"{">": [100, {"var": "feature.payload.n"}]}"#,
        #"{">=": [{"var": "event.payload.n"}, 0.5]}"#,
        #"{"==": [{"var": "event.payload.n"}, 100]}"#,
        #"{"===": [{"var": "event.payload.n"}, 100]}"#,
        #"{"!=": [{"var": "event.payload.n"}, 100]}"#,
        #"{"!==": [100, {"var": "event.payload.n"}]}"#,
    ]

    static let payloads = [
        "{}", #"{"ok": true}"#, #"{"ok": false}"#, #"{"ok": 0}"#, #"{"ok": ""}"#, #"{"ok": "yes"}"#,
        #"{"ok": []}"#, #"{"ok": [0]}"#, #"{"ok": {}}"#, #"{"ok": null}"#, #"{"n": 99}"#, #"{"n": 100}"#,
        #"{"n": 100.0}"#, #"{"n": 100.5}"#, #"{"n": -1}"#, #"{"n": "100"}"#, #"{"n": null}"#, #"{"n": true}"#,
        #"{"n": [100]}"#,
    ]

    /// What the evaluator says.
    static func evaluate(_ rule: String, event: String, feature: String) -> Bool? {
        var out: UnsafeMutablePointer<CChar>? = nil
        let data = #"{"event": {"name": "e", "payload": \#(event)}, "feature": {"state": "S", "payload": \#(feature)}}"#
        guard uf_logic_apply(rule, data, &out) == Int32(UF_OK), let out else { return nil }
        defer { uf_free(out) }
        guard let value = try? JSONParser.parse(String(cString: out)) else { return nil }
        return isTruthy(value)
    }

    @Test func everyRuleHereHasAShortcut() throws {
        for rule in Self.rules {
            #expect(GuardShortcut(try JSONParser.parse(rule)) != nil, "\(rule)")
        }
    }

    @Test func theShortcutAgreesWithTheEvaluator() throws {
        var decided = 0
        for rule in Self.rules {
            let shortcut = try #require(GuardShortcut(try JSONParser.parse(rule)))
            for event in Self.payloads {
                for feature in ["{}", #"{"ok": 1, "n": 50}"#, #"{"n": "x"}"#] {
                    let eventObject = try JSONParser.parse(event).objectValue
                    let featureObject = try JSONParser.parse(feature).objectValue
                    guard let answer = shortcut.decide(eventPayload: eventObject, featurePayload: featureObject) else { continue }
                    decided += 1
                    #expect(answer == Self.evaluate(rule, event: event, feature: feature),
                            "\(rule) over event \(event), feature \(feature)")
                }
            }
        }
        #expect(decided > 300)
    }

    @Test func otherShapesGoToTheEvaluator() throws {
        for rule in [#"{"var": "model.F.state"}"#, #"{"var": "event.name"}"#, #"{"var": ["event.payload.ok", true]}"#,
                     #"{"var": "event.payload.a.b"}"#, #"{"<": [{"var": "event.payload.n"}, "100"]}"#,
                     #"{"<": [1, {"var": "event.payload.n"}, 3]}"#, #"{"and": [true, {"var": "event.payload.ok"}]}"#,
                     #"{"!": [{"var": "event.payload.ok"}, 1]}"#, "true"] {
            #expect(GuardShortcut(try JSONParser.parse(rule)) == nil, "\(rule)")
        }
        // A comparison with something not a number is the evaluator's (JavaScript coerces).
        let shortcut = try #require(GuardShortcut(try JSONParser.parse(#"{"<": [{"var": "event.payload.n"}, 100]}"#)))
        #expect(shortcut.decide(eventPayload: try JSONParser.parse(#"{"n": "5"}"#).objectValue, featurePayload: nil) == nil)
        #expect(shortcut.decide(eventPayload: nil, featurePayload: nil) == nil)
    }
}
