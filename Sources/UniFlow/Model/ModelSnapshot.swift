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
        /// A statechart instance's invocations as the model lists them: what
        /// starts again (new serials) once the snapshot is installed.
        var invocations: [StatechartServices.Invocation] = []
    }

    /// By feature; unused (absent) for keyed features.
    var features: [Entry]
    /// By keyed feature: its live instances in creation order.
    var instances: [Int32: [(key: String, entry: Entry)]] = [:]

    init(of dispatcher: some ModelContext) {
        let running = dispatcher.currentInvocations()
        features = (0..<Int32(dispatcher.featureCount)).map { f in
            let place = Place(feature: f)
            guard dispatcher.instanceTable(of: f) == nil else { return Entry() }
            return Entry(state: dispatcher.state(at: place), payload: dispatcher.storedPayload(at: place),
                         invocations: running.isEmpty ? [] : running[ChartInstanceRef(feature: f, key: nil)] ?? [])
        }
        for f in 0..<Int32(dispatcher.featureCount) {
            guard let table = dispatcher.instanceTable(of: f) else { continue }
            var list: [(key: String, entry: Entry)] = []
            dispatcher.forEachInstance(ofTable: table) { slot, key in
                let place = Place(feature: f, instance: slot)
                list.append((key, Entry(state: dispatcher.state(at: place), payload: dispatcher.storedPayload(at: place),
                                        invocations: running.isEmpty ? [] : running[ChartInstanceRef(feature: f, key: key)] ?? [])))
            }
            instances[f] = list
        }
    }

    /// Every instance's listed invocations, by instance (instances with none left out).
    var invocations: [ChartInstanceRef: [StatechartServices.Invocation]] {
        var result: [ChartInstanceRef: [StatechartServices.Invocation]] = [:]
        for (f, entry) in features.enumerated() where entry.state >= 0 && !entry.invocations.isEmpty {
            result[ChartInstanceRef(feature: Int32(f), key: nil)] = entry.invocations
        }
        for (f, list) in instances {
            for (key, entry) in list where !entry.invocations.isEmpty { result[ChartInstanceRef(feature: f, key: key)] = entry.invocations }
        }
        return result
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
    mutating func apply(journalLine line: JSONObject, order: UInt64 = 0, on dispatcher: some ModelContext) throws(UniFlowError) {
        guard let featureName = line["feature"]?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
        let feature = try dispatcher.resolveFeature(featureName)
        let key = try ModelSnapshot.key(line["key"], feature: feature, on: dispatcher)
        let at: UInt64? = line["at"].flatMap { if case .int(let n) = $0, n >= 0 { UInt64(n) } else { nil } }
        switch line["state"] {
        case .some(.null):
            set(Entry(), feature: feature, key: key)
        case .some(.string(_)) where try dispatcher.statechartEntry(line, feature: feature, at: "line") != nil:
            let chart = try dispatcher.statechartEntry(line, feature: feature, at: "line")!
            // A journal's invocations change by lines of their own (`apply(invocationLine:)`).
            set(Entry(state: chart.state, payload: chart.payload, enteredAt: at, updatedAt: at,
                      enteredOrder: order, updatedOrder: order, invocations: entry(feature: feature, key: key)?.invocations ?? []),
                feature: feature, key: key)
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

    /// A journal's line that only says what a statechart instance's invocations
    /// are now: `{"invocations": [...], "feature", "key"?, "at"}`.
    mutating func apply(invocationLine line: JSONObject, on dispatcher: some ModelContext) throws(UniFlowError) {
        guard let featureName = line["feature"]?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
        let feature = try dispatcher.resolveFeature(featureName)
        let key = try ModelSnapshot.key(line["key"], feature: feature, on: dispatcher)
        let name = "\(featureName)\(key.map { "[\($0)]" } ?? "")"
        guard var current = entry(feature: feature, key: key), current.state >= 0 else {
            throw UniFlowError(.schema, "\(name) is not initialized")
        }
        current.invocations = try dispatcher.listedInvocations(line["invocations"] ?? .array([]), feature: feature, key: key,
                                                              state: current.state, at: name)
        set(current, feature: feature, key: key)
    }

    /// A key as a journal line or a model gives it: present exactly for keyed features.
    static func key(_ value: JSONValue?, feature: Int32, on dispatcher: some ModelContext) throws(UniFlowError) -> String? {
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

