import CUniFlow

/// What a staged call of a partitioned dispatcher decided about statechart
/// services: applied once its record is accepted, dropped when it is refused
/// (`docs/statecharts.md`, "On partitioned dispatchers").
struct StagedCharts {
    /// Services to stop and start after a macrostep, with the number of the
    /// call's mutations committed when it ended.
    struct Services {
        var after: Int
        var instance: ChartInstanceRef
        var stops: [UInt64]
        var starts: [StatechartServices.Invocation]
    }

    var services: [Services] = []

    var isEmpty: Bool { services.isEmpty }
}

/// A statechart mutation line as a follower reads it: besides its state and
/// payload, what the writer's model lists for the instance. A class: a flat
/// line carries nil, one word (`uf_record_apply_one` copies its lines).
final class StatechartLine {
    let invocations: [StatechartServices.Invocation]
    /// The microstep's paths; nil when the writer's mutation had none (a deinitialization).
    let paths: StatechartRegistry.StepPaths?

    init(invocations: [StatechartServices.Invocation], paths: StatechartRegistry.StepPaths?) {
        self.invocations = invocations
        self.paths = paths
    }
}

/// A record line that only says what a statechart instance's invocations are now.
final class InvocationLine {
    let instance: ChartInstanceRef
    let invocations: [StatechartServices.Invocation]

    init(instance: ChartInstanceRef, invocations: [StatechartServices.Invocation]) {
        self.instance = instance
        self.invocations = invocations
    }
}

/// Statechart instances in records: the writer's lines carry `invocations`
/// (and `entered`/`exited`, so that a follower's mutation reads as the
/// writer's); a follower installs configuration, history, status and payload,
/// and mirrors the invocations without running anything.
extension Dispatcher {
    // MARK: Writing

    /// The end of a statechart mutation's line in a record: the instance's
    /// invocations once the line's macrostep holds, the paths the microstep
    /// entered and exited, and its `action` (an internal microstep's own, as
    /// its mutation shows it).
    func writeStatechartLineTail(_ mutation: CommittedMutation, line i: Int, to w: inout JSONWriter) {
        let record = mutation.record
        let step = statechartStep(seq: record.seq)
        if record.newState >= 0 {
            let key = record.key.map { String(cString: $0) }
            let list = invocations(of: ChartInstanceRef(feature: record.feature, key: key), afterLine: i, charts.services.writing,
                                   value: statechartInstance(record.newState, feature: record.feature))
            if !list.isEmpty {
                w.raw(",\"invocations\":")
                w.write(.array(list.map(\.listed)))
            }
        }
        if let step {
            w.raw(",\"entered\":")
            w.write(.array(step.entered.map { .string($0) }))
            w.raw(",\"exited\":")
            w.write(.array(step.exited.map { .string($0) }))
        }
        w.raw(",\"action\":")
        w.write(.object(step?.action ?? actionDescription(mutation.action)))
    }

    /// What runs for an instance once the call's macrosteps up to line `i`
    /// hold: services change only between macrosteps, so a macrostep's
    /// microsteps before its last show what ran before it.
    /// (As `runDeferredServices` will run them: a state's service once, and
    /// only while the state is active in `value`, the instance at that line.)
    private func invocations(of instance: ChartInstanceRef, afterLine i: Int, _ staged: StagedCharts,
                             value: StatechartInstance?) -> [StatechartServices.Invocation] {
        var list = charts.services.invocations(feature: instance.feature, key: instance.key)
        for entry in staged.services where entry.after <= i + 1 && entry.instance == instance {
            list.removeAll { entry.stops.contains($0.serial) }
            for start in entry.starts {
                list.removeAll { $0.serial == 0 && $0.node == start.node && $0.index == start.index }
                list.append(start)
            }
        }
        guard let value, value.status == .active else { return [] }
        return list.filter { value.active.contains($0.node) }
    }

