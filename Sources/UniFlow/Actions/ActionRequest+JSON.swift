extension ActionRequest {
    /// Decodes an action's JSON (SPEC section 3), checking its shape only: names are
    /// resolved, and payloads checked, by the dispatcher.
    ///
    /// Every error is `UF_ESCHEMA` naming the key (`action: unknown key 'form'`,
    /// `action.into: expected string, got number`, `action: missing key 'into'`,
    /// `action: 'same' cannot be used with 'from'`). Errors inside a trigger's
    /// `submit` list are prefixed with the action's index (`submit[1]: action: ...`).
    public static func decode(_ json: JSONValue) throws(UniFlowError) -> ActionRequest {
        try decode(json, depth: 1)
    }

    /// `depth` is the JSON level of `json` (the outermost action is 1, an action in
    /// its `submit` list 3), so that nested triggers obey the same limit as the parser
    /// even when the value was not built from text.
    private static func decode(_ json: JSONValue, depth: Int) throws(UniFlowError) -> ActionRequest {
        guard case .object(let object) = json else {
            throw UniFlowError(.schema, "action must be an object, got \(json.jsonTypeName)")
        }
        guard depth <= JSONParser.maxDepth else {
            throw UniFlowError(.schema, "action: actions nest deeper than \(JSONParser.maxDepth) levels")
        }
        guard let kindValue = object["kind"] else { throw UniFlowError(.schema, "action: missing key 'kind'") }
        guard case .string(let kindName) = kindValue else { throw expected("string", got: kindValue, key: "kind") }
        guard let kind = ActionKind(rawValue: kindName) else {
            throw UniFlowError(.schema, "action.kind: unknown kind '\(kindName)' (expected initialize, actualize, transition, deinitialize or trigger)")
        }
        try checkKeys(object, kind: kind)

        var request = ActionRequest(kind: kind, feature: try requiredString("feature", in: object))
        request.scope = try optionalString("scope", in: object)
        request.context = try optionalString("context", in: object)
        request.id = try optionalString("id", in: object)
        request.payload = try payload(in: object)

        switch kind {
        case .initialize:
            request.into = try requiredString("into", in: object)
        case .actualize:
            request.into = try requiredString("in", in: object)
        case .transition:
            request.into = try requiredString("into", in: object)
            request.from = try optionalString("from", in: object)
            if let same = try optionalBool("same", in: object) {
                // The key itself does not fit: `from` already names the one state the
                // feature must be in, so `same` could only contradict or repeat it.
                guard request.from == nil else { throw UniFlowError(.schema, "action: 'same' cannot be used with 'from'") }
                request.same = same
            }
        case .deinitialize:
            request.from = try optionalString("from", in: object)
        case .trigger:
            request.from = try optionalString("in", in: object)
            if let initialized = try optionalBool("initialized", in: object) {
                guard request.from == nil else { throw UniFlowError(.schema, "action: 'initialized' cannot be used with 'in'") }
                request.uninitialized = !initialized
            }
            if let submit = object["submit"] {
                guard case .array(let items) = submit else { throw expected("array", got: submit, key: "submit") }
                request.submit.reserveCapacity(items.count)
                for (i, item) in items.enumerated() {
                    do throws(UniFlowError) {
                        request.submit.append(try decode(item, depth: depth + 2))
                    } catch {
                        throw error.prefixed("submit[\(i)]")
                    }
                }
            }
        }
        return request
    }

    // MARK: Keys

    /// Tells a typo (`form`) from a real key on the wrong kind (`from` on an
    /// initialize): both are errors, but they need different fixes.
    private static func checkKeys(_ object: JSONObject, kind: ActionKind) throws(UniFlowError) {
        for (key, _) in object {
            if let error = ActionKey.refusal(ActionKey(key), named: key, kind: kind) { throw error }
        }
    }

    // MARK: Values

    private static func requiredString(_ key: String, in object: JSONObject) throws(UniFlowError) -> String {
        guard let value = object[key] else { throw UniFlowError(.schema, "action: missing key '\(key)'") }
        guard case .string(let text) = value else { throw expected("string", got: value, key: key) }
        return text
    }

    private static func optionalString(_ key: String, in object: JSONObject) throws(UniFlowError) -> String? {
        guard let value = object[key] else { return nil }
        guard case .string(let text) = value else { throw expected("string", got: value, key: key) }
        return text
    }

    private static func optionalBool(_ key: String, in object: JSONObject) throws(UniFlowError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let flag) = value else { throw expected("boolean", got: value, key: key) }
        return flag
    }

    private static func payload(in object: JSONObject) throws(UniFlowError) -> JSONObject? {
        guard let value = object["payload"] else { return nil }
        guard case .object(let payload) = value else { throw expected("object", got: value, key: "payload") }
        return payload
    }

    private static func expected(_ type: String, got value: JSONValue, key: String) -> UniFlowError {
        UniFlowError(.schema, "action.\(key): expected \(type), got \(value.jsonTypeName)")
    }
}

/// The keys an action may have (SPEC section 3), shared by both decoders.
enum ActionKey: Int {
    case kind, feature, scope, context, id, into, `in`, from, same, payload, initialized, submit

    /// The key of that name, or nil for a key no action knows.
    init?(_ name: String) {
        switch name {
        case "kind": self = .kind
        case "feature": self = .feature
        case "scope": self = .scope
        case "context": self = .context
        case "id": self = .id
        case "into": self = .into
        case "in": self = .in
        case "from": self = .from
        case "same": self = .same
        case "payload": self = .payload
        case "initialized": self = .initialized
        case "submit": self = .submit
        default: return nil
        }
    }

    /// The key's bit in a set of keys.
    var bit: UInt16 { 1 << UInt16(rawValue) }

    /// Keys every kind may carry.
    static let common: UInt16 = ActionKey.kind.bit | ActionKey.feature.bit | ActionKey.scope.bit
        | ActionKey.context.bit | ActionKey.id.bit

    /// Every key an action of that kind may carry.
    static func allowed(_ kind: ActionKind) -> UInt16 {
        switch kind {
        case .initialize: common | ActionKey.into.bit | ActionKey.payload.bit
        case .actualize: common | ActionKey.in.bit | ActionKey.payload.bit
        case .transition: common | ActionKey.into.bit | ActionKey.from.bit | ActionKey.same.bit | ActionKey.payload.bit
        case .deinitialize: common | ActionKey.from.bit
        case .trigger: common | ActionKey.in.bit | ActionKey.initialized.bit | ActionKey.submit.bit
        }
    }

    /// Why the key `name` (`key` when the action knows it) is refused on an action of
    /// that kind, or nil when it is allowed.
    static func refusal(_ key: ActionKey?, named name: @autoclosure () -> String, kind: ActionKind) -> UniFlowError? {
        guard let key else { return UniFlowError(.schema, "action: unknown key '\(name())'") }
        if allowed(kind) & key.bit != 0 { return nil }
        return UniFlowError(.schema, "action: '\(name())' cannot be used with kind '\(kind.rawValue)'")
    }
}
