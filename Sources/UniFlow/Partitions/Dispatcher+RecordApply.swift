import CUniFlow
import Glibc

/// Applying records read from the log (`uf_record_apply`): this node's copy of
/// a partition follows the partition's writer. A record is checked whole
/// before anything changes; its mutations are installed the way a replay
/// installs journal lines (no via, no interceptors, no preconditions, no model
/// bindings of that partition), then subscribers and watches are told.
extension Dispatcher {
    /// One mutation line of a record, checked against the definitions and
    /// ready to install.
    private struct ForeignMutation {
        var kind: MutationKind
        var feature: Int32
        var key: String?
        /// The new state (-1: a deinitialization) and its checked payload.
        var state: Int32
        var payload: JSONObject?
        var action: JSONObject
    }

    func applyRecord(_ text: UnsafePointer<CChar>) throws(UniFlowError) {
        let table = try partitionTable("uf_record_apply")
        let length = strlen(text)
        let json = try JSONParser.parseFast(text, length: length)
        guard let record = json.objectValue else {
            throw UniFlowError(.schema, "a record must be an object, got \(json.jsonTypeName)")
        }
        guard record["uniflow_record"] == .int(1) else {
            throw UniFlowError(.schema, "not a record: \"uniflow_record\": 1 is missing")
        }
        let fingerprint = try field(record, "fingerprint").stringValue
        let mine = definitionsFingerprint
        guard fingerprint == mine else {
            throw UniFlowError(.schema, "the record was written for other definitions (fingerprint \(fingerprint.map { "'\($0)'" } ?? "missing"), this dispatcher has '\(mine)')")
        }
        guard case .int(let n) = try field(record, "partitions"), n == Int64(table.count) else {
            throw UniFlowError(.schema, "the record was written with \(record["partitions"]?.jsonText ?? "no") partitions, this dispatcher has \(table.count)")
        }
        guard case .int(let pn) = try field(record, "partition"), pn >= 0, pn <= Int64(table.global) else {
            throw UniFlowError(.schema, "'partition': expected a partition from 0 to \(table.global), got \(record["partition"]!.jsonText)")
        }
        let p = Int(pn)
        guard case .int(let vn) = try field(record, "version"), vn >= 1 else {
            throw UniFlowError(.schema, "'version': expected an integer >= 1, got \(record["version"]!.jsonText)")
        }
        let version = UInt64(vn)
        if record["snapshot"] != nil {
            try applySnapshot(record, partition: p, version: version, table: table)
            return
        }
        guard let node = try field(record, "node").stringValue, DefinitionParser.isValidName(node) else {
            throw UniFlowError(.schema, "'node': expected a node's name, got \(record["node"]!.jsonText)")
        }
        guard let incarnation = try field(record, "incarnation").stringValue else {
            throw UniFlowError(.schema, "'incarnation': expected a string, got \(record["incarnation"]!.jsonText)")
        }
        let current = table[p].version
        // Already applied: duplicates are harmless.
        if version <= current { return }
        guard version == current + 1 else {
            throw UniFlowError(.gap, "the record of \(table.name(of: p)) at version \(version) comes before the ones it follows: this node has applied up to version \(current)")
        }
        let expectedPrev: JSONValue = table[p].lastHash.map { .string(FNV1a.hex($0)) } ?? .null
        guard record["prev"] == expectedPrev else {
            throw UniFlowError(.conflict, "the record of \(table.name(of: p)) at version \(version) follows \(record["prev"]?.jsonText ?? "nothing"), but the last one applied here hashes to \(expectedPrev.jsonText): the log's history diverged")
        }
        let hash = FNV1a.hash32(UnsafeRawBufferPointer(start: text, count: length))
        let after = HomeBindings.parse(record["after"])
        if p == table.global, record["after"] != nil, after == nil {
            throw UniFlowError(.schema, "'after': expected an object of partitions' versions, got \(record["after"]!.jsonText)")
        }
        if record["claim"] != nil || record["release"] != nil {
            guard record["claim"]?.stringValue == node || record["release"]?.stringValue == node else {
                throw UniFlowError(.schema, "a claim or release must name the record's node '\(node)'")
            }
            partitioning!.advance(p, to: version, hash: hash)
            let claimed = record["claim"] != nil
            partitioning!.setOwner(claimed ? PartitionTable.Owner(node: node, incarnation: incarnation) : nil, of: p)
            if p == table.global, let after { homes.committed(after) }
            return
        }
        guard case .array(let lines) = try field(record, "lines") else {
            throw UniFlowError(.schema, "'lines': expected an array, got \(record["lines"]!.jsonText)")
        }
        let mutations = try checkedLines(lines, partition: p, table: table)
        partitioning!.advance(p, to: version, hash: hash)
        let keeping = p != table.global && hasGlobalBindings
        var kept: [HomeBindings.Mutation] = []
        for mutation in mutations {
            let installed = try install(mutation)
            if keeping { kept.append(homeMutation(installed, action: mutation.action)) }
        }
        if p == table.global, let after { homes.committed(after) }
        if keeping { keepForHome(p, version: version) { kept } }
        runHomeBindings()
    }