    /// Lines that only say what instances' invocations are once `staged`
    /// holds, for the live ones among `instances` that none of `mutations`
    /// lists. On a partitioned dispatcher, for instances whose invocation
    /// settled (`uf_service_done` / `_error`) with no record since that lists
    /// them: when the result's event is taken by nothing, only such a line
    /// tells followers that the invocation is over. In a journal, for every
    /// change (`Dispatcher+StatechartJournal.swift`).
    func invocationLines(_ instances: [ChartInstanceRef], besides mutations: [CommittedMutation],
                         _ staged: StagedCharts) -> [JSONObject] {
        var lines: [JSONObject] = []
        for instance in instances {
            let written = mutations.contains {
                $0.record.feature == instance.feature && $0.record.key.map { String(cString: $0) } == instance.key
            }
            guard !written, currentStatechartState(feature: instance.feature, key: instance.key) >= 0 else { continue }
            lines.append(invocationLine(instance, invocations(of: instance, afterLine: mutations.count, staged, value: chartValue(of: instance))))
        }
        return lines
    }

    /// `{"invocations": [{"id", "src", "input"}], "feature", "key"?}`.
    func invocationLine(_ instance: ChartInstanceRef, _ list: [StatechartServices.Invocation]) -> JSONObject {
        var line: JSONObject = ["invocations": .array(list.map(\.listed)),
                                "feature": .string(featureName(instance.feature))]
        if let key = instance.key { line["key"] = .string(key) }
        return line
    }

    /// Adds the lines of instances of partition `p` whose invocation settled
    /// (`settledInvocationLines`) to a staged call's timer lines; returns those
    /// instances (waiting again if the record is refused).
    func addSettledInvocationLines(_ timerLines: inout [(after: Int, line: JSONObject)], partition p: Int,
                                   _ staged: StagedCall) -> [ChartInstanceRef] {
        let settled = charts.services.takeUnwritten { lives($0, in: p) }
        guard !settled.isEmpty else { return [] }
        let mutations = staged.committed.map(\.mutation)
        timerLines += invocationLines(settled, besides: mutations, staged.charts).map { (mutations.count, $0) }
        return settled
    }

    // MARK: Reading

    /// A statechart line's state (configuration, history, status) and payload,
    /// checked as a model's entry is, and what it lists besides.
    func statechartLine(_ line: JSONObject, feature: Int32, key: String?, kind: MutationKind,
                        name: String) throws(UniFlowError) -> (state: Int32, payload: JSONObject?, chart: StatechartLine) {
        var steps: StatechartRegistry.StepPaths? = nil
        if line["entered"] != nil || line["exited"] != nil {
            steps = .init(entered: try paths(line["entered"], "entered"), exited: try paths(line["exited"], "exited"), action: nil)
        }
        guard kind != .deinitialization else { return (-1, nil, StatechartLine(invocations: [], paths: steps)) }
        var entry = line
        entry["entered"] = nil
        entry["exited"] = nil
        guard let (state, payload) = try statechartEntry(entry, feature: feature, at: name) else {
            throw UniFlowError(.schema, "\(name) is not a statechart feature")
        }
        let list = try listedInvocations(line["invocations"], feature: feature, key: key, state: state, at: name)
        return (state, payload, StatechartLine(invocations: list, paths: steps))
    }

    private func paths(_ value: JSONValue?, _ key: String) throws(UniFlowError) -> [String] {
        guard let value else { return [] }
        guard case .array(let items) = value else { throw UniFlowError(.schema, "'\(key)': expected an array of paths, got \(value.jsonTypeName)") }
        var result: [String] = []
        for item in items {
            guard case .string(let path) = item else { throw UniFlowError(.schema, "'\(key)': expected an array of paths, got \(item.jsonTypeName) in it") }
            result.append(path)
        }
        return result
    }

