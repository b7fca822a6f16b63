/// A model as the host gives it back (`uf_state_restore`, a snapshot's
/// `"model"`, a journal's restore line), checked against the registered
/// definitions before anything of it is installed.
extension ModelSnapshot {
    /// Checks a GlobalModel (as `uf_state_get` writes it) against the registered
    /// definitions, read through `context`: a keyed feature is an object of its
    /// instances. What `uf_state_restore`, `uf_snapshot_restore` and a journal's
    /// restore lines bring in.
    init(validating json: JSONValue, _ context: some ModelContext) throws(UniFlowError) {
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "a model must be an object, got \(json.jsonTypeName)")
        }
        var snapshot = ModelSnapshot(of: context)
        snapshot.clear()
        for (name, value) in object {
            let feature = try context.resolveFeature(name)
            guard let entry = value.objectValue else {
                throw UniFlowError(.schema, "\(name): expected object, got \(value.jsonTypeName)")
            }
            if context.instanceTable(of: feature) != nil {
                var list: [(key: String, entry: ModelSnapshot.Entry)] = []
                for (key, instance) in entry {
                    if let reason = InstanceKey.refusal(key) { throw UniFlowError(.schema, "\(name): key: \(reason)") }
                    list.append((key, try Self.validatedEntry(instance, feature: feature, key: key, at: "\(name).\(key)", context)))
                }
                snapshot.instances[feature] = list
            } else {
                snapshot.features[Int(feature)] = try Self.validatedEntry(value, feature: feature, key: nil, at: name, context)
            }
        }
        self = snapshot
    }

    /// `{"state": S, "payload": {...}}` of one place.
    private static func validatedEntry(_ value: JSONValue, feature: Int32, key: String?, at path: String,
                                       _ context: some ModelContext) throws(UniFlowError) -> Entry {
        guard let entry = value.objectValue else {
            throw UniFlowError(.schema, "\(path): expected object, got \(value.jsonTypeName)")
        }
        if let chart = try context.statechartEntry(entry, feature: feature, at: path) {
            let listed = try context.listedInvocations(entry["invocations"], feature: feature, key: key, state: chart.state, at: path)
            return Entry(state: chart.state, payload: chart.payload, invocations: listed)
        }
        for key in entry.keys where key != "state" && key != "payload" {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
        guard let stateValue = entry["state"] else { throw UniFlowError(.schema, "\(path): missing key 'state'") }
        guard let stateName = stateValue.stringValue else {
            throw UniFlowError(.schema, "\(path).state: expected string, got \(stateValue.jsonTypeName)")
        }
        let state = try context.resolveState(stateName, of: feature)
        let payload: JSONObject?
        switch entry["payload"] {
        case .none: payload = nil
        case .some(.object(let p)): payload = p
        case .some(let other): throw UniFlowError(.schema, "\(path).payload: expected object, got \(other.jsonTypeName)")
        }
        let checked = try context.stateDefinition(state, of: feature).checkPayload(payload, feature: context.featureName(feature))
        return Entry(state: state, payload: checked.isEmpty ? nil : checked)
    }
}
