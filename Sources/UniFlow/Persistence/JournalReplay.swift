import Glibc

/// Persistence's reading side: a journal read back (`uf_replay_file`,
/// `docs/journal.md`). It holds the file's whole lines while they are read (a
/// torn last line is cut off and only counted, for the caller to report), checks
/// the header lines and the definitions' fingerprint, and applies every line to a
/// `JournalState`: the model, and the timers the journaling dispatcher had armed.
/// What it checks lines against comes through a `JournalContext`; it changes
/// nothing of the dispatcher. Installing the result and arming its timers is
/// the dispatcher's (`Dispatcher.replay(path:)`, `Persistence/Dispatcher+Journal.swift`).
struct JournalReplay {
    /// The file's name, as messages give it.
    let name: String
    /// The whole lines (ending with a newline, or empty). Lines stay bytes (split
    /// by the byte: "\r\n" would be one Character), each parsed when it is read
    /// and dropped when it is applied: a journal a daemon appended to for months
    /// costs its size in memory, not five times that in parsed lines.
    private let bytes: [UInt8]
    /// Where each line's newline is.
    private let ends: [Int]
    /// The number of a torn last line (no newline), skipped.
    let tornLine: Int?

    init(path: UnsafePointer<CChar>) throws(UniFlowError) {
        name = String(cString: path)
        var bytes = try FileReader.bytes(path)
        // A torn last line is cut before the rest is read as text: it may end in
        // the middle of a character.
        let whole = bytes.lastIndex(of: 10).map { $0 + 1 } ?? 0
        tornLine = whole < bytes.count ? bytes[..<whole].reduce(1) { $1 == 10 ? $0 + 1 : $0 } : nil
        bytes.removeSubrange(whole...)
        try FileReader.checkUTF8(bytes, path: path)
        var ends: [Int] = []
        for i in bytes.indices where bytes[i] == 10 { ends.append(i) }
        self.bytes = bytes
        self.ends = ends
    }

    /// Line `i` (from 0), parsed.
    private func line(_ i: Int) throws(UniFlowError) -> JSONObject {
        let start = i == 0 ? 0 : ends[i - 1] + 1
        do throws(UniFlowError) {
            let value = try bytes.withUnsafeBytes { buffer in
                Result { () throws(UniFlowError) in try JSONParser.parse(buffer.baseAddress! + start, length: ends[i] - start) }
            }.get()
            guard let object = value.objectValue else { throw UniFlowError(.schema, "a journal line must be an object") }
            return object
        } catch {
            throw error.prefixed("\(name): line \(i + 1)")
        }
    }

