/// A copy of the GlobalModel: every feature's state index (-1: absent) and
/// payload. Restores, replays and failed batches build or keep one, then install
/// it whole, so a failure half-way changes nothing.
struct ModelSnapshot {
    var states: [Int32]
    var payloads: [JSONObject?]

    init(of dispatcher: Dispatcher) {
        states = (0..<dispatcher.hot.features.count).map { dispatcher.hot.features[$0].state }
        payloads = (0..<dispatcher.hot.features.count).map {
            dispatcher.hot.features[$0].hasPayload ? dispatcher.payloads[$0] : nil
        }
    }

    /// Every feature absent.
    mutating func clear() {
        states = states.map { _ in -1 }
        payloads = payloads.map { _ in nil }
    }

    /// One mutation line of a journal: `{"seq", "feature", "kind", "state", "payload"}`.
    mutating func apply(journalLine line: JSONObject, on dispatcher: Dispatcher) throws(UniFlowError) {
        guard let featureName = line["feature"]?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
        let feature = try dispatcher.resolveFeature(featureName)
        switch line["state"] {
        case .some(.null):
            states[Int(feature)] = -1
            payloads[Int(feature)] = nil
        case .some(.string(let stateName)):
            let state = try dispatcher.resolveState(stateName, of: feature)
            guard let payload = line["payload"]?.objectValue else { throw UniFlowError(.schema, "missing 'payload' object") }
            let checked = try dispatcher.stateDefinition(state, of: feature)
                .checkPayload(payload, feature: dispatcher.featureName(feature))
            states[Int(feature)] = state
            payloads[Int(feature)] = checked.isEmpty ? nil : checked
        default:
            throw UniFlowError(.schema, "missing 'state'")
        }
    }
}

extension Dispatcher {
    /// Checks a GlobalModel (SPEC 5.2) against the registered definitions.
    func validatedModel(_ json: JSONValue) throws(UniFlowError) -> ModelSnapshot {
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "a model must be an object, got \(json.kindName)")
        }
        var snapshot = ModelSnapshot(of: self)
        snapshot.clear()
        for (name, value) in object {
            let feature = try resolveFeature(name)
            guard let entry = value.objectValue else {
                throw UniFlowError(.schema, "\(name): expected object, got \(value.kindName)")
            }
            for key in entry.keys where key != "state" && key != "payload" {
                throw UniFlowError(.schema, "\(name): unknown key '\(key)'")
            }
            guard let stateName = entry["state"]?.stringValue else {
                throw UniFlowError(.schema, "\(name).state: expected string")
            }
            let state = try resolveState(stateName, of: feature)
            let payload: JSONObject?
            switch entry["payload"] {
            case .none: payload = nil
            case .some(.object(let p)): payload = p
            case .some(let other): throw UniFlowError(.schema, "\(name).payload: expected object, got \(other.kindName)")
            }
            let checked = try stateDefinition(state, of: feature).checkPayload(payload, feature: featureName(feature))
            snapshot.states[Int(feature)] = state
            snapshot.payloads[Int(feature)] = checked.isEmpty ? nil : checked
        }
        return snapshot
    }

    /// Replaces the model with the snapshot; nobody is notified.
    func install(_ snapshot: ModelSnapshot) {
        for i in 0..<snapshot.states.count {
            let slot = hot.features.pointer(i)
            slot.pointee.state = snapshot.states[i]
            slot.pointee.hasPayload = snapshot.payloads[i] != nil
            payloads[i] = snapshot.payloads[i]
        }
    }
}
