import CJansson
import Glibc

extension FieldType {
    /// The value as a field of this type stores it, or nil when the value does not
    /// fit the type. Integers are stored as `.int` however they were spelled (`3.0`),
    /// so that output writes them without a fraction; every other value is kept as is.
    /// `null` fits only `any`.
    func storedValue(for value: JSONValue) -> JSONValue? {
        // No `cond ? value : nil` here: JSONValue is ExpressibleByNilLiteral, so that
        // `nil` would be `.null`, not "does not fit".
        switch (self, value) {
        case (.any, _),
             (.string, .string), (.boolean, .bool), (.object, .object), (.array, .array), (.number, .int):
            return value
        case (.number, .double(let d)) where d.isFinite:
            return value
        case (.integer, .int(let i)) where i.magnitude <= FieldType.maxIntegerMagnitude:
            return value
        case (.integer, .double(let d))
            where d.isFinite && d.rounded(.towardZero) == d && d.magnitude <= Double(FieldType.maxIntegerMagnitude):
            return .int(Int64(d))
        default:
            return .none
        }
    }

    /// How deep a field's value may nest (the value itself is level 1). A snapshot
    /// writes a keyed instance's values at level 6 (snapshot, model, feature, key,
    /// payload), and the library reads at most 256 levels back: a deeper value
    /// would make a model that cannot be restored, and one growing by a level per
    /// action (a binding that nests the model's value into itself) would in the end
    /// overflow the stack of whatever walks it.
    static let maxValueDepth = JSONParser.maxDepth - 5

    /// Integers beyond 2^53 cannot round-trip through a double, which is what most
    /// hosts (JavaScript, jansson's reals, Python's float) turn a JSON number into.
    static let maxIntegerMagnitude: UInt64 = 1 << 53

    /// Why `value` does not fit (`expected number, got string`), for an error message.
    func mismatch(_ value: JSONValue) -> String {
        if self == .integer, let number = value.number, number.isFinite, number.rounded(.towardZero) == number {
            return "integer \(value.jsonText) is out of range (magnitude at most 2^53)"
        }
        return "expected \(rawValue), got \(value.jsonTypeName)"
    }
}

extension JSONValue {
    /// Whether the value has more than `limit` levels (a scalar has none, `[]` one).
    /// Walks at most `limit + 1` levels deep, however deep the value is.
    func nests(deeperThan limit: Int) -> Bool {
        switch self {
        case .array(let items):
            return limit < 1 || items.contains { $0.nests(deeperThan: limit - 1) }
        case .object(let object):
            return limit < 1 || object.entries.contains { $0.value.nests(deeperThan: limit - 1) }
        default:
            return false
        }
    }

    /// The value's JSON type for messages: unlike `kindName`, every number is a
    /// `number`, since JSON itself does not tell integers apart.
    var jsonTypeName: String {
        switch self {
        case .int, .double: "number"
        default: kindName
        }
    }
}

extension StateDefinition {
    /// Checks a payload against the state's fields and returns it as stored:
    /// defaults filled in, integers as `.int`, keys in field-declaration order (so
    /// the same model always serializes to the same bytes). nil means `{}`.
    ///
    /// Errors are `UF_ESCHEMA` naming `Feature.State.field`: an unknown field, a
    /// required field missing, a value not of its field's type (`null` included,
    /// unless the field is `any`: an optional field is left out, not `null`).
    /// The feature's name is only asked for to write an error.
    func checkPayload(_ payload: JSONObject?, feature: @autoclosure () -> String) throws(UniFlowError) -> JSONObject {
        try check(ObjectPayload(object: payload ?? JSONObject()), feature: feature)
    }

    /// The same check for a payload object still in jansson's tree (an action's
    /// `payload`), so that only the values of declared fields are ever converted.
    /// `depth` is the JSON level of the payload object (the action is level 1);
    /// the feature's name is only asked for to write an error.
    func checkPayload(jansson payload: UnsafeMutablePointer<json_t>, depth: Int,
                      feature: @autoclosure () -> String) throws(UniFlowError) -> JSONObject {
        try check(JanssonPayload(object: payload, depth: depth), feature: feature)
    }