    private static let headerMarker: [UInt8] = Array(#""uniflow_journal""#.utf8)

    /// Whether line `i` may be a header: it holds the bytes "uniflow_journal" in
    /// quotes, or an escape (the writer escapes nothing in keys and little in
    /// values, so that is the header lines and few others).
    private func mayBeHeader(_ i: Int) -> Bool {
        let marker = Self.headerMarker
        var at = i == 0 ? 0 : ends[i - 1] + 1
        return bytes.withUnsafeBytes { buffer in
            while at < ends[i] {
                if buffer[at] == UInt8(ascii: "\\") { return true }
                if buffer[at] == marker[0] && at + marker.count <= ends[i]
                    && memcmp(buffer.baseAddress! + at, marker, marker.count) == 0 { return true }
                at += 1
            }
            return false
        }
    }

    /// Reads the journal into what it leaves, starting from `before` emptied.
    /// A dispatcher replaying the file it journals to (session `ownSession`)
    /// stops where its own session begins. Any bad line fails the whole replay.
    func read(from before: ModelSnapshot, ownSession: String?, _ context: some JournalContext) throws(UniFlowError) -> JournalState {
        // A journal starts with a header line: without one, this is some other
        // file, and saying so beats the first line that fails to parse.
        let notAJournal = UniFlowError(.schema, "\(name): line 1: not a uniflow journal (no header line)")
        guard !ends.isEmpty, let header = try? line(0), header["uniflow_journal"] != nil else { throw notAJournal }
        // The header lines first: the fingerprint is checked before anything is
        // applied, so a journal of other definitions gets that message, not the
        // first unknown name. A dispatcher replaying the file it journals to stops
        // where its own session begins: what follows is its own doing. A header's
        // key is the bytes "uniflow_journal" in quotes, or written with escapes:
        // lines with either are parsed here (the writer escapes nothing in keys
        // and little in values, so that is the header lines and few others).
        var count = ends.count
        var lastFingerprint: String? = nil
        for i in ends.indices where mayBeHeader(i) {
            let object = try line(i)
            guard object["uniflow_journal"] != nil else { continue }
            if let own = ownSession, object["session"]?.stringValue == own {
                count = i
                break
            }
            if let fp = object["fingerprint"]?.stringValue { lastFingerprint = fp }
        }
        guard let lastFingerprint else { throw notAJournal }
        let mine = JournalWriter.fingerprint(context)
        guard lastFingerprint == mine else {
            throw UniFlowError(.schema, "\(name): the journal was written for other definitions (fingerprint \(lastFingerprint), this dispatcher has \(mine))")
        }
        var state = JournalState(model: before)
        state.model.clear()
        for i in 0..<count {
            let object = try line(i)
            do throws(UniFlowError) {
                try state.apply(object, context)
            } catch {
                throw error.prefixed("\(name): line \(i + 1)")
            }
        }
        return state
    }
}

/// What a replay reads from a journal, line by line: the model, when (and in
/// which order) each place entered its state and was last actualized, what
/// lines said about state timers, and the API timers armed.
struct JournalState {
    struct APITimer {
        var serial: Int64
        var id: String?
        var ms: UInt64
        var dueAt: UInt64
        var action: JSONObject
        /// When it was armed among the journal's events (arm order on replay).
        var order: UInt64
    }

    /// What a line said about one state timer, instead of what the mutations imply.
    enum StateTimerNote {
        /// It fired and its place stayed in the state: not armed.
        case fired
        /// A snapshot restore armed it for this wall-clock deadline.
        case due(at: UInt64, order: UInt64)
    }

    var model: ModelSnapshot
    var lastSeq: UInt64 = 0
    var lastTime: UInt64 = 0
    var session: String?
    var apiTimers: [Int64: APITimer] = [:]
    /// By state timer id.
    var notes: [String: StateTimerNote] = [:]
    /// Counts the events that arm timers (mutations, armed lines, restored
    /// timers): the order in which the journaling dispatcher armed them.
    var order: UInt64 = 0

    mutating func apply(_ object: JSONObject, _ context: some JournalContext) throws(UniFlowError) {
        noteTime(of: object)
        if object["uniflow_journal"] != nil {
            // Each session started from an empty model and no timers.
            if let next = object["session"]?.stringValue {
                if let current = session, current != next {
                    model.clear()
                    lastSeq = 0
                    apiTimers.removeAll()
                    notes.removeAll()
                }
                session = next
            }
            return
        }
        if object["timer"] != nil {
            try applyTimer(object, context)
            return
        }
        if Self.isInvocationLine(object) {
            try model.apply(invocationLine: object, on: context)
            return
        }
        if let restored = object["restore"] {
            try applyRestore(restored, timers: object["timers"], context)
        } else if let batch = object["batch"] {
            guard let lines = batch.arrayValue else { throw UniFlowError(.schema, "'batch' must be an array") }
            for line in lines {
                guard let item = line.objectValue else { throw UniFlowError(.schema, "a batch holds objects") }
                noteTime(of: item)
                if item["timer"] != nil {
                    try applyTimer(item, context)
                } else if Self.isInvocationLine(item) {
                    try model.apply(invocationLine: item, on: context)
                } else {
                    try applyMutation(item, context)
                }
            }
        } else {
            try applyMutation(object, context)
        }
        if let seq = object["seq"] { lastSeq = try Self.sequenceNumber(seq) }
    }

    /// A statechart instance's invocations alone (`Dispatcher+StatechartJournal.swift`):
    /// a mutation line has a `kind`.
    static func isInvocationLine(_ line: JSONObject) -> Bool {
        line["invocations"] != nil && line["kind"] == nil && line["seq"] == nil
    }

