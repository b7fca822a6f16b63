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
    /// An action of a batch failed: the whole call is undone, and writes nothing.
    var abandoned = false
    /// Statechart services its macrosteps stop and start, once the record holds.
    var charts = StagedCharts()
}

/// The record a sink is shown (`const uf_record *`): valid during the sink's call.
struct RecordView {
    var text: UnsafePointer<CChar>
    var partition: UInt32
    var version: UInt64
}

/// What a record carries besides its header and `after`.
enum RecordBody {
    /// What an outer call changed: its mutations, and the timer lines among
    /// them (each after the number of mutations before it).
    case lines([CommittedMutation], timerLines: [(after: Int, line: JSONObject)])
    /// A claim or a release by this node.
    case claim(String)
    case release(String)
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

    /// A batch of a partitioned dispatcher (`uf_submit_batch`): one staged call
    /// whose actions run in order, their model bindings as each is applied and
    /// what those queue in the same call, so that all of it is one record. The
    /// first action that fails undoes the whole call (it has been reported).
    func applyStaged(_ actions: [ResolvedAction]) throws(UniFlowError) {
        var failure: UniFlowError? = nil
        let outcome = runStaged(partition: nil, reporting: actions.last?.header) {
            for i in actions.indices {
                if let failed = process(actions[i], policy: .staged) {
                    failure = failed.prefixed("batch[\(i)]")
                    staging!.abandoned = true
                    return
                }
            }
        }
        runHomeBindings()
        if let failure { throw failure }
        if case .refused(let refused) = outcome { throw refused }
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
        if !staging!.abandoned { drainQueue() }
        hot.journaling = journaling
        return sealStaged(reporting: outer, covering: covering)
    }

    /// Writes the staged call's record through the sink and, when the sink
    /// accepts it, makes the call visible; otherwise undoes it.
    private func sealStaged(reporting outer: ActionHeader?, covering: (partition: Int, version: UInt64)?) -> StagedOutcome {
        let staged = staging!
        staging = nil
        if staged.abandoned {
            undoBatch()
            while let queued = queue.popFirst() { var via = queued.header.via; via?.release() }
            return .wroteNothing
        }
        let p = partitionWritten ?? partitioning!.global
        var timerLines = batch!.timerLines
        let ownTimerLines = timerLines.count
        // Statechart instances whose invocation settled since their last record get a line of their own.
        var settled: [ChartInstanceRef] = []
        if charts.any { settled = addSettledInvocationLines(&timerLines, partition: p, staged) }
        if staged.committed.isEmpty && timerLines.isEmpty {
            commitBatch()
            if charts.any { runStagedServices(staged.charts) }
            return .wroteNothing
        }
        let mutations = staged.committed.map(\.mutation)
        // The lines of statechart instances list the invocations this call's services leave.
        if charts.any { charts.services.writing = staged.charts }
        let refused = writeRecord(partition: p, body: .lines(mutations, timerLines: timerLines), covering: covering)
        if charts.any { charts.services.writing = StagedCharts() }
        if let refused {
            undoBatch()
            while let queued = queue.popFirst() { var via = queued.header.via; via?.release() }
            // Nothing of the call happened: no service stops or starts, and the next record lists what settled.
            for instance in settled { charts.services.noteUnwritten(instance) }
            if reportingActive { report(.rejected, action: outer, failure: refused) }
            return .refused(refused)
        }
        commitBatch()
        // The log has the record: the journal file follows it, and a line it
        // cannot write does not undo what the log holds. Its invocation lines
        // are the record's, with the services this call leaves running.
        if staged.journaling {
            var lines = Array(timerLines.prefix(ownTimerLines))
            if charts.any { lines += journalInvocationLines(staged.charts, settled: settled).map { (mutations.count, $0) } }
            try? journalBatch(mutations, timerLines: lines)
        }
        keepForHome(p, version: partitioning![p].version) { mutations.map { homeMutation($0) } }
        for entry in staged.committed { noteCommitted(entry.mutation) }
        for entry in staged.committed { announceToObservers(entry.mutation, subscribedBefore: entry.subscribedBefore) }
        // Services start after the commit: what they do must not happen for a call the log refused.
        if charts.any { runStagedServices(staged.charts) }
        return .accepted
    }

