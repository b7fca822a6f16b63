/// A partitioned dispatcher's partitions, as the host sees them
/// (`uf_partition_of`, `uf_partitions_get`, claims and releases) and as the
/// pipeline checks them: only the owner of a partition changes it.
extension Dispatcher {
    /// The partition table, or `UF_EMISUSE` on a dispatcher made without the
    /// options `partitions` and `node`.
    func partitionTable(_ function: StaticString) throws(UniFlowError) -> PartitionTable {
        guard let partitioning else {
            throw UniFlowError(.misuse, "\(function): the dispatcher is not partitioned (options 'partitions' and 'node')")
        }
        return partitioning
    }

    /// The fingerprint records carry: the journal's, made once per registration.
    var definitionsFingerprint: String {
        if let fingerprint { return fingerprint }
        let made = JournalWriter.fingerprint(self)
        fingerprint = made
        return made
    }

    /// Where a feature's instance (or a single feature) lives. The key follows
    /// the rules of actions: required for a keyed feature, refused on a single one.
    func partition(of featureName: String, key: String?) throws(UniFlowError) -> Int {
        let table = try partitionTable("uf_partition_of")
        let feature = try resolveFeature(featureName)
        let keyed = instanceTable(of: feature) != nil
        switch (keyed, key) {
        case (true, nil):
            throw UniFlowError(.invalidArgument, "\(featureName) is keyed: a key is required")
        case (false, .some):
            throw UniFlowError(.invalidArgument, "\(featureName) is a single feature: it takes no key")
        case (true, let key?):
            if let reason = InstanceKey.refusal(key) { throw UniFlowError(.invalidArgument, "key: \(reason)") }
        case (false, nil):
            break
        }
        return table.partition(ofKey: key)
    }

    /// The pipeline's step before the precondition on a partitioned dispatcher:
    /// the action's partition must be one this node owns and, inside a cascade,
    /// the one the outer call writes (a record covers one partition).
    /// `writing` false: a check that writes nothing now (arming an API timer).
    func ownershipFailure(_ action: ActionHeader, writing: Bool = true) -> UniFlowError? {
        guard let table = partitioning else { return nil }
        let p = table.partition(ofKey: action.key)
        if let writing = partitionWritten, writing != p {
            return UniFlowError(.notOwner, "\(subject(action)) lives in \(table.name(of: p)), but this call writes \(table.name(of: writing)): the actions of one call stay in one partition")
        }
        guard table.owns(p) else {
            let owner = table[p].owner.map { "owned by node '\($0.node)'" } ?? "owned by no node"
            return UniFlowError(.notOwner, "\(subject(action)) lives in \(table.name(of: p)), \(owner)")
        }
        if writing { partitionWritten = p }
        return nil
    }

    /// Makes this node the owner of `p` (`uf_partition_claim`) by writing a
    /// claim record: ownership follows the log, so a claim the sink refuses
    /// (`UF_ECONFLICT`: apply what is new, then claim again) changes nothing.
    func claim(_ p: Int) throws(UniFlowError) {
        let table = try partitionTable("uf_partition_claim")
        try checkPartitionNumber(p, table, "uf_partition_claim")
        if p == table.global {
            // The first claim ever of the global partition: its bindings run over
            // what comes after what this node has applied.
            homes.start(at: (0..<table.count).map { table[$0].version })
        }
        if let refused = writeRecord(partition: p, body: .claim(table.me.node)) { throw refused }
        partitioning!.setOwner(table.me, of: p)
        // What the partition's statechart instances invoke runs here now.
        if charts.any { startServicesOfClaimed(p) }
        fileTimersAwaitingOwner()
        runHomeBindings()
    }

    /// Stops owning `p` (`uf_partition_release`) by writing a release record:
    /// it has no owner then.
    func release(_ p: Int) throws(UniFlowError) {
        let table = try partitionTable("uf_partition_release")
        try checkPartitionNumber(p, table, "uf_partition_release")
        guard table.owns(p) else {
            throw UniFlowError(.notOwner, "uf_partition_release: this node does not own \(table.name(of: p))")
        }
        if let refused = writeRecord(partition: p, body: .release(table.me.node)) { throw refused }
        partitioning!.setOwner(nil, of: p)
        if charts.any { stopServicesOfLost(p) }
    }

    /// `[{"p": 0, "version": 12, "owner": "a" | null, "mine": true}, ...]`, the
    /// global partition last.
    func partitionsJSON() throws(UniFlowError) -> JSONValue {
        let table = try partitionTable("uf_partitions_get")
        return .array((0...table.global).map { p in
            let entry = table[p]
            var object = JSONObject()
            object["p"] = .int(Int64(p))
            object["version"] = .int(Int64(entry.version))
            object["owner"] = entry.owner.map { .string($0.node) } ?? .null
            object["mine"] = .bool(table.owns(p))
            return .object(object)
        })
    }

    private func checkPartitionNumber(_ p: Int, _ table: PartitionTable, _ function: StaticString) throws(UniFlowError) {
        guard p >= 0 && p <= table.global else {
            throw UniFlowError(.invalidArgument, "\(function): no partition \(p) (partitions 0 to \(table.count - 1), and \(table.global), the global one)")
        }
    }
}

/// A partition's timers (docs/scale-out.md): every node keeps them armed as the
/// records arm them, and only the owner fires them.
extension Dispatcher {
    /// The partition a timer belongs to: its place's (a state timer), or its
    /// action's (an API timer).
    func timerPartition(_ index: Int32) -> Int {
        let table = partitioning!
        let record = time.store.records[Int(index)]
        if record.isState {
            return table.partition(ofKey: key(at: Place(feature: record.feature, instance: record.instance)))
        }
        guard let text = record.action, let action = try? JSONParser.parse(text).objectValue else { return table.global }
        return table.partition(ofKey: action["key"]?.stringValue)
    }

    func ownsTimer(_ index: Int32) -> Bool { partitioning!.owns(timerPartition(index)) }

    /// After a claim: the timers that waited for an owner of `p` are filed
    /// again, so that the overdue ones fire at the next chance (once each).
    func fileTimersAwaitingOwner() {
        guard !time.awaitingOwner.isEmpty else { return }
        var still: [(index: Int32, generation: UInt32)] = []
        for entry in time.awaitingOwner {
            let record = time.store.records[Int(entry.index)]
            guard record.generation == entry.generation, record.alive else { continue }
            guard ownsTimer(entry.index) else {
                still.append(entry)
                continue
            }
            if (try? time.store.fileAgain(entry.index, generation: entry.generation)) == true {
                time.noteArmed(record.deadline, timer: entry.index, self)
            } else {
                still.append(entry)
            }
        }
        time.awaitingOwner = still
    }
}