    /// The journaling dispatcher's clock when it wrote the line. A batch line has
    /// no `at` of its own: its items carry theirs.
    private mutating func noteTime(of line: JSONObject) {
        if case .int(let at)? = line["at"], at >= 0 { lastTime = max(lastTime, UInt64(at)) }
    }

    /// A line's `seq`: what the journaling dispatcher counted, which this one goes
    /// on from, so an integer a JSON reader keeps exact.
    static func sequenceNumber(_ value: JSONValue) throws(UniFlowError) -> UInt64 {
        guard case .int(let seq) = value, seq >= 0, seq <= 1 << 53 else {
            throw UniFlowError(.schema, "seq: expected an integer from 0 to 2^53, got \(value.jsonText)")
        }
        return UInt64(seq)
    }

    /// A restore line: the model, entered now. Without `timers` (a state
    /// restore) its state timers count from now and the API timers stay; with
    /// them (a snapshot restore, a replay) they are exactly the armed timers.
    private mutating func applyRestore(_ restored: JSONValue, timers: JSONValue?, _ context: some JournalContext) throws(UniFlowError) {
        model = try ModelSnapshot(validating: restored, context)
        order += 1
        let at = lastTime, entered = order
        for f in model.features.indices where model.features[f].state >= 0 {
            model.features[f].enteredAt = at
            model.features[f].updatedAt = at
            model.features[f].enteredOrder = entered
            model.features[f].updatedOrder = entered
        }
        for (f, list) in model.instances {
            model.instances[f] = list.map { item in
                var entry = item.entry
                (entry.enteredAt, entry.updatedAt, entry.enteredOrder, entry.updatedOrder) = (at, at, entered, entered)
                return (key: item.key, entry: entry)
            }
        }
        notes.removeAll()
        guard let timers else { return }
        guard let list = timers.arrayValue else { throw UniFlowError(.schema, "'timers' must be an array") }
        apiTimers.removeAll()
        for name in context.stateTimerNames(in: model) { notes[name] = .fired }
        for item in list {
            guard let timer = item.objectValue, case .int(let due)? = timer["due_at"], due >= 0 else {
                throw UniFlowError(.schema, "a restored timer needs 'kind' and 'due_at'")
            }
            order += 1
            switch timer["kind"]?.stringValue {
            case "state":
                guard let id = timer["id"]?.stringValue, notes[id] != nil else {
                    throw UniFlowError(.schema, "a restored state timer needs the 'id' of a state timer of the model")
                }
                notes[id] = .due(at: UInt64(due), order: order)
            case "api":
                try armed(timer, context)
            default:
                throw UniFlowError(.schema, "a restored timer's 'kind' is \"state\" or \"api\"")
            }
        }
    }

    private mutating func applyMutation(_ line: JSONObject, _ context: some JournalContext) throws(UniFlowError) {
        order += 1
        try model.apply(journalLine: line, order: order, on: context)
        // Entering a state (again) arms all its timers; an actualization re-arms
        // its "update" ones: what lines said about them no longer holds.
        guard let featureName = line["feature"]?.stringValue else { return }
        let place = line["key"]?.stringValue.map { "\(featureName)[\($0)]." } ?? "\(featureName)."
        if line["kind"]?.stringValue == MutationKind.actualization.text, let stateName = line["state"]?.stringValue,
           let feature = context.featureIndex(named: featureName), let state = context.stateIndex(named: stateName, feature: feature) {
            for (i, timer) in context.stateDefinition(state, of: feature).timers.enumerated() where timer.resetOnUpdate {
                notes["\(place)\(stateName).after[\(i)]"] = nil
            }
        } else {
            notes = notes.filter { !$0.key.hasPrefix(place) }
        }
    }

    /// An API timer's armed line (or a restore line's API timer).
    private mutating func armed(_ line: JSONObject, _ context: some JournalContext) throws(UniFlowError) {
        var timer = try Self.armedTimer(line, context)
        timer.order = order
        apiTimers[timer.serial] = timer
    }

