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
        let veryDeep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: UniFlowError.self) { try JSONParser.parse(veryDeep) }
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