    private func field(_ record: JSONObject, _ key: String) throws(UniFlowError) -> JSONValue {
        guard let value = record[key] else { throw UniFlowError(.schema, "the record has no '\(key)'") }
        return value
    }

    /// Every line checked before anything changes: names, payloads, the
    /// partition each instance lives in, and that each mutation fits the state
    /// this node's copy has (as the lines before it leave it).
    private func checkedLines(_ lines: [JSONValue], partition p: Int, table: PartitionTable) throws(UniFlowError) -> [ForeignMutation] {
        var result: [ForeignMutation] = []
        var states: [String: Int32] = [:]
        for (i, value) in lines.enumerated() {
            do throws(UniFlowError) {
                guard let line = value.objectValue else { throw UniFlowError(.schema, "expected an object, got \(value.jsonTypeName)") }
                // Timer lines: the timers of a partition are its owner's (not kept here yet).
                if line["timer"] != nil { continue }
                guard let featureName = line["feature"]?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
                let feature = try resolveFeature(featureName)
                let key = try ModelSnapshot.key(line["key"], feature: feature, on: self)
                guard table.partition(ofKey: key) == p else {
                    throw UniFlowError(.schema, "\(featureName)\(key.map { "[\($0)]" } ?? "") does not live in \(table.name(of: p))")
                }
                guard let kindText = line["kind"]?.stringValue, let kind = MutationKind.allCases.first(where: { $0.text == kindText }) else {
                    throw UniFlowError(.schema, "'kind': expected a mutation kind, got \(line["kind"]?.jsonText ?? "nothing")")
                }
                let name = "\(featureName)\(key.map { "[\($0)]" } ?? "")"
                let before = states[name] ?? currentState(feature: feature, key: key)
                var state: Int32 = -1
                var payload: JSONObject? = nil
                if kind != .deinitialization {
                    guard let stateName = line["state"]?.stringValue else { throw UniFlowError(.schema, "missing 'state'") }
                    state = try resolveState(stateName, of: feature)
                    guard let given = line["payload"]?.objectValue else { throw UniFlowError(.schema, "missing 'payload' object") }
                    let checked = try stateDefinition(state, of: feature).checkPayload(given, feature: featureName)
                    payload = checked.isEmpty ? nil : checked
                }
                switch kind {
                case .initialization where before >= 0:
                    throw UniFlowError(.schema, "\(name) is already initialized on this node")
                case .actualization where before != state:
                    throw UniFlowError(.schema, "\(name) is not in state \(stateName(state, feature: feature)) on this node")
                case .transition, .deinitialization:
                    if before < 0 { throw UniFlowError(.schema, "\(name) is not initialized on this node") }
                default:
                    break
                }
                states[name] = state
                result.append(ForeignMutation(kind: kind, feature: feature, key: key, state: state, payload: payload,
                                              action: line["action"]?.objectValue ?? JSONObject()))
            } catch {
                // A name this model does not have makes the record one of another shape.
                let failure = error.status == .notFound ? UniFlowError(.schema, error.message) : error
                throw failure.prefixed("lines[\(i)]")
            }
        }
        return result
    }

    private func currentState(feature: Int32, key: String?) -> Int32 {
        guard let key else { return state(at: Place(feature: feature)) }
        return key.withCString { (c) -> Int32 in
            var header = ActionHeader(kind: .transition, feature: feature)
            header.key = c
            return state(at: place(of: header))
        }
    }

    /// Installs one checked mutation and tells subscribers and watches; returns
    /// it as bindings across partitions keep it.
    private func install(_ mutation: ForeignMutation) throws(UniFlowError) -> CommittedMutation {
        try withOptionalCString(mutation.key) { (key) throws(UniFlowError) -> CommittedMutation in
            var header = ActionHeader(kind: Self.actionKind(of: mutation.kind), feature: mutation.feature)
            header.key = key
            header.into = mutation.state
            let place = place(of: header)
            let current = state(at: place)
            var committed = try commit(header, kind: mutation.kind, at: place, from: current, payload: mutation.payload,
                                       policy: .immediate)
            committed.record.foreign = true
            foreignAction = mutation.action
            defer { foreignAction = nil }
            announceToObservers(committed, subscribedBefore: registrationIDs.next)
            return committed
        }
    }

    private static func actionKind(of kind: MutationKind) -> ActionKind {
        switch kind {
        case .initialization: .initialize
        case .actualization: .actualize
        case .transition: .transition
        case .deinitialization: .deinitialize
        }
    }
}

/// Runs `body` with a C string of `text`, or nil.
private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
    guard let text else { return try body(nil) }
    var result: Result<R, UniFlowError>!
    text.withCString { c in
        do throws(UniFlowError) { result = .success(try body(c)) } catch { result = .failure(error) }
    }
    return try result.get()
}
