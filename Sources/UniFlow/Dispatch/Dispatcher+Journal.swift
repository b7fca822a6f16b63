import Glibc

/// Writing the journal and replaying one (SPEC 10).
extension Dispatcher {
    func journalRegistration() {
        guard let journal else { return }
        journal.append(["uniflow_journal": 1, "fingerprint": .string(fingerprint(of: definitions)),
                        "features": .array(definitions.map { .string($0.name) })])
    }

    func journalMutation(_ mutation: CommittedMutation) {
        guard let journal else { return }
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
        journal.append(.object(line))
    }

    func journalRestore(_ model: JSONValue) {
        journal?.append(["seq": .int(Int64(seq)), "restore": model])
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
        var model = ModelSnapshot(of: self)
        var lastFingerprint: String? = nil
        var lastSeq: UInt64 = 0
        for (i, line) in lines.enumerated() {
            let where_ = "\(name): line \(i + 1)"
            do throws(UniFlowError) {
                guard let object = try JSONParser.parse(line).objectValue else {
                    throw UniFlowError(.schema, "a journal line must be an object")
                }
                if let fp = object["fingerprint"]?.stringValue, object["uniflow_journal"] != nil {
                    lastFingerprint = fp
                    if i == 0 { model.clear() }
                } else if let restored = object["restore"] {
                    guard lastFingerprint != nil else { throw UniFlowError(.schema, "no journal header before this line") }
                    model = try validatedModel(restored)
                    if case .int(let s) = object["seq"] ?? .null { lastSeq = UInt64(max(s, 0)) }
                } else {
                    guard lastFingerprint != nil else { throw UniFlowError(.schema, "not a uniflow journal (no header line)") }
                    try model.apply(journalLine: object, on: self)
                    if case .int(let s) = object["seq"] ?? .null { lastSeq = UInt64(max(s, 0)) }
                }
            } catch {
                throw error.prefixed(where_)
            }
        }
        guard let lastFingerprint else { throw UniFlowError(.schema, "\(name): not a uniflow journal (no header line)") }
        let mine = fingerprint(of: definitions)
        guard lastFingerprint == mine else {
            throw UniFlowError(.schema, "\(name): the journal was written for other definitions (fingerprint \(lastFingerprint), this dispatcher has \(mine))")
        }
        install(model)
        seq = max(seq, lastSeq)
        if hot.journaling { journalRestore(modelJSON()) }
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
