import Glibc

/// Restores: a model checked against the definitions (`Persistence/ModelValidation.swift`),
/// then installed whole.
extension Dispatcher {
    /// Checks a GlobalModel (as `uf_state_get` writes it) against the registered
    /// definitions (`ModelSnapshot.init(validating:_:)`).
    func validatedModel(_ json: JSONValue) throws(UniFlowError) -> ModelSnapshot {
        try ModelSnapshot(validating: json, self)
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
            // A statechart's timers are API timers: they come back with the API timers.
            guard state >= 0, !(charts.any && charts[place.feature] != nil), timerCount(of: state, in: place.feature) > 0 else { return }
            body(place, state, stateDefinition(state, of: place.feature).timers)
        }
    }
}
