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
/// * integers in the data beyond 2^53 stay exact when returned inside an array
///   or object (JavaScript's `JSON.parse` would have rounded them);
/// * `log`, dotted operator names (json-logic-js's `a.b` method lookup) and any
///   unknown operator are errors, at `validate` and at `apply`.
///
/// Both functions are pure and may be called from any thread.
public enum JsonLogic {
    /// Checks a rule before it is used: every one-key object the rule would
    /// evaluate must name a known operator, with an argument count the operator
    /// can use (`Operation.arity`), and the list argument of `map`, `filter`,
    /// `reduce`, `all`, `none`, `some` and the keys of `missing_some` must not be
    /// a literal that is not an array. Errors are `UniFlowError(.schema, ...)`
    /// naming the operator and its place in the rule (`at and[1].==[0]`).
    public static func validate(_ rule: JSONValue) throws(UniFlowError) {
        try check(rule, path: "")
    }

    /// Evaluates a rule against the data. A JavaScript `undefined` result is
    /// null; a result with a non-finite number (a division by zero) is
    /// `UniFlowError(.schema, "rule result is not a finite number")`; what
    /// json-logic-js throws on (an unknown operator, `{"*": []}`,
    /// `missing_some` without a list) is a `.schema` error too.
    public static func apply(_ rule: JSONValue, data: JSONValue) throws(UniFlowError) -> JSONValue {
        try evaluate(JSValue(wrapping: rule), JSValue(wrapping: data)).jsonValue()
    }
}
