/// A guard (an event target's `if`) simple enough to decide without the JsonLogic
/// evaluator: a member of the event's or the feature's payload, tested for truth,
/// negated, or compared with a number. Made once, when the definition is
/// registered.
///
/// Why: a send whose guards must build `{model, event, feature}` for the
/// evaluator costs thirty times the transition it becomes; the guards flows are
/// written with (`event.payload.reference`, `{"<": [amount, 100]}`) read one
/// member. The shortcut answers exactly what the evaluator would, or nothing
/// (`nil`): anything it is not sure of — another path, a non-number in a
/// comparison, a default value — goes to the evaluator.
struct GuardShortcut {
    enum Source {
        case eventPayload
        case featurePayload
    }

    enum Test {
        /// `{"var": p}`, `{"!!": ...}`: the value's truth.
        case truthy
        /// `{"!": ...}`.
        case falsy
        /// `{"<": [{"var": p}, 100]}` and the other comparisons, the number on
        /// either side (`flipped`: the number first).
        case compare(Comparison, Double, flipped: Bool)
    }

    enum Comparison {
        case less, lessOrEqual, greater, greaterOrEqual, equal, notEqual
    }

    let source: Source
    let member: String
    let test: Test

    /// The shortcut for `rule`, or nil when it has another shape.
    init?(_ rule: JSONValue) {
        guard case .object(let object) = rule, object.count == 1 else { return nil }
        let (op, argument) = (object.entries[0].key, object.entries[0].value)
        switch op {
        case "var":
            guard let (source, member) = GuardShortcut.path(of: rule) else { return nil }
            (self.source, self.member, test) = (source, member, .truthy)
        case "!", "!!":
            let operand: JSONValue
            if case .array(let items) = argument {
                guard items.count == 1 else { return nil }
                operand = items[0]
            } else {
                operand = argument
            }
            guard let (source, member) = GuardShortcut.path(of: operand) else { return nil }
            (self.source, self.member, test) = (source, member, op == "!" ? .falsy : .truthy)
        case "<", "<=", ">", ">=", "==", "!=", "===", "!==":
            guard case .array(let items) = argument, items.count == 2 else { return nil }
            let comparison: Comparison
            switch op {
            case "<": comparison = .less
            case "<=": comparison = .lessOrEqual
            case ">": comparison = .greater
            case ">=": comparison = .greaterOrEqual
            case "==", "===": comparison = .equal
            default: comparison = .notEqual
            }
            if let (source, member) = GuardShortcut.path(of: items[0]), let number = GuardShortcut.number(items[1]) {
                (self.source, self.member, test) = (source, member, .compare(comparison, number, flipped: false))
            } else if let (source, member) = GuardShortcut.path(of: items[1]), let number = GuardShortcut.number(items[0]) {
                (self.source, self.member, test) = (source, member, .compare(comparison, number, flipped: true))
            } else {
                return nil
            }
        default:
            return nil
        }
    }

    /// `{"var": "event.payload.x"}` or `{"var": ["feature.payload.x"]}` (no default).
    private static func path(of value: JSONValue) -> (Source, String)? {
        guard case .object(let object) = value, object.count == 1, object.entries[0].key == "var" else { return nil }
        let argument = object.entries[0].value
        let text: String
        switch argument {
        case .string(let path): text = path
        case .array(let items) where items.count == 1: guard case .string(let path) = items[0] else { return nil }; text = path
        default: return nil
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] == "payload", !parts[2].isEmpty else { return nil }
        switch parts[0] {
        case "event": return (.eventPayload, String(parts[2]))
        case "feature": return (.featurePayload, String(parts[2]))
        default: return nil
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The guard's answer over these payloads, or nil when only the evaluator knows.
    func decide(eventPayload: JSONObject?, featurePayload: JSONObject?) -> Bool? {
        let value = (source == .eventPayload ? eventPayload : featurePayload)?[member] ?? .null
        switch test {
        case .truthy: return isTruthy(value)
        case .falsy: return !isTruthy(value)
        case .compare(let comparison, let number, let flipped):
            // Only number against number: JavaScript's coercions (null as 0, strings
            // as numbers) are the evaluator's to apply.
            guard let given = GuardShortcut.number(value), !given.isNaN, !number.isNaN else { return nil }
            let (left, right) = flipped ? (number, given) : (given, number)
            switch comparison {
            case .less: return left < right
            case .lessOrEqual: return left <= right
            case .greater: return left > right
            case .greaterOrEqual: return left >= right
            case .equal: return left == right
            case .notEqual: return left != right
            }
        }
    }
}