    /// Walks the fields in declaration order and asks the payload for each: a
    /// payload written in that order is read in one pass, without a lookup by name
    /// (see `GivenPayload`). The given keys are walked again only when one of them
    /// is not a field, to name it. Linear in fields plus keys whatever their number
    /// (lookups in a large `JSONObject` and in jansson's objects are hashed).
    private func check<Given: GivenPayload>(_ given: consuming Given,
                                            feature: () -> String) throws(UniFlowError) -> JSONObject {
        var stored: [(key: String, value: JSONValue)] = []
        stored.reserveCapacity(fields.count)
        var found = 0
        // The first failure in field order, thrown only once no key is unknown: a
        // misspelled field would otherwise be reported as the real one missing,
        // which hides the typo.
        var failure: UniFlowError?
        for i in fields.indices {
            if let value = try given.next(fields[i].name) {
                found += 1
                guard failure == nil else { continue }
                if let storedValue = fields[i].type.storedValue(for: value) {
                    if storedValue.nests(deeperThan: FieldType.maxValueDepth) {
                        failure = UniFlowError(.schema, "\(feature()).\(name).\(fields[i].name): the value is nested deeper than \(FieldType.maxValueDepth) levels")
                        continue
                    }
                    stored.append((fields[i].name, storedValue))
                } else {
                    failure = mismatch(fields[i], value, feature: feature())
                }
            } else if let defaultValue = fields[i].defaultValue {
                if failure == nil { stored.append((fields[i].name, defaultValue)) }
            } else if !fields[i].optional && failure == nil {
                failure = UniFlowError(.schema, "\(feature()).\(name).\(fields[i].name): required field missing")
            }
        }
        if found < given.count, let key = firstUnknownKey(in: given) {
            throw UniFlowError(.schema, "\(feature()).\(name).\(key): unknown field")
        }
        if let failure { throw failure }
        return JSONObject(stored)
    }

    private func mismatch(_ field: FieldDefinition, _ value: JSONValue, feature: String) -> UniFlowError {
        var message = field.type.mismatch(value)
        if field.optional && value == .null {
            message += " (leave an optional field out instead)"
        }
        return UniFlowError(.schema, "\(feature).\(name).\(field.name): \(message)")
    }

    /// The first given key (in the payload's order) that names no field.
    private func firstUnknownKey<Given: GivenPayload>(in given: Given) -> String? {
        if fields.count <= 16 {
            return given.firstKey { key in !fields.contains(where: { $0.name == key }) }
        }
        let names = Set(fields.map(\.name))
        return given.firstKey { !names.contains($0) }
    }
}

/// What a payload check reads from the payload it was given, wherever it lives.
/// The check asks for every field once, in declaration order: a reader keeps a
/// cursor on its keys, so that a payload written in that order (the usual case)
/// is matched key by key, and looks a field up by name only when the key under
/// the cursor is another one.
private protocol GivenPayload {
    /// How many keys the payload has.
    var count: Int { get }
    /// The value given for the next field, or nil.
    mutating func next(_ field: String) throws(UniFlowError) -> JSONValue?
    /// The first key, in the payload's order, for which `predicate` holds.
    func firstKey(where predicate: (String) -> Bool) -> String?
}

private struct ObjectPayload: GivenPayload {
    let object: JSONObject
    var cursor = 0

    var count: Int { object.count }

    mutating func next(_ field: String) -> JSONValue? {
        if cursor < object.entries.count && object.entries[cursor].key == field {
            cursor += 1
            return object.entries[cursor - 1].value
        }
        return object[field]
    }

    func firstKey(where predicate: (String) -> Bool) -> String? {
        object.entries.first(where: { predicate($0.key) })?.key
    }
}

/// A payload object in jansson's tree. Keys cannot hold NUL (jansson refuses them).
private struct JanssonPayload: GivenPayload {
    let object: UnsafeMutablePointer<json_t>
    let depth: Int
    var cursor: UnsafeMutableRawPointer?

    init(object: UnsafeMutablePointer<json_t>, depth: Int) {
        self.object = object
        self.depth = depth
        cursor = json_object_iter(object)
    }

    var count: Int { json_object_size(object) }

    mutating func next(_ field: String) throws(UniFlowError) -> JSONValue? {
        let found = field.utf8.withContiguousStorageIfAvailable { name in find(name) }
            ?? Array(field.utf8).withUnsafeBufferPointer { name in find(name) }
        guard let found else { return nil }
        return try JSONParser.value(of: found, depth: depth + 1)
    }

    private mutating func find(_ name: UnsafeBufferPointer<UInt8>) -> UnsafeMutablePointer<json_t>? {
        guard let start = name.baseAddress else { return json_object_getn(object, "", 0) }
        let bytes = UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self)
        if let it = cursor, json_object_iter_key_len(it) == name.count,
           memcmp(json_object_iter_key(it), bytes, name.count) == 0 {
            cursor = json_object_iter_next(object, it)
            return json_object_iter_value(it)
        }
        return json_object_getn(object, bytes, name.count)
    }

    func firstKey(where predicate: (String) -> Bool) -> String? {
        var iter = json_object_iter(object)
        while let it = iter {
            let key = String(cString: json_object_iter_key(it))
            if predicate(key) { return key }
            iter = json_object_iter_next(object, it)
        }
        return nil
    }
}
