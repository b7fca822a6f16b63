import CUniFlow

/// A record's timer line, checked: what the writer's timers did. A follower
/// mirrors it, so that every node keeps the partition's timers with their
/// deadlines (only the owner fires them, and a new owner fires the overdue
/// ones once).
enum ForeignTimerLine {
    case armed(JournalState.APITimer, replaces: UInt64?)
    /// An API timer cancelled, fired or dropped, by the writer's serial.
    case ended(serial: UInt64)
    /// A state timer fired or dropped at the writer, by its id.
    case stateEnded(id: String)
}

extension Dispatcher {
    /// Reads a record's timer line, as a replay reads a journal's.
    func checkedTimerLine(_ line: JSONObject) throws(UniFlowError) -> ForeignTimerLine {
        switch line["timer"]?.stringValue {
        case "armed":
            let timer = try JournalState.armedTimer(line, self)
            guard timer.serial >= 0 else { throw UniFlowError(.schema, "a timer line's 'serial' is at least 0") }
            var replaces: UInt64? = nil
            switch line["replaces"] {
            case nil, .null?: break
            case .int(let serial)? where serial >= 0: replaces = UInt64(serial)
            case let other?: throw UniFlowError(.schema, "a timer line's 'replaces' is a serial, got \(other.jsonText)")
            }
            return .armed(timer, replaces: replaces)
        case "cancelled", "fired", "dropped":
            if case .int(let serial)? = line["serial"], serial >= 0 { return .ended(serial: UInt64(serial)) }
            if let id = line["id"]?.stringValue { return .stateEnded(id: id) }
            throw UniFlowError(.schema, "a fired, cancelled or dropped timer line needs 'serial' or 'id'")
        default:
            throw UniFlowError(.schema, "unknown timer event \((line["timer"] ?? .null).jsonText)")
        }
    }

    /// Mirrors a writer's timer line of partition `p`. The writer's serials
    /// name its API timers in later lines: the copy keeps the same serial,
    /// and this node's own serials continue after it.
    func applyTimerLine(_ line: ForeignTimerLine, partition p: Int) {
        switch line {
        case .armed(let timer, let replaces):
            if let replaces { endForeignTimer(serial: replaces, partition: p) }
            if let id = timer.id, let old = time.apiIDs[id] { _ = time.take(old, self) }
            let serial = UInt64(timer.serial)
            time.store.noteSerial(serial)
            try? time.armRestoredAPITimer(action: JSONValue.object(timer.action).jsonText, ms: timer.ms, id: timer.id,
                                          deadline: time.clock.time(atWallClock: timer.dueAt), serial: serial, self)
        case .ended(let serial):
            endForeignTimer(serial: serial, partition: p)
        case .stateEnded(let id):
            if let index = liveTimer(where: { time.store.records[Int($0)].isState && time.timerID($0, self) == id }) {
                _ = time.take(index, self)
            }
        }
    }

    private func endForeignTimer(serial: UInt64, partition p: Int) {
        let found = liveTimer { index in
            let record = time.store.records[Int(index)]
            return !record.isState && record.serial == serial && timerPartition(index) == p
        }
        if let found { _ = time.take(found, self) }
    }

    /// The first live timer `matches` accepts. A search: lines that end a
    /// timer by serial or id are rare next to the mutations around them.
    private func liveTimer(where matches: (Int32) -> Bool) -> Int32? {
        for i in 0..<time.store.records.count where time.store.records[i].alive && matches(Int32(i)) {
            return Int32(i)
        }
        return nil
    }
}
