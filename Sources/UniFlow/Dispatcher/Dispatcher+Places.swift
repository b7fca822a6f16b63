import CSystem
import Glibc

/// Reading and writing the GlobalModel: states, payloads and instances.
extension Dispatcher: ModelContext {
    var featureCount: Int32 { Int32(hot.features.count) }

    func forEachInstance(ofTable table: Int32, _ body: (_ slot: Int32, _ key: String) -> Void) {
        hot.instanceTables[Int(table)].forEach { slot, instance in body(slot, String(cString: instance.key!)) }
    }

    // MARK: Places

    /// The instance table of a keyed feature, or nil for a single one.
    @inline(__always)
    func instanceTable(of feature: Int32) -> Int32? {
        let table = hot.features[Int(feature)].instances
        return table < 0 ? nil : table
    }

    /// Where an action acts: the feature, with the slot of the instance its key
    /// names (-1 when that instance does not live).
    @inline(__always)
    func place(of action: ActionHeader) -> Place {
        let table = hot.features[Int(action.feature)].instances
        guard table >= 0, let key = action.key else { return Place(feature: action.feature) }
        return Place(feature: action.feature, instance: hot.instanceTables[Int(table)].find(key))
    }

    /// The current state at a place, or -1 when it is absent.
    @inline(__always)
    func state(at place: Place) -> Int32 {
        slotValue(at: place, absent: -1, feature: \.state, instance: \.state)
    }

    /// A value of a place's slot: the feature's own, or its instance's (`absent`
    /// for an instance that does not live). One reading of places for the
    /// state, the timers and whatever else a slot keeps.
    @inline(__always)
    func slotValue<T>(at place: Place, absent: T, feature single: (FeatureSlot) -> T,
                      instance keyed: (InstanceSlot) -> T) -> T {
        let feature = hot.features[Int(place.feature)]
        if feature.instances < 0 { return single(feature) }
        guard place.instance >= 0 else { return absent }
        return keyed(hot.instanceTables[Int(feature.instances)].slots[Int(place.instance)])
    }

    /// The stored payload at a place (nil: `{}` or absent).
    func storedPayload(at place: Place) -> JSONObject? {
        let feature = hot.features[Int(place.feature)]
        if feature.instances < 0 { return feature.hasPayload ? model.payloads[Int(place.feature)] : nil }
        guard place.instance >= 0 else { return nil }
        let table = Int(feature.instances)
        guard hot.instanceTables[table].slots[Int(place.instance)].hasPayload else { return nil }
        return model.instancePayloads[table][Int(place.instance)]
    }

    /// The payload at a place as the model shows it (`{}` when it has none).
    func payload(at place: Place) -> JSONObject { storedPayload(at: place) ?? JSONObject() }

    /// The instance's key (nil for a single feature).
    func key(at place: Place) -> UnsafePointer<CChar>? {
        guard let table = instanceTable(of: place.feature), place.instance >= 0 else { return nil }
        return hot.instanceTables[Int(table)].slots[Int(place.instance)].key.map { UnsafePointer($0) }
    }

    /// Stores a state and payload at a live place (nil payload: `{}`).
    func store(_ state: Int32, payload: JSONObject?, at place: Place) {
        let f = Int(place.feature)
        let table = hot.features[f].instances
        if table < 0 {
            let slot = hot.features.pointer(f)
            if slot.pointee.hasPayload || payload != nil { model.payloads[f] = payload }
            slot.pointee.state = state
            slot.pointee.hasPayload = payload != nil
        } else {
            let slot = hot.instanceTables[Int(table)].slots.pointer(Int(place.instance))
            if slot.pointee.hasPayload || payload != nil { model.instancePayloads[Int(table)][Int(place.instance)] = payload }
            slot.pointee.state = state
            slot.pointee.hasPayload = payload != nil
        }
    }

    /// Makes an instance live (absent, with no payload yet); returns its place.
    func createInstance(_ key: UnsafePointer<CChar>, of feature: Int32) throws(UniFlowError) -> Place {
        let table = Int(hot.features[Int(feature)].instances)
        let slot = try hot.instanceTables.pointer(table).pointee.insert(key, state: -1)
        if model.instancePayloads[table].count <= Int(slot) {
            model.instancePayloads[table].append(nil)
        } else {
            model.instancePayloads[table][Int(slot)] = nil
        }
        attachKeyedSubscribers(table: Int32(table), slot: slot, feature: feature)
        return Place(feature: feature, instance: slot)
    }

    /// Ends an instance; its key stays readable until the outer call ends (or,
    /// in a batch, until the batch commits or rolls back, which may restore it).
    func removeInstance(at place: Place) {
        let table = Int(hot.features[Int(place.feature)].instances)
        if batch != nil {
            batch!.undo.append(.removed(place, hot.instanceTables[table].slots[Int(place.instance)],
                                        payload: model.instancePayloads[table][Int(place.instance)]))
        }
        let key = hot.instanceTables.pointer(table).pointee.remove(place.instance)
        model.instancePayloads[table][Int(place.instance)] = nil
        if batch == nil {
            changes.retiredKeys.append(key)
            changes.emptiedTables.append(Int32(table))
            changes.any = true
        }
    }

