/// The armed timers as snapshots, journals and restores save and arm them
/// again (`docs/time.md`, "Durable timers").
extension TimerService {
    /// What a restore line says of the timers a restore or a replay is about to
    /// arm (`planned`, in order): the API timers with the serials they will get.
    func restoreLineJSON(_ planned: [PlannedTimer], _ context: some TimerContext) -> JSONValue {
        var serial = store.nextSerial
        return .array(planned.map { timer in
            defer { serial += 1 }
            let dueAt = JSONValue.int(Int64(clamping: clock.wallClock(at: timer.deadline)))
            switch timer.kind {
            case .state(let place, let after):
                return ["id": .string(stateTimerID(place, after: after, context)), "kind": "state", "due_at": dueAt]
            case .api(let action, let id):
                return ["serial": .int(Int64(serial)), "id": id.map { .string($0) } ?? .null, "kind": "api",
                        "ms": .int(Int64(clamping: timer.ms)), "due_at": dueAt, "action": (try? JSONParser.parse(action)) ?? .null]
            }
        })
    }

    /// Arms a timer a restore or a replay planned. Each arms exactly one record,
    /// so the serials it takes can be told in advance (`restoreLineJSON`).
    mutating func arm(_ planned: PlannedTimer, _ context: some TimerContext) {
        switch planned.kind {
        case .state(let place, let after):
            armStateTimers(at: place, state: context.state(at: place), context) { i, _ in i == after ? planned.deadline : nil }
        case .api(let action, let id):
            try? armRestoredAPITimer(action: action, ms: planned.ms, id: id, deadline: planned.deadline, context)
        }
    }

    /// The state timers armed now, by feature, key and `after` index, so that a
    /// model installed again (a restore whose journal line failed) gets them back
    /// exactly: same deadline, same place in arm order.
    func savedStateTimers(_ context: some TimerContext) -> [SavedStateTimer] {
        var saved: [SavedStateTimer] = []
        for index in store.sortedLive() where store.records[Int(index)].isState {
            let record = store.records[Int(index)]
            let place = Place(feature: record.feature, instance: record.instance)
            saved.append(SavedStateTimer(feature: record.feature, key: context.key(at: place).map { String(cString: $0) },
                                         after: Int(record.after), deadline: record.deadline, serial: record.serial))
        }
        return saved
    }

    /// Arms again the state timers `savedStateTimers` gave.
    mutating func rearm(_ saved: [SavedStateTimer], _ context: some TimerContext) {
        for timer in saved {
            let place = context.place(feature: timer.feature, key: timer.key)
            let state = context.state(at: place)
            guard state >= 0 else { continue }
            armStateTimers(at: place, state: state, keepingSerials: [timer.after: timer.serial], context) { i, _ in
                i == timer.after ? timer.deadline : nil
            }
        }
    }
}

/// A timer a restore or a replay arms, in the order the timers were first armed.
struct PlannedTimer {
    enum Kind {
        case state(Place, after: Int)
        /// The action's JSON text and the id (nil: anonymous).
        case api(action: String, id: String?)
    }
    var kind: Kind
    var deadline: UInt64
    var ms: UInt64
}

/// A state timer kept aside while a model is installed, by key rather than slot.
struct SavedStateTimer {
    var feature: Int32
    var key: String?
    var after: Int
    var deadline: UInt64
    var serial: UInt64
}
