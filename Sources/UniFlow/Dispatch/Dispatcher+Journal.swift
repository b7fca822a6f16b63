import Glibc

/// Writing the journal and replaying one (`docs/journal.md`). Lines are written
/// before what they describe is applied: an action whose line cannot be written
/// fails with `UF_EIO` and changes nothing.
extension Dispatcher {
    /// The header a registration writes: this session, the fingerprint of the
    /// definitions once `adding` are registered, and their features.
    func journalRegistration(adding: [FeatureDefinition]) throws(UniFlowError) {
        guard let journal else { return }
        let names = definitions.indices.map { JSONValue.string(featureName(Int32($0))) } + adding.map { .string($0.name) }
        try journal.append(["uniflow_journal": 1, "session": .string(journal.session),
                            "fingerprint": .string(definitionsFingerprint(adding: adding)), "features": .array(names)])
    }

    /// The time a journal line records: the wall clock, or the manual reading.
    private var journalTime: UInt64 { time.clock.wallClock(at: armBase) }

    private func journalLine(_ mutation: CommittedMutation) -> JSONValue {
        let record = mutation.record
        var line = JSONObject()
        line["seq"] = .int(Int64(record.seq))
        line["feature"] = .string(featureName(record.feature))
        if let key = record.key ?? mutation.action.key { line["key"] = .string(String(cString: key)) }
        line["kind"] = .string(record.mutationKind.text)
        if record.newState >= 0 {
            line["state"] = .string(stateName(record.newState, feature: record.feature))
            line["payload"] = .object(mutation.newPayload ?? JSONObject())
        } else {
            line["state"] = .null
        }
        line["at"] = .int(Int64(journalTime))
        return .object(line)
    }

    func journalMutation(_ mutation: CommittedMutation) throws(UniFlowError) {
        try journal?.append(journalLine(mutation))
    }

    /// A batch is one line, so that a crash leaves all of it or none.
    func journalBatch(_ mutations: [CommittedMutation]) throws(UniFlowError) {
        guard let journal, let last = mutations.last else { return }
        try journal.append(["seq": .int(Int64(last.record.seq)), "batch": .array(mutations.map(journalLine))])
    }

    func journalRestore(_ model: JSONValue) throws(UniFlowError) {
        try journal?.append(["seq": .int(Int64(self.model.seq)), "restore": model, "at": .int(Int64(journalTime))])
    }

    /// An API timer armed, cancelled or fired; a state timer fired.
    func journalTimer(_ line: JSONObject) throws(UniFlowError) {
        guard let journal else { return }
        var line = line
        line["at"] = .int(Int64(journalTime))
        try journal.append(.object(line))
    }

    /// Installs a model wholesale (a restore, a replay) and journals it as a
    /// restore line; when that line cannot be written, `before` is put back.
    func installJournaled(_ snapshot: ModelSnapshot, replacing before: ModelSnapshot) throws(UniFlowError) {
        try install(snapshot)
        guard hot.journaling else { return }
        do throws(UniFlowError) {
            try journalRestore(modelJSON())
        } catch {
            // The room `before` needs was there a moment ago.
            try? install(before)
            throw error
        }
    }

