extension JsonLogic {
    /// Evaluates a rule the way json-logic-js's `apply` does: an array evaluates
    /// element by element, an object with exactly one key is an operation, and
    /// anything else (other objects included, with whatever they contain) is
    /// its own value.
    static func evaluate(_ rule: JSValue, _ data: JSValue) throws(UniFlowError) -> JSValue {
        switch rule {
        case .array(let array):
            var results: [JSValue] = []
            results.reserveCapacity(array.count)
            for element in array.elements { results.append(try evaluate(element, data)) }
            return .array(JSArray(results))
        case .object(let object) where object.count == 1:
            return try operate(object, data)
        default:
            return rule
        }
    }

    /// One operation. `if`, `and`, `or` and the array operations decide which of
    /// their arguments to evaluate (and against which data); every other
    /// operation gets all its arguments evaluated first, in order.
    private static func operate(_ rule: JSObject, _ data: JSValue) throws(UniFlowError) -> JSValue {
        let name = rule.key(at: 0)
        let argument = rule.value(at: 0)
        // A non-array argument is the only argument (`{"var": "x"}` for `{"var": ["x"]}`).
        let arguments: [JSValue]
        if case .array(let array) = argument { arguments = array.elements } else { arguments = [argument] }
        func raw(_ i: Int) -> JSValue { i < arguments.count ? arguments[i] : .undefined }

        guard let operation = rule.operation else {
            // json-logic-js evaluates the arguments before it finds no such operation.
            for argument in arguments { _ = try evaluate(argument, data) }
            throw UniFlowError(.schema, "unknown operator '\(name)'")
        }
        switch operation {
        case .ifThenElse:
            // Condition/consequent pairs, then an optional else; none at all is null.
            var i = 0
            while i < arguments.count - 1 {
                if try evaluate(arguments[i], data).isTruthy { return try evaluate(arguments[i + 1], data) }
                i += 2
            }
            return i == arguments.count - 1 ? try evaluate(arguments[i], data) : .null
        case .and, .or:
            // The deciding operand itself; `undefined` when there is none.
            let stopWhenTruthy = operation == .or
            var current = JSValue.undefined
            for argument in arguments {
                current = try evaluate(argument, data)
                if current.isTruthy == stopWhenTruthy { return current }
            }
            return current
        case .variable where rule.literalPath != nil:
            // A literal path is split once, when the rule is first evaluated.
            let fallback = arguments.count > 1 ? try evaluate(arguments[1], data) : .undefined
            return variable(components: rule.literalPath!, default: fallback, in: data)
        case .filter, .map, .all, .none, .some:
            return try iterate(operation, over: try evaluate(raw(0), data), raw(1))
        case .reduce:
            let list = try evaluate(raw(0), data)
            // json-logic-js 2.0.5 evaluates the initial value (earlier 2.0.x took it literally).
            var accumulator = arguments.count > 2 ? try evaluate(arguments[2], data) : .null
            guard case .array(let array) = list else { return accumulator }
            for current in array.elements {
                let scope = JSObject([.init(key: "current", value: current), .init(key: "accumulator", value: accumulator)])
                accumulator = try evaluate(raw(1), .object(scope))
            }
            return accumulator
        default:
            var values: [JSValue] = []
            values.reserveCapacity(arguments.count)
            for argument in arguments { values.append(try evaluate(argument, data)) }
            return try perform(operation, values, data)
        }
    }

    /// `filter`, `map`, `all`, `none` and `some`: the rule runs with each element
    /// of the list as its data. Not a list: `[]`, false, true, false. An empty
    /// list: `all` is false (json-logic-js's choice), `none` true, `some` false.
    private static func iterate(_ operation: Operation, over list: JSValue, _ rule: JSValue) throws(UniFlowError) -> JSValue {
        guard case .array(let array) = list else {
            switch operation {
            case .all, .some: return .bool(false)
            case .none: return .bool(true)
            default: return .array(JSArray([]))
            }
        }
        let elements = array.elements
        switch operation {
        case .filter:
            var kept: [JSValue] = []
            for element in elements where try evaluate(rule, element).isTruthy { kept.append(element) }
            return .array(JSArray(kept))
        case .map:
            var mapped: [JSValue] = []
            mapped.reserveCapacity(elements.count)
            for element in elements { mapped.append(try evaluate(rule, element)) }
            return .array(JSArray(mapped))
        case .all:
            if elements.isEmpty { return .bool(false) }
            for element in elements where !(try evaluate(rule, element).isTruthy) { return .bool(false) }
            return .bool(true)
        case .none:
            for element in elements where try evaluate(rule, element).isTruthy { return .bool(false) }
            return .bool(true)
        default:  // some
            for element in elements where try evaluate(rule, element).isTruthy { return .bool(true) }
            return .bool(false)
        }
    }
}
