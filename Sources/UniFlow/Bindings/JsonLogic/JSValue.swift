import Glibc

extension JsonLogic {
    /// A JavaScript value as json-logic-js handles it while a rule runs: with
    /// `undefined`, NaN and the infinities, and with arrays and objects as
    /// references, because JavaScript's `==`, `===` and `indexOf` compare those by
    /// identity (`{"==": [{"var": "a"}, {"var": "a"}]}` is true for an array `a`,
    /// `{"==": [[1], [1]]}` is false).
    ///
    /// Rules and data are both wrapped into this model lazily: an array or object
    /// converts its own members the first time they are needed, once, so that the
    /// same member read twice is the same reference.
    enum JSValue {
        case undefined
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array(JSArray)
        case object(JSObject)

        /// Wraps a JSON value; arrays and objects convert their members on first use.
        init(wrapping json: JSONValue) {
            switch json {
            case .null: self = .null
            case .bool(let b): self = .bool(b)
            case .int(let i): self = .number(Double(i))
            case .double(let d): self = .number(d)
            case .string(let s): self = .string(s)
            case .array(let items): self = .array(JSArray(wrapping: items))
            case .object(let object): self = .object(JSObject(wrapping: object))
            }
        }

        var isUndefined: Bool {
            if case .undefined = self { return true }
            return false
        }

        /// `null` or `undefined`.
        var isNullish: Bool {
            switch self {
            case .undefined, .null: true
            default: false
            }
        }
    }

    /// A JavaScript array. Identity matters (see `JSValue`), so it is a class.
    final class JSArray {
        /// The JSON the array was wrapped from, when it was.
        let json: [JSONValue]?
        private var converted: [JSValue]?
        private var cache = MemberCache()

        init(_ elements: [JSValue]) {
            json = nil
            converted = elements
        }

        init(wrapping json: [JSONValue]) {
            self.json = json
            converted = nil
        }

        var count: Int { converted?.count ?? json?.count ?? 0 }

        /// All elements (converted once, the first time they are all needed).
        var elements: [JSValue] {
            if let converted { return converted }
            let json = json ?? []
            var elements: [JSValue] = []
            elements.reserveCapacity(json.count)
            for index in json.indices { elements.append(cache.value(json[index], at: index)) }
            converted = elements
            cache = MemberCache()
            return elements
        }

        /// One element, without converting the others.
        func element(at index: Int) -> JSValue {
            if let converted { return converted[index] }
            return cache.value(json![index], at: index)
        }
    }

    /// A plain JavaScript object (from the data, from a rule, or the
    /// `{current, accumulator}` scope of `reduce`). Keys keep their order. An
    /// object wrapped from JSON converts a member when it is read, so a lookup
    /// in a large model costs one conversion, not one per member.
    final class JSObject {
        /// The JSON the object was wrapped from, when it was (a lazy object's
        /// members, all made, the first time all are needed).
        var json: JSONObject? {
            if let wrapped { return wrapped }
            guard let source else { return nil }
            let all = source.allMembers()
            wrapped = all
            return all
        }
        private var wrapped: JSONObject?
        private let built: [Member]
        private var cache = MemberCache()
        /// Where a lazy object's members come from, and those already read.
        private let source: LazyMembers?
        private var read: [String: JSValue] = [:]

        /// A key and its value. (A struct, not a tuple: arrays of tuples are
        /// destroyed through generic tuple metadata, which is slow.)
        struct Member {
            let key: String
            let value: JSValue
        }
        /// The operation a one-key object names, looked up once (nil: unknown).
        lazy var operation: Operation? = count == 1 ? Operation(name: key(at: 0)) : nil

        /// For a `var` whose path is a literal non-empty string: the path split
        /// once (a rule kept and evaluated again and again splits it only then).
        lazy var literalPath: [String]? = {
            guard operation == .variable else { return nil }
            let argument = value(at: 0)
            let first: JSValue
            if case .array(let array) = argument { first = array.count > 0 ? array.element(at: 0) : .undefined } else { first = argument }
            guard case .string(let path) = first, !path.isEmpty else { return nil }
            return JsonLogic.pathComponents(path)
        }()

