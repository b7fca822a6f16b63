/// A subscription's or a binding's filter compiled to indices.
struct CompiledFilter {
    var kinds: UInt8
    var feature: Int32
    var oldState: Int32 = -1
    var newState: Int32 = -1
    /// `F[key]`: only that instance's mutations.
    var key: String?

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
        self.init(kinds: MutationKind.all, feature: feature, key: filter.key)
        switch filter.form {
        case .anyMutation, .anyMutationOf: break
        case .anyUpdateOf: kinds = MutationKind.updates
        case .anySettingOf: kinds = MutationKind.settings
        case .settingInto: kinds = MutationKind.settings; newState = first
        case .initialization: kinds = MutationKind.initialization.bit
        case .actualization: kinds = MutationKind.actualization.bit
        case .transition: kinds = MutationKind.transition.bit
        case .deinitialization: kinds = MutationKind.deinitialization.bit
        case .initializationInto: kinds = MutationKind.initialization.bit; newState = first
        case .actualizationIn: kinds = MutationKind.actualization.bit; newState = first
        case .transitionInto: kinds = MutationKind.transition.bit; newState = first
        case .transitionFrom: kinds = MutationKind.transition.bit; oldState = first
        case .transitionBetween:
            kinds = MutationKind.transition.bit; oldState = first; newState = second
        case .deinitializationFrom: kinds = MutationKind.deinitialization.bit; oldState = first
        }
    }

    init(kinds: UInt8, feature: Int32, key: String? = nil) {
        self.kinds = kinds
        self.feature = feature
        self.key = key
    }
}
