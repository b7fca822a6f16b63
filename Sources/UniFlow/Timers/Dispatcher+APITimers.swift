import CUniFlow
import Glibc

/// API timers (`docs/time.md`): actions armed by `uf_submit_after` and
/// `uf_dispatch_after`, under an id or anonymous, and cancelled by id.
extension Dispatcher {
    /// Whether a host-given id could be mistaken for a state timer's.
    /// (Compared byte by byte: `String.contains` of a string searches by Character
    /// and cost more than arming the timer.)
    static func isStateTimerID(_ id: String) -> Bool {
        let marker: StaticString = ".after["
        let count = marker.utf8CodeUnitCount
        return marker.withUTF8Buffer { (pattern) -> Bool in
            var id = id
            return id.withUTF8 { (bytes) -> Bool in
                guard bytes.count >= count else { return false }
                for start in 0...(bytes.count - count) where bytes[start] == pattern[0] {
                    var offset = 1
                    while offset < count && bytes[start + offset] == pattern[offset] { offset += 1 }
                    if offset == count { return true }
                }
                return false
            }
        }
    }

    /// Checks a timer id given to `uf_submit_after`/`uf_dispatch_after`.
    static func checkTimerID(_ id: String, _ function: StaticString) throws(UniFlowError) {
        // From JSON (a snapshot, a journal) it could hold what no C string can give.
        if id.utf8.contains(0) {
            throw UniFlowError(.invalidArgument, "\(function): a timer id contains \\u0000")
        }
        if id.utf8.isEmpty || id.utf8.count > 256 {
            throw UniFlowError(.invalidArgument, "\(function): a timer id is 1 to 256 bytes, got \(id.utf8.count)")
        }
        if isStateTimerID(id) {
            throw UniFlowError(.invalidArgument, "\(function): '\(id)' is shaped like a state timer's id (it contains '.after[')")
        }
    }

    /// How deep a timer's action may nest: a snapshot writes it at level 4
    /// (snapshot, timers, timer, action), and must stay within the 256 levels
    /// `uf_snapshot_restore` reads.
    static let maxTimerActionDepth = JSONParser.maxDepth - 3

    /// `uf_submit_after`: checks the action now, as `uf_submit` would up to its
    /// payload, then arms it (kept as its JSON text).
    func armAPITimer(json text: UnsafePointer<CChar>, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        // A payload_free run by uf_dispatcher_free must not arm what nobody would fire.
        try refuseWhileClosing("uf_submit_after")
        try JSONParser.withTree(text, levels: Dispatcher.maxTimerActionDepth) { (root) throws(UniFlowError) in
            _ = try resolve(try BorrowedAction.decode(JanssonValue(root)), hasVia: false)
        }
        try armAPITimer(action: String(cString: text), delay: delay, id: id, keep: keep)
    }

    /// `uf_dispatch_after`: checks the action now, then arms it as JSON text.
    func armAPITimer(action a: uf_action, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        try refuseWhileClosing("uf_dispatch_after")
        let action = try resolve(try DecodedAction(a), hasVia: false)
        var object = actionDescription(action.header)
        // The payload it carried, not the defaults it would be given: they are filled
        // in when it fires, as for an action armed as JSON.
        if action.header.carriesPayload, let payload = action.payload { object["payload"] = .object(payload) }
        try armAPITimer(action: JSONValue.object(object).jsonText, delay: delay, id: id, keep: keep)
    }

    /// Arms an API timer for an action already checked, given as JSON text. With
    /// an id that is armed: replaces it, or with `keep` leaves it as it is.
    func armAPITimer(action text: String, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        var replaced: Int32? = nil
        if let id, let armed = time.apiIDs[id] {
            if keep { return }
            replaced = armed
        }
        try startTimerThreadIfNeeded()
        let due = deadlines.after(delay)
        let actionText = try Memory.copy(text, for: "a timer's action")
        var idText: UnsafeMutablePointer<CChar>? = nil
        do throws(UniFlowError) {
            idText = try id.map { (id) throws(UniFlowError) in try Memory.copy(id, for: "a timer's id") }
            let index = try time.store.arm(TimerRecord(deadline: due, ms: delay, action: actionText, id: idText))
            if journal != nil {
                // One line arms the new timer and ends the one it replaces: a crash
                // cannot leave the journal with neither.
                var line: JSONObject = ["timer": "armed", "serial": .int(Int64(time.store.records[Int(index)].serial)),
                                        "id": id.map { .string($0) } ?? .null, "ms": .int(Int64(delay)),
                                        "due_at": .int(Int64(clamping: time.clock.wallClock(at: due))), "action": (try? JSONParser.parse(text)) ?? .null]
                if let replaced { line["replaces"] = .int(Int64(time.store.records[Int(replaced)].serial)) }
                do throws(UniFlowError) {
                    try journalTimer(line)
                } catch {
                    time.store.free(index)
                    throw error
                }
            }
            if let id, let replaced { cancelAPITimer(replaced, id: id) }
            if let id { time.apiIDs[id] = index }
            batch?.undo.append(.apiArmed(index, id: id))
            noteArmed(due, timer: index)
        } catch {
            free(actionText)
            free(idText)
            throw error
        }
    }

    /// `uf_timer_cancel`.
    func cancelTimer(_ id: String) throws(UniFlowError) {
        if Dispatcher.isStateTimerID(id) {
            throw UniFlowError(.misuse, "uf_timer_cancel: '\(id)' is a state timer: it is disarmed when its state is left")
        }
        guard let index = time.apiIDs[id] else { throw UniFlowError(.notFound, "no armed timer with id '\(id)'") }
        if journal != nil {
            try journalTimer(["timer": "cancelled", "serial": .int(Int64(time.store.records[Int(index)].serial))])
        }
        cancelAPITimer(index, id: id)
    }

    private func cancelAPITimer(_ index: Int32, id: String) {
        time.apiIDs[id] = nil
        noteDisarmed()
        if batch != nil {
            time.store.suspend(index)
            batch!.undo.append(.apiCancelled(index, id: id))
            return
        }
        free(time.store.records[Int(index)].action)
        free(time.store.records[Int(index)].id)
        time.store.free(index)
    }

    /// `uf_timers_get`: soonest first.
    func timersJSON() -> JSONValue {
        let now = time.clock.now()
        var list: [JSONValue] = []
        for index in time.store.sortedLive() {
            let record = time.store.records[Int(index)]
            list.append(["id": timerID(index).map { .string($0) } ?? .null,
                         "due_in_ms": .int(Int64(clamping: record.deadline > now ? record.deadline - now : 0)),
                         "ms": .int(Int64(clamping: record.ms))])
        }
        return .array(list)
    }
}
