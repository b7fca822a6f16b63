/// Persistence's writing side (`docs/journal.md`): what a journaling
/// dispatcher (option `journal`) writes, and where.
///
/// It owns the log the lines go to (a `MutationLog`: the journal file, today's
/// one implementation) and the shape of every line: a registration's header,
/// an applied mutation, a batch, a restore, a timer's event. The commit step
/// hands it each change before the change is applied (`Dispatcher.commit`,
/// `Pipeline/Dispatcher+Commit.swift`); a change whose lines the log refuses
/// is not applied, and its call fails with the log's error. What lines say of
/// the model (names, the definitions' texts, the time, the count) comes through
/// a `JournalContext`.
///
/// It keeps no state of its own between lines (the log is a class: the one
/// open file), so its methods read `Dispatcher.journal` and change nothing
/// there; no host code runs while it writes.
struct JournalWriter {
    let log: any MutationLog

    /// This session's id, named in its header lines.
    var session: String { log.session }

    /// The header a registration writes: this session, the fingerprint of the
    /// definitions once `adding` are registered, and their features.
    func registration(adding: [FeatureDefinition], _ context: some JournalContext) throws(UniFlowError) {
        let names = (0..<context.definitionCount).map { JSONValue.string(context.featureName(Int32($0))) }
            + adding.map { .string($0.name) }
        try write(["uniflow_journal": 1, "session": .string(session),
                   "fingerprint": .string(Self.fingerprint(context, adding: adding)), "features": .array(names)])
    }

    /// One applied mutation's line.
    func mutation(_ mutation: CommittedMutation, _ context: some JournalContext) throws(UniFlowError) {
        try log.accept([Self.line(mutation, context)])
    }

    /// A batch is one line, so that a crash leaves all of it or none: its
    /// mutations, and the timer lines of what its interceptors armed or
    /// cancelled, in the order they happened.
    func batch(_ mutations: [CommittedMutation], timerLines: [(after: Int, line: JSONObject)],
               _ context: some JournalContext) throws(UniFlowError) {
        guard !mutations.isEmpty || !timerLines.isEmpty else { return }
        var items: [JSONValue] = []
        var next = 0
        for (i, mutation) in mutations.enumerated() {
            while next < timerLines.count && timerLines[next].after <= i { items.append(.object(timerLines[next].line)); next += 1 }
            items.append(Self.line(mutation, context))
        }
        items += timerLines[next...].map { .object($0.line) }
        let seq = mutations.last?.record.seq ?? context.currentSeq
        try write(["seq": .int(Int64(seq)), "batch": .array(items)])
    }

    /// A restore line: the model installed wholesale at `seq`, and (a snapshot
    /// restore, a replay) the timers armed with it.
    func restore(model: JSONValue, seq: UInt64, timers: JSONValue?, _ context: some JournalContext) throws(UniFlowError) {
        var line: JSONObject = ["seq": .int(Int64(seq)), "restore": model]
        if let timers { line["timers"] = timers }
        line["at"] = .int(Int64(context.journalTime))
        try write(line)
    }

    /// A timer's line, stamped with the time (written at once, or with its batch).
    func stamped(_ line: JSONObject, _ context: some JournalContext) -> JSONObject {
        var line = line
        line["at"] = .int(Int64(context.journalTime))
        return line
    }

    /// Writes one line as it is.
    func write(_ line: JSONObject) throws(UniFlowError) {
        try log.accept([.object(line)])
    }

    /// One mutation's line (a record's lines add the action to it).
    static func line(_ mutation: CommittedMutation, _ context: some JournalContext) -> JSONValue {
        var line = JSONObject()
        lineFields(mutation, context) { line[$0] = $1 }
        return .object(line)
    }

    /// A mutation line's fields, in the line's order: the one description of
    /// its shape, which `line` makes an object of and a record writes straight
    /// as text (`Dispatcher.writeRecord`).
    static func lineFields(_ mutation: CommittedMutation, _ context: some JournalContext, _ field: (String, JSONValue) -> Void) {
        let record = mutation.record
        field("seq", .int(Int64(record.seq)))
        field("feature", .string(context.featureName(record.feature)))
        if let key = record.key ?? mutation.action.key { field("key", .string(String(cString: key))) }
        field("kind", .string(record.mutationKind.text))
        if record.newState >= 0 {
            field("state", .string(context.stateName(record.newState, feature: record.feature)))
            field("payload", .object(mutation.newPayload ?? JSONObject()))
            // A statechart's history and status, when not empty (as in the model).
            var extras = JSONObject()
            context.statechartLineExtras(record.newState, feature: record.feature, into: &extras)
            for (key, value) in extras { field(key, value) }
        } else {
            field("state", .null)
        }
        field("at", .int(Int64(context.journalTime)))
    }

    /// A 64-bit FNV-1a fingerprint of the registered definitions' JSON, in
    /// registration order: equal definitions give equal fingerprints.
    /// `adding` are definitions about to be registered.
    static func fingerprint(_ context: some JournalContext, adding: [FeatureDefinition] = []) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ text: String) {
            for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            hash = (hash ^ 0x0A) &* 0x0000_0100_0000_01b3
        }
        for feature in 0..<context.definitionCount { add(context.definitionSource(feature)) }
        for definition in adding { add(definition.source.jsonText) }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
