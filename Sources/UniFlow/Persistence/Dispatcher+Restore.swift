import Glibc

/// Restores: a model checked against the definitions, then installed whole.
extension Dispatcher {
    /// Checks a GlobalModel (as `uf_state_get` writes it) against the registered
    /// definitions: a keyed feature is an object of its instances.
    func validatedModel(_ json: JSONValue) throws(UniFlowError) -> ModelSnapshot {
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "a model must be an object, got \(json.jsonTypeName)")
        }
        var snapshot = ModelSnapshot(of: self)
        snapshot.clear()
        for (name, value) in object {
            let feature = try resolveFeature(name)
            guard let entry = value.objectValue else {
                throw UniFlowError(.schema, "\(name): expected object, got \(value.jsonTypeName)")
            }
            if instanceTable(of: feature) != nil {
                var list: [(key: String, entry: ModelSnapshot.Entry)] = []
                for (key, instance) in entry {
                    if let reason = InstanceKey.refusal(key) { throw UniFlowError(.schema, "\(name): key: \(reason)") }
                    list.append((key, try validatedEntry(instance, feature: feature, at: "\(name).\(key)")))
                }
                snapshot.instances[feature] = list
            } else {
                snapshot.features[Int(feature)] = try validatedEntry(value, feature: feature, at: name)
            }
        }
        return snapshot
    }

    /// `{"state": S, "payload": {...}}` of one place.
    private func validatedEntry(_ value: JSONValue, feature: Int32, at path: String) throws(UniFlowError) -> ModelSnapshot.Entry {
        guard let entry = value.objectValue else {
            throw UniFlowError(.schema, "\(path): expected object, got \(value.jsonTypeName)")
        }
        for key in entry.keys where key != "state" && key != "payload" {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
        guard let stateValue = entry["state"] else { throw UniFlowError(.schema, "\(path): missing key 'state'") }
        guard let stateName = stateValue.stringValue else {
            throw UniFlowError(.schema, "\(path).state: expected string, got \(stateValue.jsonTypeName)")
        }
        let state = try resolveState(stateName, of: feature)
        let payload: JSONObject?
        switch entry["payload"] {
        case .none: payload = nil
        case .some(.object(let p)): payload = p
        case .some(let other): throw UniFlowError(.schema, "\(path).payload: expected object, got \(other.jsonTypeName)")
        }
        let checked = try stateDefinition(state, of: feature).checkPayload(payload, feature: featureName(feature))
        return ModelSnapshot.Entry(state: state, payload: checked.isEmpty ? nil : checked)
    }

    /// Replaces the model with the snapshot; nobody is notified, and every state
    /// timer is disarmed (the caller arms them again by its own rule). Instances
    /// are made anew, in the snapshot's order.
    func install(_ snapshot: ModelSnapshot) throws(UniFlowError) {
        // Room for every key first: installing must not fail half-way.
        var tables: [(Int32, InstanceTable, [JSONObject?])] = []
        for (feature, list) in snapshot.instances.sorted(by: { $0.key < $1.key }) {
            var table = InstanceTable()
            var payloads: [JSONObject?] = []
            do throws(UniFlowError) {
                for (key, entry) in list {
                    let slot = try key.withCName { (c) throws(UniFlowError) in try table.insert(c!, state: entry.state) }
                    table.slots.pointer(Int(slot)).pointee.hasPayload = entry.payload != nil
                    payloads.append(entry.payload)
                }
            } catch {
                table.deallocate()
                for var made in tables { made.1.deallocate() }
                throw error
            }
            tables.append((feature, table, payloads))
        }
        time.disarmAllStateTimers(self)
        for (f, entry) in snapshot.features.enumerated() where instanceTable(of: Int32(f)) == nil {
            let slot = hot.features.pointer(f)
            slot.pointee.state = entry.state
            slot.pointee.hasPayload = entry.payload != nil
            model.payloads[f] = entry.payload
        }
        for (feature, table, payloads) in tables {
            let index = Int(hot.features[Int(feature)].instances)
            hot.instanceTables.pointer(index).pointee.deallocate()
            hot.instanceTables[index] = table
            model.instancePayloads[index] = payloads
            table.forEach { slot, _ in attachKeyedSubscribers(table: Int32(index), slot: slot, feature: feature) }
        }
        changes.everything = true
        changes.any = true
    }

    /// Calls `body` for every live place whose state has timers, with its state
    /// and their definitions, in feature registration order and then instance
    /// creation order (what a restore plans to arm).
    func forEachTimedPlace(_ body: (Place, _ state: Int32, [StateTimer]) -> Void) {
        forEachPlace { place in
            let state = self.state(at: place)
            guard state >= 0, timerCount(of: state, in: place.feature) > 0 else { return }
            body(place, state, stateDefinition(state, of: place.feature).timers)
        }
    }
}
