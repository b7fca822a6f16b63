import Testing
@testable import UniFlow

private func decode(_ text: String) throws -> ActionRequest {
    try ActionRequest.decode(try JSONParser.parse(text))
}

private func expectRefused(_ text: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let json = try JSONParser.parse(text)
    #expect(throws: UniFlowError(.schema, message), sourceLocation: sourceLocation) {
        try ActionRequest.decode(json)
    }
}

/// The decoded fields in one comparable line, so each test asserts the whole request.
private func summary(_ r: ActionRequest) -> String {
    var parts = ["\(r.kind.rawValue) \(r.feature)"]
    if let from = r.from { parts.append("from=\(from)") }
    if let into = r.into { parts.append("into=\(into)") }
    if let payload = r.payload { parts.append("payload=\(JSONValue.object(payload).jsonText)") }
    if r.same { parts.append("same") }
    if r.uninitialized { parts.append("uninitialized") }
    if let scope = r.scope { parts.append("scope=\(scope)") }
    if let context = r.context { parts.append("context=\(context)") }
    if let id = r.id { parts.append("id=\(id)") }
    if !r.submit.isEmpty { parts.append("submit=[\(r.submit.map(summary).joined(separator: "; "))]") }
    return parts.joined(separator: " ")
}

@Suite struct ActionDecodingTests {
    /// The twelve action forms, in the order of docs/actions.md's table.
    @Test(arguments: [
        (#"{"kind":"initialize","feature":"F","into":"S"}"#, "initialize F into=S"),
        (#"{"kind":"initialize","feature":"F","into":"S","payload":{"p":1}}"#, #"initialize F into=S payload={"p":1}"#),
        (#"{"kind":"actualize","feature":"F","in":"S","payload":{}}"#, "actualize F into=S payload={}"),
        (#"{"kind":"transition","feature":"F","from":"A","into":"B"}"#, "transition F from=A into=B"),
        (#"{"kind":"transition","feature":"F","from":"A","into":"B","payload":{"p":[]}}"#, #"transition F from=A into=B payload={"p":[]}"#),
        (#"{"kind":"transition","feature":"F","into":"S","same":false}"#, "transition F into=S"),
        (#"{"kind":"transition","feature":"F","into":"S","same":true,"payload":{}}"#, "transition F into=S payload={} same"),
        (#"{"kind":"deinitialize","feature":"F"}"#, "deinitialize F"),
        (#"{"kind":"deinitialize","feature":"F","from":"S"}"#, "deinitialize F from=S"),
        (#"{"kind":"trigger","feature":"F","initialized":false}"#, "trigger F uninitialized"),
        (#"{"kind":"trigger","feature":"F","initialized":true}"#, "trigger F"),
        (#"{"kind":"trigger","feature":"F","in":"S"}"#, "trigger F from=S"),
    ])
    func everyFormDecodes(text: String, expected: String) throws {
        #expect(summary(try decode(text)) == expected)
    }

    @Test func aTriggerWithoutInOrInitializedRequiresAnInitializedFeature() throws {
        let request = try decode(#"{"kind":"trigger","feature":"F"}"#)
        #expect(summary(request) == "trigger F")
    }

    @Test func everyKindCarriesScopeContextAndId() throws {
        for kind in ActionKind.allCases {
            let key = switch kind {
            case .initialize, .transition: #","into":"S""#
            case .actualize: #","in":"S""#
            case .deinitialize, .trigger: ""
            case .send: #","event":"E""#
            }
            let request = try decode(#"{"kind":"\#(kind.rawValue)","feature":"F"\#(key),"scope":"a.c","context":"main","id":"7"}"#)
            #expect(request.scope == "a.c")
            #expect(request.context == "main")
            #expect(request.id == "7")
        }
    }

    @Test func namesAreLeftToTheDispatcher() throws {
        #expect(summary(try decode(#"{"kind":"initialize","feature":"","into":"not a name"}"#)) == "initialize  into=not a name")
    }

    @Test func aTriggerDecodesItsSubmitListRecursively() throws {
        let request = try decode(#"""
            {"kind":"trigger","feature":"F","in":"A","id":"t","submit":[
              {"kind":"transition","feature":"F","from":"A","into":"B"},
              {"kind":"trigger","feature":"G","submit":[{"kind":"deinitialize","feature":"G"}]}]}
            """#)
        #expect(summary(request) == "trigger F from=A id=t submit=[transition F from=A into=B; trigger G submit=[deinitialize G]]")
    }

    // MARK: Refused actions

    @Test(arguments: [
        ("[]", "action must be an object, got array"),
        ("3", "action must be an object, got number"),
        (#"{"feature":"F"}"#, "action: missing key 'kind'"),
        (#"{"kind":1,"feature":"F"}"#, "action.kind: expected string, got number"),
        (#"{"kind":"reset","feature":"F"}"#,
         "action.kind: unknown kind 'reset' (expected initialize, actualize, transition, deinitialize, trigger or send)"),
        (#"{"kind":"initialize","into":"S"}"#, "action: missing key 'feature'"),
        (#"{"kind":"initialize","feature":null,"into":"S"}"#, "action.feature: expected string, got null"),
        (#"{"kind":"initialize","feature":"F"}"#, "action: missing key 'into'"),
        (#"{"kind":"initialize","feature":"F","into":5}"#, "action.into: expected string, got number"),
        (#"{"kind":"actualize","feature":"F","payload":{}}"#, "action: missing key 'in'"),
        (#"{"kind":"transition","feature":"F","from":"A"}"#, "action: missing key 'into'"),
        (#"{"kind":"transition","feature":"F","form":"A","into":"B"}"#, "action: unknown key 'form'"),
        (#"{"kind":"initialize","feature":"F","from":"A","into":"B"}"#, "action: 'from' cannot be used with kind 'initialize'"),
        (#"{"kind":"actualize","feature":"F","into":"S"}"#, "action: 'into' cannot be used with kind 'actualize'"),
        (#"{"kind":"transition","feature":"F","in":"S"}"#, "action: 'in' cannot be used with kind 'transition'"),
        (#"{"kind":"deinitialize","feature":"F","payload":{}}"#, "action: 'payload' cannot be used with kind 'deinitialize'"),
        (#"{"kind":"initialize","feature":"F","into":"S","submit":[]}"#, "action: 'submit' cannot be used with kind 'initialize'"),
        (#"{"kind":"trigger","feature":"F","same":true}"#, "action: 'same' cannot be used with kind 'trigger'"),
        (#"{"kind":"transition","feature":"F","from":"A","into":"B","same":true}"#, "action: 'same' cannot be used with 'from'"),
        (#"{"kind":"transition","feature":"F","from":"A","into":"B","same":false}"#, "action: 'same' cannot be used with 'from'"),
        (#"{"kind":"transition","feature":"F","into":"B","same":"yes"}"#, "action.same: expected boolean, got string"),
        (#"{"kind":"transition","feature":"F","from":3,"into":"B"}"#, "action.from: expected string, got number"),
        (#"{"kind":"initialize","feature":"F","into":"S","payload":[1]}"#, "action.payload: expected object, got array"),
        (#"{"kind":"actualize","feature":"F","in":"S","payload":null}"#, "action.payload: expected object, got null"),
        (#"{"kind":"deinitialize","feature":"F","scope":1}"#, "action.scope: expected string, got number"),
        (#"{"kind":"deinitialize","feature":"F","context":{}}"#, "action.context: expected string, got object"),
        (#"{"kind":"deinitialize","feature":"F","id":7}"#, "action.id: expected string, got number"),
        (#"{"kind":"trigger","feature":"F","in":"S","initialized":true}"#, "action: 'initialized' cannot be used with 'in'"),
        (#"{"kind":"trigger","feature":"F","initialized":1}"#, "action.initialized: expected boolean, got number"),
        (#"{"kind":"trigger","feature":"F","in":false}"#, "action.in: expected string, got boolean"),
        (#"{"kind":"trigger","feature":"F","submit":{}}"#, "action.submit: expected array, got object"),
    ])
    func shapeErrorsNameTheKey(text: String, message: String) throws {
        try expectRefused(text, message)
    }

    @Test func errorsInsideSubmitNameTheIndex() throws {
        try expectRefused(#"{"kind":"trigger","feature":"F","submit":[{"kind":"deinitialize","feature":"F"},"x"]}"#,
                          "submit[1]: action must be an object, got string")
        try expectRefused(#"""
            {"kind":"trigger","feature":"F","submit":[
              {"kind":"trigger","feature":"F","submit":[{"kind":"deinitialize","feature":"F"},{"kind":"deinitialize"}]}]}
            """#, "submit[0]: submit[1]: action: missing key 'feature'")
    }

    @Test func nestingIsLimitedTo256Levels() throws {
        /// A trigger whose submit list nests `levels` more triggers: 1 + 2 * levels JSON levels.
        func nested(_ levels: Int) -> JSONValue {
            var action: JSONValue = ["kind": "trigger", "feature": "F"]
            for _ in 0..<levels { action = ["kind": "trigger", "feature": "F", "submit": [action]] }
            return action
        }
        _ = try ActionRequest.decode(nested(127))
        do {
            _ = try ActionRequest.decode(nested(128))
            Issue.record("decoded 257 levels")
        } catch {
            #expect(error.status == .schema)
            #expect(error.message == String(repeating: "submit[0]: ", count: 128) + "action: actions nest deeper than 256 levels")
        }
    }
}
