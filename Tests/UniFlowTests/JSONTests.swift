import Testing
@testable import UniFlow

@Suite struct JSONParsing {
    @Test func objectsKeepTheirKeyOrder() throws {
        let value = try JSONParser.parse(#"{"b": 1, "a": [true, null, 2.5, "x"]}"#)
        #expect(value.jsonText == #"{"b":1,"a":[true,null,2.5,"x"]}"#)
    }

    @Test func duplicateKeysAreInvalidJSON() {
        #expect(throws: UniFlowError.self) { try JSONParser.parse(#"{"a": 1, "a": 2}"#) }
        do { _ = try JSONParser.parse(#"{"a": 1, "a": 2}"#) } catch {
            #expect(error.status == .invalidJSON)
            #expect(error.message.hasPrefix("line 1, column"))
        }
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\": 99999999999999999999}", "1e999"])
    func malformedTextIsInvalidJSONWithAPosition(text: String) {
        do {
            _ = try JSONParser.parse(text)
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.status == .invalidJSON)
            #expect(error.message.hasPrefix("line "))
        }
    }

    @Test func invalidUTF8IsInvalidJSON() throws {
        let bytes: [CChar] = [34, -1, 34, 0]
        do {
            _ = try bytes.withUnsafeBufferPointer { try JSONParser.parse($0.baseAddress!) }
            Issue.record("parsed")
        } catch let error as UniFlowError {
            #expect(error.status == .invalidJSON)
        }
    }

    @Test func nestingIsLimitedTo256Levels() throws {
        let ok = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        _ = try JSONParser.parse(ok)
        let deep = String(repeating: "[", count: 257) + String(repeating: "]", count: 257)
        do { _ = try JSONParser.parse(deep); Issue.record("parsed") } catch {
            #expect(error.status == .schema)
            #expect(error.message.contains("256"))
        }
        // Past jansson's own limit (2048) too: too deep, not malformed.
        let veryDeep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        do { _ = try JSONParser.parse(veryDeep); Issue.record("parsed") } catch {
            #expect(error.status == .schema)
            #expect(error.message == "input is nested deeper than 256 levels")
        }
    }

    @Test func stringsAreEscaped() throws {
        let value: JSONValue = .string("a\"b\\c\n\u{01}é")
        #expect(value.jsonText == #""a\"b\\c\n\u0001é""#)
        #expect(try JSONParser.parse(value.jsonText) == value)
    }

    @Test func integersStayIntegers() throws {
        #expect(try JSONParser.parse("[9007199254740993, -5, 1.5, 1e20]").jsonText == "[9007199254740993,-5,1.5,1e+20]")
    }
}

@Suite struct JSONObjects {
    /// Objects past 16 keys are indexed; both kinds must behave the same.
    @Test(arguments: [5, 16, 17, 2_000])
    func lookupsInsertsAndRemovalsKeepOrderAtAnySize(count: Int) {
        var object = JSONObject((0..<count).map { (key: "k\($0)", value: JSONValue.int(Int64($0))) })
        #expect(object["k0"] == .int(0))
        #expect(object["k\(count - 1)"] == .int(Int64(count - 1)))
        #expect(object["nope"] == nil)
        object["k1"] = "one"
        object["new"] = true
        #expect(object.count == count + 1)
        #expect(object.keys.last == "new")
        #expect(object["k1"] == "one")
        object["k0"] = nil
        #expect(object["k0"] == nil)
        #expect(object["k2"] == .int(2))
        #expect(object["new"] == true)
        #expect(object.keys.first == "k1")
        #expect(object.count == count)
        // Grown one key at a time past the threshold.
        var grown = JSONObject()
        for i in 0..<count { grown["g\(i)"] = .int(Int64(i)) }
        for i in stride(from: 0, to: count, by: 7) { #expect(grown["g\(i)"] == .int(Int64(i))) }
        #expect(grown.keys == (0..<count).map { "g\($0)" })
    }

    @Test func aRepeatedKeyFindsItsFirstEntry() {
        for count in [3, 40] {
            let entries = [(key: "dup", value: JSONValue.int(1))]
                + (0..<count).map { (key: "k\($0)", value: JSONValue.null) } + [(key: "dup", value: JSONValue.int(2))]
            #expect(JSONObject(entries)["dup"] == .int(1))
        }
    }

    @Test func equalityIgnoresKeyOrderAtAnySize() {
        for count in [4, 100] {
            let forward = JSONObject((0..<count).map { (key: "k\($0)", value: JSONValue.int(Int64($0))) })
            let backward = JSONObject((0..<count).reversed().map { (key: "k\($0)", value: JSONValue.int(Int64($0))) })
            #expect(forward == backward)
            var changed = backward
            changed["k1"] = .int(-1)
            #expect(forward != changed)
        }
    }
}
