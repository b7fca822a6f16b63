/// Validates feature definitions (SPEC section 2) and builds `FeatureDefinition`s.
///
/// Every error is `UF_ESCHEMA` with a message that starts with the path of the
/// offending element (`features[1].states.InProgress.fields.progress: unknown type
/// 'nubmer'`), as a JSON Schema validator would report it; two definitions of one
/// feature in the same call are `UF_EEXISTS`.
public enum DefinitionParser {
    /// The longest name, in UTF-8 bytes, of a feature, state or field.
    public static let maxNameLength = 256

    /// Parses one definition object, an array of them, or `{"features": [...]}`.
    /// An empty list is valid and defines nothing.
    public static func parse(_ json: JSONValue) throws(UniFlowError) -> [FeatureDefinition] {
        let items = try definitionList(json)
        var definitions: [FeatureDefinition] = []
        definitions.reserveCapacity(items.count)
        // One call may define hundreds of thousands of features: no scan per feature.
        var positions: [String: Int] = [:]
        for (i, item) in items.enumerated() {
            let definition = try parseFeature(item, path: "features[\(i)]")
            if let first = positions.updateValue(i, forKey: definition.name) {
                throw UniFlowError(.exists, "features[\(i)]: feature '\(definition.name)' is already defined at features[\(first)]")
            }
            definitions.append(definition)
        }
        return definitions
    }

