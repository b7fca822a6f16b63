/// A subscription's or a binding's filter compiled to indices.
struct CompiledFilter {
    var kinds: UInt8
    var feature: Int32
    var oldState: Int32 = -1
    var newState: Int32 = -1
    /// `F[key]`: only that instance's mutations.
    var key: String?

    /// The `newState` of a filter naming a statechart's states, which compares
    /// active, entered and exited states instead of state numbers: no state
    /// number is this (a statechart's are interned configurations, never this
    /// many), so the state test fails and its slow branch asks the statechart's
    /// test, whose number (`StatechartRegistry.filters`) is then the `oldState`.
    static let chartMarker = Int32.max

    /// Resolves a parsed filter with `lookup` giving a feature's index, whether it
    /// is keyed, and a function that finds its states by name.
    init(_ filter: FilterExpression, lookup: (String) -> (Int32, Bool, (String) -> Int?)?) throws(UniFlowError) {
        guard let featureName = filter.feature else {
            self.init(kinds: MutationKind.all, feature: -1)
            return
        }
        guard let (feature, keyed, stateIndex) = lookup(featureName) else {
            throw UniFlowError(.notFound, "filter '\(filter.text)': unknown feature '\(featureName)'")
        }
        if filter.key != nil && !keyed {
            throw UniFlowError(.schema, "filter '\(filter.text)': \(featureName) is a single feature: it has no instances to name with [key]")
        }
        func state(_ name: String?) throws(UniFlowError) -> Int32 {
            guard let name else { return -1 }
            guard let index = stateIndex(name).map(Int32.init) else {
                throw UniFlowError(.notFound, "filter '\(filter.text)': unknown state '\(name)' of feature \(featureName)")
            }
            return index
        }
        let first = try state(filter.state)
        let second = try state(filter.secondState)
        self.init(kinds: CompiledFilter.kinds(of: filter.form), feature: feature, key: filter.key)
        switch filter.form {
        case .settingInto, .initializationInto, .actualizationIn, .transitionInto: newState = first
        case .transitionFrom, .deinitializationFrom: oldState = first
        case .transitionBetween: oldState = first; newState = second
        default: break
        }
    }

    /// The mutation kinds a form matches.
    static func kinds(of form: FilterExpression.Form) -> UInt8 {
        switch form {
        case .anyMutation, .anyMutationOf: MutationKind.all
        case .anyUpdateOf: MutationKind.updates
        case .anySettingOf, .settingInto: MutationKind.settings
        case .initialization, .initializationInto: MutationKind.initialization.bit
        case .actualization, .actualizationIn: MutationKind.actualization.bit
        case .transition, .transitionInto, .transitionFrom, .transitionBetween: MutationKind.transition.bit
        case .deinitialization, .deinitializationFrom: MutationKind.deinitialization.bit
        }
    }

    init(kinds: UInt8, feature: Int32, key: String? = nil) {
        self.kinds = kinds
        self.feature = feature
        self.key = key
    }
}
