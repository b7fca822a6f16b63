extension JsonLogic {
    /// The operations of the JsonLogic specification that libuniflow evaluates:
    /// all of json-logic-js 2.x's except `log`.
    enum Operation: Sendable {
        case variable, missing, missingSome
        case ifThenElse
        case looseEqual, strictEqual, looseNotEqual, strictNotEqual
        case not, truthy
        case or, and
        case less, lessOrEqual, greater, greaterOrEqual
        case add, subtract, multiply, divide, remainder
        case min, max
        case map, filter, reduce, all, none, some
        case merge, `in`, cat, substr

        /// The operation an object's only key names; nil for an unknown name. The
        /// match is exact: json-logic-js looks operators up as own properties.
        init?(name: String) {
            // Swift's string hashing goes by canonical equivalence; for an ASCII
            // name (all operators are) that is the very spelling.
            guard name.utf8.allSatisfy({ $0 < 0x80 }), let operation = Self.byName[name] else { return nil }
            self = operation
        }

        /// A hashed lookup: rules name their operators on every evaluation.
        private static let byName: [String: Operation] = {
            var table: [String: Operation] = [:]
            for name in ["var", "missing", "missing_some", "if", "?:", "==", "===", "!=", "!==", "!", "!!", "or",
                         "and", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "min", "max", "map", "filter",
                         "reduce", "all", "none", "some", "merge", "in", "cat", "substr"] {
                table[name] = Operation(spelledAs: name)
            }
            return table
        }()

        private init?(spelledAs name: String) {
            switch name {
            case "var": self = .variable
            case "missing": self = .missing
            case "missing_some": self = .missingSome
            case "if", "?:": self = .ifThenElse
            case "==": self = .looseEqual
            case "===": self = .strictEqual
            case "!=": self = .looseNotEqual
            case "!==": self = .strictNotEqual
            case "!": self = .not
            case "!!": self = .truthy
            case "or": self = .or
            case "and": self = .and
            case "<": self = .less
            case "<=": self = .lessOrEqual
            case ">": self = .greater
            case ">=": self = .greaterOrEqual
            case "+": self = .add
            case "-": self = .subtract
            case "*": self = .multiply
            case "/": self = .divide
            case "%": self = .remainder
            case "min": self = .min
            case "max": self = .max
            case "map": self = .map
            case "filter": self = .filter
            case "reduce": self = .reduce
            case "all": self = .all
            case "none": self = .none
            case "some": self = .some
            case "merge": self = .merge
            case "in": self = .in
            case "cat": self = .cat
            case "substr": self = .substr
            default: return nil
            }
        }

        /// How many arguments a well-formed rule gives the operation (a non-array
        /// argument counts as one). json-logic-js accepts any count and fills
        /// the missing ones with `undefined`; `validate` refuses counts outside this
        /// range, where the result could only be a constant, NaN or a TypeError.
        var arity: (min: Int, max: Int?) {
            switch self {
            case .variable: (0, 2)
            case .missing, .ifThenElse, .merge, .cat, .add: (0, nil)
            case .missingSome: (2, 2)
            case .looseEqual, .strictEqual, .looseNotEqual, .strictNotEqual: (2, 2)
            case .not, .truthy: (1, 1)
            case .or, .and, .multiply, .min, .max: (1, nil)
            case .less, .lessOrEqual: (2, 3)
            case .greater, .greaterOrEqual, .divide, .remainder, .in: (2, 2)
            case .subtract: (1, 2)
            case .substr: (2, 3)
            case .map, .filter, .all, .none, .some: (2, 2)
            case .reduce: (2, 3)
            }
        }

        /// The argument that must be an array (or a rule that may yield one) for the
        /// operation to do anything: the list of `map`…`reduce`, the keys of `missing_some`.
        var arrayArgument: Int? {
            switch self {
            case .map, .filter, .reduce, .all, .none, .some: 0
            case .missingSome: 1
            default: nil
            }
        }
    }
}
