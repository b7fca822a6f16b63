import CUniFlow
import Testing
@testable import UniFlow

// JsonLogic with json-logic-js 2.0.5's results. Every expected value below was
// checked against JavaScript's own semantics (node), case by case: each case is
// `[rule, data, expected]`.

/// Evaluates `[rule, data, expected]` and compares the whole result, and its text
/// (an integral number must print as an integer).
private func expectCase(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let triple = try #require(try JSONParser.parse(text).arrayValue, sourceLocation: sourceLocation)
    let result = try JsonLogic.apply(triple[0], data: triple[1])
    #expect(result == triple[2], "\(text) gave \(result.jsonText)", sourceLocation: sourceLocation)
    #expect(result.jsonText == triple[2].jsonText, sourceLocation: sourceLocation)
}

/// Evaluates `[rule, data]` and expects a rule error whose message contains `fragment`.
private func expectRuleError(_ text: String, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let pair = try #require(try JSONParser.parse(text).arrayValue, sourceLocation: sourceLocation)
    do {
        let result = try JsonLogic.apply(pair[0], data: pair[1])
        Issue.record("\(text) gave \(result.jsonText)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.status == .schema, sourceLocation: sourceLocation)
        #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    }
}

@Suite struct JsonLogicBriefExamples {
    @Test(arguments: [
        #"[{"cat": [false, [1, 2]]}, null, "false1,2"]"#,
        #"[{"==": [1, "1"]}, null, true]"#,
        #"[{"==": [null, 0]}, null, false]"#,
        #"[{"+": ["1", 1]}, null, 2]"#,
        #"[{"+": [1, 2]}, null, 3]"#,
        #"[{"<": [1, 2, 3]}, null, true]"#,
        #"[{"var": "a.b"}, {"a": {"b": [1]}}, [1]]"#,
        #"[{"var": ["x", 5]}, {}, 5]"#,
        #"[{"cat": [1.0, 1e21, {"+": [0.1, 0.2]}]}, null, "11e+210.30000000000000004"]"#,
    ])
    func givenARule_whenApplied_thenJavaScriptsResult(_ text: String) throws { try expectCase(text) }

    @Test func givenADivisionByZero_whenApplied_thenARuleError() throws {
        try expectRuleError(#"[{"/": [1, 0]}, null]"#, "rule result is not a finite number")
    }
}

@Suite struct JsonLogicEquality {
    @Test(arguments: [
        // Loose equality converts: booleans and strings to numbers, arrays and objects to strings.
        #"[{"==": [null, false]}, null, false]"#,
        #"[{"==": [[], false]}, null, true]"#,
        #"[{"==": [[0], false]}, null, true]"#,
        #"[{"==": [[1, 2], "1,2"]}, null, true]"#,
        #"[{"==": [{"var": "o"}, "[object Object]"]}, {"o": {"x": 1}}, true]"#,
        #"[{"==": ["1e3", 1000]}, null, true]"#,
        #"[{"==": [" \n", 0]}, null, true]"#,
        #"[{"==": [true, "1"]}, null, true]"#,
        #"[{"==": [true, "true"]}, null, false]"#,
        #"[{"!=": [1, "1"]}, null, false]"#,
        #"[{"!==": [1, "1"]}, null, true]"#,
        // Arrays and objects are equal only to themselves: the same data read twice is.
        #"[{"==": [{"var": "c"}, {"var": "c"}]}, {"c": [1]}, true]"#,
        #"[{"===": [{"var": "c"}, {"var": "c"}]}, {"c": [1]}, true]"#,
        #"[{"==": [[1], [1]]}, null, false]"#,
        #"[{"==": [{"var": "a"}, {"var": "b"}]}, {"a": {"x": 1}, "b": {"x": 1}}, false]"#,
        #"[{"in": [{"var": "d"}, [{"var": "d"}]]}, {"d": {"a": 1}}, true]"#,
        #"[{"in": [{"var": "d"}, {"var": "list"}]}, {"d": [1], "list": [[1]]}, false]"#,
    ])
    func givenMixedTypes_whenCompared_thenJavaScriptsEquality(_ text: String) throws { try expectCase(text) }

    @Test func givenCanonicallyEquivalentStrings_whenCompared_thenTheyDifferByCodeUnits() throws {
        // "é" precomposed and "e" + combining acute: equal to Swift, not to JavaScript.
        let rule: JSONValue = ["==": ["\u{E9}", "e\u{301}"]]
        #expect(try JsonLogic.apply(rule, data: nil) == false)
        let strict: JSONValue = ["===": ["\u{E9}", "\u{E9}"]]
        #expect(try JsonLogic.apply(strict, data: nil) == true)
        let less: JSONValue = ["<": ["e\u{301}", "\u{E9}"]]
        #expect(try JsonLogic.apply(less, data: nil) == true)
    }
}

@Suite struct JsonLogicOrdering {
    @Test(arguments: [
        #"[{"<": [null, 1]}, null, true]"#,
        #"[{"<": ["a", "b"]}, null, true]"#,
        #"[{"<": ["B", "a"]}, null, true]"#,
        #"[{"<": ["10", "9"]}, null, true]"#,
        #"[{"<": ["10", 9]}, null, false]"#,
        #"[{"<": [[2], [10]]}, null, false]"#,
        #"[{"<=": [null, 0]}, null, true]"#,
        #"[{">=": [null, 0]}, null, true]"#,
        #"[{"<": ["abc", 1]}, null, false]"#,
        #"[{">=": ["abc", 1]}, null, false]"#,
        #"[{"<=": [1, 1, 2]}, null, true]"#,
        #"[{"<": [{"/": [1, 0]}, 2]}, null, false]"#,
        #"[{"<": [1, 2, {"and": []}]}, null, true]"#,
    ])
    func givenTwoOrThreeValues_whenOrdered_thenJavaScriptsComparison(_ text: String) throws { try expectCase(text) }
}

@Suite struct JsonLogicArithmetic {
    @Test(arguments: [
        // + reads every argument with parseFloat.
        #"[{"+": []}, null, 0]"#,
        #"[{"+": "12px"}, null, 12]"#,
        #"[{"+": [[1, 2], [3]]}, null, 4]"#,
        #"[{"+": ["0x10"]}, null, 0]"#,
        #"[{"+": [" .5e1x"]}, null, 5]"#,
        // * with one argument returns it untouched (a reduce without an initial value).
        #"[{"*": ["3"]}, null, "3"]"#,
        #"[{"*": [[1, 2]]}, null, [1, 2]]"#,
        #"[{"*": ["3", "4"]}, null, 12]"#,
        #"[{"*": "abc"}, null, "abc"]"#,
        // -, / and % use Number(): hexadecimal, blanks and booleans convert.
        #"[{"-": [true]}, null, -1]"#,
        #"[{"-": [[5]]}, null, -5]"#,
        #"[{"-": [""]}, null, 0]"#,
        #"[{"-": ["0x1F", 1]}, null, 30]"#,
        #"[{"-": [" 12 ", "1e1"]}, null, 2]"#,
        #"[{"%": [-7, 2]}, null, -1]"#,
        #"[{"%": [7, "-2"]}, null, 1]"#,
        #"[{"/": ["0b101", "0o2"]}, null, 2.5]"#,
        #"[{"min": ["2", [1], true]}, null, 1]"#,
        #"[{"max": [null, -1]}, null, 0]"#,
        #"[{"max": [{"-": [0]}, 0]}, null, 0]"#,
        // Integral results within 2^53 are integers; past it, doubles.
        #"[{"+": [9007199254740993]}, null, 9007199254740992]"#,
        #"[{"*": [1e10, 1e10]}, null, 1e20]"#,
    ])
    func givenNumbersAndStrings_whenCalculated_thenJavaScriptsNumbers(_ text: String) throws { try expectCase(text) }

    @Test(arguments: [
        // An array of the data returned whole keeps its integers exact...
        #"[{"var": "a"}, {"a": [9007199254740993]}, [9007199254740993]]"#,
        // ...a number read on its own is a double, wherever it goes.
        #"[[{"var": "a"}], {"a": 9007199254740993}, [9007199254740992]]"#,
        #"[{"merge": [{"var": "a"}]}, {"a": [9007199254740993]}, [9007199254740992]]"#,
        #"[{"var": "a.0"}, {"a": [9007199254740993]}, 9007199254740992]"#,
    ])
    func givenIntegersPast2To53InTheData_whenReturned_thenOnlyWholeArraysKeepThem(_ text: String) throws {
        try expectCase(text)
    }

    @Test func givenAnIntegralResultPast2To53_whenApplied_thenItIsADouble() throws {
        let result = try JsonLogic.apply(["+": [9_007_199_254_740_992, 2]], data: nil)
        #expect(result == .double(9_007_199_254_740_994))
        #expect(try JsonLogic.apply(["-": [0]], data: nil).jsonText == "0")  // -0 too
    }

    @Test(arguments: [
        #"[{"/": [0, 0]}, null]"#,
        #"[{"*": [1e200, 1e200]}, null]"#,
        #"[{"+": [true]}, null]"#,
        #"[{"min": []}, null]"#,
        #"[{"map": [[0], {"/": [1, {"var": ""}]}]}, null]"#,
    ])
    func givenANonFiniteResult_whenApplied_thenARuleError(_ text: String) throws {
        try expectRuleError(text, "rule result is not a finite number")
    }

    @Test func givenNonFiniteIntermediates_whenTheyAreWritten_thenJavaScriptsSpelling() throws {
        try expectCase(#"[{"cat": [{"/": [1, 0]}, {"/": [0, 0]}, {"-": [{"/": [1, 0]}]}]}, null, "InfinityNaN-Infinity"]"#)
    }
}

@Suite struct JsonLogicStrings {
    @Test(arguments: [
        // cat is Array.prototype.join: null and undefined are empty, arrays join with ",".
        #"[{"cat": [null, 1, [null, [2, [3, null]]], {}, true]}, null, "1,2,3,[object Object]true"]"#,
        #"[{"cat": [0.1, 1e21, 1e-7, 1e-6, -0, 1.0, 123e18]}, null, "0.11e+211e-70.00000101123000000000000000000"]"#,
        #"[{"cat": []}, null, ""]"#,
        // in: substring (needle through String()), array membership by ===.
        #"[{"in": [null, "a null b"]}, null, true]"#,
        #"[{"in": [[1, 2], "x1,2y"]}, null, true]"#,
        #"[{"in": [1, [1]]}, null, true]"#,
        #"[{"in": ["1", [1]]}, null, false]"#,
        #"[{"in": ["", "abc"]}, null, true]"#,
        #"[{"in": ["", ""]}, null, false]"#,
        #"[{"in": ["a", 5]}, null, false]"#,
        #"[{"in": ["x", {"var": "o"}]}, {"o": {"a": 1}}, false]"#,
        // substr: negative start counts from the end, negative length drops from the end.
        #"[{"substr": ["jsonlogic", 4, "-2"]}, null, ""]"#,
        #"[{"substr": ["jsonlogic", 4, [-2]]}, null, ""]"#,
        #"[{"substr": ["jsonlogic", "2"]}, null, "onlogic"]"#,
        #"[{"substr": [12345, 1, 2]}, null, "23"]"#,
        #"[{"substr": [null, 0, 2]}, null, "nu"]"#,
        #"[{"substr": ["abc", -10, -1]}, null, "ab"]"#,
        #"[{"substr": ["abc", 1, null]}, null, ""]"#,
        #"[{"substr": ["😀ab", 2]}, null, "ab"]"#,
        #"[{"substr": ["😀ab", 0, 2]}, null, "😀"]"#,
    ])
    func givenStringOperations_whenApplied_thenJavaScriptsStrings(_ text: String) throws { try expectCase(text) }
}

@Suite struct JsonLogicData {
    @Test(arguments: [
        // var reads own members, array and string indices and lengths.
        #"[{"var": "length"}, "hello", 5]"#,
        #"[{"var": "1"}, "hello", "e"]"#,
        #"[{"var": "0.length"}, ["abc"], 3]"#,
        #"[{"var": "c.01"}, {"c": [1, 2]}, null]"#,
        #"[{"var": "a"}, 5, null]"#,
        // A member that holds null is found: the default is not used.
        #"[{"var": ["a", 7]}, {"a": null}, null]"#,
        #"[{"var": ["a.b", 7]}, {"a": null}, 7]"#,
        // The path goes through String(): arrays, booleans and numbers are paths too.
        #"[{"var": [["a"]]}, {"a": 3}, 3]"#,
        #"[{"var": true}, {"true": 4}, 4]"#,
        #"[{"var": 1.5}, {"1": {"5": "x"}}, "x"]"#,
        #"[{"var": "a..b"}, {"a": {"": {"b": 1}}}, 1]"#,
        #"[{"var": "."}, {"": {"": 2}}, 2]"#,
        #"[{"var": ""}, null, null]"#,
        #"[{"var": "x"}, null, null]"#,
        #"[{"var": "model"}, {"model": {"F": {"state": "S", "payload": {"n": 2.5}}}}, {"F": {"state": "S", "payload": {"n": 2.5}}}]"#,
        // missing runs a real {"var": key} for each key.
        #"[{"missing": {"var": "keys"}}, {"keys": [{"var": "z"}], "z": "a", "a": 1}, []]"#,
        #"[{"missing": [["a", "dflt"], "b"]}, {}, ["a", "dflt"]]"#,
        #"[{"missing": ["a", ["b", ""]]}, {}, ["a", ["b", ""]]]"#,
        #"[{"missing": ["e", "n", "z"]}, {"e": "", "n": null, "z": 0}, ["e", "n"]]"#,
        #"[{"missing_some": [1, "ab"]}, {"a": 1}, []]"#,
        #"[{"missing_some": [1, 5]}, {}, [5]]"#,
        #"[{"missing_some": ["1", ["a", "b"]]}, {"b": 1}, []]"#,
    ])
    func givenData_whenRead_thenJavaScriptsProperties(_ text: String) throws { try expectCase(text) }

    @Test func givenAnInheritedJavaScriptMember_whenRead_thenNothingIsFound() throws {
        // A documented deviation: JavaScript would find a function (which has no JSON).
        #expect(try JsonLogic.apply(["var": ["toString", 5]], data: [:]) == 5)
        #expect(try JsonLogic.apply(["var": "constructor"], data: [:]) == nil)
    }

    @Test func givenAHugeIntegerInTheData_whenRead_thenItIsADouble() throws {
        let result = try JsonLogic.apply(["var": "a"], data: ["a": .int(Int64.max)])
        #expect(result == .double(9_223_372_036_854_775_808))  // 2^63: Int64.max rounded to a double
        // Passed through inside an object or array, the data is returned as it was.
        let whole = try JsonLogic.apply(["var": ""], data: ["a": .int(Int64.max)])
        #expect(whole == ["a": .int(Int64.max)])
    }
}

@Suite struct JsonLogicControlFlow {
    @Test(arguments: [
        // and/or return the deciding operand; with none it is undefined, which is null.
        #"[{"and": []}, null, null]"#,
        #"[{"or": []}, null, null]"#,
        #"[{"or": [0, "", [], "x"]}, null, "x"]"#,
        #"[{"and": [1, [], 2]}, null, []]"#,
        #"[{"!": [[]]}, null, true]"#,
        #"[{"!": []}, null, true]"#,
        #"[{"!!": ["0"]}, null, true]"#,
        #"[{"!!": [{}]}, null, true]"#,
        #"[{"!!": [{"-": ["x"]}]}, null, false]"#,
        #"[{"if": [[], 1, 2]}, null, 2]"#,
        #"[{"if": {"var": "x"}}, {"x": 4}, 4]"#,
        #"[{"?:": [true, 1]}, null, 1]"#,
        #"[{"if": [false, {"/": [1, 0]}, "safe"]}, null, "safe"]"#,
        // Non-rules are values as they are: objects of other than one key are not evaluated.
        #"[{"a": 1, "b": {"var": "x"}}, {"x": 1}, {"a": 1, "b": {"var": "x"}}]"#,
        #"[{}, null, {}]"#,
        #"[[{"var": "x"}, {"a": 1, "b": 2}, {}], {"x": 9}, [9, {"a": 1, "b": 2}, {}]]"#,
    ])
    func givenLogic_whenApplied_thenTheDecidingValue(_ text: String) throws { try expectCase(text) }
}

@Suite struct JsonLogicArrays {
    @Test(arguments: [
        #"[{"merge": [[1, [2]], 3, null, {"a": 1, "b": 2}]}, null, [1, [2], 3, null, {"a": 1, "b": 2}]]"#,
        #"[{"merge": [{"and": []}]}, null, [null]]"#,
        #"[{"filter": [[0, 1, "", [], "a"], {"var": ""}]}, null, [1, "a"]]"#,
        #"[{"map": [[1, 2], {"and": []}]}, null, [null, null]]"#,
        #"[{"map": [{"map": [[1, 2], {"and": []}]}, {"var": ["x", 5]}]}, null, [5, 5]]"#,
        #"[{"map": [[1, 2]]}, null, [null, null]]"#,
        #"[{"filter": [[1, 2]]}, null, []]"#,
        #"[{"map": ["abc", {"var": ""}]}, null, []]"#,
        #"[{"all": [[1], {"and": []}]}, null, false]"#,
        #"[{"all": ["abc", true]}, null, false]"#,
        #"[{"some": [5, true]}, null, false]"#,
        #"[{"none": [5, true]}, null, true]"#,
        // reduce: the scope is {current, accumulator}; the initial value is evaluated.
        #"[{"reduce": [[1], {"var": ""}, 0]}, null, {"current": 1, "accumulator": 0}]"#,
        #"[{"reduce": [[1, 2]]}, null, null]"#,
        #"[{"reduce": [5, {"var": "x"}, {"var": "y"}]}, {"y": 3}, 3]"#,
        #"[{"reduce": [[1, 2, 3], {"cat": [{"var": "accumulator"}, {"var": "current"}]}]}, null, "123"]"#,
        #"[{"reduce": [[1, 2], {"and": []}, 0]}, null, null]"#,
        #"[{"reduce": [[[1], [2]], {"merge": [{"var": "accumulator"}, {"var": "current"}]}, []]}, null, [1, 2]]"#,
        #"[{"reduce": [{"var": "n"}, {"+": [{"var": "accumulator"}, {"var": "current"}]}, {"var": "start"}]}, {"n": [1, 2, 3], "start": 10}, 16]"#,
    ])
    func givenArrayOperations_whenApplied_thenJavaScriptsArrays(_ text: String) throws { try expectCase(text) }
}

@Suite struct JsonLogicRuntimeErrors {
    @Test func givenAnUnknownOperator_whenApplied_thenItIsNamed() throws {
        try expectRuleError(#"[{"foo": [1]}, null]"#, "unknown operator 'foo'")
        try expectRuleError(#"[{"log": [1]}, null]"#, "unknown operator 'log'")
        try expectRuleError(#"[{"var.x": [1]}, null]"#, "unknown operator 'var.x'")
        try expectRuleError(#"[{"merge": [[1], {"a": 1}]}, null]"#, "unknown operator 'a'")
    }

    @Test func givenWhatJavaScriptThrowsOn_whenApplied_thenARuleError() throws {
        try expectRuleError(#"[{"*": []}, null]"#, "'*'")
        try expectRuleError(#"[{"missing_some": [1, null]}, null]"#, "missing_some")
        try expectRuleError(#"[{"in": ["x", {"var": "o"}]}, {"o": {"indexOf": 1}}]"#, "indexOf")
        // Data used as a rule (missing's keys) can name an unknown operator too.
        try expectRuleError(#"[{"missing_some": [1, {"var": "o"}]}, {"o": {"length": 3}}]"#, "unknown operator 'length'")
    }
}

extension JsonLogicRuntimeErrors {
    /// JavaScript reads `.length` of missing_some's keys: of null or undefined it throws.
    @Test(arguments: [
        (#"[{"missing_some": [1, null]}, null]"#, "null"),
        (#"[{"missing_some": [1, {"var": "nope"}]}, {"a": 1}]"#, "null"),
        (#"[{"missing_some": [2, {"var": "keys"}]}, {"keys": null}]"#, "null"),
        (#"[{"missing_some": [1]}, null]"#, "undefined"),
    ])
    func givenMissingSomeWithoutAListOfKeys_whenApplied_thenARuleError(_ text: String, keys: String) throws {
        let pair = try #require(try JSONParser.parse(text).arrayValue)
        #expect(throws: UniFlowError(.schema, "missing_some needs a list of keys, got \(keys)")) {
            try JsonLogic.apply(pair[0], data: pair[1])
        }
    }

    @Test func givenMissingSomeWithoutAListOfKeys_whenAppliedThroughTheCAPI_thenSchemaAndTheMessage() {
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_logic_apply(#"{"missing_some":[1,{"var":"nope"}]}"#, "{}", &out) == UF_ESCHEMA)
        #expect(out == nil)
        #expect(String(cString: uf_last_error()) == "missing_some needs a list of keys, got null")
    }
}

@Suite struct JsonLogicLimits {
    @Test func givenARuleNestedAsDeepAsTheParserAllows_whenApplied_thenItEvaluates() throws {
        // 255 nested negations (the parser's limit is 256 levels) of a var.
        let text = String(repeating: #"{"!":"#, count: 255) + #""x""# + String(repeating: "}", count: 255)
        let rule = try JSONParser.parse(text)
        try JsonLogic.validate(rule)
        #expect(try JsonLogic.apply(rule, data: nil) == false)
        let arrays = String(repeating: "[", count: 255) + #"{"var": "a"}"# + String(repeating: "]", count: 255)
        #expect(try JsonLogic.apply(try JSONParser.parse(arrays), data: ["a": 1]).jsonText
                == String(repeating: "[", count: 255) + "1" + String(repeating: "]", count: 255))
    }
}
