/// JsonLogic rules (jsonlogic.com) with the results of the reference
/// implementation, json-logic-js 2.0.5: JavaScript's truthiness, coercions and
/// number formatting included, `{"cat": [false, [1, 2]]}` is `"false1,2"`.
///
/// Every operation of the specification is supported except `log`. Inside a
/// rule values are JavaScript values (`undefined`, NaN and the infinities
/// included, see `JSValue`); only the final result must be JSON.
///
/// What differs from json-logic-js, on purpose or because JSON cannot say it:
/// * a non-finite number anywhere in the result is an error, where
///   `JSON.stringify` would write null inside an array;
/// * reading an inherited JavaScript member through `var` (`constructor`,
///   `toString`, …, which are functions) finds nothing; `length` and indices of
///   arrays and strings work;
/// * strings are Swift strings: a `substr` or string index that splits a
///   surrogate pair yields U+FFFD where JavaScript keeps a lone surrogate;
/// * an array or object of the data returned whole keeps its integers beyond
///   2^53 exact (JavaScript's `JSON.parse` would have rounded them); a number
///   read on its own is a double, as in JavaScript, wherever it goes;
/// * `log`, dotted operator names (json-logic-js's `a.b` method lookup) and any
///   unknown operator are errors, at `validate` and at `apply`.
///
/// Both functions are pure and may be called from any thread.
enum JsonLogic {
    /// Checks a rule before it is used: every one-key object the rule would
    /// evaluate must name a known operator, with an argument count the operator
    /// can use (`Operation.arity`), and the list argument of `map`, `filter`,
    /// `reduce`, `all`, `none`, `some` and the keys of `missing_some` must not be
    /// a literal that is not an array. Errors are `UniFlowError(.schema, ...)`
    /// naming the operator and its place in the rule (`at and[1].==[0]`).
    static func validate(_ rule: JSONValue) throws(UniFlowError) {
        try check(rule, path: "")
    }

    /// Evaluates a rule against the data. A JavaScript `undefined` result is
    /// null; a result with a non-finite number (a division by zero) is
    /// `UniFlowError(.schema, "rule result is not a finite number")`; what
    /// json-logic-js throws on (an unknown operator, `{"*": []}`,
    /// `missing_some` without a list) is a `.schema` error too.
    static func apply(_ rule: JSONValue, data: JSONValue) throws(UniFlowError) -> JSONValue {
        try evaluate(JSValue(wrapping: rule), JSValue(wrapping: data)).jsonValue()
    }

    /// `apply` over data whose parts are made as the rule reads them.
    static func apply(_ rule: JSONValue, data: JSValue) throws(UniFlowError) -> JSONValue {
        try evaluate(JSValue(wrapping: rule), data).jsonValue()
    }

    /// A rule kept for evaluating again and again (a binding's, a guard's, a
    /// template's): wrapped into JavaScript values once, so that what the first
    /// evaluation works out (operators, literal paths) serves every later one.
    /// Used under one dispatcher's lock only.
    final class CompiledRule {
        let json: JSONValue
        private let wrapped: JSValue

        init(_ rule: JSONValue) {
            json = rule
            wrapped = JSValue(wrapping: rule)
        }

        func apply(data: JSValue) throws(UniFlowError) -> JSONValue {
            try evaluate(wrapped, data).jsonValue()
        }
    }

    /// The members of `root` a rule may read through literal `var` paths
    /// (`model.F.payload.x` reads `F` of `model`), or nil when a path is computed
    /// or reads `root` whole: then it may read anything.
    static func readMembers(_ rule: JSONValue, of root: String) -> Set<String>? {
        var names = Set<String>()
        var everything = false
        func path(_ value: JSONValue) {
            switch value {
            case .string(let text):
                if text.isEmpty || text == root { everything = true; return }
                guard text.hasPrefix(root + ".") else { return }
                let rest = text.dropFirst(root.count + 1)
                let member = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                names.insert(member)
            case .int, .double, .null, .bool:
                return
            case .array(let items):
                items.forEach(path)
            case .object:
                everything = true
            }
        }
        func visit(_ rule: JSONValue) {
            switch rule {
            case .array(let items):
                items.forEach(visit)
            case .object(let object) where object.count == 1:
                let (name, argument) = object.entries[0]
                let arguments = argument.arrayValue ?? [argument]
                switch name {
                case "var":
                    guard let first = arguments.first else { everything = true; return }
                    path(first)
                    arguments.dropFirst().forEach(visit)
                case "missing", "missing_some":
                    for argument in arguments {
                        path(argument)
                        visit(argument)
                    }
                default:
                    arguments.forEach(visit)
                }
            default:
                return
            }
        }
        visit(rule)
        return everything ? nil : names
    }
}
