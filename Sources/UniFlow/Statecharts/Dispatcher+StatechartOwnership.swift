import CUniFlow

/// Statechart services on a partitioned dispatcher (`docs/statecharts.md`, "On
/// partitioned dispatchers"): they run only where the instance's partition is
/// owned, start and stop only once the record of the macrostep that decided
/// it is accepted, start again (new serials) when this node claims the
/// partition, and stop when it stops owning it. Everywhere else the model
/// lists them as the log does, and nothing runs.
extension Dispatcher {
    /// Inside a staged call, after a macrostep: its services wait for the record.
    func stageStatechartServices() {
        let after = staging!.committed.count
        for next in charts.pendingServices {
            staging!.charts.services.append(.init(after: after, instance: ChartInstanceRef(feature: next.feature, key: next.key),
                                                  stops: next.stops, starts: next.starts))
        }
        charts.pendingServices.removeAll()
    }

    /// The staged call's record is accepted (or it wrote none): services stop
    /// and start as its macrosteps decided, in their order.
    func runStagedServices(_ staged: StagedCharts) {
        for entry in staged.services {
            runStatechartServices(feature: entry.instance.feature, key: entry.instance.key, stops: entry.stops, starts: entry.starts)
        }
    }

    /// This node owns `p` now: the invocations its copy of the partition lists
    /// start, with new serials.
    func startServicesOfClaimed(_ p: Int) {
        guard charts.any else { return }
        charts.services.forgetOrphans { lives($0, in: p) }
        let starts = charts.services.takeMirrored { lives($0, in: p) }
        if !starts.isEmpty { runStatechartServices(feature: -1, key: nil, stops: [], starts: starts) }
    }

    /// This node no longer owns `p` (a release, another node's claim, a
    /// snapshot naming another owner): what runs for its instances stops, and
    /// the model lists it still, as the log does. A result that arrives for
    /// one of them later is `UF_ENOTOWNER`.
    func stopServicesOfLost(_ p: Int) {
        guard charts.any else { return }
        let running = charts.services.runningInvocations { lives($0, in: p) }
        guard !running.isEmpty else { return }
        var lists: [ChartInstanceRef: [StatechartServices.Invocation]] = [:]
        for invocation in running {
            let instance = ChartInstanceRef(feature: invocation.feature, key: invocation.key)
            charts.services.orphan(invocation.serial, of: instance)
            var kept = invocation
            kept.serial = 0
            lists[instance, default: []].append(kept)
        }
        runStatechartServices(feature: -1, key: nil, stops: running.map(\.serial), starts: [])
        for (instance, list) in lists { charts.services.mirror(instance, list) }
    }

    /// Applying a record or a snapshot changed who owns `p`.
    func ownershipMoved(_ p: Int, wasMine: Bool) {
        let isMine = partitioning!.owns(p)
        if wasMine && !isMine { stopServicesOfLost(p) }
    }

    /// `uf_service_done` / `_error` on a partitioned dispatcher: refused for an
    /// instance this node does not process (nil: it does).
    func settlementOwnership(_ serial: UInt64, error: Bool) -> UniFlowError? {
        guard let table = partitioning else { return nil }
        let instance: ChartInstanceRef
        var what = "was stopped here"
        if let running = charts.services.running[serial] {
            // Not expected: what runs here is stopped when the partition is lost.
            instance = ChartInstanceRef(feature: running.feature, key: running.key)
            guard !table.owns(table.partition(ofKey: instance.key)) else { return nil }
            what = "is not this node's"
        } else if let orphan = charts.services.orphaned[serial] {
            instance = orphan
        } else {
            return nil
        }
        let p = table.partition(ofKey: instance.key)
        let subject = instance.key.map { "\(featureName(instance.feature))[\($0)]" } ?? featureName(instance.feature)
        let owner = table[p].owner.map { "owned by node '\($0.node)'" } ?? "owned by no node"
        let function = error ? "uf_service_error" : "uf_service_done"
        return UniFlowError(.notOwner, "\(function): invocation \(serial) of \(subject) \(what): \(subject) lives in \(table.name(of: p)), \(owner)")
    }
}
