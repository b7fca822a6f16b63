import CUniFlow
import Testing
@testable import UniFlow

/// The FileDownloading definition of docs/definitions.md, used as the well-formed base of these tests.
private let fileDownloading = #"""
{
  "feature": "FileDownloading",
  "description": "Downloads one file",
  "states": {
    "Starting":   {},
    "InProgress": {"fields": {"progress": "number"}},
    "Completed":  {"description": "done"},
    "Failed":     {"fields": {"reason": "string",
                              "code": {"type": "integer", "optional": true},
                              "retries": {"type": "integer", "default": 0.0, "description": "so far"}}}
  },
  "initial": ["Starting"],
  "transitions": {"Starting": ["InProgress", "Failed"],
                  "InProgress": ["InProgress", "Completed", "Failed"]},
  "bindings": [{"when": "AnyMutation", "then": {"call": "log"}}]
}
"""#

private func parse(_ text: String) throws -> [FeatureDefinition] {
    try DefinitionParser.parse(try JSONParser.parse(text))
}

/// Expects `text` to be refused with exactly this status and message.
private func expectRefused(_ text: String, _ message: String, status: Status = .schema,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
    let json = try JSONParser.parse(text)
    #expect(throws: UniFlowError(status, message), sourceLocation: sourceLocation) {
        try DefinitionParser.parse(json)
    }
}

@Suite struct DefinitionParserTests {
    // MARK: Accepted shapes

    @Test func aSingleDefinitionObjectGivesEveryPartInDeclarationOrder() throws {
        let json = try JSONParser.parse(fileDownloading)
        let definitions = try DefinitionParser.parse(json)
        #expect(definitions.count == 1)
        let definition = try #require(definitions.first)
        #expect(definition.name == "FileDownloading")
        #expect(definition.description == "Downloads one file")
        #expect(definition.states.map(\.name) == ["Starting", "InProgress", "Completed", "Failed"])
        #expect(definition.states.map(\.description) == [nil, nil, "done", nil])
        #expect(definition.states.map(\.isAuto) == [true, false, true, false])
        #expect(definition.initial == [0])
        #expect(definition.transitions == [[1, 3], [1, 2, 3], [], []])
        #expect(definition.bindings == [["when": "AnyMutation", "then": ["call": "log"]]])
        #expect(definition.source.jsonText == json.jsonText)

        let failed = definition.states[3].fields
        #expect(failed.map(\.name) == ["reason", "code", "retries"])
        #expect(failed.map(\.type) == [.string, .integer, .integer])
        #expect(failed.map(\.optional) == [false, true, false])
        #expect(failed.map(\.isRequired) == [true, false, false])
        #expect(failed.map(\.description) == [nil, nil, "so far"])
        // The integer default is stored as an integer, however it was spelled.
        #expect(failed[2].defaultValue?.jsonText == "0")
        #expect(failed[1].defaultValue == nil)
    }

    @Test func anArrayOfDefinitionsKeepsItsOrder() throws {
        let definitions = try parse(#"[\#(fileDownloading), {"feature": "Auth", "states": {"LoggedOut": {}}}]"#)
        #expect(definitions.map(\.name) == ["FileDownloading", "Auth"])
    }

    @Test func aFeaturesWrapperIsAccepted() throws {
        let definitions = try parse(#"{"features": [{"feature": "Auth", "states": {"LoggedOut": {}, "LoggedIn": {}}}]}"#)
        #expect(definitions.map(\.name) == ["Auth"])
        #expect(definitions[0].states.map(\.name) == ["LoggedOut", "LoggedIn"])
    }

    @Test func aSchemaReferenceIsAcceptedOnTheDocumentAndIgnored() throws {
        let wrapped = try parse(#"{"$schema": "schema/uniflow-definitions.schema.json", "features": [{"feature": "A", "states": {"S": {}}}]}"#)
        #expect(wrapped.map(\.name) == ["A"])
        let single = try parse(#"{"$schema": "https://example.org/s.json", "feature": "B", "states": {"S": {}}}"#)
        #expect(single.map(\.name) == ["B"])
        #expect(single[0].states.map(\.name) == ["S"])
    }

    @Test func emptyListsDefineNothing() throws {
        #expect(try parse("[]").isEmpty)
        #expect(try parse(#"{"features": []}"#).isEmpty)
    }

    @Test func aMinimalDefinitionAllowsEveryInitialStateAndTransition() throws {
        let definition = try #require(try parse(#"{"feature": "_T1", "states": {"a": {"fields": {}}}}"#).first)
        #expect(definition.description == nil)
        #expect(definition.initial == nil)
        #expect(definition.transitions == nil)
        #expect(definition.bindings.isEmpty)
        #expect(definition.states[0].fields.isEmpty)
    }

    @Test func emptyTransitionsAllowNoTransitionAtAll() throws {
        let definition = try #require(try parse(#"{"feature": "T", "states": {"A": {}, "B": {}}, "transitions": {}}"#).first)
        #expect(definition.transitions == [[], []])
        #expect(!definition.allowsTransition(from: 0, into: 1))
    }

    @Test func everyFieldTypeAndDefaultIsAccepted() throws {
        let definition = try #require(try parse(#"""
            {"feature": "T", "states": {"S": {"fields": {
              "s": {"type": "string", "default": "x"}, "n": {"type": "number", "default": 1.5},
              "i": {"type": "integer", "default": -9007199254740992}, "b": {"type": "boolean", "default": false},
              "o": {"type": "object", "default": {"k": [1]}}, "a": {"type": "array", "default": []},
              "y": {"type": "any", "default": null}, "z": {"type": "any", "optional": true, "default": 3}}}}}
            """#).first)
        let fields = definition.states[0].fields
        #expect(fields.map(\.type) == [.string, .number, .integer, .boolean, .object, .array, .any, .any])
        #expect(fields.map { $0.defaultValue?.jsonText } == ["\"x\"", "1.5", "-9007199254740992", "false", #"{"k":[1]}"#, "[]", "null", "3"])
        #expect(definition.states[0].isAuto)
    }

    @Test func namesMayHave256BytesButNotMore() throws {
        let longest = "N" + String(repeating: "_9", count: 127) + "x"
        #expect(longest.utf8.count == 256)
        #expect(try parse(#"{"feature": "\#(longest)", "states": {"\#(longest)": {}}}"#)[0].name == longest)
        try expectRefused(#"{"feature": "\#(longest)x", "states": {"S": {}}}"#,
                          "features[0].feature: a name is at most 256 bytes, got 257")
    }

    @Test(arguments: [
        ("a", true), ("_", true), ("A_b9", true), ("", false), ("9a", false), ("a-b", false),
        ("a b", false), ("é", false), ("a.b", false),
    ])
    func theNamePattern(name: String, valid: Bool) {
        #expect(DefinitionParser.isValidName(name) == valid)
    }

    // MARK: Refused definitions

    @Test(arguments: [
        ("12", "definitions must be an object or an array, got number"),
        (#""FileDownloading""#, "definitions must be an object or an array, got string"),
        ("null", "definitions must be an object or an array, got null"),
        (#"{"features": {}}"#, "features: expected array, got object"),
        (#"{"features": [], "version": 1}"#, "definitions: unknown key 'version' next to 'features'"),
        (#"[{"feature": "A", "states": {"S": {}}}, 3]"#, "features[1]: expected object, got number"),
        (#"{"$schema": 1, "features": []}"#, "definitions.$schema: expected string, got number"),
        (#"{"$schema": null, "feature": "A", "states": {"S": {}}}"#, "features[0].$schema: expected string, got null"),
    ])
    func wrongTopLevelShapes(text: String, message: String) throws {
        try expectRefused(text, message)
    }

    @Test(arguments: [
        (#"{"feature": "F", "stats": {"S": {}}}"#, "features[0]: unknown key 'stats'"),
        (#"{"states": {"S": {}}}"#, "features[0]: missing key 'feature'"),
        (#"{"feature": "F"}"#, "features[0]: missing key 'states'"),
        (#"{"feature": 7, "states": {"S": {}}}"#, "features[0].feature: expected string, got number"),
        (#"{"feature": "a-b", "states": {"S": {}}}"#, "features[0].feature: 'a-b' is not a valid name"),
        (#"{"feature": "", "states": {"S": {}}}"#, "features[0].feature: '' is not a valid name"),
        (#"{"feature": "1F", "states": {"S": {}}}"#, "features[0].feature: '1F' is not a valid name"),
        (#"{"feature": "F", "description": ["x"], "states": {"S": {}}}"#, "features[0].description: expected string, got array"),
        (#"{"feature": "F", "instances": "many", "states": {"S": {}}}"#, #"features[0].instances: expected "single" or "keyed", got "many""#),
        (#"{"feature": "F", "instances": "Keyed", "states": {"S": {}}}"#, #"features[0].instances: expected "single" or "keyed", got "Keyed""#),
        (#"{"feature": "F", "instances": true, "states": {"S": {}}}"#, #"features[0].instances: expected "single" or "keyed", got true"#),
    ])
    func featureErrors(text: String, message: String) throws {
        try expectRefused(text, message)
    }

    @Test(arguments: [
        (#"{"feature": "F", "states": []}"#, "features[0].states: expected object, got array"),
        (#"{"feature": "F", "states": {}}"#, "features[0].states: must not be empty"),
        (#"{"feature": "F", "states": {"In Progress": {}}}"#, "features[0].states: 'In Progress' is not a valid name"),
        (#"{"feature": "F", "states": {"S": true}}"#, "features[0].states.S: expected object, got boolean"),
        (#"{"feature": "F", "states": {"S": {"field": {}}}}"#, "features[0].states.S: unknown key 'field'"),
        (#"{"feature": "F", "states": {"S": {"description": 1}}}"#, "features[0].states.S.description: expected string, got number"),
        (#"{"feature": "F", "states": {"S": {"fields": ["a"]}}}"#, "features[0].states.S.fields: expected object, got array"),
    ])
    func stateErrors(text: String, message: String) throws {
        try expectRefused(text, message)
    }

    @Test(arguments: [
        (#"{"p-q": "number"}"#, "features[0].states.S.fields: 'p-q' is not a valid name"),
        (#"{"p": "nubmer"}"#, "features[0].states.S.fields.p: unknown type 'nubmer'"),
        (#"{"p": 1}"#, "features[0].states.S.fields.p: expected a type name or an object, got number"),
        (#"{"p": {"type": "number", "optinal": true}}"#, "features[0].states.S.fields.p: unknown key 'optinal'"),
        (#"{"p": {"optional": true}}"#, "features[0].states.S.fields.p: missing key 'type'"),
        (#"{"p": {"type": ["number"]}}"#, "features[0].states.S.fields.p.type: expected string, got array"),
        (#"{"p": {"type": "Number"}}"#, "features[0].states.S.fields.p.type: unknown type 'Number'"),
        (#"{"p": {"type": "number", "optional": "yes"}}"#, "features[0].states.S.fields.p.optional: expected boolean, got string"),
        (#"{"p": {"type": "number", "default": "0"}}"#, "features[0].states.S.fields.p.default: expected number, got string"),
        (#"{"p": {"type": "string", "default": null}}"#, "features[0].states.S.fields.p.default: expected string, got null"),
        (#"{"p": {"type": "integer", "default": 0.5}}"#, "features[0].states.S.fields.p.default: expected integer, got number"),
        (#"{"p": {"type": "integer", "default": 9007199254740993}}"#,
         "features[0].states.S.fields.p.default: integer 9007199254740993 is out of range (magnitude at most 2^53)"),
        (#"{"p": {"type": "object", "default": []}}"#, "features[0].states.S.fields.p.default: expected object, got array"),
        (#"{"p": {"type": "any", "description": false}}"#, "features[0].states.S.fields.p.description: expected string, got boolean"),
    ])
    func fieldErrors(fields: String, message: String) throws {
        try expectRefused(#"{"feature": "F", "states": {"S": {"fields": \#(fields)}}}"#, message)
    }

    @Test(arguments: [
        (#""initial": "A""#, "features[0].initial: expected array, got string"),
        (#""initial": []"#, "features[0].initial: must not be empty"),
        (#""initial": ["A", 2]"#, "features[0].initial[1]: expected string, got number"),
        (#""initial": ["A", "Nope"]"#, "features[0].initial[1]: unknown state 'Nope'"),
        (#""initial": ["A", "B", "A"]"#, "features[0].initial[2]: duplicate state 'A'"),
        (#""transitions": [["A", "B"]]"#, "features[0].transitions: expected object, got array"),
        (#""transitions": {"Nope": ["A"]}"#, "features[0].transitions: unknown state 'Nope'"),
        (#""transitions": {"A": "B"}"#, "features[0].transitions.A: expected array, got string"),
        (#""transitions": {"A": ["B", "Nope"]}"#, "features[0].transitions.A[1]: unknown state 'Nope'"),
        (#""transitions": {"A": ["B", "B"]}"#, "features[0].transitions.A[1]: duplicate state 'B'"),
        (#""bindings": {}"#, "features[0].bindings: expected array, got object"),
        (#""bindings": [{}, "AnyMutation"]"#, "features[0].bindings[1]: expected object, got string"),
    ])
    func initialTransitionAndBindingErrors(member: String, message: String) throws {
        try expectRefused(#"{"feature": "F", "states": {"A": {}, "B": {}}, \#(member)}"#, message)
    }

    @Test func aStateHasAtMost255Timers() throws {
        func state(timers count: Int) -> String {
            let timers = Array(repeating: #"{"ms": 1, "submit": []}"#, count: count).joined(separator: ",")
            return #"{"feature": "F", "states": {"S": {"after": [\#(timers)]}}}"#
        }
        #expect(try parse(state(timers: 255))[0].states[0].timers.count == 255)
        try expectRefused(state(timers: 256), "features[0].states.S.after: at most 255 timers per state, got 256")
    }

    /// Bindings are read when they are registered: `uf_register` refuses a binding
    /// of the wrong shape with its whole path, and registers nothing of the call.
    @Test(arguments: [
        (#"{"then": {"submit": []}}"#, "features[1].bindings[1]: missing key 'when'"),
        (#"{"when": "AnyMutation", "given": {}, "then": {"submit": []}}"#, "features[1].bindings[1].given: expected array, got object"),
        (#"{"when": "AnyMutation", "given": {"if": true}, "then": {"submit": []}}"#, "features[1].bindings[1].given: expected array, got object"),
        (#"{"when": "AnyMutation", "then": []}"#, "features[1].bindings[1].then: expected object, got array"),
        (#"{"when": "AnyMutation", "then": "log"}"#, "features[1].bindings[1].then: expected object, got string"),
        (#"{"when": "AnyMutation", "then": {"submit": [], "x": 1}}"#, "features[1].bindings[1].then: unknown key 'x'"),
        (#"{"when": "AnyMutation", "then": {"submit": {}}}"#, "features[1].bindings[1].then.submit: expected array, got object"),
        (#"{"when": "AnyMutation", "then": {"submit": {"kind": "trigger", "feature": "F"}}}"#,
         "features[1].bindings[1].then.submit: expected array, got object"),
        (#"{"when": "AnyMutation", "given": [{"spec": "nothing to do"}], "then": {"submit": []}}"#,
         "features[1].bindings[1].given[0]: needs exactly one of 'if', 'map', 'call'"),
        (#"{"when": "AnyMutation", "given": [{"if": true}, {"if": true, "map": 1}], "then": {"submit": []}}"#,
         "features[1].bindings[1].given[1]: needs exactly one of 'if', 'map', 'call'"),
        (#"{"when": "AnyMutation", "given": [{"map": 1, "call": "h"}], "then": {"submit": []}}"#,
         "features[1].bindings[1].given[0]: needs exactly one of 'if', 'map', 'call'"),
        (#"{"when": "AnyMutation", "given": [{"if": true, "map": 1, "call": "h"}], "then": {"submit": []}}"#,
         "features[1].bindings[1].given[0]: needs exactly one of 'if', 'map', 'call'"),
    ])
    func bindingShapeErrorsAtRegistration(binding: String, message: String) {
        let h = Harness()
        let definitions = #"""
            [{"feature": "A", "states": {"S": {}}},
             {"feature": "F", "states": {"S": {}},
              "bindings": [{"when": "AnyMutation", "then": {"submit": []}}, \#(binding)]}]
            """#
        #expect(uf_register(h.d, definitions) == UF_ESCHEMA)
        #expect(h.lastStatus == UF_ESCHEMA)
        #expect(h.lastError == message)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(h.d, &out) == UF_OK)
        #expect(String(cString: out!) == #"{"features":[]}"#)
        uf_free(out)
    }

    @Test func errorsNameTheIndexOfTheirDefinition() throws {
        try expectRefused(#"""
            {"features": [\#(fileDownloading),
                          {"feature": "Other", "states": {"InProgress": {"fields": {"progress": "nubmer"}}}}]}
            """#, "features[1].states.InProgress.fields.progress: unknown type 'nubmer'")
    }

    @Test func aFeatureDefinedTwiceInOneCallExists() throws {
        try expectRefused(#"""
            [{"feature": "A", "states": {"S": {}}}, {"feature": "B", "states": {"S": {}}},
             {"feature": "A", "states": {"T": {}}}]
            """#, "features[2]: feature 'A' is already defined at features[0]", status: .exists)
    }

    // MARK: Large definitions (hashed lookups: no scan per name)

    /// `count` states S0..S(count-1); `initial` and `transitions` as given.
    private static func tall(_ count: Int, _ members: String) -> String {
        let states = (0..<count).map { #""S\#($0)": {}"# }.joined(separator: ",")
        return #"{"feature": "Tall", "states": {\#(states)}\#(members)}"#
    }

    @Test func manyStatesResolveTheirInitialAndTransitionLists() throws {
        let count = 2_000
        let all = (0..<count).map { #""S\#($0)""# }.joined(separator: ",")
        let transitions = (0..<count).map { #""S\#($0)": ["S\#(($0 + 1) % count)", "S\#($0)"]"# }.joined(separator: ",")
        let definition = try #require(try parse(Self.tall(count, #", "initial": [\#(all)], "transitions": {\#(transitions)}"#)).first)
        #expect(definition.initial == Set(0..<count))
        #expect(definition.transitions?.count == count)
        #expect(definition.transitions?[count - 1] == [0, count - 1])
        #expect(definition.allowsTransition(from: 41, into: 42))
        #expect(!definition.allowsTransition(from: 42, into: 41))
    }

    @Test func manyStatesStillReportTheFirstBadName() throws {
        try expectRefused(Self.tall(100, #", "initial": ["S99", "S0", "S5", "S0"]"#),
                          "features[0].initial[3]: duplicate state 'S0'")
        try expectRefused(Self.tall(100, #", "initial": ["S99", "S100"]"#), "features[0].initial[1]: unknown state 'S100'")
        try expectRefused(Self.tall(100, #", "transitions": {"S3": ["S4"], "S100": []}"#),
                          "features[0].transitions: unknown state 'S100'")
        try expectRefused(Self.tall(100, #", "transitions": {"S3": ["S4", "s5"]}"#),
                          "features[0].transitions.S3[1]: unknown state 's5'")
    }

    @Test func manyFeaturesInOneCallAreCheckedForDuplicates() throws {
        let features = (0..<3_000).map { #"{"feature": "F\#($0)", "states": {"A": {}}}"# }
        #expect(try parse("[" + features.joined(separator: ",") + "]").map(\.name) == (0..<3_000).map { "F\($0)" })
        try expectRefused("[" + (features + [#"{"feature": "F1234", "states": {"B": {}}}"#]).joined(separator: ",") + "]",
                          "features[3000]: feature 'F1234' is already defined at features[1234]", status: .exists)
    }
}
