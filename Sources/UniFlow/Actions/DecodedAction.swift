/// An action as submitted: its shape checked, its names not yet resolved. The
/// dispatcher resolves the names, checks the payload and then the precondition
/// (`docs/actions.md` lists the order of the checks).
struct DecodedAction<Source: ActionSource> {
    var kind: ActionKind
    var feature: Source.Text
    /// The texts given, by `ActionField.inputSlot` (`from`, `into`, `key`, `event`,
    /// the labels): names not yet resolved, texts as given.
    /// (One stored property per slot, as the fields were before: a generic
    /// storage type, or a tuple, was copied through runtime value witnesses,
    /// which cost the binding path more than the copy itself.)
    private var text0, text1, text2, text3, text4, text5, text6, text7: Source.Text?
    /// The flags set, as `ActionField.bit`s (`same`, `uninitialized`).
    var flags: UInt16 = 0
    /// The payload given in the action: the state's, or a send's event payload.
    var payload: Source.Object?
    /// The JSON level of the action object (1 for the outermost action).
    var depth: Int
    /// Trigger only: actions queued when the trigger is processed.
    var submit: [DecodedAction<Source>] = []

    init(kind: ActionKind, feature: Source.Text, depth: Int) {
        self.kind = kind
        self.feature = feature
        self.depth = depth
    }

    /// A text field (one with an `ActionField.inputSlot`).
    @inline(__always)
    subscript(text field: ActionField) -> Source.Text? {
        get { self[slot: field.inputSlot!] }
        set { self[slot: field.inputSlot!] = newValue }
    }

    /// The text in a slot.
    @inline(__always)
    subscript(slot slot: Int) -> Source.Text? {
        get {
            switch slot {
            case 0: text0
            case 1: text1
            case 2: text2
            case 3: text3
            case 4: text4
            case 5: text5
            case 6: text6
            case 7: text7
            default: preconditionFailure("text slot \(slot) of \(DecodedAction.textSlots)")
            }
        }
        set {
            switch slot {
            case 0: text0 = newValue
            case 1: text1 = newValue
            case 2: text2 = newValue
            case 3: text3 = newValue
            case 4: text4 = newValue
            case 5: text5 = newValue
            case 6: text6 = newValue
            case 7: text7 = newValue
            default: preconditionFailure("text slot \(slot) of \(DecodedAction.textSlots)")
            }
        }
    }

    /// How many texts a decoded action holds (a field past the last slot needs one more `text` property).
    static var textSlots: Int { 8 }

    /// A flag field.
    @inline(__always)
    subscript(flag field: ActionField) -> Bool {
        get { flags & field.bit != 0 }
        set { flags = newValue ? flags | field.bit : flags & ~field.bit }
    }

    // The fields by name, for the code that gives them their meaning.

    /// `from` of a transition or deinitialization, `in` of a trigger.
    var from: Source.Text? { get { self[text: .from] } set { self[text: .from] = newValue } }
    /// `into` of an initialize or transition, `in` of an actualize.
    var into: Source.Text? { get { self[text: .into] } set { self[text: .into] = newValue } }
    /// The instance of a keyed feature.
    var key: Source.Text? { get { self[text: .key] } set { self[text: .key] = newValue } }
    /// A send's event name (checked against the name pattern).
    var event: Source.Text? { get { self[text: .event] } set { self[text: .event] = newValue } }
    var scope: Source.Text? { get { self[text: .scope] } set { self[text: .scope] = newValue } }
    var context: Source.Text? { get { self[text: .context] } set { self[text: .context] = newValue } }
    var id: Source.Text? { get { self[text: .id] } set { self[text: .id] = newValue } }
    /// Transition into: allow the state the feature is already in.
    var same: Bool { get { self[flag: .same] } set { self[flag: .same] = newValue } }
    /// Trigger without `in`: true when it requires the feature to be absent.
    var uninitialized: Bool { get { self[flag: .uninitialized] } set { self[flag: .uninitialized] = newValue } }
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

