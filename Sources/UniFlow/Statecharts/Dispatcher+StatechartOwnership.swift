import CUniFlow

/// Statechart services that wait past their macrostep, and who runs them
/// (`docs/statecharts.md`, "On partitioned dispatchers"). A batch's services,
/// and a partitioned call's, start and stop once all of it holds (its record
/// accepted). On a partitioned dispatcher they run only where the instance's
/// partition is owned: they start again (new serials) when this node claims
/// the partition, and stop when it stops owning it. Everywhere else the model
/// lists them as the log does, and nothing runs.
extension Dispatcher {
    /// Inside a staged call, after a macrostep: its services wait for the record.
    func stageStatechartServices() {
        staging!.charts.services += takePendingServices(after: staging!.committed.count)
    }

    /// What the last macrostep stops and starts, taken out to run later.
    func takePendingServices(after: Int) -> [StagedCharts.Services] {
        defer { charts.pendingServices.removeAll() }
        return charts.pendingServices.map {
            .init(after: after, instance: ChartInstanceRef(feature: $0.feature, key: $0.key), stops: $0.stops, starts: $0.starts)
        }
    }

    /// The staged call's record is accepted (or it wrote none): services stop
    /// and start as its macrosteps decided.
    func runStagedServices(_ staged: StagedCharts) {
        guard !staged.services.isEmpty else { return }
        runDeferredServices(staged.services)
    }

    /// Services several macrosteps decided, applied together once they all
    /// hold (a staged call, a batch): what they stop, then what they start.
    /// A later macrostep may have left a state whose service an earlier one
    /// planned to start (it stopped nothing, as nothing ran yet), or entered
    /// it again: a state starts its service once, and only if it is still
    /// active when the services run.
    func runDeferredServices(_ entries: [StagedCharts.Services]) {
        var stops: [UInt64] = []
        var starts: [StatechartServices.Invocation] = []
        for entry in entries {
            stops += entry.stops
            for start in entry.starts {
                starts.removeAll { $0.feature == start.feature && $0.key == start.key && $0.node == start.node && $0.index == start.index }
                starts.append(start)
            }
        }
        starts.removeAll { !invokes($0.node, ChartInstanceRef(feature: $0.feature, key: $0.key)) }
        runStatechartServices(feature: -1, key: nil, stops: stops, starts: starts)
    }

    /// Whether an instance is live, not done or failed, and in state `node`.
    func invokes(_ node: Int, _ instance: ChartInstanceRef) -> Bool {
        guard let value = chartValue(of: instance) else { return false }
        return value.status == .active && value.active.contains(node)
    }

    /// An instance's statechart value (nil: not live).
    func chartValue(of instance: ChartInstanceRef) -> StatechartInstance? {
        var place = Place(feature: instance.feature)
        if let key = instance.key {
            guard let table = instanceTable(of: instance.feature) else { return nil }
            place.instance = key.withCString { hot.instanceTables[Int(table)].find($0) }
            guard place.instance >= 0 else { return nil }
        }
        return statechartInstance(state(at: place), feature: instance.feature)
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
