import CUniFlow
import Glibc

/// What a partitioned outer call changed, while it is staged: the undo entries
/// live in `Dispatcher.batch` (the batch's machinery), the rest here.
struct StagedCall {
    /// Each committed mutation, with the subscription id that was next when it
    /// was committed (subscriptions made after it are not told of it).
    var committed: [(mutation: CommittedMutation, subscribedBefore: UInt64)] = []
    /// Whether the journal file was on before the call turned it off (its lines
    /// are written with the record, once the record is accepted).
    var journaling = false
    /// The actions whose mutations wait to be announced: a committed mutation's
    /// header borrows its action's texts (a key, an id), which a queued action
    /// owns and frees with it.
    var actions: [ResolvedAction] = []
}

/// The record a sink is shown (`const uf_record *`): valid during the sink's call.
struct RecordView {
    var text: UnsafePointer<CChar>
    var partition: UInt32
    var version: UInt64
}

/// Records (docs/scale-out.md): every outer call of a partitioned dispatcher
/// is staged — applied with undo entries, its model bindings run, nobody else
/// told — and then written as one record, handed to the record sink before
/// anything of it is visible. When the sink refuses, the whole call is undone.
extension Dispatcher {
    /// An outer call of a partitioned dispatcher (an action from outside, or one
    /// queued after an earlier call's commit): the action and its cascade, then
    /// its record. Returns the action's failure, or the sink's.
    func processStaged(_ action: ResolvedAction) -> UniFlowError? {
        var failure: UniFlowError? = nil
        if case .refused(let refused) = runStaged(partition: nil, reporting: action.header, {
            failure = process(action, policy: .staged)
        }) {
            failure = refused
        }
        runHomeBindings()
        return failure
    }

    /// How a staged call ended.
    enum StagedOutcome {
        /// It changed nothing: no record.
        case wroteNothing
        case accepted
        /// The sink refused its record: it was undone, and reported.
        case refused(UniFlowError)
    }

    /// One staged outer call writing `partition` (nil: the partition of its first
    /// action): `body` does what the call does, its queue is drained, and its
    /// record goes through the sink (with `covering`, a run of the global
    /// bindings over another partition's record). Accepted, it is made visible;
    /// refused, the whole call is undone and reported against `outer`.
    func runStaged(partition: Int?, covering: (partition: Int, version: UInt64)? = nil,
                   reporting outer: ActionHeader?, _ body: () -> Void) -> StagedOutcome {
        // Actions queued before this call are later calls of their own; what
        // observers queue runs after them.
        var earlier = ActionQueue()
        swap(&earlier, &queue)
        defer {
            while let next = queue.popFirst() { earlier.append(next) }
            swap(&earlier, &queue)
        }
        let journaling = hot.journaling
        hot.journaling = false
        batch = BatchLog(seq: model.seq)
        staging = StagedCall(journaling: journaling)
        partitionWritten = partition
        body()
        drainQueue()
        hot.journaling = journaling
        return sealStaged(reporting: outer, covering: covering)
    }

    /// Writes the staged call's record through the sink and, when the sink
    /// accepts it, makes the call visible; otherwise undoes it.
    private func sealStaged(reporting outer: ActionHeader?, covering: (partition: Int, version: UInt64)?) -> StagedOutcome {
        let staged = staging!
        staging = nil
        let p = partitionWritten ?? partitioning!.global
        let timerLines = batch!.timerLines
        if staged.committed.isEmpty && timerLines.isEmpty {
            commitBatch()
            return .wroteNothing
        }
        let mutations = staged.committed.map(\.mutation)
        let lines = recordLines(mutations, timerLines: timerLines)
        if let refused = writeRecord(partition: p, body: ["lines": .array(lines)], covering: covering) {
            undoBatch()
            while let queued = queue.popFirst() { var via = queued.header.via; via?.release() }
            if reportingActive { report(.rejected, action: outer, failure: refused) }
            return .refused(refused)
        }
        commitBatch()
        // The log has the record: the journal file follows it, and a line it
        // cannot write does not undo what the log holds.
        if staged.journaling { try? journalBatch(mutations, timerLines: timerLines) }
        keepForHome(p, version: partitioning![p].version) { mutations.map { homeMutation($0) } }
        for entry in staged.committed { noteCommitted(entry.mutation) }
        for entry in staged.committed { announceToObservers(entry.mutation, subscribedBefore: entry.subscribedBefore) }
        return .accepted
    }

