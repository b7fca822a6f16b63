/// A journal's lines about statechart services (`docs/journal.md`). An
/// instance's invocations change after its macrostep's mutations (services
/// start and stop once the macrostep is applied) and when one settles, so each
/// change gets a line of its own, `{"invocations": [...], "feature", "key"?,
/// "at"}`, listing what the instance runs from then on; a replay starts what
/// the last such line of each instance lists, with the input it lists
/// (`ModelSnapshot.apply(invocationLine:on:)`). A partitioned dispatcher's
/// records say the same (`Dispatcher+StatechartRecords.swift`), and its
/// journal copies their lines.
extension Dispatcher {
    /// After an immediate macrostep is committed, before its services run:
    /// the lists they will leave, written as the macrostep's timer lines are
    /// (a line that cannot be written fails the action).
    func journalPlannedInvocations() throws(UniFlowError) {
        guard !charts.pendingServices.isEmpty else { return }
        let staged = StagedCharts(services: charts.pendingServices.map {
            .init(after: 0, instance: ChartInstanceRef(feature: $0.feature, key: $0.key), stops: $0.stops, starts: $0.starts)
        })
        for line in invocationLines(staged.instances, besides: [], staged) { try journalTimer(line) }
    }

    /// Lines for a batch or a staged call that journals: what each instance
    /// its services touch (and each of `settled`) runs once they have run, at
    /// the time it ends.
    func journalInvocationLines(_ staged: StagedCharts, settled: [ChartInstanceRef] = []) -> [JSONObject] {
        var instances = settled
        for instance in staged.instances where !instances.contains(instance) { instances.append(instance) }
        return invocationLines(instances, besides: [], staged).map { journal!.stamped($0, self) }
    }

    /// `uf_service_done` / `_error` on a journaling dispatcher, before the
    /// invocation stops: the line that the instance no longer runs it (one
    /// that cannot be written fails the call, and the invocation runs on).
    /// While services are being started (a `start` that settles at once, or
    /// fails), the line waits until they all have (`journalUnwrittenInvocations`),
    /// so that it lists them too.
    func journalSettlement(of invocation: StatechartServices.Invocation) throws(UniFlowError) {
        let instance = ChartInstanceRef(feature: invocation.feature, key: invocation.key)
        if charts.services.runDepth > 0 { return charts.services.noteUnwritten(instance) }
        let list = charts.services.invocations(feature: invocation.feature, key: invocation.key).filter { $0.serial != invocation.serial }
        try journal!.write(journal!.stamped(invocationLine(instance, list), self))
    }

    /// The outermost `runStatechartServices` ended: a line for each instance
    /// whose invocation settled meanwhile. Nothing can be undone now, so a line
    /// that cannot be written is reported (a replay of this journal would start
    /// that invocation again).
    func journalUnwrittenInvocations() {
        let instances = charts.services.takeUnwritten { _ in true }
        for line in invocationLines(instances, besides: [], StagedCharts()) {
            do throws(UniFlowError) {
                try journal!.write(journal!.stamped(line, self))
            } catch {
                if reportingActive { report(.dropped, action: nil, failure: error.prefixed("the journal's line of \(line["feature"]?.stringValue ?? "")'s invocations")) }
            }
        }
    }
}

extension StagedCharts {
    /// The instances whose services these entries stop or start, once each, in order.
    var instances: [ChartInstanceRef] {
        var result: [ChartInstanceRef] = []
        for entry in services where !result.contains(entry.instance) { result.append(entry.instance) }
        return result
    }
}
