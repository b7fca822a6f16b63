/// JavaScript's type conversions and comparisons (ECMA-262 §7.1, §7.2), on the
/// values json-logic-js meets. Strings are compared by code unit, as JavaScript
/// does; Swift's own `==` and `<` on strings would follow Unicode canonical
/// equivalence instead.
extension JsonLogic.JSValue {
    /// ToBoolean: false for undefined, null, false, ±0, NaN and "".
    var toBoolean: Bool {
        switch self {
        case .undefined, .null: false
        case .bool(let b): b
        case .number(let d): d != 0 && !d.isNaN
        case .string(let s): !s.isEmpty
        case .array, .object: true
        }
    }

    /// json-logic-js's `truthy`: ToBoolean, except that an empty array is false.
    var isTruthy: Bool {
        if case .array(let array) = self { return array.count > 0 }
        return toBoolean
    }

    /// ToPrimitive: arrays become their `join(",")`, objects "[object Object]".
    var toPrimitive: Self {
        switch self {
        case .array, .object: .string(toJSString)
        default: self
        }
    }

    /// ToNumber (`Number(value)`).
    var toNumber: Double {
        switch self {
        case .undefined: .nan
        case .null: 0
        case .bool(let b): b ? 1 : 0
        case .number(let d): d
        case .string(let s): JsonLogic.JSNumber.parse(s)
        case .array, .object: toPrimitive.toNumber
        }
    }

    /// ToString (`String(value)`); an array joins its elements with "," and
    /// writes null and undefined elements as empty strings.
    var toJSString: String {
        switch self {
        case .undefined: "undefined"
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .number(let d): JsonLogic.JSNumber.format(d)
        case .string(let s): s
        case .array(let array): array.elements.map(\.joinedString).joined(separator: ",")
        case .object: "[object Object]"
        }
    }

    /// What `Array.prototype.join` writes for an element.
    var joinedString: String { isNullish ? "" : toJSString }

    /// `parseFloat(value)`: the value's string, read as far as it is a decimal number.
    var parseFloat: Double {
        if case .number(let d) = self { return d == 0 ? 0 : d }  // String(-0) is "0"
        return JsonLogic.JSNumber.parseFloat(toJSString)
    }

    /// ToIntegerOrInfinity.
    var toIntegerOrInfinity: Double {
        let d = toNumber
        if d.isNaN { return 0 }
        if d.isInfinite { return d }
        let t = d.rounded(.towardZero)
        return t == 0 ? 0 : t
    }

    /// Strict equality (`===`): same type and value; NaN is unequal to itself,
    /// +0 equals -0; arrays and objects are equal only to themselves.
    static func strictEquals(_ x: Self, _ y: Self) -> Bool {
        switch (x, y) {
        case (.undefined, .undefined), (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): JsonLogic.sameCodeUnits(a, b)
        case (.array(let a), .array(let b)): a === b
        case (.object(let a), .object(let b)): a === b
        default: false
        }
    }

    /// Loose equality (`==`, IsLooselyEqual): null equals only undefined (and
    /// itself), booleans compare as numbers, strings meet numbers as numbers,
    /// arrays and objects meet primitives through ToPrimitive.
    static func looseEquals(_ x: Self, _ y: Self) -> Bool {
        switch (x, y) {
        case (.undefined, .undefined), (.null, .null), (.bool, .bool), (.number, .number),
             (.string, .string), (.array, .array), (.object, .object), (.array, .object), (.object, .array):
            return strictEquals(x, y)
        case (.undefined, .null), (.null, .undefined):
            return true
        case (.number(let a), .string):
            return a == y.toNumber
        case (.string, .number(let b)):
            return x.toNumber == b
        case (.bool, _):
            return looseEquals(.number(x.toNumber), y)
        case (_, .bool):
            return looseEquals(x, .number(y.toNumber))
        case (.number, .array), (.number, .object), (.string, .array), (.string, .object):
            return looseEquals(x, y.toPrimitive)
        case (.array, .number), (.object, .number), (.array, .string), (.object, .string):
            return looseEquals(x.toPrimitive, y)
        default:
            return false
        }
    }

    /// `x < y` (IsLessThan): two strings (after ToPrimitive) compare by UTF-16
    /// code units, anything else as numbers. nil stands for JavaScript's
    /// `undefined` outcome (a NaN), which makes `<`, `<=`, `>` and `>=` all false.
    static func lessThan(_ x: Self, _ y: Self) -> Bool? {
        let px = x.toPrimitive
        let py = y.toPrimitive
        if case .string(let a) = px, case .string(let b) = py {
            return a.utf16.lexicographicallyPrecedes(b.utf16)
        }
        let nx = px.toNumber
        let ny = py.toNumber
        if nx.isNaN || ny.isNaN { return nil }
        return nx < ny
    }

    /// The binary `+` operator: string concatenation when either primitive is a
    /// string, numeric addition otherwise.
    static func plus(_ x: Self, _ y: Self) -> Self {
        let px = x.toPrimitive
        let py = y.toPrimitive
        switch (px, py) {
        case (.string, _), (_, .string): return .string(px.toJSString + py.toJSString)
        default: return .number(px.toNumber + py.toNumber)
        }
    }

    /// The property `key` as `value[key]` reads it, for the properties JSON data
    /// has: an object's own members, an array's or a string's `length` and
    /// indices (a string's index yields one UTF-16 code unit). Inherited
    /// prototype members (`toString`, `constructor`, …) are functions in
    /// JavaScript and have no JSON counterpart; they read as undefined here.
    /// nil for null and undefined, where JavaScript throws a TypeError.
    func property(_ key: String) -> Self? {
        switch self {
        case .undefined, .null:
            return nil
        case .object(let object):
            return object.value(forKey: key) ?? .undefined
        case .array(let array):
            if key == "length" { return .number(Double(array.count)) }
            guard let index = Self.arrayIndex(key), index < array.count else { return .undefined }
            return array.element(at: index)
        case .string(let s):
            if key == "length" { return .number(Double(s.utf16.count)) }
            let units = s.utf16
            guard let index = Self.arrayIndex(key), index < units.count else { return .undefined }
            let unit = units[units.index(units.startIndex, offsetBy: index)]
            return .string(String(decoding: [unit], as: UTF16.self))
        case .bool, .number:
            return .undefined
        }
    }

    /// The integer an array index property name stands for: its canonical
    /// decimal form ("0", "17"; not "01", "1.0" or "-1") below 2^32 − 1.
    private static func arrayIndex(_ key: String) -> Int? {
        let bytes = Array(key.utf8)
        guard !bytes.isEmpty, bytes.count <= 10, bytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        if bytes.count > 1 && bytes[0] == 48 { return nil }
        guard let value = Int(key), value < 4_294_967_295 else { return nil }
        return value
    }
}
