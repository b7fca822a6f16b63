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

    /// Keys every kind may carry.
    private static let commonKeys = ["kind", "feature", "scope", "context", "id"]

    /// Keys only some kinds may carry; with `commonKeys`, every key an action knows.
    private static let kindKeys = ["into", "in", "from", "same", "payload", "initialized", "submit"]

    private static func allowedKeys(_ kind: ActionKind) -> [String] {
        switch kind {
        case .initialize: ["into", "payload"]
        case .actualize: ["in", "payload"]
        case .transition: ["into", "from", "same", "payload"]
        case .deinitialize: ["from"]
        case .trigger: ["in", "initialized", "submit"]
        }
    }

    /// Tells a typo (`form`) from a real key on the wrong kind (`from` on an
    /// initialize): both are errors, but they need different fixes.
    private static func checkKeys(_ object: JSONObject, kind: ActionKind) throws(UniFlowError) {
        let allowed = allowedKeys(kind)
        for (key, _) in object where !commonKeys.contains(key) && !allowed.contains(key) {
            if kindKeys.contains(key) {
                throw UniFlowError(.schema, "action: '\(key)' cannot be used with kind '\(kind.rawValue)'")
            }
            throw UniFlowError(.schema, "action: unknown key '\(key)'")
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
