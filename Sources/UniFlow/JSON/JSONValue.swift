/// A JSON value as the core sees it. Objects keep their keys in order, so that
/// output is deterministic and payloads follow their fields' declaration order.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// An integer literal (or an integral value stored for an `integer` field).
    case int(Int64)
    /// A finite number written with a fraction or an exponent.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The numeric value of `int` and `double`, nil otherwise.
    var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The JSON name of the value's kind, for messages ("expected number, got string").
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Numbers compare by value, so `1` equals `1.0`.
    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.int, .double), (.double, .int), (.double, .double): lhs.number == rhs.number
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }
}

/// A JSON object with its keys in order.
///
/// Most objects the core handles (payloads, actions, a state's entry in a model)
/// have a handful of keys: those are looked up by a linear scan, which allocates
/// nothing and beats hashing. An object with more than `indexThreshold` keys also
/// keeps an index from key to position, so that checking a payload of 300,000
/// fields, or building a model of 100,000 features, stays linear.
struct JSONObject: Equatable, Sendable, Sequence {
    private(set) var entries: [(key: String, value: JSONValue)]
    /// Key to the position of its first entry; nil while the object is small.
    private var index: [String: Int]?

    /// Objects with more keys than this are indexed.
    static let indexThreshold = 16

    init() { entries = [] }

    /// When a key occurs twice, lookups find its first entry.
    init(_ entries: [(key: String, value: JSONValue)]) {
        self.entries = entries
        if entries.count > JSONObject.indexThreshold { buildIndex() }
    }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    var keys: [String] { entries.map(\.key) }

    /// The position of the key's first entry.
    func position(of key: String) -> Int? {
        if let index { return index[key] }
        return entries.firstIndex(where: { $0.key == key })
    }

    subscript(key: String) -> JSONValue? {
        get { position(of: key).map { entries[$0].value } }
        set {
            if let i = position(of: key) {
                if let newValue {
                    entries[i].value = newValue
                } else {
                    entries.remove(at: i)
                    // Later positions moved; removing is linear anyway.
                    if index != nil { buildIndex() }
                }
            } else if let newValue {
                entries.append((key, newValue))
                if index != nil {
                    index![key] = entries.count - 1
                } else if entries.count > JSONObject.indexThreshold {
                    buildIndex()
                }
            }
        }
    }

    private mutating func buildIndex() {
        guard entries.count > JSONObject.indexThreshold else {
            index = nil
            return
        }
        var positions: [String: Int] = [:]
        positions.reserveCapacity(entries.count)
        // Backwards, so that a repeated key ends up at its first entry.
        for i in entries.indices.reversed() { positions[entries[i].key] = i }
        index = positions
    }

    func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        entries.makeIterator()
    }

    /// Objects are equal when they hold the same keys with equal values, in any order.
    static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs.entries where rhs[key] != value { return false }
        return true
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    init(nilLiteral: ()) { self = .null }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(integerLiteral value: Int64) { self = .int(value) }
    init(floatLiteral value: Double) { self = .double(value) }
    init(stringLiteral value: String) { self = .string(value) }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}
