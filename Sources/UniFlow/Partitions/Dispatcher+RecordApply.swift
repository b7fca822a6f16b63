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
        /// A statechart instance's line: its invocations and paths (nil: a flat feature).
        var chart: StatechartLine? = nil
    }

    /// One line of a record: a mutation, or what a timer did.
    private enum ForeignLine {
        case mutation(ForeignMutation)
        case timer(ForeignTimerLine)
        /// A statechart instance's invocations, changed without a mutation.
        case invocations(InvocationLine)
    }

    func applyRecord(_ text: UnsafePointer<CChar>) throws(UniFlowError) {
        _ = try partitionTable("uf_record_apply")
        let length = strlen(text)
        let json = try JSONParser.parseFast(text, length: length)
        guard let record = json.objectValue else {
            throw UniFlowError(.schema, "a record must be an object, got \(json.jsonTypeName)")
        }
        // Every field read at once, in the order records are written; the
        // checks below still go in their own order.
        var fields = OrderedFields(record)
        let marker = fields["uniflow_record"], fingerprintValue = fields["fingerprint"]
        let partitionsValue = fields["partitions"], partitionValue = fields["partition"]
        let versionValue = fields["version"], prevValue = fields["prev"]
        let nodeValue = fields["node"], incarnationValue = fields["incarnation"]
        let linesValue = fields["lines"], afterValue = fields["after"]
        guard marker == .int(1) else {
            throw UniFlowError(.schema, "not a record: \"uniflow_record\": 1 is missing")
        }
        let fingerprint = try field(fingerprintValue, "fingerprint").stringValue
        let mine = definitionsFingerprint
        guard fingerprint == mine else {
            throw UniFlowError(.schema, "the record was written for other definitions (fingerprint \(fingerprint.map { "'\($0)'" } ?? "missing"), this dispatcher has '\(mine)')")
        }
        // Not the table itself: a copy held while `partitioning` changes
        // below would copy its partitions on every record.
        let (count, global) = (partitioning!.count, partitioning!.global)
        guard case .int(let n) = try field(partitionsValue, "partitions"), n == Int64(count) else {
            throw UniFlowError(.schema, "the record was written with \(partitionsValue?.jsonText ?? "no") partitions, this dispatcher has \(count)")
        }
        guard case .int(let pn) = try field(partitionValue, "partition"), pn >= 0, pn <= Int64(global) else {
            throw UniFlowError(.schema, "'partition': expected a partition from 0 to \(global), got \(partitionValue!.jsonText)")
        }
        let p = Int(pn)
        guard case .int(let vn) = try field(versionValue, "version"), vn >= 1 else {
            throw UniFlowError(.schema, "'version': expected an integer >= 1, got \(versionValue!.jsonText)")
        }
        let version = UInt64(vn)
        if record["snapshot"] != nil {
            try applySnapshot(record, partition: p, version: version, table: partitioning!)
            return
        }
        guard let node = try field(nodeValue, "node").stringValue, DefinitionParser.isValidName(node) else {
            throw UniFlowError(.schema, "'node': expected a node's name, got \(nodeValue!.jsonText)")
        }
        guard let incarnation = try field(incarnationValue, "incarnation").stringValue else {
            throw UniFlowError(.schema, "'incarnation': expected a string, got \(incarnationValue!.jsonText)")
        }
        let (current, lastHash) = (partitioning![p].version, partitioning![p].lastHash)
        // Already applied: duplicates are harmless.
        if version <= current { return }
        guard version == current + 1 else {
            throw UniFlowError(.gap, "the record of \(partitioning!.name(of: p)) at version \(version) comes before the ones it follows: this node has applied up to version \(current)")
        }
        guard Self.prev(prevValue, follows: lastHash) else {
            let expectedPrev: JSONValue = lastHash.map { .string(FNV1a.hex($0)) } ?? .null
            throw UniFlowError(.conflict, "the record of \(partitioning!.name(of: p)) at version \(version) follows \(prevValue?.jsonText ?? "nothing"), but the last one applied here hashes to \(expectedPrev.jsonText): the log's history diverged")
        }
        let hash = FNV1a.hash32(UnsafeRawBufferPointer(start: text, count: length))
        // Only the global partition's records carry `after`.
        let after = p == global ? HomeBindings.parse(afterValue) : nil
        if p == global, afterValue != nil, after == nil {
            throw UniFlowError(.schema, "'after': expected an object of partitions' versions, got \(afterValue!.jsonText)")
        }
        let claim = record["claim"], release = record["release"]
        if claim != nil || release != nil {
            guard claim?.stringValue == node || release?.stringValue == node else {
                throw UniFlowError(.schema, "a claim or release must name the record's node '\(node)'")
            }
            let wasMine = partitioning!.owns(p)
            partitioning!.advance(p, to: version, hash: hash)
            partitioning!.setOwner(claim != nil ? PartitionTable.Owner(node: node, incarnation: incarnation) : nil, of: p)
            if p == global, let after { homes.committed(after) }
            if charts.any { ownershipMoved(p, wasMine: wasMine) }
            return
        }
        guard case .array(let lines) = try field(linesValue, "lines") else {
            throw UniFlowError(.schema, "'lines': expected an array, got \(linesValue!.jsonText)")
        }
        let mutations = try checkedLines(lines, partition: p)
        partitioning!.advance(p, to: version, hash: hash)
        let keeping = p != global && hasGlobalBindings && homes.keeps(p, version: version)
        var kept: [HomeBindings.Mutation] = []
        for line in mutations {
            switch line {
            case .mutation(let mutation):
                let installed = try install(mutation)
                if keeping { kept.append(homeMutation(installed, action: mutation.action)) }
            case .timer(let timer):
                applyTimerLine(timer, partition: p)
            case .invocations(let line):
                charts.services.mirror(line.instance, line.invocations)
            }
        }
        if p == global, let after { homes.committed(after) }
        if p != global { keepForHome(p, version: version) { kept } }
        runHomeBindings()
    }

    private func field(_ value: JSONValue?, _ key: String) throws(UniFlowError) -> JSONValue {
        guard let value else { throw UniFlowError(.schema, "the record has no '\(key)'") }
        return value
    }

    /// Whether `prev` is the hash of the last record applied: `null` before
    /// the first, else its eight hex digits as `FNV1a.hex` writes them. The
    /// digits are compared as bytes, without making the text of the hash;
    /// anything else is compared with that text, as it always was.
    private static func prev(_ prev: JSONValue?, follows lastHash: UInt32?) -> Bool {
        guard let lastHash else { return prev == .null }
        guard case .string(var text)? = prev else { return false }
        let written = text.withUTF8 { (bytes) -> Bool in
            guard bytes.count == 8 else { return false }
            var value: UInt32 = 0
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt32(byte - UInt8(ascii: "a") + 10)
                default: return false
                }
            }
            return value == lastHash
        }
        return written || text == FNV1a.hex(lastHash)
    }

    /// Every line checked before anything changes: names, payloads, the
    /// partition each instance lives in, and that each mutation fits the state
    /// this node's copy has (as the lines before it leave it).
    private func checkedLines(_ lines: [JSONValue], partition p: Int) throws(UniFlowError) -> [ForeignLine] {
        var result: [ForeignLine] = []
        result.reserveCapacity(lines.count)
        // The state each instance the lines before have changed is left in;
        // only a record of several lines can need it.
        var states: [Instance: Int32] = [:]
        let table = partitioning!
        for (i, value) in lines.enumerated() {
            do throws(UniFlowError) {
                guard let line = value.objectValue else { throw UniFlowError(.schema, "expected an object, got \(value.jsonTypeName)") }
                if line["timer"] != nil {
                    result.append(.timer(try checkedTimerLine(line)))
                    continue
                }
                if charts.any, line["kind"] == nil, line["invocations"] != nil {
                    result.append(.invocations(try checkedInvocationLine(line, partition: p)))
                    continue
                }
                var fields = OrderedFields(line)
                let featureValue = fields["feature"], keyValue = fields["key"], kindValue = fields["kind"]
                let stateValue = fields["state"], payloadValue = fields["payload"], actionValue = fields["action"]
                guard let featureName = featureValue?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
                let feature = try resolveFeature(featureName)
                let key = try ModelSnapshot.key(keyValue, feature: feature, on: self)
                // The instance's name, for messages only.
                func name() -> String { "\(featureName)\(key.map { "[\($0)]" } ?? "")" }
                guard table.partition(ofKey: key) == p else {
                    throw UniFlowError(.schema, "\(name()) does not live in \(table.name(of: p))")
                }
                guard let kindText = kindValue?.stringValue, let kind = Self.mutationKind(named: kindText) else {
                    throw UniFlowError(.schema, "'kind': expected a mutation kind, got \(kindValue?.jsonText ?? "nothing")")
                }
                let instance = Instance(feature: feature, key: key)
                let before = (i > 0 ? states[instance] : nil) ?? currentState(feature: feature, key: key)
                var state: Int32 = -1
                var payload: JSONObject? = nil
                var chart: StatechartLine? = nil
                if charts.any, charts[feature] != nil {
                    // Configuration, history, status and payload, checked as a model's entry.
                    (state, payload, chart) = try statechartLine(line, feature: feature, key: key, kind: kind, name: name())
                } else if kind != .deinitialization {
                    guard let stateName = stateValue?.stringValue else { throw UniFlowError(.schema, "missing 'state'") }
                    state = try resolveState(stateName, of: feature)
                    guard let given = payloadValue?.objectValue else { throw UniFlowError(.schema, "missing 'payload' object") }
                    let checked = try stateDefinition(state, of: feature).checkPayload(given, feature: featureName)
                    payload = checked.isEmpty ? nil : checked
                }
                switch kind {
                case .initialization where before >= 0:
                    throw UniFlowError(.schema, "\(name()) is already initialized on this node")
                case .actualization where before != state:
                    throw UniFlowError(.schema, "\(name()) is not in state \(stateName(state, feature: feature)) on this node")
                case .transition, .deinitialization:
                    if before < 0 { throw UniFlowError(.schema, "\(name()) is not initialized on this node") }
                default:
                    break
                }
                if i + 1 < lines.count { states[instance] = state }
                result.append(.mutation(ForeignMutation(kind: kind, feature: feature, key: key, state: state, payload: payload,
                                                        action: actionValue?.objectValue ?? JSONObject(), chart: chart)))
            } catch {
                // A name this model does not have makes the record one of another shape.
                let failure = error.status == .notFound ? UniFlowError(.schema, error.message) : error
                throw failure.prefixed("lines[\(i)]")
            }
        }
        return result
    }

    /// An instance (or a single feature, `key` nil) that lines of one record change.
    private struct Instance: Hashable {
        var feature: Int32
        var key: String?
    }

    /// The kind a line names, as `MutationKind.text` spells it.
    private static func mutationKind(named text: String) -> MutationKind? {
        switch text {
        case "initialization": .initialization
        case "actualization": .actualization
        case "transition": .transition
        case "deinitialization": .deinitialization
        default: nil
        }
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
            if let chart = mutation.chart { finishStatechartInstall(&committed, chart) }
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

/// An object's fields read in the order the core writes them (a record's
/// envelope in `writeRecord`, a line in `JournalWriter.lineFields`): each is
/// looked for first where the one read before it ended, or one further (past
/// an optional field such as a line's `key`), and only then anywhere. A record
/// has a dozen fields and a line eight: looking each up from the start cost
/// a record more than all its other checks. Parsed objects have no duplicate
/// keys, so where a field is found is the only place it is.
private struct OrderedFields {
    let object: JSONObject
    var next = 0

    init(_ object: JSONObject) { self.object = object }

    subscript(key: String) -> JSONValue? {
        mutating get {
            var i = next
            while i < min(next + 2, object.count) {
                if object.entries[i].key == key {
                    next = i + 1
                    return object.entries[i].value
                }
                i += 1
            }
            return object[key]
        }
    }
}