    /// Installs a journal's mutations the way a restore does: no callbacks, no
    /// bindings, no notifications; the timers the journaling dispatcher had armed
    /// are armed again (`docs/time.md`, "Durable timers"). A torn last line is
    /// skipped (and reported); any other bad line fails the whole replay and
    /// changes nothing.
    func replay(path: UnsafePointer<CChar>) throws(UniFlowError) {
        let name = String(cString: path)
        let text = try FileReader.read(path)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var tornLine: Int? = nil
        if let last = lines.last {
            lines.removeLast()
            if !last.isEmpty { tornLine = lines.count + 1 }
        }
        // A journal starts with a header line: without one, this is some other
        // file, and saying so beats the first line that fails to parse.
        let notAJournal = UniFlowError(.schema, "\(name): line 1: not a uniflow journal (no header line)")
        guard let first = lines.first, let header = (try? JSONParser.parse(first))?.objectValue,
              header["uniflow_journal"] != nil else { throw notAJournal }
        // Parse every line first: the fingerprint is checked before anything is
        // applied, so a journal of other definitions gets that message, not the
        // first unknown name. A dispatcher replaying the file it journals to stops
        // where its own session begins: what follows is its own doing.
        var objects: [JSONObject] = []
        var lastFingerprint: String? = nil
        for (i, line) in lines.enumerated() {
            do throws(UniFlowError) {
                guard let object = try JSONParser.parse(line).objectValue else {
                    throw UniFlowError(.schema, "a journal line must be an object")
                }
                if object["uniflow_journal"] != nil {
                    if let own = journal?.session, object["session"]?.stringValue == own { break }
                    if let fp = object["fingerprint"]?.stringValue { lastFingerprint = fp }
                }
                objects.append(object)
            } catch {
                throw error.prefixed("\(name): line \(i + 1)")
            }
        }
        guard let lastFingerprint else { throw notAJournal }
        let mine = definitionsFingerprint()
        guard lastFingerprint == mine else {
            throw UniFlowError(.schema, "\(name): the journal was written for other definitions (fingerprint \(lastFingerprint), this dispatcher has \(mine))")
        }
        let before = ModelSnapshot(of: self)
        var state = JournalState(model: before)
        state.model.clear()
        for (i, object) in objects.enumerated() {
            do throws(UniFlowError) {
                try state.apply(object, on: self)
            } catch {
                throw error.prefixed("\(name): line \(i + 1)")
            }
        }
        // Nothing can fail past this point but the journal of this dispatcher.
        let apiTimers = state.apiTimers.values.sorted(by: { $0.serial < $1.serial }).map { ($0, JSONValue.object($0.action).jsonText) }
        try installJournaled(state.model, replacing: before)
        cancelAllAPITimers()
        let lastTime = state.lastTime
        armAllStateTimers { place, i, timer in
            state.stateTimerDeadline(place, after: i, timer: timer, on: self, lastTime: lastTime)
        }
        for (timer, text) in apiTimers {
            // An API timer keeps its wall-clock deadline.
            let due = time.clock.time(atWallClock: timer.dueAt)
            try? armRestoredAPITimer(action: text, ms: timer.ms, id: timer.id, deadline: due)
        }
        model.seq = max(model.seq, state.lastSeq)
        if let tornLine {
            let failure = UniFlowError(.invalidJSON, "\(name): line \(tornLine) is incomplete (no newline); skipped")
            reportJournal(failure)
        }
    }

    private func reportJournal(_ failure: UniFlowError) {
        if let custom = reporter.custom {
            let text = JSONValue.object(JSONObject([("event", .string("dropped")), ("status", .string(failure.status.name)),
                                                    ("reason", .string(failure.message))])).jsonText
            text.withCString { custom.function($0, custom.payload) }
        } else if options.reporting != .none {
            let line = "[uniflow] dropped: \(failure.status.name): \(failure.message)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }
    }

    /// Disarms every API timer (a replay or a snapshot restore brings its own).
    func cancelAllAPITimers() {
        for index in time.store.sortedLive() where !time.store.records[Int(index)].isState {
            free(time.store.records[Int(index)].action)
            free(time.store.records[Int(index)].id)
            time.store.free(index)
        }
        time.apiIDs.removeAll()
        noteDisarmed()
    }

    /// Arms an API timer at a given deadline (a replay, a snapshot restore).
    func armRestoredAPITimer(action text: String, ms: UInt64, id: String?, deadline: UInt64) throws(UniFlowError) {
        let actionText = try Memory.copy(text, for: "a timer's action")
        let idText = try? id.map { (id) throws(UniFlowError) in try Memory.copy(id, for: "a timer's id") }
        guard let index = try? time.store.arm(TimerRecord(deadline: deadline, ms: ms, action: actionText, id: idText ?? nil)) else {
            free(actionText)
            free(idText ?? nil)
            throw Memory.outOfMemory("a timer")
        }
        if let id { time.apiIDs[id] = index }
        noteArmed(deadline)
    }
}

/// What a replay reads from a journal, line by line: the model, when each place
/// entered its state, which state timers fired, and the API timers armed.
struct JournalState {
    struct APITimer {
        var serial: Int64
        var id: String?
        var ms: UInt64
        var dueAt: UInt64
        var action: JSONObject
    }

    var model: ModelSnapshot
    var lastSeq: UInt64 = 0
    var lastTime: UInt64 = 0
    var session: String?
    var apiTimers: [Int64: APITimer] = [:]
    /// State timers that fired while their state lasted: not armed again.
    var firedStateTimers: Set<String> = []