        init(_ members: [Member]) {
            wrapped = nil
            built = members
            source = nil
        }

        init(wrapping json: JSONObject) {
            wrapped = json
            built = []
            source = nil
        }

        /// An object whose members are made when they are read.
        init(lazy source: LazyMembers) {
            wrapped = nil
            built = []
            self.source = source
        }

        var count: Int { json?.count ?? built.count }

        func key(at index: Int) -> String { json?.entries[index].key ?? built[index].key }

        func value(at index: Int) -> JSValue {
            guard let json else { return built[index].value }
            return cache.value(json.entries[index].value, at: index)
        }

        /// The own property `key`, compared code unit by code unit as JavaScript
        /// does (Swift's `==` on strings would equate canonically equivalent ones).
        func value(forKey key: String) -> JSValue? {
            if let source, wrapped == nil {
                if let known = read[key] { return known }
                guard let value = source.member(key) else { return nil }
                read[key] = value
                return value
            }
            for index in 0..<count where JsonLogic.sameCodeUnits(self.key(at: index), key) {
                return value(at: index)
            }
            return nil
        }

        var members: [Member] {
            json == nil ? built : (0..<count).map { Member(key: key(at: $0), value: value(at: $0)) }
        }
    }

    /// The members of an object that is too costly to build whole when a rule
    /// reads one of them (the dispatcher's model: `model.F` builds F alone).
    protocol LazyMembers: AnyObject {
        /// The member with that key, or nil.
        func member(_ key: String) -> JSValue?
        /// Every member, in order (a rule that reads the whole object).
        func allMembers() -> JSONObject
    }

    /// The wrappers made for the array and object members of a JSON container,
    /// so that reading a member twice gives the same reference. Scalars have no
    /// identity and are converted on every read.
    private struct MemberCache {
        private struct Wrapped {
            let index: Int
            let value: JSValue
        }

        // Most containers have one member read (a step of a `var` path): keep
        // that one inline and allocate only for more. The others are found by
        // index: a container all of whose members are read (an `or` of 200,000
        // rules) would make a list searched member by member quadratic.
        private var first: Wrapped?
        private var more: [Int: JSValue] = [:]

        mutating func value(_ json: JSONValue, at index: Int) -> JSValue {
            switch json {
            case .array, .object:
                if let first, first.index == index { return first.value }
                if !more.isEmpty, let hit = more[index] { return hit }
                let value = JSValue(wrapping: json)
                if first == nil { first = Wrapped(index: index, value: value) } else { more[index] = value }
                return value
            default:
                return JSValue(wrapping: json)
            }
        }
    }

    /// Whether two strings have the same UTF-8 bytes, hence the same UTF-16 code units.
    static func sameCodeUnits(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
    }
}

extension JsonLogic.JSValue {
    /// The JSON of a final result: `undefined` is null (as an array element too;
    /// an object member that is `undefined` is left out, as `JSON.stringify` does).
    /// Integral numbers within ±2^53 come out as integers. A number that is not
    /// finite has no JSON form and is an error.
    func jsonValue() throws(UniFlowError) -> JSONValue {
        switch self {
        case .undefined, .null:
            return .null
        case .bool(let b):
            return .bool(b)
        case .number(let d):
            guard d.isFinite else { throw UniFlowError(.schema, "rule result is not a finite number") }
            if d == d.rounded(.towardZero) && abs(d) <= 9_007_199_254_740_992 { return .int(Int64(d)) }
            return .double(d)
        case .string(let s):
            return .string(s)
        case .array(let array):
            if let json = array.json { return .array(json) }
            var items: [JSONValue] = []
            items.reserveCapacity(array.count)
            for element in array.elements { items.append(try element.jsonValue()) }
            return .array(items)
        case .object(let object):
            if let json = object.json { return .object(json) }
            var entries: [(key: String, value: JSONValue)] = []
            for member in object.members where !member.value.isUndefined {
                entries.append((member.key, try member.value.jsonValue()))
            }
            return .object(JSONObject(entries))
        }
    }
}
