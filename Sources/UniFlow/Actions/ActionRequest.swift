/// The five kinds of action; the twelve forms of SPEC section 3 are these kinds
/// with different keys.
public enum ActionKind: String, Sendable, CaseIterable {
    case initialize, actualize, transition, deinitialize, trigger
}

/// An action as submitted, with names not yet resolved against the registry.
/// Decoding checks the shape (section 3); the dispatcher checks names, payloads
/// and the precondition.
public struct ActionRequest: Sendable {
    public var kind: ActionKind
    public var feature: String
    /// `from` of a transition or deinitialization, `in` of a trigger.
    public var from: String?
    /// `into` of an initialize or transition, `in` of an actualize.
    public var into: String?
    /// The payload given in the action (always an object when present).
    public var payload: JSONObject?
    /// Transition into: allow the state the feature is already in.
    public var same: Bool
    /// Trigger without `in`: true when it requires the feature to be absent.
    public var uninitialized: Bool
    public var scope: String?
    public var context: String?
    public var id: String?
    /// Trigger only: actions queued when the trigger is processed.
    public var submit: [ActionRequest]

    public init(kind: ActionKind, feature: String, from: String? = nil, into: String? = nil,
                payload: JSONObject? = nil, same: Bool = false, uninitialized: Bool = false,
                scope: String? = nil, context: String? = nil, id: String? = nil,
                submit: [ActionRequest] = []) {
        self.kind = kind
        self.feature = feature
        self.from = from
        self.into = into
        self.payload = payload
        self.same = same
        self.uninitialized = uninitialized
        self.scope = scope
        self.context = context
        self.id = id
        self.submit = submit
    }
}
