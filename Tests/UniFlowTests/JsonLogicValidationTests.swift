import Testing
@testable import UniFlow

@Suite struct JsonLogicValidation {
    @Test(arguments: [
        #"5"#, #""text""#, #"null"#, #"[1, {"var": "a"}]"#,
        // Objects of other than one key are literals: what they hold is not checked.
        #"{}"#, #"{"a": {"foo": 1}, "b": 2}"#,
        #"{"if": []}"#, #"{"var": []}"#, #"{"missing": []}"#, #"{"+": []}"#, #"{"cat": []}"#,
        #"{"!": {"var": "x"}}"#, #"{"<": [1, {"var": "x"}, 3]}"#, #"{"substr": ["abc", 1]}"#,
        #"{"reduce": [{"var": "xs"}, {"+": [{"var": "current"}, {"var": "accumulator"}]}]}"#,
        #"{"map": [[1, 2], {"*": [{"var": ""}, 2]}]}"#,
        #"{"missing_some": [1, {"merge": [["a"], {"var": "more"}]}]}"#,
        #"{"in": ["a", {"a": 1, "b": 2}]}"#,
    ])
    func givenAWellFormedRule_whenValidated_thenItIsAccepted(_ text: String) throws {
        try JsonLogic.validate(try JSONParser.parse(text))
    }

    @Test(arguments: [
        (#"{"foo": 1}"#, "unknown operator 'foo'"),
        (#"{"and": [true, {"foo": 1}]}"#, "unknown operator 'foo' at and[1]"),
        (#"{"!": {"foo": 1}}"#, "unknown operator 'foo' at !"),
        (#"[1, {"if": [{"==": [{"nope": []}, 1]}, 2]}]"#, "unknown operator 'nope' at [1].if[0].==[0]"),
        (#"{"map": [[1], {"bar": 1}]}"#, "unknown operator 'bar' at map[1]"),
        (#"{"reduce": [[1], {"var": "current"}, {"zz": 1}]}"#, "unknown operator 'zz' at reduce[2]"),
        (#"{"log": "x"}"#, "operator 'log' is not supported"),
        (#"{"var.x": 1}"#, "unknown operator 'var.x'"),
        (#"{"toString": 1}"#, "unknown operator 'toString'"),
        (#"{"==": [1]}"#, "operator '==' takes 2 arguments, got 1"),
        (#"{"==": [1, 2, 3]}"#, "operator '==' takes 2 arguments, got 3"),
        (#"{"var": ["a", 1, 2]}"#, "operator 'var' takes 0 to 2 arguments, got 3"),
        (#"{"*": []}"#, "operator '*' takes at least 1 argument, got 0"),
        (#"{"min": []}"#, "operator 'min' takes at least 1 argument, got 0"),
        (#"{"!": []}"#, "operator '!' takes 1 argument, got 0"),
        (#"{"<": [1, 2, 3, 4]}"#, "operator '<' takes 2 to 3 arguments, got 4"),
        (#"{"missing_some": [1]}"#, "operator 'missing_some' takes 2 arguments, got 1"),
        (#"{"missing_some": [1, null]}"#, "operator 'missing_some' needs an array as argument 2, got null"),
        (#"{"map": [5, {"var": ""}]}"#, "operator 'map' needs an array as argument 1, got number"),
        (#"{"all": [{"a": 1, "b": 2}, true]}"#, "operator 'all' needs an array as argument 1, got object"),
        (#"{"if": [true, {"filter": [[1]]}]}"#, "operator 'filter' takes 2 arguments, got 1 at if[1]"),
    ])
    func givenAMalformedRule_whenValidated_thenASchemaErrorNamesOperatorAndPlace(_ text: String, _ message: String) throws {
        let rule = try JSONParser.parse(text)
        do {
            try JsonLogic.validate(rule)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.status == .schema)
            #expect(error.message == message)
        }
    }
}
