import Glibc

extension JsonLogic {
    /// The operations whose arguments are all evaluated first, with json-logic-js's
    /// results: a missing argument is `undefined`, extra ones are ignored.
    static func perform(_ operation: Operation, _ values: [JSValue], _ data: JSValue) throws(UniFlowError) -> JSValue {
        let a = values.count > 0 ? values[0] : .undefined
        let b = values.count > 1 ? values[1] : .undefined
        let c = values.count > 2 ? values[2] : .undefined
        switch operation {
        case .variable:
            return variable(a, default: b, in: data)
        case .missing:
            return try missing(values, in: data)
        case .missingSome:
            return try missingSome(need: a, keys: b, in: data)
        case .looseEqual: return .bool(JSValue.looseEquals(a, b))
        case .strictEqual: return .bool(JSValue.strictEquals(a, b))
        case .looseNotEqual: return .bool(!JSValue.looseEquals(a, b))
        case .strictNotEqual: return .bool(!JSValue.strictEquals(a, b))
        case .not: return .bool(!a.isTruthy)
        case .truthy: return .bool(a.isTruthy)
        case .less:
            // With a third argument, "between, exclusive".
            if c.isUndefined { return .bool(JSValue.lessThan(a, b) == true) }
            return .bool(JSValue.lessThan(a, b) == true && JSValue.lessThan(b, c) == true)
        case .lessOrEqual:
            if c.isUndefined { return .bool(JSValue.lessThan(b, a) == false) }
            return .bool(JSValue.lessThan(b, a) == false && JSValue.lessThan(c, b) == false)
        case .greater: return .bool(JSValue.lessThan(b, a) == true)
        case .greaterOrEqual: return .bool(JSValue.lessThan(a, b) == false)
        case .add:
            // parseFloat on every argument, so `{"+": "3"}` casts and "12px" is 12.
            var sum = 0.0
            for value in values { sum = JSValue.number(sum).parseFloat + value.parseFloat }
            return .number(sum)
        case .multiply:
            // A reduce without an initial value: one argument comes back as it is.
            guard var product = values.first else {
                throw UniFlowError(.schema, "'*' needs at least one argument")
            }
            for value in values.dropFirst() { product = .number(product.parseFloat * value.parseFloat) }
            return product
        case .subtract:
            if b.isUndefined { return .number(-a.toNumber) }
            return .number(a.toNumber - b.toNumber)
        case .divide: return .number(a.toNumber / b.toNumber)
        case .remainder: return .number(fmod(a.toNumber, b.toNumber))
        case .min: return .number(extremum(values, below: true))
        case .max: return .number(extremum(values, below: false))
        case .merge:
            // Array arguments are spliced in, one level deep; others are appended.
            var merged: [JSValue] = []
            for value in values {
                if case .array(let array) = value { merged += array.elements } else { merged.append(value) }
            }
            return .array(JSArray(merged))
        case .in:
            return .bool(try contains(b, a))
        case .cat:
            return .string(values.map(\.joinedString).joined())
        case .substr:
            return .string(substring(a, b, c))
        case .ifThenElse, .and, .or, .map, .filter, .reduce, .all, .none, .some:
            preconditionFailure("evaluated in JsonLogic.operate")
        }
    }

    /// `var`: a dotted path into the data (array indices and `length` included);
    /// an empty or null path is the whole data. A path that ends early gives the
    /// default (or null) — a member that holds null gives null, not the default.
    static func variable(_ path: JSValue, default fallback: JSValue, in data: JSValue) -> JSValue {
        switch path {
        case .undefined, .null: return data
        case .string(let s) where s.isEmpty: return data
        default: break
        }
        return variable(components: pathComponents(path.toJSString), default: fallback, in: data)
    }

    /// `variable` for a path already split (and not empty).
    static func variable(components: [String], default fallback: JSValue, in data: JSValue) -> JSValue {
        let notFound = fallback.isUndefined ? JSValue.null : fallback
        var current = data
        for key in components {
            guard let next = current.property(key), !next.isUndefined else { return notFound }
            current = next
        }
        return current
    }