    mutating func apply(_ object: JSONObject, on dispatcher: Dispatcher) throws(UniFlowError) {
        if case .int(let at)? = object["at"], at >= 0 { lastTime = max(lastTime, UInt64(at)) }
        if object["uniflow_journal"] != nil {
            // Each session started from an empty model and no timers.
            if let next = object["session"]?.stringValue {
                if let current = session, current != next {
                    model.clear()
                    lastSeq = 0
                    apiTimers.removeAll()
                    firedStateTimers.removeAll()
                }
                session = next
            }
            return
        }
        if let event = object["timer"] {
            try applyTimer(event, object)
            return
        }
        if let restored = object["restore"] {
            model = try dispatcher.validatedModel(restored)
            let at = lastTime
            for f in model.features.indices where model.features[f].state >= 0 {
                model.features[f].enteredAt = at
                model.features[f].updatedAt = at
            }
            for (f, list) in model.instances {
                model.instances[f] = list.map { (key: $0.key, entry: ModelSnapshot.Entry(state: $0.entry.state, payload: $0.entry.payload, enteredAt: at, updatedAt: at)) }
            }
            firedStateTimers.removeAll()
        } else if let batch = object["batch"] {
            guard let lines = batch.arrayValue else { throw UniFlowError(.schema, "'batch' must be an array") }
            for line in lines {
                guard let mutation = line.objectValue else { throw UniFlowError(.schema, "a batch holds objects") }
                try applyMutation(mutation, on: dispatcher)
            }
        } else {
            try applyMutation(object, on: dispatcher)
        }
        if case .int(let s) = object["seq"] ?? .null { lastSeq = UInt64(max(s, 0)) }
    }

    private mutating func applyMutation(_ line: JSONObject, on dispatcher: Dispatcher) throws(UniFlowError) {
        try model.apply(journalLine: line, on: dispatcher)
        // Entering or actualizing a state: its timers count from now again.
        if let feature = line["feature"]?.stringValue {
            let prefix = line["key"]?.stringValue.map { "\(feature)[\($0)]." } ?? "\(feature)."
            firedStateTimers = firedStateTimers.filter { !$0.hasPrefix(prefix) }
        }
    }

    private mutating func applyTimer(_ event: JSONValue, _ line: JSONObject) throws(UniFlowError) {
        switch event.stringValue {
        case "armed":
            guard case .int(let serial)? = line["serial"], case .int(let ms)? = line["ms"], ms >= 0,
                  case .int(let due)? = line["due_at"], due >= 0, let action = line["action"]?.objectValue else {
                throw UniFlowError(.schema, "a timer line needs 'serial', 'ms', 'due_at' and 'action'")
            }
            apiTimers[serial] = APITimer(serial: serial, id: line["id"]?.stringValue, ms: UInt64(ms), dueAt: UInt64(due), action: action)
        case "cancelled":
            guard case .int(let serial)? = line["serial"] else { throw UniFlowError(.schema, "a timer line needs 'serial'") }
            apiTimers[serial] = nil
        case "fired":
            if case .int(let serial)? = line["serial"] {
                apiTimers[serial] = nil
            } else if let id = line["id"]?.stringValue {
                firedStateTimers.insert(id)
            } else {
                throw UniFlowError(.schema, "a fired timer line needs 'serial' or 'id'")
            }
        default:
            throw UniFlowError(.schema, "unknown timer event \(event.jsonText)")
        }
    }

    /// When a replayed place's state timer falls due, by its `on_restore`
    /// (nil: it fired already).
    func stateTimerDeadline(_ place: Place, after i: Int, timer: StateTimer, on dispatcher: Dispatcher,
                            lastTime: UInt64) -> UInt64? {
        var name = dispatcher.featureName(place.feature)
        let key = dispatcher.key(at: place).map { String(cString: $0) }
        if let key { name += "[\(key)]" }
        let state = dispatcher.state(at: place)
        let id = "\(name).\(dispatcher.stateName(state, feature: place.feature)).after[\(i)]"
        if firedStateTimers.contains(id) { return nil }
        let entry = model.entry(feature: place.feature, key: key)
        let base = (timer.resetOnUpdate ? entry?.updatedAt : entry?.enteredAt) ?? lastTime
        let now = dispatcher.time.clock.now()
        switch timer.onRestore {
        case .fire: return dispatcher.time.clock.time(atWallClock: base &+ timer.ms)
        case .resume:
            let spent = lastTime > base ? lastTime - base : 0
            return now &+ (timer.ms > spent ? timer.ms - spent : 0)
        case .restart: return now &+ timer.ms
        }
    }
}