    /// Releases the storage of instance tables that no longer hold any instance,
    /// so that a million instances come and gone leave nothing behind.
    func releaseEmptyInstanceTables() {
        var released = 0
        for table in changes.emptiedTables where hot.instanceTables[Int(table)].live == 0 {
            released += hot.instanceTables[Int(table)].slots.count
            hot.instanceTables.pointer(Int(table)).pointee.deallocate()
            model.instancePayloads[Int(table)] = []
        }
        changes.emptiedTables.removeAll()
        // The keys of that many instances were freed one by one: glibc keeps such
        // memory in its free lists unless asked to give it back to the system.
        if released >= 65_536 { malloc_trim(0) }
    }

    // MARK: JSON

    /// `{"state": S, "payload": {...}}` of a live place.
    func stateJSON(at place: Place) -> JSONValue {
        let state = state(at: place)
        if charts.any && charts[place.feature] != nil {
            var object: JSONObject = ["state": .string(stateName(state, feature: place.feature)), "payload": .object(payload(at: place))]
            statechartModelExtras(state, feature: place.feature, into: &object)
            statechartInvocations(feature: place.feature, key: key(at: place).map { String(cString: $0) }, into: &object)
            return .object(object)
        }
        return ["state": .string(stateName(state, feature: place.feature)), "payload": .object(payload(at: place))]
    }

    /// A feature as the GlobalModel shows it: its state, or (keyed) its instances
    /// in creation order; nil when it is absent or no instance lives.
    func featureJSON(_ feature: Int32) -> JSONValue? {
        guard let table = instanceTable(of: feature) else {
            // Not `cond ? value : nil`: JSONValue takes `nil` as `.null`.
            guard hot.features[Int(feature)].state >= 0 else { return .none }
            return stateJSON(at: Place(feature: feature))
        }
        let instances = hot.instanceTables[Int(table)]
        guard instances.live > 0 else { return .none }
        var entries: [(key: String, value: JSONValue)] = []
        entries.reserveCapacity(instances.live)
        instances.forEach { slot, instance in
            entries.append((String(cString: instance.key!), stateJSON(at: Place(feature: feature, instance: slot))))
        }
        return .object(JSONObject(entries))
    }

    /// The GlobalModel: initialized features in registration order.
    func modelJSON() -> JSONValue {
        var entries: [(key: String, value: JSONValue)] = []
        for i in 0..<Int32(hot.features.count) {
            if let value = featureJSON(i) { entries.append((featureName(i), value)) }
        }
        return .object(JSONObject(entries))
    }

    /// One instance of a keyed feature, or nil when it does not live.
    func instanceJSON(_ feature: Int32, key: String) throws(UniFlowError) -> JSONValue? {
        guard let table = instanceTable(of: feature) else {
            throw UniFlowError(.schema, "\(featureName(feature)) is a single feature: it has no instances")
        }
        if let reason = InstanceKey.refusal(key) { throw UniFlowError(.schema, "key: \(reason)") }
        let slot = key.withCString { hot.instanceTables[Int(table)].find($0) }
        // Not a ternary: JSONValue is ExpressibleByNilLiteral, and `cond ? nil : value`
        // would make that nil the JSON null instead of no instance.
        guard slot >= 0 else { return nil }
        return stateJSON(at: Place(feature: feature, instance: slot))
    }

    /// `{"features": [...]}` as registered: the stored texts, joined.
    func definitionsText() -> String {
        var text = #"{"features":["#
        for feature in definitions.indices {
            if feature > 0 { text += "," }
            text += definitions.source(feature)
        }
        return text + "]}"
    }

    /// Every registered definition, parsed (for graphs and tools).
    func allDefinitions() -> [FeatureDefinition] {
        definitions.indices.map { definitions[$0] }
    }

    /// A mutation as `uf_mutation_json` shows it; payloads and action from `delivery`.
    /// The mutation being delivered as JSON text (reports and binding data read it).
    func mutationText(_ record: MutationRecord) -> String { mutationJSON(record, scratch.delivery).jsonText }

    func mutationJSON(_ record: MutationRecord, _ delivery: MutationDelivery) -> JSONValue {
        let feature = record.feature
        func side(_ state: Int32, _ payload: JSONObject?) -> JSONValue {
            guard state >= 0 else { return .null }
            return ["state": .string(stateName(state, feature: feature)), "payload": .object(payload ?? JSONObject())]
        }
        var object = JSONObject()
        object["seq"] = .int(Int64(record.seq))
        object["kind"] = .string(MutationKind(record.kind)?.text ?? "")
        object["feature"] = .string(featureName(feature))
        if let key = record.key { object["key"] = .string(String(cString: key)) }
        object["old"] = side(record.oldState, delivery.oldPayload)
        object["new"] = side(record.newState, delivery.newPayload)
        if let foreign = foreignAction {
            object["action"] = .object(foreign)
        } else if let action = delivery.actionHeader {
            object["action"] = .object(actionDescription(action))
        }
        if charts.any { statechartMutationExtras(record, into: &object) }
        return .object(object)
    }
}
