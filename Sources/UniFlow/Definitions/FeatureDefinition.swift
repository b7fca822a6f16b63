/// A feature: a named finite state machine, as declared in JSON (`docs/definitions.md`).
struct FeatureDefinition {
    var name: String
    var description: String?
    /// `"instances": "keyed"`: any number of instances live at once, each named by a key.
    var keyed = false
    /// In declaration order; never empty.
    var states: [StateDefinition]
    /// Indices into `states` that `initialize` may enter; nil: any state.
    var initial: Set<Int>?
    /// `transitions[from]` holds the indices a transition from `from` may enter;
    /// nil: any pair is allowed. Its count equals `states.count` when present.
    var transitions: [Set<Int>]?
    /// The model bindings, as declared (parsed by the bindings layer).
    var bindings: [JSONValue]
    /// The feature's own `on`: events any state takes (tried after the state's own).
    var events: [EventTargets] = []
    /// The definition exactly as registered, returned by `uf_definitions_get`.
    var source: JSONValue
    /// A statechart feature's tree (`Statecharts/`); nil for a flat feature.
    /// Its `states` are then the chart's states named by their paths, with no
    /// fields or behaviour of their own: the chart has them.
    var chart: Statechart?
    /// A statechart's `initial`: the nodes `initialize` may enter (with their
    /// descendants); nil: any.
    var chartInitial: Set<Int>?

    init(name: String, description: String? = nil, states: [StateDefinition],
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
    func stateIndex(named name: String) -> Int? {
        states.firstIndex { $0.name == name }
    }

    /// Whether any state declares `after` timers.
    var hasTimers: Bool { states.contains { !$0.timers.isEmpty } }

    /// Whether `initialize` may enter the state.
    func allowsInitialization(into state: Int) -> Bool {
        initial?.contains(state) ?? true
    }

    /// Whether a transition from `from` into `into` is declared (or no transitions are).
    func allowsTransition(from: Int, into: Int) -> Bool {
        transitions?[from].contains(into) ?? true
    }
}

/// One state of a feature: a name and the fields of its payload.
struct StateDefinition {
    var name: String
    var description: String?
    /// In declaration order; stored payloads follow this order.
    var fields: [FieldDefinition]
    /// `after`: timers armed while the feature is in this state.
    var timers: [StateTimer] = []
    /// `on`: the events this state takes, tried before the feature's own.
    var events: [EventTargets] = []

    init(name: String, description: String? = nil, fields: [FieldDefinition] = []) {
        self.name = name
        self.description = description
        self.fields = fields
    }

    /// An auto state can be entered without a payload: every field is optional or defaulted.
    var isAuto: Bool { fields.allSatisfy { !$0.isRequired } }
}

/// One declared field of a state's payload.
struct FieldDefinition {
    var name: String
    var type: FieldType
    var optional: Bool
    /// Fills the field in when it is absent; matches `type`.
    var defaultValue: JSONValue?
    var description: String?

    init(name: String, type: FieldType, optional: Bool = false,
                defaultValue: JSONValue? = nil, description: String? = nil) {
        self.name = name
        self.type = type
        self.optional = optional
        self.defaultValue = defaultValue
        self.description = description
    }

    /// Present in every valid payload: neither optional nor defaulted.
    var isRequired: Bool { !optional && defaultValue == nil }
}

/// The type of a field's value.
enum FieldType: String, Sendable, CaseIterable {
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

/// A state timer (`after`): armed when its state is entered, disarmed when it is
/// left; when it fires, its templates are submitted.
struct StateTimer {
    /// Delay in milliseconds, 0 ... 2^53.
    var ms: UInt64
    /// Action templates, as a binding's `then.submit`.
    var submit: [JSONValue]
    /// The same, compiled.
    var compiled: [CompiledTemplate] = []
    var scenario: String?
    /// `"reset": "update"`: an actualization in the state arms it again.
    var resetOnUpdate = false
    var onRestore: RestorePolicy = .fire
}

/// How a timer is armed again from a snapshot or a journal.
enum RestorePolicy: String, Sendable, CaseIterable {
    /// Keep the wall-clock deadline: one that passed while the host was down fires at once.
    case fire
    /// Keep the remaining time: time spent down does not count.
    case resume
    /// Arm the full delay again.
    case restart
}

/// One event a state (or the feature) takes, and its targets in order.
struct EventTargets {
    var event: String
    var targets: [EventTarget]
    /// Written as a list (`"e": [...]`, even of one target) rather than one
    /// target: error paths index the list (`on.e[0]`).
    var listed = false
}

/// Where an event may lead: a state, guarded by a rule and/or a host handler.
struct EventTarget {
    /// The state entered (or actualized).
    var into: Int
    /// A JsonLogic guard over `{model, event, feature}`.
    var rule: JSONValue?
    /// A host handler guard (above 0 takes the target).
    var call: String?
    /// A payload template; without one the payload carries forward.
    var payload: JSONValue?
    var spec: String?
    /// Into the current state: an actualization instead of a transition.
    var actualize = false
    /// `rule` and `payload`, compiled.
    var compiledRule: JsonLogic.CompiledRule?
    var compiledPayload: CompiledTemplate?
    /// `rule`, when it can be decided without the evaluator.
    var shortcut: GuardShortcut?

    /// Taken only when a guard says so.
    var isGuarded: Bool { rule != nil || call != nil }
}
