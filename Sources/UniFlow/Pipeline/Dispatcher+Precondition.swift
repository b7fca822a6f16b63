/// The first step of the pipeline: whether an action may apply to the state
/// it finds, `initial` and `transitions` included, and the message when not.
extension Dispatcher {
    /// What messages call the action's subject: `Feature`, or `Feature[key]`.
    func subject(_ action: ActionHeader) -> String {
        guard let key = action.key else { return featureName(action.feature) }
        return "\(featureName(action.feature))[\(String(cString: key))]"
    }

    /// The precondition, `initial` and `transitions` included. `current` is the
    /// state at the action's place (-1: absent).
    func checkPrecondition(_ action: ActionHeader, current: Int32) -> UniFlowError? {
        let feature = hot.features[Int(action.feature)]
        switch action.kind {
        case .initialize:
            if current >= 0 { return rejection(action, "is already initialized (in state \(stateName(current, feature: action.feature)))") }
            if !stateSlot(action.into, of: feature).isInitial {
                return rejection(action, "cannot be initialized into \(stateName(action.into, feature: action.feature)): not an initial state")
            }
        case .actualize:
            if current != action.into { return notIn(action, action.into, current) }
        case .transition:
            if action.from >= 0 {
                if current != action.from { return notIn(action, action.from, current) }
            } else if current < 0 {
                return rejection(action, "is not initialized")
            } else if current == action.into && !action.same {
                return rejection(action, "is already in state \(stateName(current, feature: action.feature))")
            }
            if current >= 0 && !hot.allowsTransition(feature, from: current, into: action.into) {
                return rejection(action, "cannot transition from \(stateName(current, feature: action.feature)) into \(stateName(action.into, feature: action.feature)): not a declared transition")
            }
        case .deinitialize:
            if action.from >= 0 {
                if current != action.from { return notIn(action, action.from, current) }
            } else if current < 0 {
                return rejection(action, "is not initialized")
            }
        case .trigger:
            if action.from >= 0 {
                if current != action.from { return notIn(action, action.from, current) }
            } else if action.uninitialized {
                if current >= 0 { return rejection(action, "is initialized (in state \(stateName(current, feature: action.feature))), not absent") }
            } else if current < 0 {
                return rejection(action, "is not initialized")
            }
        case .send:
            if current < 0 { return rejection(action, "is not initialized") }
        }
        return nil
    }

    func rejection(_ action: ActionHeader, _ text: String) -> UniFlowError {
        UniFlowError(.rejected, "\(subject(action)) \(text)")
    }

    private func notIn(_ action: ActionHeader, _ required: Int32, _ current: Int32) -> UniFlowError {
        let wanted = stateName(required, feature: action.feature)
        if current < 0 { return rejection(action, "is not initialized (expected state \(wanted))") }
        return rejection(action, "is in state \(stateName(current, feature: action.feature)), not \(wanted)")
    }
}
