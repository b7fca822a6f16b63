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
            let timers = try timerList.enumerated().map { (i, value) throws(UniFlowError) -> RestoredTimer in
                do throws(UniFlowError) {
                    return try RestoredTimer(value, sameClock: kind == time.clock.kind, on: self)
                } catch {
                    throw error.prefixed("snapshot.timers[\(i)]")
                }
            }
            let known = stateTimerNames(in: snapshot)
            var seen = Set<String>()
            for (i, timer) in timers.enumerated() {
                guard let id = timer.id else { continue }
                if timer.isState && !known.contains(id) {
                    throw UniFlowError(.schema, "snapshot.timers[\(i)].id: '\(id)' names no state timer of the model")
                }
                if !seen.insert(id).inserted { throw UniFlowError(.schema, "snapshot.timers[\(i)].id: '\(id)' is armed twice") }
            }
            // Armed in the snapshot's order (soonest first, ties in arm order), so
            // that timers due at one instant keep their order.
            try installJournaled(snapshot, replacing: ModelSnapshot(of: self)) {
                var places: [String: (Place, Int, ms: UInt64)] = [:]
                self.forEachTimedPlace { place, _, definitions in
                    for i in definitions.indices { places[self.time.stateTimerID(place, after: i, self)] = (place, i, definitions[i].ms) }
                }
                let now = self.time.clock.now()
                return timers.map { timer in
                    if timer.isState, let (place, after, ms) = places[timer.id!] {
                        // A state timer's delay is its definition's, whatever the snapshot says.
                        return PlannedTimer(kind: .state(place, after: after),
                                            deadline: timer.deadline(now: now, clock: self.time.clock, ms: ms), ms: ms)
                    }
                    return PlannedTimer(kind: .api(action: timer.action!, id: timer.id),
                                        deadline: timer.deadline(now: now, clock: self.time.clock, ms: timer.ms), ms: timer.ms)
                }
            }
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

/// One timer of a snapshot, checked.
private struct RestoredTimer {
    var id: String?
    var isState: Bool
    var dueAt: UInt64
    var remaining: UInt64
    var ms: UInt64
    var policy: RestorePolicy
    var sameClock: Bool
    /// API timers: the action's JSON text.
    var action: String?

    init(_ value: JSONValue, sameClock: Bool, on dispatcher: Dispatcher) throws(UniFlowError) {
        guard let object = value.objectValue else { throw UniFlowError(.schema, "expected object, got \(value.jsonTypeName)") }
        for key in object.keys where !["id", "kind", "due_at", "remaining_ms", "ms", "on_restore", "action"].contains(key) {
            throw UniFlowError(.schema, "unknown key '\(key)'")
        }
        // The bounds of what the library itself writes: delays up to 2^53 ms, and
        // deadlines up to a delay past a clock that stops at 2^53.
        func count(_ key: String, atMost limit: UInt64, _ limitText: String) throws(UniFlowError) -> UInt64 {
            guard case .int(let n)? = object[key], n >= 0, UInt64(n) <= limit else {
                throw UniFlowError(.schema, "\(key): expected an integer from 0 to \(limitText)")
            }
            return UInt64(n)
        }
        switch object["kind"]?.stringValue {
        case "state": isState = true
        case "api": isState = false
        default: throw UniFlowError(.schema, "kind: expected \"state\" or \"api\"")
        }
        // An API timer may be anonymous; a state timer always has its id.
        switch object["id"] {
        case .string(let text)?: id = text
        case .null? where !isState, nil where !isState: id = nil
        default: throw UniFlowError(.schema, "id: expected a string")
        }
        let maxDelay = DefinitionParser.maxTimerMilliseconds
        dueAt = try count("due_at", atMost: 2 * maxDelay, "2^54")
        remaining = try count("remaining_ms", atMost: maxDelay, "2^53")
        ms = try count("ms", atMost: maxDelay, "2^53")
        let policyName = object["on_restore"]?.stringValue ?? "fire"
        guard let policy = RestorePolicy(rawValue: policyName) else {
            throw UniFlowError(.schema, "on_restore: expected \"fire\", \"resume\" or \"restart\"")
        }
        // API timers keep their wall-clock deadline, whatever they say.
        self.policy = isState ? policy : .fire
        self.sameClock = sameClock
        if isState {
            guard object["action"] == nil else { throw UniFlowError(.schema, "a state timer has no 'action'") }
            if let id, !TimerService.isStateTimerID(id) { throw UniFlowError(.schema, "id: '\(id)' is not a state timer's id") }
        } else {
            guard let action = object["action"] else { throw UniFlowError(.schema, "missing key 'action'") }
            if let id {
                // The same rules as uf_submit_after's, but here a bad id is a bad shape.
                do throws(UniFlowError) { try TimerService.checkTimerID(id, "id") } catch {
                    throw UniFlowError(.schema, error.message)
                }
            }
            // Checked now, as when it was armed.
            _ = try dispatcher.resolve(try ActionRequest.decode(action), hasVia: false)
            self.action = action.jsonText
        }
    }

    /// When it falls due, restored at `now`; `ms` is its full delay.
    func deadline(now: UInt64, clock: DispatcherClock, ms: UInt64) -> UInt64 {
        switch policy {
        case .fire: return sameClock ? clock.time(atWallClock: dueAt) : now &+ remaining
        case .resume: return now &+ remaining
        case .restart: return now &+ ms
        }
    }
}