    /// Whether `name` can name a feature, state or field: `[A-Za-z_][A-Za-z0-9_]*`,
    /// at most `maxNameLength` bytes.
    public static func isValidName(_ name: String) -> Bool {
        var bytes = name.utf8.makeIterator()
        guard let first = bytes.next(), first.isNameStart, name.utf8.count <= maxNameLength else { return false }
        while let byte = bytes.next() {
            guard byte.isNameStart || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return false }
        }
        return true
    }

    // MARK: Top level

    private static func definitionList(_ json: JSONValue) throws(UniFlowError) -> [JSONValue] {
        switch json {
        case .array(let items):
            return items
        case .object(let object) where object["features"] != nil:
            // "features" is not a key of a definition, so an object holding it can
            // only be the wrapper; anything next to it is a mistake.
            for (key, value) in object where key != "features" {
                guard key == "$schema" else {
                    throw UniFlowError(.schema, "definitions: unknown key '\(key)' next to 'features'")
                }
                try schemaReference(value, at: "definitions.$schema")
            }
            guard case .array(let items)? = object["features"] else {
                throw expected("array", got: object["features"]!, at: "features")
            }
            return items
        case .object:
            return [json]
        default:
            throw UniFlowError(.schema, "definitions must be an object or an array, got \(json.jsonTypeName)")
        }
    }

    // MARK: Feature

    private static let featureKeys = ["$schema", "feature", "description", "states", "initial", "transitions", "bindings"]

    private static func parseFeature(_ json: JSONValue, path: String) throws(UniFlowError) -> FeatureDefinition {
        let object = try objectValue(json, at: path)
        // Unknown keys first, so that a misspelled `stats` is reported as such and
        // not as `states` missing.
        try checkKeys(object, allowed: featureKeys, at: path)

        if let value = object["$schema"] { try schemaReference(value, at: "\(path).$schema") }
        let name = try name(try required("feature", in: object, at: path), at: "\(path).feature")
        let description = try optionalString(object["description"], at: "\(path).description")
        let states = try parseStates(try required("states", in: object, at: path), at: "\(path).states")

        var initial: Set<Int>?
        var transitions: [Set<Int>]?
        if object["initial"] != nil || object["transitions"] != nil {
            let names = StateNames(states)
            if let value = object["initial"] {
                let list = try stateList(value, states: names, at: "\(path).initial")
                guard !list.isEmpty else { throw UniFlowError(.schema, "\(path).initial: must not be empty") }
                initial = list
            }
            if let value = object["transitions"] {
                transitions = try parseTransitions(value, states: names, count: states.count, at: "\(path).transitions")
            }
        }

        var bindings: [JSONValue] = []
        if let value = object["bindings"] {
            // Only the shape here: the bindings layer parses each one at registration.
            guard case .array(let items) = value else { throw expected("array", got: value, at: "\(path).bindings") }
            for (i, item) in items.enumerated() {
                _ = try objectValue(item, at: "\(path).bindings[\(i)]")
            }
            bindings = items
        }

        return FeatureDefinition(name: name, description: description, states: states, initial: initial,
                                 transitions: transitions, bindings: bindings, source: json)
    }

    // MARK: States and fields

    private static let stateKeys = ["description", "fields"]
    private static let fieldKeys = ["type", "optional", "default", "description"]

    private static func parseStates(_ json: JSONValue, at path: String) throws(UniFlowError) -> [StateDefinition] {
        let object = try objectValue(json, at: path)
        guard !object.isEmpty else { throw UniFlowError(.schema, "\(path): must not be empty") }
        var states: [StateDefinition] = []
        states.reserveCapacity(object.count)
        // The JSON object's order is the declaration order (the parser keeps it).
        for (stateName, value) in object {
            let statePath = "\(path).\(try name(.string(stateName), at: path))"
            let state = try objectValue(value, at: statePath)
            try checkKeys(state, allowed: stateKeys, at: statePath)
            var fields: [FieldDefinition] = []
            if let value = state["fields"] {
                let fieldsPath = "\(statePath).fields"
                for (fieldName, field) in try objectValue(value, at: fieldsPath) {
                    let fieldPath = "\(fieldsPath).\(try name(.string(fieldName), at: fieldsPath))"
                    fields.append(try parseField(field, name: fieldName, at: fieldPath))
                }
            }
            states.append(StateDefinition(name: stateName,
                                          description: try optionalString(state["description"], at: "\(statePath).description"),
                                          fields: fields))
        }
        return states
    }

    private static func parseField(_ json: JSONValue, name: String, at path: String) throws(UniFlowError) -> FieldDefinition {
        switch json {
        case .string(let typeName):
            return FieldDefinition(name: name, type: try fieldType(typeName, at: path))
        case .object(let object):
            try checkKeys(object, allowed: fieldKeys, at: path)
            let typeValue = try required("type", in: object, at: path)
            guard case .string(let typeName) = typeValue else { throw expected("string", got: typeValue, at: "\(path).type") }
            let type = try fieldType(typeName, at: "\(path).type")
            var optional = false
            if let value = object["optional"] {
                guard case .bool(let flag) = value else { throw expected("boolean", got: value, at: "\(path).optional") }
                optional = flag
            }
            var defaultValue: JSONValue?
            if let value = object["default"] {
                // The same check as a payload's, so a default can never make a stored
                // payload invalid.
                guard let stored = type.storedValue(for: value) else {
                    throw UniFlowError(.schema, "\(path).default: \(type.mismatch(value))")
                }
                defaultValue = stored
            }
            return FieldDefinition(name: name, type: type, optional: optional, defaultValue: defaultValue,
                                   description: try optionalString(object["description"], at: "\(path).description"))
        default:
            throw UniFlowError(.schema, "\(path): expected a type name or an object, got \(json.jsonTypeName)")
        }
    }

    private static func fieldType(_ text: String, at path: String) throws(UniFlowError) -> FieldType {
        guard let type = FieldType(rawValue: text) else {
            throw UniFlowError(.schema, "\(path): unknown type '\(text)'")
        }
        return type
    }

    // MARK: initial and transitions

    /// A feature's state names to their indices. Small features are scanned (no
    /// hashing); one with hundreds of thousands of states, each listed in
    /// `transitions`, must not be scanned once per name.
    private struct StateNames {
        private let states: [StateDefinition]
        private let positions: [String: Int]?

        init(_ states: [StateDefinition]) {
            self.states = states
            if states.count > 16 {
                var positions: [String: Int] = [:]
                positions.reserveCapacity(states.count)
                for (i, state) in states.enumerated() { positions[state.name] = i }
                self.positions = positions
            } else {
                positions = nil
            }
        }

        func index(of name: String) -> Int? {
            if let positions { return positions[name] }
            return states.firstIndex(where: { $0.name == name })
        }
    }

    /// State indices named by an array of state names, each known and named once.
    private static func stateList(_ json: JSONValue, states: StateNames, at path: String) throws(UniFlowError) -> Set<Int> {
        guard case .array(let items) = json else { throw expected("array", got: json, at: path) }
        var indices = Set<Int>(minimumCapacity: items.count)
        for (i, item) in items.enumerated() {
            guard case .string(let stateName) = item else { throw expected("string", got: item, at: "\(path)[\(i)]") }
            guard let index = states.index(of: stateName) else {
                throw UniFlowError(.schema, "\(path)[\(i)]: unknown state '\(stateName)'")
            }
            guard indices.insert(index).inserted else {
                throw UniFlowError(.schema, "\(path)[\(i)]: duplicate state '\(stateName)'")
            }
        }
        return indices
    }

    /// One set of target indices per state; a state the object does not list has none.
    private static func parseTransitions(_ json: JSONValue, states: StateNames, count: Int, at path: String) throws(UniFlowError) -> [Set<Int>] {
        var transitions = Array(repeating: Set<Int>(), count: count)
        for (from, targets) in try objectValue(json, at: path) {
            guard let index = states.index(of: from) else {
                throw UniFlowError(.schema, "\(path): unknown state '\(from)'")
            }
            transitions[index] = try stateList(targets, states: states, at: "\(path).\(from)")
        }
        return transitions
    }

    // MARK: Helpers

    /// `$schema` names the JSON Schema an editor validates the document with; the
    /// library only checks that it is a string.
    private static func schemaReference(_ json: JSONValue, at path: String) throws(UniFlowError) {
        guard case .string = json else { throw expected("string", got: json, at: path) }
    }

    private static func objectValue(_ json: JSONValue, at path: String) throws(UniFlowError) -> JSONObject {
        guard case .object(let object) = json else { throw expected("object", got: json, at: path) }
        return object
    }

    private static func checkKeys(_ object: JSONObject, allowed: [String], at path: String) throws(UniFlowError) {
        for (key, _) in object where !allowed.contains(key) {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
    }

    private static func required(_ key: String, in object: JSONObject, at path: String) throws(UniFlowError) -> JSONValue {
        guard let value = object[key] else { throw UniFlowError(.schema, "\(path): missing key '\(key)'") }
        return value
    }

    private static func optionalString(_ json: JSONValue?, at path: String) throws(UniFlowError) -> String? {
        guard let json else { return nil }
        guard case .string(let text) = json else { throw expected("string", got: json, at: path) }
        return text
    }

    /// A valid name; `path` is where it was found (the key's parent for object keys).
    private static func name(_ json: JSONValue, at path: String) throws(UniFlowError) -> String {
        guard case .string(let text) = json else { throw expected("string", got: json, at: path) }
        guard isValidName(text) else {
            if text.utf8.count > maxNameLength {
                throw UniFlowError(.schema, "\(path): a name is at most \(maxNameLength) bytes, got \(text.utf8.count)")
            }
            throw UniFlowError(.schema, "\(path): '\(text)' is not a valid name")
        }
        return text
    }

    private static func expected(_ kind: String, got json: JSONValue, at path: String) -> UniFlowError {
        UniFlowError(.schema, "\(path): expected \(kind), got \(json.jsonTypeName)")
    }
}

extension UInt8 {
    /// `[A-Za-z_]`: a byte that may start a name.
    fileprivate var isNameStart: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || self == UInt8(ascii: "_")
    }
}
