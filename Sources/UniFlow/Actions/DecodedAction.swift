/// An action as submitted: its shape checked, its names not yet resolved. The
/// dispatcher resolves the names, checks the payload and then the precondition
/// (`docs/actions.md` lists the order of the checks).
struct DecodedAction<Source: ActionSource> {
    var kind: ActionKind
    var feature: Source.Text
    /// `from` of a transition or deinitialization, `in` of a trigger.
    var from: Source.Text?
    /// `into` of an initialize or transition, `in` of an actualize.
    var into: Source.Text?
    /// The instance of a keyed feature.
    var key: Source.Text?
    /// A send's event name (checked against the name pattern).
    var event: Source.Text?
    /// The payload given in the action: the state's, or a send's event payload.
    var payload: Source.Object?
    /// The JSON level of the action object (1 for the outermost action).
    var depth: Int
    /// Transition into: allow the state the feature is already in.
    var same = false
    /// Trigger without `in`: true when it requires the feature to be absent.
    var uninitialized = false
    var scope: Source.Text?
    var context: Source.Text?
    var id: Source.Text?
    /// Trigger only: actions queued when the trigger is processed.
    var submit: [DecodedAction<Source>] = []

    init(kind: ActionKind, feature: Source.Text, depth: Int) {
        self.kind = kind
        self.feature = feature
        self.depth = depth
    }
}

/// An action decoded from a `JSONValue` (batches, templates, timers).
typealias ActionRequest = DecodedAction<JSONValue>
/// An action decoded straight from jansson's tree (`uf_submit`).
typealias BorrowedAction = DecodedAction<JanssonValue>

extension DecodedAction where Source: ActionJSON {
    /// Decodes an action's JSON, checking its shape only.
    ///
    /// Every error is `UF_ESCHEMA` naming the key (`action: unknown key 'form'`,
    /// `action.into: expected string, got number`, `action: missing key 'into'`,
    /// `action: 'same' cannot be used with 'from'`). Errors inside a trigger's
    /// `submit` list are prefixed with the action's index (`submit[1]: action: ...`).
    static func decode(_ json: Source) throws(UniFlowError) -> DecodedAction {
        try decode(json, depth: 1)
    }

    /// `depth` is the JSON level of `json` (the outermost action is 1, an action in
    /// its `submit` list 3), so that nested triggers obey the parser's limit even
    /// when the value was not built from text.
    private static func decode(_ json: Source, depth: Int) throws(UniFlowError) -> DecodedAction {
        // One pass over the keys, each compared as bytes; the values are checked
        // afterwards in a fixed order, so the first error never depends on the
        // order of the keys in the text.
        var values = KeyedValues()
        let isObject = try json.forEachMember { (key, value) throws(UniFlowError) in
            values.set(ActionKey(bytes: key), value)
        }
        guard isObject else { throw UniFlowError(.schema, "action must be an object, got \(json.typeName)") }
        guard depth <= JSONParser.maxDepth else {
            throw UniFlowError(.schema, "action: actions nest deeper than \(JSONParser.maxDepth) levels")
        }

        guard let kindValue = values[.kind] else { throw UniFlowError(.schema, "action: missing key 'kind'") }
        guard let kindName = kindValue.text else { throw expected("string", got: kindValue, key: .kind) }
        guard let kind = try kindName.withBytes({ (bytes) throws(UniFlowError) in ActionKind(bytes: bytes) }) else {
            throw UniFlowError(.schema, "action.kind: unknown kind '\(kindName.string)' (expected initialize, actualize, transition, deinitialize, trigger or send)")
        }
        if values.unknown || values.present & ~ActionKey.allowed(kind) != 0 {
            try checkKeys(json, kind: kind)
        }

        var action = DecodedAction(kind: kind, feature: try requiredText(values, .feature), depth: depth)
        action.scope = try optionalLabel(values, .scope)
        action.context = try optionalLabel(values, .context)
        action.id = try optionalLabel(values, .id)
        if let key = try optionalText(values, .key) {
            if let reason = try key.withBytes({ (bytes) throws(UniFlowError) in InstanceKey.refusal(bytes) }) {
                throw UniFlowError(.schema, "action.key: \(reason)")
            }
            action.key = key
        }
        if let payload = values[.payload] {
            guard let object = payload.object else { throw expected("object", got: payload, key: .payload) }
            action.payload = object
        }

        switch kind {
        case .initialize:
            action.into = try requiredText(values, .into)
        case .actualize:
            action.into = try requiredText(values, .in)
        case .transition:
            action.into = try requiredText(values, .into)
            action.from = try optionalText(values, .from)
            if let same = try optionalBool(values, .same) {
                // `from` already names the one state the feature must be in, so
                // `same` could only contradict or repeat it.
                guard action.from == nil else { throw UniFlowError(.schema, "action: 'same' cannot be used with 'from'") }
                action.same = same
            }
        case .deinitialize:
            action.from = try optionalText(values, .from)
        case .trigger:
            action.from = try optionalText(values, .in)
            if let initialized = try optionalBool(values, .initialized) {
                guard action.from == nil else { throw UniFlowError(.schema, "action: 'initialized' cannot be used with 'in'") }
                action.uninitialized = !initialized
            }
            if let submit = values[.submit] {
                guard let items = submit.elements else { throw expected("array", got: submit, key: .submit) }
                action.submit.reserveCapacity(items.count)
                for (i, item) in items.enumerated() {
                    do throws(UniFlowError) {
                        action.submit.append(try decode(item, depth: depth + 2))
                    } catch {
                        throw error.prefixed("submit[\(i)]")
                    }
                }
            }
        case .send:
            let event = try requiredText(values, .event)
            guard DefinitionParser.isValidName(event.string) else {
                throw UniFlowError(.schema, "action.event: '\(event.string)' is not a valid event name")
            }
            action.event = event
        }
        return action
    }

