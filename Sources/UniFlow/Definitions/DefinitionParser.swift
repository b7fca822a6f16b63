/// Validates feature definitions (`docs/definitions.md`) and builds `FeatureDefinition`s.
///
/// Every error is `UF_ESCHEMA` with a message that starts with the path of the
/// offending element (`features[1].states.InProgress.fields.progress: unknown type
/// 'nubmer'`), as a JSON Schema validator would report it; two definitions of one
/// feature in the same call are `UF_EEXISTS`.
enum DefinitionParser {
    /// The longest name, in UTF-8 bytes, of a feature, state or field.
    static let maxNameLength = 256

    /// Parses one definition object, an array of them, or `{"features": [...]}`.
    /// An empty list is valid and defines nothing.
    static func parse(_ json: JSONValue) throws(UniFlowError) -> [FeatureDefinition] {
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
    static func isValidName(_ name: String) -> Bool {
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

    private static let featureKeys = ["$schema", "feature", "description", "instances", "states", "initial",
                                      "transitions", "on", "bindings"]

    private static func parseFeature(_ json: JSONValue, path: String) throws(UniFlowError) -> FeatureDefinition {
        let object = try objectValue(json, at: path)
        // Statechart features (any key section 16 adds) are read by their own parser.
        if StatechartParser.isStatechart(object) { return try parseStatechartFeature(object, json: json, path: path) }
        // Unknown keys first, so that a misspelled `stats` is reported as such and
        // not as `states` missing.
        try checkKeys(object, allowed: featureKeys, at: path)

        let (name, description, keyed) = try sharedKeys(object, path: path)
        let statesPath = "\(path).states"
        let statesJSON = try required("states", in: object, at: path)
        var states = try parseStates(statesJSON, at: statesPath)

        var initial: Set<Int>?
        var transitions: [Set<Int>]?
        var events: [EventTargets] = []
        let behaviours = states.indices.filter { statesJSON.objectValue?.entries[$0].value.objectValue.map { $0["after"] != nil || $0["on"] != nil } ?? false }
        if object["initial"] != nil || object["transitions"] != nil || object["on"] != nil || !behaviours.isEmpty {
            let names = StateNames(states)
            if let value = object["initial"] {
                let list = try stateList(value, states: names, at: "\(path).initial")
                guard !list.isEmpty else { throw UniFlowError(.schema, "\(path).initial: must not be empty") }
                initial = list
            }
            if let value = object["transitions"] {
                transitions = try parseTransitions(value, states: names, count: states.count, at: "\(path).transitions")
            }
            // Timers and events name states (any of them, later ones included) and
            // are checked against `transitions`: read once every state is known.
            for s in behaviours {
                let state = statesJSON.objectValue!.entries[s].value.objectValue!
                let statePath = "\(statesPath).\(states[s].name)"
                if let after = state["after"] { states[s].timers = try parseTimers(after, at: "\(statePath).after") }
                if let on = state["on"] {
                    states[s].events = try parseEvents(on, from: s, states: names, transitions: transitions, at: "\(statePath).on")
                }
            }
            if let on = object["on"] {
                events = try parseEvents(on, from: nil, states: names, transitions: transitions, at: "\(path).on")
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

        var definition = FeatureDefinition(name: name, description: description, states: states, initial: initial,
                                           transitions: transitions, bindings: bindings, source: json)
        definition.keyed = keyed
        definition.events = events
        return definition
    }

    /// A statechart feature: the keys every feature shares are read here, the
    /// states and their behaviour by `StatechartParser`.
    /// The keys flat and statechart features share: `$schema`, `feature`,
    /// `description` and `instances` (keyed or not).
    private static func sharedKeys(_ object: JSONObject, path: String) throws(UniFlowError) -> (name: String, description: String?, keyed: Bool) {
        if let value = object["$schema"] { try schemaReference(value, at: "\(path).$schema") }
        let name = try name(try required("feature", in: object, at: path), at: "\(path).feature")
        let description = try optionalString(object["description"], at: "\(path).description")
        var keyed = false
        if let value = object["instances"] {
            switch value {
            case .string("single"): keyed = false
            case .string("keyed"): keyed = true
            default:
                throw UniFlowError(.schema, "\(path).instances: expected \"single\" or \"keyed\", got \(value.jsonText)")
            }
        }
        return (name, description, keyed)
    }

    private static func parseStatechartFeature(_ object: JSONObject, json: JSONValue, path: String) throws(UniFlowError) -> FeatureDefinition {
        let (name, description, keyed) = try sharedKeys(object, path: path)
        let (chart, states) = try StatechartParser.parseFeature(object, path: path)
        var bindings: [JSONValue] = []
        if let value = object["bindings"] {
            guard case .array(let items) = value else { throw expected("array", got: value, at: "\(path).bindings") }
            for (i, item) in items.enumerated() { _ = try objectValue(item, at: "\(path).bindings[\(i)]") }
            bindings = items
        }
        // `initial` names nodes; the flat view numbers states from the root's first child.
        let initial = try StatechartParser.parseInitial(object["initial"], chart: chart, at: "\(path).initial")
        var definition = FeatureDefinition(name: name, description: description, states: states,
                                           initial: nil, bindings: bindings, source: json)
        definition.keyed = keyed
        definition.chart = chart
        definition.chartInitial = initial
        return definition
    }

    // MARK: States and fields

    private static let stateKeys = ["description", "fields", "after", "on"]
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

    static func parseField(_ json: JSONValue, name: String, at path: String) throws(UniFlowError) -> FieldDefinition {
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

    // MARK: Timers

    private static let timerKeys = ["ms", "submit", "scenario", "reset", "on_restore"]
    /// A state's timers are counted in a byte of its slot.
    static let maxTimersPerState = Int(UInt8.max)
    /// The longest delay: a JSON integer any host reads exactly.
    static let maxTimerMilliseconds: UInt64 = 1 << 53

    private static func parseTimers(_ json: JSONValue, at path: String) throws(UniFlowError) -> [StateTimer] {
        guard case .array(let items) = json else { throw expected("array", got: json, at: path) }
        guard items.count <= maxTimersPerState else {
            throw UniFlowError(.schema, "\(path): at most \(maxTimersPerState) timers per state, got \(items.count)")
        }
        var timers: [StateTimer] = []
        for (i, item) in items.enumerated() {
            let timerPath = "\(path)[\(i)]"
            let object = try objectValue(item, at: timerPath)
            try checkKeys(object, allowed: timerKeys, at: timerPath)
            let msValue = try required("ms", in: object, at: timerPath)
            let ms: UInt64
            switch msValue {
            case .int(let n) where n >= 0 && UInt64(n) <= maxTimerMilliseconds:
                ms = UInt64(n)
            case .double(let d) where d >= 0 && d <= Double(maxTimerMilliseconds) && d.rounded(.towardZero) == d:
                ms = UInt64(d)
            default:
                throw UniFlowError(.schema, "\(timerPath).ms: expected an integer from 0 to 2^53, got \(msValue.jsonText)")
            }
            let submitValue = try required("submit", in: object, at: timerPath)
            guard case .array(let templates) = submitValue else { throw expected("array", got: submitValue, at: "\(timerPath).submit") }
            for (j, template) in templates.enumerated() {
                _ = try objectValue(template, at: "\(timerPath).submit[\(j)]")
                try ActionTemplate.validateRules(in: template, path: "\(timerPath).submit[\(j)]")
            }
            var timer = StateTimer(ms: ms, submit: templates, scenario: try optionalString(object["scenario"], at: "\(timerPath).scenario"))
            timer.compiled = templates.map(CompiledTemplate.init)
            if let value = object["reset"] {
                switch value {
                case .string("entry"): timer.resetOnUpdate = false
                case .string("update"): timer.resetOnUpdate = true
                default: throw UniFlowError(.schema, "\(timerPath).reset: expected \"entry\" or \"update\", got \(value.jsonText)")
                }
            }
            if let value = object["on_restore"] {
                guard let text = value.stringValue, let policy = RestorePolicy(rawValue: text) else {
                    throw UniFlowError(.schema, "\(timerPath).on_restore: expected \"fire\", \"resume\" or \"restart\", got \(value.jsonText)")
                }
                timer.onRestore = policy
            }
            timers.append(timer)
        }
        return timers
    }

    // MARK: Events

    private static let targetKeys = ["into", "if", "call", "payload", "spec", "actualize"]

    /// An `on` object: event names to a target or a non-empty list of targets.
    /// `from` is the declaring state (nil: the feature's own `on`, whose targets
    /// `transitions` filters when a send is processed instead).
    private static func parseEvents(_ json: JSONValue, from: Int?, states: StateNames, transitions: [Set<Int>]?,
                                    at path: String) throws(UniFlowError) -> [EventTargets] {
        var events: [EventTargets] = []
        for (event, value) in try objectValue(json, at: path) {
            guard isValidName(event) else { throw UniFlowError(.schema, "\(path): '\(event)' is not a valid event name") }
            let eventPath = "\(path).\(event)"
            var targets: [EventTarget] = []
            let listed: Bool
            if case .array(let items) = value {
                listed = true
                guard !items.isEmpty else { throw UniFlowError(.schema, "\(eventPath): a list of targets must not be empty") }
                for (i, item) in items.enumerated() {
                    targets.append(try parseTarget(item, from: from, states: states, transitions: transitions, at: "\(eventPath)[\(i)]"))
                }
            } else {
                listed = false
                targets.append(try parseTarget(value, from: from, states: states, transitions: transitions, at: eventPath))
            }
            events.append(EventTargets(event: event, targets: targets, listed: listed))
        }
        return events
    }

    private static func parseTarget(_ json: JSONValue, from: Int?, states: StateNames, transitions: [Set<Int>]?,
                                    at path: String) throws(UniFlowError) -> EventTarget {
        func state(_ value: JSONValue, at path: String) throws(UniFlowError) -> Int {
            guard case .string(let name) = value else { throw expected("a state name", got: value, at: path) }
            guard let index = states.index(of: name) else { throw UniFlowError(.schema, "\(path): unknown state '\(name)'") }
            return index
        }
        var target: EventTarget
        var intoPath = path
        switch json {
        case .string:
            target = EventTarget(into: try state(json, at: path))
        case .object(let object):
            try checkKeys(object, allowed: targetKeys, at: path)
            intoPath = "\(path).into"
            target = EventTarget(into: try state(try required("into", in: object, at: path), at: intoPath))
            if let rule = object["if"] {
                do throws(UniFlowError) { try JsonLogic.validate(rule) } catch { throw error.prefixed("\(path).if") }
                target.rule = rule
                target.compiledRule = JsonLogic.CompiledRule(rule)
                target.shortcut = GuardShortcut(rule)
            }
            if let call = object["call"] {
                guard case .string(let name) = call else { throw expected("string", got: call, at: "\(path).call") }
                target.call = name
            }
            if let payload = object["payload"] {
                guard case .object = payload else { throw expected("object", got: payload, at: "\(path).payload") }
                try ActionTemplate.validateRules(in: payload, path: "\(path).payload")
                target.payload = payload
                target.compiledPayload = CompiledTemplate(payload)
            }
            target.spec = try optionalString(object["spec"], at: "\(path).spec")
            if let value = object["actualize"] {
                guard case .bool(let flag) = value else { throw expected("boolean", got: value, at: "\(path).actualize") }
                target.actualize = flag
            }
        default:
            throw UniFlowError(.schema, "\(path): expected a state name or an object, got \(json.jsonTypeName)")
        }
        // A state's own target must be a transition its feature allows; an
        // actualization of the state itself never needs one.
        if let from, let transitions, !(target.actualize && target.into == from), !transitions[from].contains(target.into) {
            throw UniFlowError(.schema, "\(intoPath): \(states.name(at: from)) -> \(states.name(at: target.into)) is not a declared transition")
        }
        return target
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

        func name(at index: Int) -> String { states[index].name }
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
