/// A feature: a named finite state machine, as declared in JSON (SPEC section 2).
public struct FeatureDefinition: Sendable {
    public var name: String
    public var description: String?
    /// In declaration order; never empty.
    public var states: [StateDefinition]
    /// Indices into `states` that `initialize` may enter; nil: any state.
    public var initial: Set<Int>?
    /// `transitions[from]` holds the indices a transition from `from` may enter;
    /// nil: any pair is allowed. Its count equals `states.count` when present.
    public var transitions: [Set<Int>]?
    /// The model bindings, as declared (parsed by the bindings layer).
    public var bindings: [JSONValue]
    /// The definition exactly as registered, returned by `uf_definitions_get`.
    public var source: JSONValue

    public init(name: String, description: String? = nil, states: [StateDefinition],
                initial: Set<Int>? = nil, transitions: [Set<Int>]? = nil,
                bindings: [JSONValue] = [], source: JSONValue = .null) {
        self.name = name
        self.description = description
        self.states = states
        self.initial = initial
        self.transitions = transitions
        self.bindings = bindings
        self.source = source
    }

    /// The index of the state with that name.
    public func stateIndex(named name: String) -> Int? {
        states.firstIndex { $0.name == name }
    }

    /// Whether `initialize` may enter the state.
    public func allowsInitialization(into state: Int) -> Bool {
        initial?.contains(state) ?? true
    }

    /// Whether a transition from `from` into `into` is declared (or no transitions are).
    public func allowsTransition(from: Int, into: Int) -> Bool {
        transitions?[from].contains(into) ?? true
    }
}

/// One state of a feature: a name and the fields of its payload.
public struct StateDefinition: Sendable {
    public var name: String
    public var description: String?
    /// In declaration order; stored payloads follow this order.
    public var fields: [FieldDefinition]

    public init(name: String, description: String? = nil, fields: [FieldDefinition] = []) {
        self.name = name
        self.description = description
        self.fields = fields
    }

    /// An auto state can be entered without a payload: every field is optional or defaulted.
    public var isAuto: Bool { fields.allSatisfy { !$0.isRequired } }
}

/// One declared field of a state's payload.
public struct FieldDefinition: Sendable {
    public var name: String
    public var type: FieldType
    public var optional: Bool
    /// Fills the field in when it is absent; matches `type`.
    public var defaultValue: JSONValue?
    public var description: String?

    public init(name: String, type: FieldType, optional: Bool = false,
                defaultValue: JSONValue? = nil, description: String? = nil) {
        self.name = name
        self.type = type
        self.optional = optional
        self.defaultValue = defaultValue
        self.description = description
    }

    /// Present in every valid payload: neither optional nor defaulted.
    public var isRequired: Bool { !optional && defaultValue == nil }
}

/// The type of a field's value.
public enum FieldType: String, Sendable, CaseIterable {
    /// A JSON string.
    case string
    /// A finite JSON number.
    case number
    /// A finite number with an integral value of magnitude at most 2^53.
    case integer
    case boolean
    case object
    case array
    /// Any JSON value, `null` included.
    case any
}