    // MARK: Keys

    /// Throws for the first key, in the object's order, that the kind does not
    /// allow (only called when there is one).
    private static func checkKeys(_ json: Source, kind: ActionKind) throws(UniFlowError) {
        _ = try json.forEachMember { (name, _) throws(UniFlowError) in
            let key = ActionKey(bytes: name)
            if let error = ActionKey.refusal(key, named: String(decoding: name, as: UTF8.self), kind: kind) { throw error }
        }
    }

    /// The values of the keys an action knows: one stored property each, so that
    /// reading a key named by a constant is a field access and decoding allocates
    /// nothing for them.
    private struct KeyedValues {
        private var kind, feature, scope, context, id, key, into, `in`, from, same, payload, initialized, submit, event: Source?
        /// The keys seen, as `ActionKey.bit`s.
        private(set) var present: UInt16 = 0
        /// A key no action knows was seen.
        private(set) var unknown = false

        @inline(__always)
        mutating func set(_ name: ActionKey?, _ value: Source) {
            guard let name else {
                unknown = true
                return
            }
            present |= name.bit
            switch name {
            case .kind: kind = value
            case .feature: feature = value
            case .scope: scope = value
            case .context: context = value
            case .id: id = value
            case .key: key = value
            case .into: into = value
            case .in: self.in = value
            case .from: from = value
            case .same: same = value
            case .payload: payload = value
            case .initialized: initialized = value
            case .submit: submit = value
            case .event: event = value
            }
        }

        @inline(__always)
        subscript(name: ActionKey) -> Source? {
            switch name {
            case .kind: kind
            case .feature: feature
            case .scope: scope
            case .context: context
            case .id: id
            case .key: key
            case .into: into
            case .in: self.in
            case .from: from
            case .same: same
            case .payload: payload
            case .initialized: initialized
            case .submit: submit
            case .event: event
            }
        }
    }

    // MARK: Values

    private static func requiredText(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> Source.Text {
        guard let value = values[key] else { throw UniFlowError(.schema, "action: missing key '\(key.name)'") }
        guard let text = value.text else { throw expected("string", got: value, key: key) }
        return text
    }

    private static func optionalText(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> Source.Text? {
        guard let value = values[key] else { return nil }
        guard let text = value.text else { throw expected("string", got: value, key: key) }
        return text
    }

    /// `scope`, `context` and `id` come back to hosts as C strings (in mutations,
    /// reports, `uf_context_*`), which end at the first NUL: one inside would echo
    /// a shorter text than was given, and two ids could no longer be told apart.
    private static func optionalLabel(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> Source.Text? {
        guard let text = try optionalText(values, key) else { return nil }
        if try text.withBytes({ $0.contains(0) }) {
            throw UniFlowError(.schema, "action.\(key.name): contains \\u0000, which C text cannot hold")
        }
        return text
    }

    private static func optionalBool(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> Bool? {
        guard let value = values[key] else { return nil }
        guard let flag = value.boolValue else { throw expected("boolean", got: value, key: key) }
        return flag
    }

    private static func expected(_ type: String, got value: Source, key: ActionKey) -> UniFlowError {
        UniFlowError(.schema, "action.\(key.name): expected \(type), got \(value.typeName)")
    }
}
