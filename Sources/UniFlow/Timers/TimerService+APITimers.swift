import CUniFlow
import Glibc

/// API timers (`docs/time.md`): actions armed by `uf_submit_after` and
/// `uf_dispatch_after` (checked by the dispatcher, kept here as JSON text),
/// under an id or anonymous, and cancelled by id.
extension TimerService {
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
    static let maxActionDepth = JSONParser.maxDepth - 3

    /// Arms an API timer for an action already checked, given as JSON text. With
    /// an id that is armed: replaces it, or with `keep` leaves it as it is.
    mutating func armAPITimer(action text: String, delay: UInt64, id: String?, keep: Bool,
                              _ context: some TimerContext) throws(UniFlowError) {
        var replaced: Int32? = nil
        if let id, let armed = apiIDs[id] {
            if keep { return }
            replaced = armed
        }
        try startThreadIfNeeded(context)
        let due = deadlines.after(delay)
        let actionText = try Memory.copy(text, for: "a timer's action")
        var idText: UnsafeMutablePointer<CChar>? = nil
        do throws(UniFlowError) {
            idText = try id.map { (id) throws(UniFlowError) in try Memory.copy(id, for: "a timer's id") }
            let index = try store.arm(TimerRecord(deadline: due, ms: delay, action: actionText, id: idText))
            if context.journaling {
                // One line arms the new timer and ends the one it replaces: a crash
                // cannot leave the journal with neither.
                var line: JSONObject = ["timer": "armed", "serial": .int(Int64(store.records[Int(index)].serial)),
                                        "id": id.map { .string($0) } ?? .null, "ms": .int(Int64(delay)),
                                        "due_at": .int(Int64(clamping: clock.wallClock(at: due))), "action": (try? JSONParser.parse(text)) ?? .null]
                if let replaced { line["replaces"] = .int(Int64(store.records[Int(replaced)].serial)) }
                do throws(UniFlowError) {
                    try context.journalTimer(line, at: journalTime)
                } catch {
                    store.free(index)
                    throw error
                }
            }
            if let id, let replaced { cancelAPITimer(replaced, id: id, context) }
            if let id { apiIDs[id] = index }
            if context.batching { context.recordUndo(.apiArmed(index, id: id)) }
            noteArmed(due, timer: index, context)
        } catch {
            free(actionText)
            free(idText)
            throw error
        }
    }

    /// `uf_timer_cancel`.
    mutating func cancelTimer(_ id: String, _ context: some TimerContext) throws(UniFlowError) {
        if TimerService.isStateTimerID(id) {
            throw UniFlowError(.misuse, "uf_timer_cancel: '\(id)' is a state timer: it is disarmed when its state is left")
        }
        guard let index = apiIDs[id] else { throw UniFlowError(.notFound, "no armed timer with id '\(id)'") }
        if context.journaling {
            try context.journalTimer(["timer": "cancelled", "serial": .int(Int64(store.records[Int(index)].serial))],
                                     at: journalTime)
        }
        cancelAPITimer(index, id: id, context)
    }

    private mutating func cancelAPITimer(_ index: Int32, id: String, _ context: some TimerContext) {
        apiIDs[id] = nil
        noteDisarmed(context)
        if context.batching {
            store.suspend(index)
            context.recordUndo(.apiCancelled(index, id: id))
            return
        }
        free(store.records[Int(index)].action)
        free(store.records[Int(index)].id)
        store.free(index)
    }

    /// Disarms every API timer (a replay or a snapshot restore brings its own).
    mutating func cancelAllAPITimers(_ context: some TimerContext) {
        for index in store.sortedLive() where !store.records[Int(index)].isState {
            free(store.records[Int(index)].action)
            free(store.records[Int(index)].id)
            store.free(index)
        }
        apiIDs.removeAll()
        noteDisarmed(context)
    }

    /// Arms an API timer at a given deadline (a replay, a snapshot restore).
    /// `serial`: the one it had (a refused firing armed again, a follower
    /// keeping its writer's timer), nil for the next.
    mutating func armRestoredAPITimer(action text: String, ms: UInt64, id: String?, deadline: UInt64, serial: UInt64? = nil,
                                      _ context: some TimerContext) throws(UniFlowError) {
        let actionText = try Memory.copy(text, for: "a timer's action")
        let idText = try? id.map { (id) throws(UniFlowError) in try Memory.copy(id, for: "a timer's id") }
        guard let index = try? store.arm(TimerRecord(deadline: deadline, ms: ms, action: actionText, id: idText ?? nil), serial: serial) else {
            free(actionText)
            free(idText ?? nil)
            throw Memory.outOfMemory("a timer")
        }
        if let id { apiIDs[id] = index }
        noteArmed(deadline, timer: index, context)
    }
}
