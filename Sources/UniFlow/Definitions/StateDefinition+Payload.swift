extension FieldType {
    /// The value as a field of this type stores it, or nil when the value does not
    /// fit the type. Integers are stored as `.int` however they were spelled (`3.0`),
    /// so that output writes them without a fraction; every other value is kept as is.
    /// `null` fits only `any`.
    public func storedValue(for value: JSONValue) -> JSONValue? {
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
    public func checkPayload(_ payload: JSONObject?, feature: String) throws(UniFlowError) -> JSONObject {
        let given = payload ?? JSONObject()
        // Unknown fields first: a misspelled field would otherwise be reported as
        // the real one missing, which hides the typo.
        for (key, _) in given where !fields.contains(where: { $0.name == key }) {
            throw UniFlowError(.schema, "\(feature).\(name).\(key): unknown field")
        }
        var stored: [(key: String, value: JSONValue)] = []
        stored.reserveCapacity(fields.count)
        for field in fields {
            if let value = given[field.name] {
                guard let storedValue = field.type.storedValue(for: value) else {
                    var message = field.type.mismatch(value)
                    if field.optional && value == .null {
                        message += " (leave an optional field out instead)"
                    }
                    throw UniFlowError(.schema, "\(feature).\(name).\(field.name): \(message)")
                }
                stored.append((field.name, storedValue))
            } else if let defaultValue = field.defaultValue {
                stored.append((field.name, defaultValue))
            } else if !field.optional {
                throw UniFlowError(.schema, "\(feature).\(name).\(field.name): required field missing")
            }
        }
        return JSONObject(stored)
    }
}