    /// `String(path).split(".")`. Splitting at "." bytes is exact: the byte never
    /// occurs inside a multi-byte character.
    static func pathComponents(_ path: String) -> [String] {
        var path = path
        return path.withUTF8 { bytes in
            var components: [String] = []
            var start = 0
            for i in 0...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: ".") {
                components.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self))
                start = i + 1
            }
            return components
        }
    }

    /// `missing`: the keys (the arguments, or the array that is the first one)
    /// whose `{"var": key}` is null or "". Each key goes through a real `var`
    /// rule, as in json-logic-js, so an array key carries a default.
    static func missing(_ values: [JSValue], in data: JSValue) throws(UniFlowError) -> JSValue {
        let keys: [JSValue]
        if case .array(let array)? = values.first { keys = array.elements } else { keys = values }
        var absent: [JSValue] = []
        for key in keys {
            let value = try evaluate(.object(JSObject([.init(key: "var", value: key)])), data)
            switch value {
            case .null: absent.append(key)
            case .string(let s) where s.isEmpty: absent.append(key)
            default: break
            }
        }
        return .array(JSArray(absent))
    }

    /// `missing_some`: `[]` when at least `need` of the keys are present, else the
    /// missing ones.
    static func missingSome(need: JSValue, keys: JSValue, in data: JSValue) throws(UniFlowError) -> JSValue {
        let absent = try evaluate(.object(JSObject([.init(key: "missing", value: keys)])), data)
        guard let length = keys.property("length") else {
            throw UniFlowError(.schema, "missing_some needs a list of keys, got \(keys.toJSString)")
        }
        guard case .array(let absentKeys) = absent else { return absent }
        let present = JSValue.number(length.toNumber - Double(absentKeys.count))
        return JSValue.lessThan(present, need) == false ? .array(JSArray([])) : absent
    }

    /// `in`: substring of a string, or an element (`===`) of an array. Any other
    /// haystack is false, except an object with an `indexOf` member, which
    /// json-logic-js tries to call.
    static func contains(_ haystack: JSValue, _ needle: JSValue) throws(UniFlowError) -> Bool {
        guard haystack.toBoolean else { return false }
        switch haystack {
        case .string(let s):
            var text = s
            var part = needle.toJSString
            // UTF-8 is self-synchronizing: a byte match is a code-unit match.
            return text.withUTF8 { t in part.withUTF8 { p in containsBytes(t, p) } }
        case .array(let array):
            return array.elements.contains { JSValue.strictEquals($0, needle) }
        case .object(let object):
            if object.value(forKey: "indexOf") != nil {
                throw UniFlowError(.schema, "'in': the object's indexOf member is not a function")
            }
            return false
        default:
            return false
        }
    }

    private static func containsBytes(_ text: UnsafeBufferPointer<UInt8>, _ part: UnsafeBufferPointer<UInt8>) -> Bool {
        if part.isEmpty { return true }
        guard text.count >= part.count else { return false }
        for start in 0...(text.count - part.count)
        where text[start] == part[0] && memcmp(text.baseAddress! + start, part.baseAddress!, part.count) == 0 {
            return true
        }
        return false
    }

    /// `substr`: String.prototype.substr over UTF-16 code units (a negative start
    /// counts from the end); a negative length drops that many units from the end.
    static func substring(_ source: JSValue, _ start: JSValue, _ length: JSValue) -> String {
        let text = source.toJSString
        if JSValue.lessThan(length, .number(0)) == true {
            let tail = substr(text, start, .undefined)
            // json-logic-js computes `tail.length + length` with JavaScript's `+`,
            // which concatenates when the length is a string.
            return substr(tail, .number(0), JSValue.plus(.number(Double(tail.utf16.count)), length))
        }
        return substr(text, start, length)
    }

    private static func substr(_ text: String, _ start: JSValue, _ length: JSValue) -> String {
        let units = Array(text.utf16)
        let size = Double(units.count)
        var from = start.toIntegerOrInfinity
        from = from < 0 ? Swift.max(size + from, 0) : Swift.min(from, size)
        let count = length.isUndefined ? size : Swift.min(Swift.max(length.toIntegerOrInfinity, 0), size)
        let to = Swift.min(from + count, size)
        guard from < to else { return "" }
        return String(decoding: units[Int(from)..<Int(to)], as: UTF16.self)
    }

    /// Math.min / Math.max: NaN if any argument is, -0 below +0; ±Infinity for none.
    private static func extremum(_ values: [JSValue], below: Bool) -> Double {
        var result = below ? Double.infinity : -Double.infinity
        for value in values {
            let n = value.toNumber
            if n.isNaN || result.isNaN { result = .nan; continue }
            if below ? n < result : n > result {
                result = n
            } else if n == 0 && result == 0 && (n.sign == .minus) == below {
                result = n
            }
        }
        return result
    }
}
