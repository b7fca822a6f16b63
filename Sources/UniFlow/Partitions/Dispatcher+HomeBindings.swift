import CUniFlow

/// The dispatcher's side of bindings across partitions (`HomeBindings`): what
/// it keeps of other partitions' records, and the runs the global partition's
/// owner makes over them, each a new outer call whose record says how far the
/// runs have come (`after`).
extension Dispatcher {
    /// Whether some binding belongs to a single feature (and so lives in the global partition).
    var hasGlobalBindings: Bool { bindings.hasSingleOwner }

    /// Keeps a record of partition `q` (not the global one) for the runs, when
    /// they have not yet covered it. Without a binding in the global partition
    /// there is nothing to run, but `after` must still move on — a log drops
    /// no record above it — so the record is kept with no mutations, and the
    /// global partition's owner passes over it at once.
    /// (`mutations` is made only when a binding needs them: most models have none.)
    func keepForHome(_ q: Int, version: UInt64, _ mutations: () -> [HomeBindings.Mutation]) {
        guard q != partitioning!.global, homes.keeps(q, version: version) else { return }
        homes.keep(q, HomeBindings.PendingRecord(version: version, mutations: hasGlobalBindings ? mutations() : []))
    }

    /// A committed mutation as the runs keep it.
    func homeMutation(_ m: CommittedMutation, action: JSONObject? = nil) -> HomeBindings.Mutation {
        HomeBindings.Mutation(seq: m.record.seq, kind: m.record.mutationKind, feature: m.record.feature,
                              key: m.record.key.map { String(cString: $0) } ?? m.action.key.map { String(cString: $0) },
                              oldState: m.record.oldState, newState: m.record.newState,
                              oldPayload: m.oldPayload, newPayload: m.newPayload,
                              action: action ?? actionDescription(m.action))
    }

    /// At the global partition's owner: runs the single features' bindings over
    /// every kept record, oldest first, each run an outer call with a record of
    /// its own. A run whose record is refused stays and runs again at the next
    /// chance (an apply, a claim, a later call).
    func runHomeBindings() {
        guard let table = partitioning, table.owns(table.global), !homes.running, staging == nil else { return }
        homes.running = true
        defer { homes.running = false }
        while let (q, record) = homes.next {
            guard runHome(over: record, of: q) else { return }
        }
    }

    /// One run: returns whether it is done (its record accepted, or nothing to write).
    private func runHome(over record: HomeBindings.PendingRecord, of q: Int) -> Bool {
        let global = partitioning!.global
        // Nothing to run over: no call, only `after` moving on.
        let outcome = record.mutations.isEmpty ? .wroteNothing : runStaged(partition: global, covering: (q, record.version), reporting: nil) {
            for mutation in record.mutations { runGlobalBindings(over: mutation) }
        }
        switch outcome {
        case .refused:
            return false
        case .accepted:
            return true
        case .wroteNothing:
            if homes.ranWithoutRecord(q, version: record.version) {
                // Every hundred runs that wrote nothing, a record says how far they came.
                if writeRecord(partition: global, body: .lines([], timerLines: [])) != nil { return false }
            }
            return true
        }
    }

    /// The single features' bindings over one kept mutation, as if it were being announced.
    private func runGlobalBindings(over m: HomeBindings.Mutation) {
        guard (hot.features[Int(m.feature)].bindingKinds | hot.anyBindingKinds) & m.kind.bit != 0 else { return }
        func run(_ key: UnsafePointer<CChar>?) {
            var record = MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: m.seq, kind: m.kind,
                                        feature: m.feature, oldState: m.oldState, newState: m.newState, key: key)
            record.foreign = true
            scratch.delivery.oldPayload = m.oldPayload
            scratch.delivery.newPayload = m.newPayload
            foreignAction = m.action
            runBindings(record, homes: .singleOwners)
            foreignAction = nil
            scratch.delivery.reset()
        }
        if let key = m.key { key.withCString { run($0) } } else { run(nil) }
    }
}