    /// `invocations` of a line or a snapshot's instance: each must be an
    /// `invoke` of a state active in `state`, which it is filed under.
    func listedInvocations(_ value: JSONValue?, feature: Int32, key: String?, state: Int32,
                           at name: String) throws(UniFlowError) -> [StatechartServices.Invocation] {
        guard let value else { return [] }
        guard case .array(let items) = value else {
            throw UniFlowError(.schema, "\(name).invocations: expected an array, got \(value.jsonTypeName)")
        }
        guard let table = charts[feature] else { return [] }
        let active = table.values[Int(state)].active
        var result: [StatechartServices.Invocation] = []
        for (j, item) in items.enumerated() {
            guard let object = item.objectValue, let id = object["id"]?.stringValue, let src = object["src"]?.stringValue else {
                throw UniFlowError(.schema, "\(name).invocations[\(j)]: expected {\"id\", \"src\", \"input\"}, got \(item.jsonText)")
            }
            var found: (node: Int, index: Int)? = nil
            for node in active {
                if let index = table.chart.nodes[node].invokes.firstIndex(where: { $0.id == id && $0.src == src }) {
                    found = (node, index)
                    break
                }
            }
            guard let found else {
                let subject = key.map { "\(featureName(feature))[\($0)]" } ?? featureName(feature)
                throw UniFlowError(.schema, "\(name).invocations[\(j)]: no active state of \(subject) invokes '\(src)' as '\(id)'")
            }
            result.append(.init(serial: 0, feature: feature, key: key, node: found.node, index: found.index,
                                id: id, src: src, input: object["input"] ?? .null))
        }
        return result
    }

    /// A line that only says what an instance's invocations are now.
    func checkedInvocationLine(_ line: JSONObject, partition p: Int) throws(UniFlowError) -> InvocationLine {
        guard let featureName = line["feature"]?.stringValue else { throw UniFlowError(.schema, "missing 'feature'") }
        let feature = try resolveFeature(featureName)
        guard charts[feature] != nil else { throw UniFlowError(.schema, "\(featureName) is not a statechart feature") }
        let key = try ModelSnapshot.key(line["key"], feature: feature, on: self)
        let name = "\(featureName)\(key.map { "[\($0)]" } ?? "")"
        guard partitioning!.partition(ofKey: key) == p else {
            throw UniFlowError(.schema, "\(name) does not live in \(partitioning!.name(of: p))")
        }
        let state = currentStatechartState(feature: feature, key: key)
        guard state >= 0 else { throw UniFlowError(.schema, "\(name) is not initialized on this node") }
        return InvocationLine(instance: ChartInstanceRef(feature: feature, key: key),
                              invocations: try listedInvocations(line["invocations"], feature: feature, key: key, state: state, at: name))
    }

    private func currentStatechartState(feature: Int32, key: String?) -> Int32 {
        guard let key else { return state(at: Place(feature: feature)) }
        guard let table = instanceTable(of: feature) else { return -1 }
        let slot = key.withCString { hot.instanceTables[Int(table)].find($0) }
        return slot >= 0 ? state(at: Place(feature: feature, instance: slot)) : -1
    }

    /// After a statechart line's mutation is installed: the payload stays an
    /// object (as the writer stores it), the mutation shows the paths the
    /// writer's did, and the instance lists the writer's invocations.
    func finishStatechartInstall(_ committed: inout CommittedMutation, _ line: StatechartLine) {
        let instance = ChartInstanceRef(feature: committed.record.feature, key: committed.record.key.map { String(cString: $0) }
                                        ?? committed.action.key.map { String(cString: $0) })
        if committed.record.newState >= 0 {
            if committed.newPayload == nil {
                committed.newPayload = JSONObject()
                store(committed.record.newState, payload: JSONObject(), at: committed.place)
            }
            if committed.oldPayload == nil && committed.record.oldState >= 0 { committed.oldPayload = JSONObject() }
        }
        if let paths = line.paths { noteStatechartStep(seq: committed.record.seq, paths) }
        charts.services.mirror(instance, line.invocations)
    }

    /// Whether an instance lives in partition `p`.
    func lives(_ instance: ChartInstanceRef, in p: Int) -> Bool {
        partitioning!.partition(ofKey: instance.key) == p
    }
}