    /// An armed line read and checked: its serial, id, delay, wall-clock
    /// deadline and action (a record's timer lines are read the same way).
    static func armedTimer(_ line: JSONObject, _ context: some JournalContext) throws(UniFlowError) -> APITimer {
        guard case .int(let serial)? = line["serial"], case .int(let ms)? = line["ms"], ms >= 0,
              case .int(let due)? = line["due_at"], due >= 0, let action = line["action"]?.objectValue else {
            throw UniFlowError(.schema, "a timer line needs 'serial', 'ms', 'due_at' and 'action'")
        }
        // What uf_submit_after and a snapshot would have refused, a journal line does not bring in.
        let maxDelay = Int64(DefinitionParser.maxTimerMilliseconds)
        guard ms <= maxDelay, due <= 2 * maxDelay else {
            throw UniFlowError(.schema, "a timer line's 'ms' is at most 2^53 and its 'due_at' at most 2^54")
        }
        var id: String? = nil
        switch line["id"] {
        case nil, .null?: break
        case .string(let text)?:
            do throws(UniFlowError) { try TimerService.checkTimerID(text, "timer") } catch {
                throw UniFlowError(.schema, error.message)
            }
            id = text
        case let other?:
            throw UniFlowError(.schema, "timer: 'id' is a string or null, got \(other.jsonTypeName)")
        }
        // Checked as when it was armed (and as a snapshot of it would be).
        do throws(UniFlowError) {
            try context.checkTimerAction(.object(action))
        } catch {
            throw error.prefixed("action")
        }
        return APITimer(serial: serial, id: id, ms: UInt64(ms), dueAt: UInt64(due), action: action, order: 0)
    }

    private mutating func applyTimer(_ line: JSONObject, _ context: some JournalContext) throws(UniFlowError) {
        switch line["timer"]?.stringValue {
        case "armed":
            order += 1
            try armed(line, context)
            // It replaced the timer armed under its id.
            if case .int(let replaced)? = line["replaces"] { apiTimers[replaced] = nil }
        case "cancelled":
            guard case .int(let serial)? = line["serial"] else { throw UniFlowError(.schema, "a timer line needs 'serial'") }
            apiTimers[serial] = nil
        case "fired", "dropped":
            // Dropped: taken out at one instant by the cascade limit, unfired.
            if case .int(let serial)? = line["serial"] {
                apiTimers[serial] = nil
            } else if let id = line["id"]?.stringValue {
                notes[id] = .fired
            } else {
                throw UniFlowError(.schema, "a fired or dropped timer line needs 'serial' or 'id'")
            }
        default:
            throw UniFlowError(.schema, "unknown timer event \((line["timer"] ?? .null).jsonText)")
        }
    }

    /// When a replayed place's state timer falls due, by its `on_restore`, and
    /// when it was armed among the journal's events; nil when it is not armed
    /// (it fired and its place stayed in the state).
    func stateTimerDeadline(_ place: Place, after i: Int, timer: StateTimer,
                            _ context: some JournalContext) -> (deadline: UInt64, order: UInt64)? {
        let id = context.stateTimerName(place, after: i)
        let clock = context.timerClock
        let now = clock.now()
        // The wall-clock deadline, and when it was armed.
        let dueAt: UInt64, armedOrder: UInt64
        switch notes[id] {
        case .fired?:
            return nil
        case .due(let at, let order)?:
            (dueAt, armedOrder) = (at, order)
        case nil:
            let entry = model.entry(feature: place.feature, key: context.key(at: place).map { String(cString: $0) })
            let base = (timer.resetOnUpdate ? entry?.updatedAt : entry?.enteredAt) ?? lastTime
            dueAt = base &+ timer.ms
            armedOrder = (timer.resetOnUpdate ? entry?.updatedOrder : entry?.enteredOrder) ?? order
        }
        switch timer.onRestore {
        case .fire: return (clock.time(atWallClock: dueAt), armedOrder)
        // The time it had left when the journal's last line was written.
        case .resume: return (now &+ (dueAt > lastTime ? dueAt - lastTime : 0), armedOrder)
        case .restart: return (now &+ timer.ms, armedOrder)
        }
    }
}
