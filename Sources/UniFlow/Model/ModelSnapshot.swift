/// A copy of the GlobalModel: every feature's state and payload, and every
/// instance of a keyed feature in creation order. Restores and replays build
/// one, then install it whole, so a failure half-way changes nothing.
struct ModelSnapshot {
    /// One place's contents, and (for a replay) when it entered its state and
    /// was last actualized, in the journal's time.
    struct Entry {
        var state: Int32 = -1
        var payload: JSONObject?
        var enteredAt: UInt64?
        var updatedAt: UInt64?
        /// The same two moments as positions among the journal's events (the
        /// order its state timers were armed in).
        var enteredOrder: UInt64 = 0
        var updatedOrder: UInt64 = 0
    }

    /// By feature; unused (absent) for keyed features.
    var features: [Entry]
    /// By keyed feature: its live instances in creation order.
    var instances: [Int32: [(key: String, entry: Entry)]] = [:]

    init(of dispatcher: Dispatcher) {
        features = (0..<Int32(dispatcher.hot.features.count)).map { f in
            let place = Place(feature: f)
            guard dispatcher.instanceTable(of: f) == nil else { return Entry() }
            return Entry(state: dispatcher.state(at: place), payload: dispatcher.storedPayload(at: place))
        }
        for f in 0..<Int32(dispatcher.hot.features.count) {
            guard let table = dispatcher.instanceTable(of: f) else { continue }
            var list: [(key: String, entry: Entry)] = []
            dispatcher.hot.instanceTables[Int(table)].forEach { slot, instance in
                let place = Place(feature: f, instance: slot)
                list.append((String(cString: instance.key!), Entry(state: instance.state, payload: dispatcher.storedPayload(at: place))))
            }
            instances[f] = list
        }
    }

    /// Every feature absent, every instance gone.
    mutating func clear() {
        features = features.map { _ in Entry() }
        for f in instances.keys { instances[f] = [] }
    }

    /// Sets a place: a feature, or the instance with that key (made last in
    /// creation order when it does not live; ended when `entry.state` is -1).
    mutating func set(_ entry: Entry, feature: Int32, key: String?) {
        guard let key else {
            features[Int(feature)] = entry
            return
        }
        var list = instances[feature] ?? []
        if let i = list.firstIndex(where: { $0.key == key }) {
            if entry.state < 0 { list.remove(at: i) } else { list[i].entry = entry }
        } else if entry.state >= 0 {
            list.append((key, entry))
        }
        instances[feature] = list
    }

    func entry(feature: Int32, key: String?) -> Entry? {
        guard let key else { return features[Int(feature)] }
        return instances[feature]?.first(where: { $0.key == key })?.entry
    }

    /// One mutation line of a journal: `{"seq", "feature", "key"?, "kind", "state", "payload", "at"?}`.
    mutating func apply(journalLine line: JSONObject, order: UInt64 = 0, on dispatcher: Dispatcher) throws(UniFlowError) {
        guard let featureName = line["feature"]?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
        let feature = try dispatcher.resolveFeature(featureName)
        let key = try ModelSnapshot.key(line["key"], feature: feature, on: dispatcher)
        let at: UInt64? = line["at"].flatMap { if case .int(let n) = $0, n >= 0 { UInt64(n) } else { nil } }
        switch line["state"] {
        case .some(.null):
            set(Entry(), feature: feature, key: key)
        case .some(.string(let stateName)):
            let state = try dispatcher.resolveState(stateName, of: feature)
            guard let payload = line["payload"]?.objectValue else { throw UniFlowError(.schema, "missing 'payload' object") }
            let checked = try dispatcher.stateDefinition(state, of: feature).checkPayload(payload, feature: dispatcher.featureName(feature))
            var entry = Entry(state: state, payload: checked.isEmpty ? nil : checked, enteredAt: at, updatedAt: at,
                              enteredOrder: order, updatedOrder: order)
            // An actualization keeps the time its state was entered.
            if line["kind"]?.stringValue == MutationKind.actualization.text, let old = self.entry(feature: feature, key: key), old.state == state {
                entry.enteredAt = old.enteredAt
                entry.enteredOrder = old.enteredOrder
            }
            set(entry, feature: feature, key: key)
        default:
            throw UniFlowError(.schema, "missing 'state'")
        }
    }

    /// A key as a journal line or a model gives it: present exactly for keyed features.
    static func key(_ value: JSONValue?, feature: Int32, on dispatcher: Dispatcher) throws(UniFlowError) -> String? {
        let keyed = dispatcher.instanceTable(of: feature) != nil
        switch value {
        case nil:
            if keyed { throw UniFlowError(.schema, "\(dispatcher.featureName(feature)) is keyed: missing 'key'") }
            return nil
        case .string(let key)?:
            guard keyed else { throw UniFlowError(.schema, "\(dispatcher.featureName(feature)) is a single feature: unexpected 'key'") }
            if let reason = InstanceKey.refusal(key) { throw UniFlowError(.schema, "key: \(reason)") }
            return key
        case let other?:
            throw UniFlowError(.schema, "'key': expected string, got \(other.jsonTypeName)")
        }
    }
}

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
        disarmAllStateTimers()
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
}