    /// Writes the next record of partition `p` through the sink; on acceptance
    /// the partition's version and hash move on. Returns the sink's refusal,
    /// which changes nothing. A record of the global partition carries `after`
    /// (`HomeBindings`), with `covering` when it is a run over another
    /// partition's record.
    ///
    /// The text is written straight into a kept buffer, in the order of the
    /// record's keys, not built as a `JSONObject` first: every outer call of a
    /// partitioned dispatcher writes one, and building and writing the objects
    /// cost more than the action itself.
    func writeRecord(partition p: Int, body: RecordBody, covering: (partition: Int, version: UInt64)? = nil) -> UniFlowError? {
        // Scalars only: a copy of the table held across `advance` below would
        // make it copy every partition's entry on each record.
        let count = partitioning!.count, global = partitioning!.global, me = partitioning!.me
        let version = partitioning![p].version &+ 1, lastHash = partitioning![p].lastHash
        // The buffer is taken out while it is used: a sink may not call back into
        // this dispatcher's processing, but nothing then can touch it either way.
        var w = JSONWriter()
        swap(&w, &recordText)
        defer { w.reset(keeping: 1 << 16); swap(&w, &recordText) }
        w.raw("{\"uniflow_record\":1,\"fingerprint\":")
        w.write(string: definitionsFingerprint)
        w.raw(",\"partitions\":")
        w.write(int: Int64(count))
        w.raw(",\"partition\":")
        w.write(int: Int64(p))
        w.raw(",\"version\":")
        w.write(int: Int64(version))
        w.raw(",\"prev\":")
        if let hash = lastHash { w.write(string: FNV1a.hex(hash)) } else { w.raw("null") }
        w.raw(",\"node\":")
        w.write(string: me.node)
        w.raw(",\"incarnation\":")
        w.write(string: me.incarnation)
        w.raw(",\"at\":")
        w.write(int: Int64(journalTime))
        switch body {
        case .lines(let mutations, let timerLines):
            w.raw(",\"lines\":[")
            writeLines(mutations, timerLines: timerLines, to: &w)
            w.raw(byte: UInt8(ascii: "]"))
        case .claim(let node):
            w.raw(",\"claim\":")
            w.write(string: node)
        case .release(let node):
            w.raw(",\"release\":")
            w.write(string: node)
        }
        if p == global {
            w.raw(",\"after\":")
            homes.write(to: &w, with: covering)
        }
        w.raw(byte: UInt8(ascii: "}"))
        let length = w.bytes.count
        w.raw(byte: 0)
        let (status, hash) = w.bytes.withUnsafeBufferPointer { (bytes) -> (Int32, UInt32) in
            let text = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            var status = Status.ok.rawValue
            if let sink = recordSink {
                var view = RecordView(text: text, partition: UInt32(p), version: version)
                status = withUnsafeMutablePointer(to: &view) { sink.function(OpaquePointer($0), sink.payload) }
            }
            return (status, FNV1a.hash32(UnsafeBufferPointer(rebasing: bytes[..<length])))
        }
        if let refused = Self.sinkRefusal(status, partition: partitioning!.name(of: p), version: version) { return refused }
        partitioning!.advance(p, to: version, hash: hash)
        if p == global { homes.committedOwn(with: covering) }
        return nil
    }

    /// A record's lines: each mutation's journal line with the action object
    /// of its reports (so that every node announces the same mutation), and the
    /// timer lines among them where they happened.
    private func writeLines(_ mutations: [CommittedMutation], timerLines: [(after: Int, line: JSONObject)], to w: inout JSONWriter) {
        var first = true
        func separate() {
            if !first { w.raw(byte: UInt8(ascii: ",")) }
            first = false
        }
        var next = 0
        for (i, mutation) in mutations.enumerated() {
            while next < timerLines.count && timerLines[next].after <= i {
                separate()
                w.write(.object(timerLines[next].line))
                next += 1
            }
            separate()
            var opening = UInt8(ascii: "{")
            JournalWriter.lineFields(mutation, self) { (key, value) in
                w.raw(byte: opening)
                opening = UInt8(ascii: ",")
                w.write(string: key)
                w.raw(byte: UInt8(ascii: ":"))
                w.write(value)
            }
            if charts.any, charts[mutation.record.feature] != nil {
                // What the instance runs, what the microstep entered and left, its action.
                writeStatechartLineTail(mutation, line: i, to: &w)
            } else {
                w.raw(",\"action\":")
                w.write(.object(actionDescription(mutation.action)))
            }
            w.raw(byte: UInt8(ascii: "}"))
        }
        for line in timerLines[next...] {
            separate()
            w.write(.object(line.line))
        }
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
