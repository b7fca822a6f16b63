import CUniFlow
import Glibc

/// Partition snapshots (`uf_partition_snapshot`): one partition's contents at a
/// version, as a record that starts a node without the partition's whole
/// history and lets a log drop the records it covers.
extension Dispatcher {
    /// The places of partition `p`, in registration order and, for keyed
    /// features, instance creation order.
    private func places(of p: Int, _ table: PartitionTable) -> [Place] {
        var result: [Place] = []
        for f in 0..<Int32(hot.features.count) {
            if let instances = instanceTable(of: f) {
                guard p != table.global else { continue }
                forEachInstance(ofTable: instances) { slot, key in
                    if table.partition(ofKey: key) == p { result.append(Place(feature: f, instance: slot)) }
                }
            } else if p == table.global {
                result.append(Place(feature: f))
            }
        }
        return result
    }

    /// `{"uniflow_record": 1, "fingerprint", "partitions", "partition", "version",
    /// "prev", "snapshot": {"model": ...}, "owner": {...} | null, "after"?}`.
    func partitionSnapshot(_ p: Int) throws(UniFlowError) -> JSONValue {
        let table = try partitionTable("uf_partition_snapshot")
        guard p >= 0 && p <= table.global else {
            throw UniFlowError(.invalidArgument, "uf_partition_snapshot: no partition \(p) (partitions 0 to \(table.count - 1), and \(table.global), the global one)")
        }
        var model = JSONObject()
        for place in places(of: p, table) where state(at: place) >= 0 {
            let name = featureName(place.feature)
            if let key = key(at: place) {
                var instances = model[name]?.objectValue ?? JSONObject()
                instances[String(cString: key)] = stateJSON(at: place)
                model[name] = .object(instances)
            } else {
                model[name] = stateJSON(at: place)
            }
        }
        var record: JSONObject = ["uniflow_record": 1, "fingerprint": .string(definitionsFingerprint),
                                  "partitions": .int(Int64(table.count)), "partition": .int(Int64(p)),
                                  "version": .int(Int64(table[p].version)),
                                  "prev": table[p].lastHash.map { .string(FNV1a.hex($0)) } ?? .null,
                                  "snapshot": ["model": .object(model), "timers": partitionTimersJSON(p)]]
        record["owner"] = table[p].owner.map { ["node": .string($0.node), "incarnation": .string($0.incarnation)] } ?? .null
        if p == table.global { record["after"] = homes.json() }
        return .object(record)
    }

    /// Replaces partition `p` with a snapshot above its version: its instances
    /// (or single features) become the snapshot's, with no mutation notified;
    /// state timers of what it installs are armed afresh.
    func applySnapshot(_ record: JSONObject, partition p: Int, version: UInt64, table: PartitionTable) throws(UniFlowError) {
        guard version > table[p].version else { return }
        guard let snapshot = record["snapshot"]?.objectValue, let modelJSON = snapshot["model"] else {
            throw UniFlowError(.schema, "'snapshot': expected an object with 'model'")
        }
        let model = try validatedModel(modelJSON)
        // Everything in it must live in this partition.
        for (f, entry) in model.features.enumerated() where entry.state >= 0 && p != table.global {
            throw UniFlowError(.schema, "snapshot: \(featureName(Int32(f))) lives in the global partition, not \(table.name(of: p))")
        }
        for (f, list) in model.instances {
            for (key, _) in list where table.partition(ofKey: key) != p {
                throw UniFlowError(.schema, "snapshot: \(featureName(f))[\(key)] does not live in \(table.name(of: p))")
            }
        }
        var hash: UInt32? = nil
        switch record["prev"] {
        case .some(.null), nil: hash = nil
        case .some(.string(let text)):
            guard text.utf8.count == 8, let value = UInt32(text, radix: 16) else {
                throw UniFlowError(.schema, "'prev': expected 8 hex digits, got \"\(text)\"")
            }
            hash = value
        case .some(let other): throw UniFlowError(.schema, "'prev': expected a string, got \(other.jsonTypeName)")
        }
        var owner: PartitionTable.Owner? = nil
        if let o = record["owner"]?.objectValue {
            guard let node = o["node"]?.stringValue, let incarnation = o["incarnation"]?.stringValue else {
                throw UniFlowError(.schema, "'owner': expected {\"node\", \"incarnation\"}")
            }
            owner = PartitionTable.Owner(node: node, incarnation: incarnation)
        }
        let after = HomeBindings.parse(record["after"])
        let timers = try snapshotTimers(snapshot["timers"])
        // Nothing runs here for a partition another node owns (or none).
        let wasMine = table.owns(p)
        if charts.any && wasMine { stopServicesOfLost(p) }
        // What the partition has now leaves; what the snapshot has comes in.
        for place in places(of: p, table).reversed() where state(at: place) >= 0 {
            let keyed = instanceTable(of: place.feature) != nil
            stateChanged(at: place, kind: .deinitialization, into: -1, field: timerField(place))
            if keyed { removeInstance(at: place) } else { store(-1, payload: nil, at: place) }
        }
        for (f, entry) in model.features.enumerated() where entry.state >= 0 {
            let place = Place(feature: Int32(f))
            stateChanged(at: place, kind: .initialization, into: entry.state, field: timerField(place))
            store(entry.state, payload: entry.payload, at: place)
        }
        for (f, list) in model.instances.sorted(by: { $0.key < $1.key }) {
            for (key, entry) in list {
                let place = try key.withCName { (c) throws(UniFlowError) -> Place in try createInstance(c!, of: f) }
                stateChanged(at: place, kind: .initialization, into: entry.state, field: timerField(place))
                store(entry.state, payload: entry.payload, at: place)
            }
        }
        installSnapshotTimers(timers, partition: p)
        partitioning!.replace(p, version: version, hash: hash, owner: owner)
        if charts.any {
            // The partition's instances list what the snapshot's list.
            _ = charts.services.takeMirrored { lives($0, in: p) }
            for (instance, list) in model.invocations { charts.services.mirror(instance, list) }
            if partitioning!.owns(p) { startServicesOfClaimed(p) }
        }
        if let after { homes.committed(after) }
        changes.everything = true
        changes.any = true
    }
}
