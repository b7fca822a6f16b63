/// Durable timers (`docs/time.md`): a snapshot is the model and the armed
/// timers, so that a restored host fires what it had armed.
extension Dispatcher {
    /// `uf_snapshot_get`: `{"clock", "model", "timers": [...]}`, soonest first.
    func snapshotJSON() -> JSONValue {
        return ["clock": .string(time.clock.kind.rawValue), "model": modelJSON(), "timers": time.snapshotJSON(self)]
    }

    /// `uf_snapshot_restore`: installs the model as `uf_state_restore` does (no
    /// mutations, no interceptors) and arms each timer by its `on_restore`: `fire`
    /// keeps the wall-clock deadline, `resume` the remaining time, `restart` the
    /// full delay. A snapshot of the other clock kind uses the remaining time for
    /// `fire`. A timer due at restore fires at the next chance, never inside this
    /// call. Invalid input changes nothing.
    func restoreSnapshot(_ json: JSONValue) throws(UniFlowError) {
        try refuseInsideCallbacks("uf_snapshot_restore")
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "a snapshot must be an object, got \(json.jsonTypeName)")
        }
        for key in object.keys where !["clock", "model", "timers"].contains(key) {
            throw UniFlowError(.schema, "snapshot: unknown key '\(key)'")
        }
        guard let clockName = object["clock"]?.stringValue, let kind = DispatcherClock.Kind(rawValue: clockName) else {
            throw UniFlowError(.schema, "snapshot.clock: expected \"monotonic\" or \"manual\"")
        }
        guard let modelJSON = object["model"] else { throw UniFlowError(.schema, "snapshot: missing key 'model'") }
        guard let timerList = (object["timers"] ?? .array([])).arrayValue else {
            throw UniFlowError(.schema, "snapshot.timers: expected array")
        }
        try exclusive { () throws(UniFlowError) in
            let snapshot: ModelSnapshot
            do throws(UniFlowError) { snapshot = try validatedModel(modelJSON) } catch { throw error.prefixed("snapshot.model") }
            // Each API timer's action is checked as arming it would.
            let timers = try time.readSnapshotTimers(timerList, clock: kind, stateTimerIDs: { stateTimerNames(in: snapshot) }) {
                (action) throws(UniFlowError) in _ = try resolve(try ActionRequest.decode(action), hasVia: false)
            }
            try installJournaled(snapshot, replacing: ModelSnapshot(of: self)) { self.time.plan(timers, self) }
        }
    }

    /// The ids of every state timer the places of a model could have armed.
    func stateTimerNames(in snapshot: ModelSnapshot) -> Set<String> {
        var names = Set<String>()
        func add(_ feature: Int32, _ key: String?, _ state: Int32) {
            guard state >= 0 else { return }
            let count = stateDefinition(state, of: feature).timers.count
            let place = featureName(feature) + (key.map { "[\($0)]" } ?? "")
            let state = stateName(state, feature: feature)
            for i in 0..<count { names.insert(TimerService.stateTimerID(place: place, state: state, after: i)) }
        }
        for (f, entry) in snapshot.features.enumerated() { add(Int32(f), nil, entry.state) }
        for (f, list) in snapshot.instances { for (key, entry) in list { add(f, key, entry.state) } }
        return names
    }
}