        // `kind` first: it chooses the rules for the other keys.
        let kindKey = ActionKey(.kind, on: .initialize)!
        guard let kindValue = values[kindKey] else { throw UniFlowError(.schema, "action: missing key 'kind'") }
        guard let kindName = kindValue.text else { throw expected("string", got: kindValue, key: kindKey) }
        guard let kind = try kindName.withBytes({ (bytes) throws(UniFlowError) in ActionKind(bytes: bytes) }) else {
            throw UniFlowError(.schema, "action.kind: unknown kind '\(kindName.string)' (expected initialize, actualize, transition, deinitialize, trigger or send)")
        }
        if values.unknown || values.present & ~ActionKey.allowed(kind) != 0 {
            try checkKeys(json, kind: kind)
        }

        var action = DecodedAction(kind: kind, feature: try requiredText(values, ActionKey(.feature, on: kind)!), depth: depth)
        // Every other field the kind takes, in the table's order.
        for step in ActionField.decodePlans[kind.ordinal] {
            let key = step.key
            guard let value = values[key] else {
                if step.required { throw UniFlowError(.schema, "action: missing key '\(key.name)'") }
                continue
            }
            let field = step.field
            switch step.value {
            case .text:
                guard let text = value.text else { throw expected(step.value.jsonType, got: value, key: key) }
                try check(text, of: field, key: key)
                action[slot: step.slot] = text
            case .flag:
                guard let flag = value.boolValue else { throw expected(step.value.jsonType, got: value, key: key) }
                if let excluded = field.excludes, action[text: excluded] != nil {
                    // `from` already names the one state the feature must be in, so
                    // the flag could only contradict or repeat it.
                    throw UniFlowError(.schema, "action: '\(key.name)' cannot be used with '\(ActionKey(excluded, on: kind)!.name)'")
                }
                action.flags = flag != field.jsonNegated ? action.flags | field.bit : action.flags & ~field.bit
            case .object:
                guard let object = value.object else { throw expected(step.value.jsonType, got: value, key: key) }
                action.payload = object
            case .list:
                guard let items = value.elements else { throw expected(step.value.jsonType, got: value, key: key) }
                action.submit.reserveCapacity(items.count)
                for (i, item) in items.enumerated() {
                    do throws(UniFlowError) {
                        action.submit.append(try decode(item, depth: depth + 2))
                    } catch {
                        throw error.prefixed("submit[\(i)]")
                    }
                }
            case .kind, .callback:
                continue
            }
        }
        return action
    }

    /// The checks of a text's value beyond its type.
    @inline(__always)
    private static func check(_ text: Source.Text, of field: ActionField, key: ActionKey) throws(UniFlowError) {
        if field.isLabel {
            // Labels come back to hosts as C strings (in mutations, reports,
            // `uf_context_*`), which end at the first NUL: one inside would echo a
            // shorter text than was given, and two ids could no longer be told apart.
            if try text.withBytes({ $0.contains(0) }) {
                throw UniFlowError(.schema, "action.\(key.name): contains \\u0000, which C text cannot hold")
            }
        }
        switch field.resolution {
        case .instanceKey:
            if let reason = try text.withBytes({ (bytes) throws(UniFlowError) in InstanceKey.refusal(bytes) }) {
                throw UniFlowError(.schema, "action.\(key.name): \(reason)")
            }
        case .event:
            if let refusal = StatechartParser.outerEventRefusal(text.string) {
                throw UniFlowError(.schema, "action.\(key.name): \(refusal)")
            }
        case .none, .feature, .state:
            break
        }
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

    /// The values of the keys an action knows, by `ActionKey.index`: stored
    /// inline, so that reading a key is an index and decoding allocates nothing
    /// for them.
    private struct KeyedValues {
        private var values = ActionKeySlots<Source>()
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
            values[name.index] = value
        }

        @inline(__always)
        subscript(name: ActionKey) -> Source? { values[name.index] }
    }

    // MARK: Values

    private static func requiredText(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> Source.Text {
        guard let value = values[key] else { throw UniFlowError(.schema, "action: missing key '\(key.name)'") }
        guard let text = value.text else { throw expected("string", got: value, key: key) }
        return text
    }

    private static func expected(_ type: String, got value: Source, key: ActionKey) -> UniFlowError {
        UniFlowError(.schema, "action.\(key.name): expected \(type), got \(value.typeName)")
    }
}
