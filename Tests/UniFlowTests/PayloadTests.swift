import Testing
@testable import UniFlow

/// FileDownloading (docs/definitions.md), plus a state with one field of every type (`Seeds`).
private func fileDownloading() throws -> FeatureDefinition {
    let json = try JSONParser.parse(Seeds.typedFileDownloading)
    return try DefinitionParser.parse(json)[0]
}

/// Checks `payload` (JSON text, nil: none) against `state` and returns the stored payload's text.
private func check(_ state: String, _ payload: String?) throws -> String {
    let definition = try fileDownloading()
    let object = try payload.map { try #require(try JSONParser.parse($0).objectValue) }
    let stored = try definition.states[definition.stateIndex(named: state)!].checkPayload(object, feature: definition.name)
    return JSONValue.object(stored).jsonText
}

private func expectRefused(_ state: String, _ payload: String?, _ message: String,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
    let definition = try fileDownloading()
    let object = try payload.map { try #require(try JSONParser.parse($0).objectValue) }
    let stateDefinition = definition.states[definition.stateIndex(named: state)!]
    #expect(throws: UniFlowError(.schema, message), sourceLocation: sourceLocation) {
        try stateDefinition.checkPayload(object, feature: definition.name)
    }
}

@Suite struct PayloadTests {
    @Test func noPayloadIsAnEmptyObject() throws {
        #expect(try check("Starting", nil) == "{}")
        #expect(try check("Starting", "{}") == "{}")
    }

    @Test func aValidPayloadIsStoredAsGiven() throws {
        #expect(try check("InProgress", #"{"progress": 10}"#) == #"{"progress":10}"#)
        #expect(try check("InProgress", #"{"progress": 10.5}"#) == #"{"progress":10.5}"#)
    }

    @Test func defaultsAreFilledInAndOptionalFieldsLeftOut() throws {
        #expect(try check("Failed", #"{"reason": "disk full"}"#) == #"{"reason":"disk full","retries":0}"#)
    }

    @Test func keysFollowTheFieldDeclarationOrder() throws {
        #expect(try check("Failed", #"{"retries": 2, "code": 28, "reason": "timeout"}"#)
                == #"{"reason":"timeout","code":28,"retries":2}"#)
    }

    @Test func integersAreStoredWithoutAFraction() throws {
        #expect(try check("Failed", #"{"reason": "r", "code": 3.0, "retries": -0.0}"#) == #"{"reason":"r","code":3,"retries":0}"#)
        #expect(try check("Typed", #"{"i": 9007199254740992}"#) == #"{"i":9007199254740992}"#)
        #expect(try check("Typed", #"{"i": -9007199254740992}"#) == #"{"i":-9007199254740992}"#)
        #expect(try check("Typed", #"{"i": 1e15}"#) == #"{"i":1000000000000000}"#)
    }

    @Test func everyTypeAcceptsItsValues() throws {
        let payload = #"{"s":"x","n":1,"i":2,"b":true,"o":{"k":null},"a":[1,"2"],"y":null}"#
        #expect(try check("Typed", payload) == payload)
        #expect(try check("Typed", #"{"y":{"any":[true]}}"#) == #"{"y":{"any":[true]}}"#)
    }

    @Test func anUnknownFieldIsRefusedBeforeAMissingOne() throws {
        try expectRefused("InProgress", #"{"progres": 10}"#, "FileDownloading.InProgress.progres: unknown field")
        try expectRefused("InProgress", #"{"progress": 10, "bogus": 1}"#, "FileDownloading.InProgress.bogus: unknown field")
        try expectRefused("Starting", #"{"bogus": 1}"#, "FileDownloading.Starting.bogus: unknown field")
    }

    @Test func aRequiredFieldMustBePresent() throws {
        try expectRefused("InProgress", nil, "FileDownloading.InProgress.progress: required field missing")
        try expectRefused("Failed", #"{"code": 1}"#, "FileDownloading.Failed.reason: required field missing")
    }

    @Test(arguments: [
        (#"{"s": 1}"#, "s: expected string, got number"),
        (#"{"n": "10"}"#, "n: expected number, got string"),
        (#"{"i": 1.5}"#, "i: expected integer, got number"),
        (#"{"i": true}"#, "i: expected integer, got boolean"),
        (#"{"i": 9007199254740993}"#, "i: integer 9007199254740993 is out of range (magnitude at most 2^53)"),
        (#"{"i": -1e300}"#, "i: integer -1e+300 is out of range (magnitude at most 2^53)"),
        (#"{"b": 0}"#, "b: expected boolean, got number"),
        (#"{"o": []}"#, "o: expected object, got array"),
        (#"{"a": {}}"#, "a: expected array, got object"),
        (#"{"s": null}"#, "s: expected string, got null (leave an optional field out instead)"),
    ])
    func aValueMustHaveItsFieldsType(payload: String, message: String) throws {
        try expectRefused("Typed", payload, "FileDownloading.Typed.\(message)")
    }

    @Test func theProgressExampleOfTheSpec() throws {
        try expectRefused("InProgress", #"{"progress": "10"}"#, "FileDownloading.InProgress.progress: expected number, got string")
    }

    @Test func storedValuesPerType() {
        #expect(FieldType.integer.storedValue(for: .double(4))?.jsonText == "4")
        #expect(FieldType.integer.storedValue(for: .double(0.25)) == nil)
        #expect(FieldType.number.storedValue(for: .double(.infinity)) == nil)
        #expect(FieldType.number.storedValue(for: .double(0.25))?.jsonText == "0.25")
        #expect(FieldType.any.storedValue(for: .null) == .null)
        for type in FieldType.allCases where type != .any {
            #expect(type.storedValue(for: .null) == nil)
        }
    }

    // MARK: Large payloads (one lookup per field, hashed beyond 16 keys)

    /// A state with fields f0..f(count-1): even ones required integers, odd ones
    /// optional strings, every tenth one with a default.
    private static func wide(_ count: Int) -> StateDefinition {
        StateDefinition(name: "W", fields: (0..<count).map { i in
            if i % 10 == 0 { return FieldDefinition(name: "f\(i)", type: .integer, defaultValue: .int(Int64(-i))) }
            return i % 2 == 0 ? FieldDefinition(name: "f\(i)", type: .integer) : FieldDefinition(name: "f\(i)", type: .string, optional: true)
        })
    }

    private static func wideText(_ fields: some Sequence<Int>) -> String {
        "{" + fields.map { $0 % 2 == 0 ? #""f\#($0)": \#($0)"# : #""f\#($0)": "s\#($0)""# }.joined(separator: ",") + "}"
    }

    @Test(arguments: [false, true])
    func aLargePayloadInAnyOrderIsStoredInDeclarationOrder(reversed: Bool) throws {
        let count = 3_000
        let state = Self.wide(count)
        let given = (0..<count).filter { $0 % 10 != 0 && $0 % 4 != 1 }
        let text = Self.wideText(reversed ? given.reversed() : given)
        let payload = try #require(try JSONParser.parse(text).objectValue)
        let stored = try state.checkPayload(payload, feature: "F")
        let expected = (0..<count).filter { $0 % 4 != 1 }.map { i -> String in
            i % 10 == 0 ? #""f\#(i)":\#(-i)"# : i % 2 == 0 ? #""f\#(i)":\#(i)"# : #""f\#(i)":"s\#(i)""#
        }
        #expect(JSONValue.object(stored).jsonText == "{" + expected.joined(separator: ",") + "}")
    }

    @Test func aLargePayloadReportsItsFirstUnknownKeyBeforeAnythingElse() throws {
        let state = Self.wide(100)
        // f2 (required) missing, f4 of the wrong type, two unknown keys: the first unknown one wins.
        let text = #"{"f4": "x", "g1": 1, "f6": 6, "g0": 0}"#
        #expect(throws: UniFlowError(.schema, "F.W.g1: unknown field")) {
            try state.checkPayload(try JSONParser.parse(text).objectValue, feature: "F")
        }
        let known = Self.wideText((0..<100).filter { $0 % 10 != 0 && $0 != 2 })
        #expect(throws: UniFlowError(.schema, "F.W.f2: required field missing")) {
            try state.checkPayload(try JSONParser.parse(known).objectValue, feature: "F")
        }
        // Then field by field in declaration order: f2 of the wrong type before f4 missing.
        let wrongThenMissing = #"{"f2": "x", "f6": 6}"#
        #expect(throws: UniFlowError(.schema, "F.W.f2: expected integer, got string")) {
            try state.checkPayload(try JSONParser.parse(wrongThenMissing).objectValue, feature: "F")
        }
    }
}

