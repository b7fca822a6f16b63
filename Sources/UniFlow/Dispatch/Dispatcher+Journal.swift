import Glibc

/// Writing the journal and replaying one (SPEC 10). Lines are written before what
/// they describe is applied: an action whose line cannot be written fails with
/// `UF_EIO` and changes nothing.
extension Dispatcher {
    /// The header a registration writes: this session, the fingerprint of the
    /// definitions once `adding` are registered, and their features.
    func journalRegistration(adding: [FeatureDefinition]) throws(UniFlowError) {
        guard let journal else { return }
        let names = definitions.indices.map { JSONValue.string(featureName(Int32($0))) } + adding.map { .string($0.name) }
        try journal.append(["uniflow_journal": 1, "session": .string(journal.session),
                            "fingerprint": .string(definitionsFingerprint(adding: adding)), "features": .array(names)])
    }

    private func journalLine(_ mutation: CommittedMutation) -> JSONValue {
        let record = mutation.record
        var line = JSONObject()
        line["seq"] = .int(Int64(record.seq))
        line["feature"] = .string(featureName(record.feature))
        line["kind"] = .string(["", "initialization", "actualization", "transition", "deinitialization"][Int(record.kind)])
        if record.newState >= 0 {
            line["state"] = .string(stateName(record.newState, feature: record.feature))
            line["payload"] = .object(mutation.newPayload ?? JSONObject())
        } else {
            line["state"] = .null
        }
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
        try journal?.append(["seq": .int(Int64(seq)), "restore": model])
    }

    /// Installs a model wholesale (a restore, a replay) and journals it as a
    /// restore line; when that line cannot be written, `before` is put back.
    func installJournaled(_ model: ModelSnapshot, replacing before: ModelSnapshot) throws(UniFlowError) {
        install(model)
        guard hot.journaling else { return }
        do throws(UniFlowError) {
            try journalRestore(modelJSON())
        } catch {
            install(before)
            throw error
        }
    }

    /// Installs a journal's mutations the way a restore does: no callbacks, no
    /// bindings, no notifications. A torn last line is skipped (and reported);
    /// any other bad line fails the whole replay and changes nothing.
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
        // first unknown name.
        // A dispatcher replaying the file it journals to stops where its own
        // session begins: what follows is its own doing.
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
        var model = before
        model.clear()
        var lastSeq: UInt64 = 0
        var session: String? = nil
        for (i, object) in objects.enumerated() {
            do throws(UniFlowError) {
                if object["uniflow_journal"] != nil {
                    // Each session started from an empty model.
                    if let next = object["session"]?.stringValue {
                        if let current = session, current != next {
                            model.clear()
                            lastSeq = 0
                        }
                        session = next
                    }
                } else if let restored = object["restore"] {
                    model = try validatedModel(restored)
                } else if let batch = object["batch"] {
                    guard let lines = batch.arrayValue else { throw UniFlowError(.schema, "'batch' must be an array") }
                    for line in lines {
                        guard let mutation = line.objectValue else { throw UniFlowError(.schema, "a batch holds objects") }
                        try model.apply(journalLine: mutation, on: self)
                    }
                } else {
                    try model.apply(journalLine: object, on: self)
                }
                if case .int(let s) = object["seq"] ?? .null { lastSeq = UInt64(max(s, 0)) }
            } catch {
                throw error.prefixed("\(name): line \(i + 1)")
            }
        }
        try installJournaled(model, replacing: before)
        seq = max(seq, lastSeq)
        if let tornLine {
            let failure = UniFlowError(.invalidJSON, "\(name): line \(tornLine) is incomplete (no newline); skipped")
            reportJournal(failure)
        }
    }

    private func reportJournal(_ failure: UniFlowError) {
        if let reporter {
            let text = JSONValue.object(JSONObject([("event", .string("dropped")), ("status", .string(failure.status.name)),
                                                    ("reason", .string(failure.message))])).jsonText
            text.withCString { reporter.fn($0, reporter.payload) }
        } else if options.reporting != .none {
            let line = "[uniflow] dropped: \(failure.status.name): \(failure.message)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }
    }
}
