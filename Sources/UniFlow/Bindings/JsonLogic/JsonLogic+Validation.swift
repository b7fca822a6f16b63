extension JsonLogic {
    /// Walks the rule as `evaluate` would: through arrays and into the
    /// arguments of every operation (the per-element rule of `map` and its
    /// kin included), never into an object with other than one key, which is
    /// a literal.
    static func check(_ rule: JSONValue, path: String) throws(UniFlowError) {
        switch rule {
        case .array(let items):
            for (i, item) in items.enumerated() { try check(item, path: "\(path)[\(i)]") }
        case .object(let object) where object.count == 1:
            let (name, argument) = object.entries[0]
            let here = path.isEmpty ? name : "\(path).\(name)"
            guard let operation = Operation(name: name) else {
                let what = name == "log" ? "operator 'log' is not supported" : "unknown operator '\(name)'"
                throw UniFlowError(.schema, what + location(path))
            }
            let arguments = argument.arrayValue ?? [argument]
            let arity = operation.arity
            if arguments.count < arity.min || arity.max.map({ arguments.count > $0 }) == true {
                throw UniFlowError(.schema, "operator '\(name)' takes \(describe(arity)), got \(arguments.count)" + location(path))
            }
            if let index = operation.arrayArgument, !couldBeArray(arguments[index]) {
                throw UniFlowError(.schema, "operator '\(name)' needs an array as argument \(index + 1), got \(arguments[index].jsonTypeName)" + location(path))
            }
            let isList = argument.arrayValue != nil
            for (i, item) in arguments.enumerated() { try check(item, path: isList ? "\(here)[\(i)]" : here) }
        default:
            break
        }
    }

    /// An array literal or an operation; a scalar or a literal object never is one.
    private static func couldBeArray(_ value: JSONValue) -> Bool {
        switch value {
        case .array: true
        case .object(let object): object.count == 1
        default: false
        }
    }

    private static func describe(_ arity: (min: Int, max: Int?)) -> String {
        func arguments(_ n: Int) -> String { n == 1 ? "1 argument" : "\(n) arguments" }
        switch arity.max {
        case nil: return "at least \(arguments(arity.min))"
        case arity.min?: return arguments(arity.min)
        case let max?: return "\(arity.min) to \(arguments(max))"
        }
    }

    private static func location(_ path: String) -> String { path.isEmpty ? "" : " at \(path)" }

    /// Whether evaluating the rule may read the data's member `key` (the
    /// binding's `model`, which costs a walk over every feature to build): a `var`,
    /// `missing` or `missing_some` whose path is computed, empty (the whole data),
    /// or starts with `key`. Conservative: a path inside `map` and its kin refers
    /// to the element, but counts all the same.
    static func mayRead(_ rule: JSONValue, member key: String) -> Bool {
        func namesMember(_ path: JSONValue) -> Bool {
            switch path {
            case .string(let text):
                return text.isEmpty || text == key || text.hasPrefix(key + ".")
            case .int, .double, .null, .bool:
                return false
            case .array(let items):
                // `missing`'s list of paths, or `var`'s [path, default].
                return items.contains { namesMember($0) }
            case .object:
                return true  // computed
            }
        }
        switch rule {
        case .array(let items):
            return items.contains { mayRead($0, member: key) }
        case .object(let object) where object.count == 1:
            let (name, argument) = object.entries[0]
            let arguments = argument.arrayValue ?? [argument]
            switch name {
            case "var":
                // No argument at all is the whole data.
                guard let path = arguments.first else { return true }
                if namesMember(path) { return true }
                return arguments.dropFirst().contains { mayRead($0, member: key) }
            case "missing":
                return arguments.contains { namesMember($0) || mayRead($0, member: key) }
            case "missing_some":
                return arguments.contains { namesMember($0) || mayRead($0, member: key) }
            default:
                return arguments.contains { mayRead($0, member: key) }
            }
        default:
            return false
        }
    }
}
