/// Snapshots' timers (`uf_snapshot_get`, `uf_snapshot_restore`, `docs/time.md`,
/// "Durable timers"): what a snapshot says of each armed timer, and how a
/// restore reads it back and arms it again by its `on_restore`.
extension TimerService {
    /// `uf_snapshot_get`'s `"timers"`: soonest first.
    func snapshotJSON(_ context: some TimerContext) -> JSONValue {
        let now = clock.now()
        var timers: [JSONValue] = []
        for index in store.sortedLive() {
            let record = store.records[Int(index)]
            var timer = JSONObject()
            timer["id"] = timerID(index, context).map { .string($0) } ?? .null
            timer["kind"] = .string(record.isState ? "state" : "api")
            // Clamped: a snapshot restored from far-fetched numbers must still list.
            timer["due_at"] = .int(Int64(clamping: clock.wallClock(at: record.deadline)))
            timer["remaining_ms"] = .int(Int64(clamping: record.deadline > now ? record.deadline - now : 0))
            timer["ms"] = .int(Int64(clamping: record.ms))
            timer["on_restore"] = .string(record.isState ? record.policy.rawValue : RestorePolicy.fire.rawValue)
            if !record.isState, let action = record.action {
                timer["action"] = (try? JSONParser.parse(action)) ?? .null
            }
            timers.append(.object(timer))
        }
        return .array(timers)
    }

    /// A snapshot's `"timers"`, checked: each one's shape (errors name
    /// `snapshot.timers[i]`), then their ids: a state timer's must be one that
    /// the snapshot's model could have armed (`stateTimerIDs`), and none may
    /// be armed twice. `clock`: the snapshot's clock kind.
    func readSnapshotTimers(_ list: [JSONValue], clock kind: DispatcherClock.Kind, stateTimerIDs: () -> Set<String>,
                            checkAction: (JSONValue) throws(UniFlowError) -> Void) throws(UniFlowError) -> [SnapshotTimer] {
        let timers = try list.enumerated().map { (i, value) throws(UniFlowError) -> SnapshotTimer in
            do throws(UniFlowError) {
                return try SnapshotTimer(value, sameClock: kind == clock.kind, checkAction: checkAction)
            } catch {
                throw error.prefixed("snapshot.timers[\(i)]")
            }
        }
        let known = stateTimerIDs()
        var seen = Set<String>()
        for (i, timer) in timers.enumerated() {
            guard let id = timer.id else { continue }
            if timer.isState && !known.contains(id) {
                throw UniFlowError(.schema, "snapshot.timers[\(i)].id: '\(id)' names no state timer of the model")
            }
            if !seen.insert(id).inserted { throw UniFlowError(.schema, "snapshot.timers[\(i)].id: '\(id)' is armed twice") }
        }
        return timers
    }

    /// What a snapshot restore arms once the snapshot's model is in: its timers
    /// in the snapshot's order (soonest first, ties in arm order), so that
    /// timers due at one instant keep their order.
    func plan(_ timers: [SnapshotTimer], _ context: some TimerContext) -> [PlannedTimer] {
        // Each state timer the model's places have, by id.
        var places: [String: (Place, Int, ms: UInt64)] = [:]
        context.forEachPlace { place in
            guard context.hasStateTimers(place.feature) else { return }
            let state = context.state(at: place)
            guard state >= 0 else { return }
            let specs = context.timerSpecs(of: state, in: place.feature)
            for s in specs {
                let i = s - specs.lowerBound
                places[stateTimerID(after: Int32(i), of: state, at: place, context)] = (place, i, context.timerSpec(s).ms)
            }
        }
        let now = clock.now()
        return timers.map { timer in
            if timer.isState, let (place, after, ms) = places[timer.id!] {
                // A state timer's delay is its definition's, whatever the snapshot says.
                return PlannedTimer(kind: .state(place, after: after), deadline: timer.deadline(now: now, clock: clock, ms: ms), ms: ms)
            }
            return PlannedTimer(kind: .api(action: timer.action!, id: timer.id),
                                deadline: timer.deadline(now: now, clock: clock, ms: timer.ms), ms: timer.ms)
        }
    }
}

/// One timer of a snapshot, checked.
struct SnapshotTimer {
    var id: String?
    var isState: Bool
    var dueAt: UInt64
    var remaining: UInt64
    var ms: UInt64
    var policy: RestorePolicy
    var sameClock: Bool
    /// API timers: the action's JSON text.
    var action: String?

    /// `checkAction` checks an API timer's action as arming it would.
    init(_ value: JSONValue, sameClock: Bool,
         checkAction: (JSONValue) throws(UniFlowError) -> Void) throws(UniFlowError) {
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
            try checkAction(action)
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