    /// A record's lines: the mutations' lines, and the timer lines among them
    /// where they happened.
    func recordLines(_ mutations: [CommittedMutation], timerLines: [(after: Int, line: JSONObject)]) -> [JSONValue] {
        var lines: [JSONValue] = []
        var next = 0
        for (i, mutation) in mutations.enumerated() {
            while next < timerLines.count && timerLines[next].after <= i { lines.append(.object(timerLines[next].line)); next += 1 }
            lines.append(recordLine(mutation))
        }
        return lines + timerLines[next...].map { .object($0.line) }
    }

    /// A mutation as a record's line: its journal line and the action object of
    /// its reports, so that every node announces the same mutation.
    private func recordLine(_ mutation: CommittedMutation) -> JSONValue {
        guard case .object(var line) = JournalWriter.line(mutation, self) else { return .null }
        line["action"] = .object(actionDescription(mutation.action))
        return .object(line)
    }

    /// Writes the next record of partition `p` (`body`: its lines, or a claim
    /// or release) through the sink; on acceptance the partition's version and
    /// hash move on. Returns the sink's refusal, which changes nothing.
    /// A record of the global partition carries `after` (`HomeBindings`), with
    /// `covering` when it is a run over another partition's record.
    func writeRecord(partition p: Int, body: JSONObject, covering: (partition: Int, version: UInt64)? = nil) -> UniFlowError? {
        let table = partitioning!
        let version = table[p].version &+ 1
        var record: JSONObject = ["uniflow_record": 1, "fingerprint": .string(definitionsFingerprint),
                                  "partitions": .int(Int64(table.count)), "partition": .int(Int64(p)),
                                  "version": .int(Int64(version)),
                                  "prev": table[p].lastHash.map { .string(FNV1a.hex($0)) } ?? .null,
                                  "node": .string(table.me.node), "incarnation": .string(table.me.incarnation),
                                  "at": .int(Int64(journalTime))]
        for (key, value) in body { record[key] = value }
        let after: JSONValue? = p == table.global ? homes.json(with: covering) : Optional<JSONValue>.none
        if let after { record["after"] = after }
        let text = JSONValue.object(record).jsonText
        if let sink = recordSink {
            let status = text.withCString { (c) -> Int32 in
                var view = RecordView(text: c, partition: UInt32(p), version: version)
                return withUnsafeMutablePointer(to: &view) { sink.function(OpaquePointer($0), sink.payload) }
            }
            if status != Status.ok.rawValue { return Self.sinkRefusal(status, partition: table.name(of: p), version: version) }
        }
        partitioning!.advance(p, to: version, hash: FNV1a.hash32(text))
        if let after, let map = HomeBindings.parse(after) { homes.committed(map, partitions: table.count) }
        return nil
    }

    /// What a sink's answer means: nil to accept.
    private static func sinkRefusal(_ status: Int32, partition: String, version: UInt64) -> UniFlowError? {
        switch status {
        case Status.ok.rawValue:
            return nil
        case Status.conflict.rawValue:
            return UniFlowError(.conflict, "the log refused the record of \(partition) at version \(version): another record got there first")
        case Status.unavailable.rawValue:
            return UniFlowError(.unavailable, "the log did not answer for the record of \(partition) at version \(version): its outcome is unknown until the log is read")
        default:
            return UniFlowError(.callback, "the record sink failed (returned \(status)) for the record of \(partition) at version \(version)")
        }
    }

    /// Installs the record sink (`uf_record_sink`); nil: none (every record is accepted at once).
    func setRecordSink(_ sink: HostCallback<uf_record_fn>?) throws(UniFlowError) {
        _ = try partitionTable("uf_record_sink")
        var old = recordSink
        recordSink = sink
        old?.release()
    }
}
