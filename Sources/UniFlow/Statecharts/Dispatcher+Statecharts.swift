import CUniFlow

/// Statechart features in the pipeline (`docs/statecharts.md`): their step
/// replaces the precondition, a send's target and the commit of a flat feature
/// (`runSteps` hands them here); interceptors, the announcement, the journal
/// and undo entries are the same as for every action.
///
/// A statechart feature never takes the hot path, without a test there: its
/// live instances always store a payload object (so `FeatureSlot.hasPayload`
/// and `InstanceSlot.hasPayload` are set, which the hot path refuses), and
/// every slot of its states says it has fields (so an `initialize` is refused
/// too). Flat features pay one test of `charts.any` where a state's name is read.
extension Dispatcher {
    // MARK: Registration

    /// Handlers named by guards and `call` effects must be registered, as for
    /// every other guard (`UF_ENOTFOUND`).
    func checkStatechartHandlers(of parsed: [FeatureDefinition]) throws(UniFlowError) {
        for (i, definition) in parsed.enumerated() {
            guard let chart = definition.chart else { continue }
            for (n, node) in chart.nodes.enumerated() {
                let path = n == 0 ? "features[\(i)]" : "features[\(i)].\(StatechartParser.statePath(chart, n))"
                func effects(_ list: [StatechartEffect], _ key: String) throws(UniFlowError) {
                    for (j, effect) in list.enumerated() {
                        if case .call(let name, _) = effect, !bindings.hasHandler(name) {
                            throw UniFlowError(.notFound, "\(path).\(key)[\(j)].call: unknown handler '\(name)'")
                        }
                    }
                }
                for (j, invoke) in node.invokes.enumerated() where !charts.services.has(invoke.src) {
                    throw UniFlowError(.notFound, "\(path).invoke\(node.invokes.count > 1 ? "[\(j)]" : ""): unknown service '\(invoke.src)'")
                }
                try effects(node.entry, "entry")
                try effects(node.exit, "exit")
                var all = node.always.map { ("always", $0) }
                for entry in node.on { all += entry.transitions.map { ("on.\(entry.event)", $0) } }
                for (key, t) in all {
                    try effects(t.actions, "\(key).actions")
                    for name in t.guardCall?.handlers ?? [] where !bindings.hasHandler(name) {
                        throw UniFlowError(.notFound, "\(path).\(key).call: unknown handler '\(name)'")
                    }
                }
            }
        }
    }

    /// After `hot.addFeature`: keeps the chart, and marks its states' slots so
    /// that the hot path hands its actions to the general path.
    func registerStatechart(_ definition: FeatureDefinition, feature: Int32) {
        guard let chart = definition.chart else { return }
        let slot = hot.features[Int(feature)]
        for s in 0..<Int(slot.stateCount) { hot.states.pointer(Int(slot.stateBase) + s).pointee.hasFields = true }
        charts.add(chart, initial: definition.chartInitial, feature: feature)
        learnStatechartEventNames(feature)
    }

    // MARK: Names

    /// A statechart instance's configuration string for its state number; nil
    /// for a flat feature.
    @inline(__always)
    func statechartStateCName(_ state: Int32, feature: Int32) -> UnsafePointer<CChar>? {
        guard let table = charts[feature] else { return nil }
        return table.names[Int(state)].pointer
    }

    /// A state named in an action of a statechart feature: a path or a unique
    /// bare name, as the flat state index of its node.
    func statechartState(_ name: String, feature: Int32) throws(UniFlowError) -> Int32? {
        guard let table = charts[feature] else { return nil }
        switch table.chart.node(named: name) {
        case .success(let node): return Int32(node - 1)
        case .failure(let reason):
            if reason.hasPrefix("ambiguous") { throw UniFlowError(.schema, reason) }
            throw UniFlowError(.notFound, "unknown state '\(name)' of feature \(featureName(feature))")
        }
    }

    /// The path of the node an action's `from`/`into` names (its flat state
    /// index), for a statechart feature; nil for a flat one.
    func statechartNodePath(_ index: Int32, feature: Int32) -> String? {
        guard let table = charts[feature] else { return nil }
        return table.chart.nodes[Int(index) + 1].path
    }

    /// The instance value behind a state number.
    func statechartInstance(_ state: Int32, feature: Int32) -> StatechartInstance? {
        guard state >= 0, let table = charts[feature] else { return nil }
        return table.values[Int(state)]
    }

    /// `"history"` and `"status"` of a statechart instance's model JSON, only
    /// when not empty (and not active).
    func statechartModelExtras(_ state: Int32, feature: Int32, into object: inout JSONObject) {
        guard let table = charts[feature], state >= 0 else { return }
        let value = table.values[Int(state)]
        if !value.history.isEmpty {
            var history = JSONObject()
            for h in value.history.keys.sorted() {
                history[table.chart.nodes[h].path] = .array(value.history[h]!.map { .string(table.chart.nodes[$0].path) })
            }
            object["history"] = .object(history)
        }
        if value.status != .active { object["status"] = .string(value.status.text) }
    }

    /// `"entered"` and `"exited"` of a statechart mutation's JSON (and an
    /// internal microstep's action).
    func statechartMutationExtras(_ record: MutationRecord, into object: inout JSONObject) {
        guard charts[record.feature] != nil, let step = statechartStep(seq: record.seq) else { return }
        object["entered"] = .array(step.entered.map { .string($0) })
        object["exited"] = .array(step.exited.map { .string($0) })
        if let action = step.action, object["action"] != nil { object["action"] = .object(action) }
    }

    // MARK: uf_state_active

    /// Whether the state at `path` (any level) is active in the instance.
    func isStateActive(feature name: String, key: String?, path: String) throws(UniFlowError) -> Bool {
        let feature = try resolveFeature(name)
        let keyed = hot.features[Int(feature)].instances >= 0
        if keyed && key == nil { throw UniFlowError(.invalidArgument, "\(name) is keyed: a key is needed") }
        if !keyed && key != nil { throw UniFlowError(.invalidArgument, "\(name) is a single feature: it takes no key") }
        var place = Place(feature: feature)
        if let key { place.instance = key.withCString { hot.instanceTables[Int(hot.features[Int(feature)].instances)].find($0) } }
        let current = state(at: place)
        if let table = charts[feature] {
            let node: Int
            switch table.chart.node(named: path) {
            case .success(let found): node = found
            case .failure(let reason):
                if reason.hasPrefix("ambiguous") { throw UniFlowError(.schema, reason) }
                throw UniFlowError(.notFound, "unknown state '\(path)' of feature \(name)")
            }
            guard current >= 0 else { return false }
            return table.values[Int(current)].active.contains(node)
        }
        guard let index = stateIndex(named: path, feature: feature) else {
            throw UniFlowError(.notFound, "unknown state '\(path)' of feature \(name)")
        }
        return current >= 0 && current == index
    }

    // MARK: The statechart step

    /// Precondition, the macrostep (computed, not applied), interceptors, then
    /// every microstep committed: the first is the action's mutation, the
    /// others wait in `charts.pending` for `announceStatechartSteps`.
    func runStatechartSteps(_ action: ResolvedAction, table: StatechartTable, via: HostCallback<uf_via_fn>?,
                            policy: CommitPolicy) -> StepOutcome {
        let header = action.header
        let chart = table.chart
        let place = place(of: header)
        let current = state(at: place)
        let value = current >= 0 ? table.values[Int(current)] : StatechartRun.absent(chart)
        let from = header.from >= 0 ? Int(header.from) + 1 : -1
        let into = header.into >= 0 ? Int(header.into) + 1 : -1
        func path(_ node: Int) -> String { chart.nodes[node].path }
        let configuration = current >= 0 ? chart.configurationText(value.active) : ""

        // The precondition.
        if header.kind == .initialize {
            if current >= 0 { return .failed(rejection(header, "is already initialized (in state \(configuration))"), header) }
            if !table.allowsInitialization(into: into) {
                return .failed(rejection(header, "cannot be initialized into \(path(into)): not an initial state"), header)
            }
        } else if header.kind == .trigger && header.uninitialized {
            if current >= 0 { return .failed(rejection(header, "is initialized (in state \(configuration)), not absent"), header) }
        } else {
            if current < 0 {
                let expected = from >= 0 ? " (expected state \(path(from)))" : ""
                return .failed(rejection(header, "is not initialized\(expected)"), header)
            }
            if from >= 0 && !value.active.contains(from) {
                return .failed(rejection(header, "is in state \(configuration), not \(path(from))"), header)
            }
            if header.kind == .actualize && !value.active.contains(into) {
                return .failed(rejection(header, "is in state \(configuration), not \(path(into))"), header)
            }
            if value.status != .active && header.kind != .deinitialize && header.kind != .trigger {
                return .failed(rejection(header, "is \(value.status.text) (in state \(configuration))"), header)
            }
            if header.kind == .transition {
                if from < 0 && !header.same && value.active.contains(into) {
                    return .failed(rejection(header, "is already in state \(path(into))"), header)
                }
                let active = (0..<chart.nodes.count).map { value.active.contains($0) }
                if !chart.allows(from: max(from, 0), into: into, active: active) {
                    return .failed(rejection(header, "cannot transition from \(from >= 0 ? path(from) : configuration) into \(path(into)): not a declared transition"), header)
                }
            }
        }
        // A via runs as on a flat feature: after the interceptors, before
        // anything is computed; what it becomes is the action's payload.
        var given = action.payload
        if let via {
            if interceptorsApply(to: header.feature), let failure = intercept(header, current: current, payload: action.payload) {
                return .failed(failure, header)
            }
            switch runVia(via, action: header, place: place, current: current, given: action.payload) {
            case .failure(let failure): return .failed(failure, header)
            case .success(let became): if let became { given = became }
            }
        }
        if header.kind == .trigger {
            if via == nil, interceptorsApply(to: header.feature), let failure = intercept(header, current: current, payload: action.payload) {
                return .failed(failure, header)
            }
            return .triggered(header)
        }

        // The macrostep, computed without changing the model.
        var run = StatechartRun(chart: chart, instance: value, payload: current >= 0 ? payload(at: place) : JSONObject(),
                                maxMicrosteps: options.maxCascade)
        var host = DispatcherStatechartHost(dispatcher: self, header: header, place: place)
        var taken = true
        var eventName = header.eventName.map { String(cString: $0) } ?? ""
        // A statechart timer fires as a send of "after"; its id says which event it sends.
        if header.byTimer, let id = header.timer.map({ String(cString: $0) }), let timer = statechartTimer(id, table: table) {
            eventName = chart.nodes[timer.node].timers[timer.index].event
        }
        do throws(UniFlowError) {
            switch header.kind {
            case .initialize:
                for (k, v) in given ?? JSONObject() { run.payload[k] = v }
                try run.initialize(into: [into], host: &host)
            case .send:
                taken = try run.send(StatechartEvent(name: eventName, payload: action.payload ?? JSONObject()), host: &host)
            case .transition:
                for (k, v) in given ?? JSONObject() { run.payload[k] = v }
                try run.transition(from: max(from, 0), into: [into], reenter: header.same,
                                   event: StatechartEvent(name: "xstate.transition"), host: &host)
            case .actualize:
                try run.update(given ?? JSONObject(), event: StatechartEvent(name: "xstate.actualize"), host: &host)
            default:
                break
            }
        } catch {
            // Payload checks name `Feature.Configuration.field` already; the rest gets the subject.
            let named = error.message.hasPrefix("\(featureName(header.feature)).")
            return .failed(named ? error : UniFlowError(error.status, "\(subject(header)): \(error.message)"), header)
        }
        if header.kind != .send, let own = given, let failure = unknownField(in: own, after: run, table: table, feature: header.feature) {
            return .failed(failure, header)
        }
        if via == nil, interceptorsApply(to: header.feature), let failure = intercept(header, current: current, payload: action.payload) {
            return .failed(failure, header)
        }

        // Commit every microstep.
        do throws(UniFlowError) {
            if header.kind == .deinitialize {
                let key = header.key.map { String(cString: $0) }
                let mutation = try commitStatechartStep(header, kind: .deinitialization, at: place, from: current,
                                                        to: nil, payload: nil, paths: nil, policy: policy)
                for n in value.active { for i in chart.nodes[n].timers.indices { disarmStatechartTimer(feature: header.feature, key: key, node: n, index: i, chart: chart) } }
                let running = charts.services.invocations(feature: header.feature, key: key).map(\.serial)
                if !running.isEmpty { charts.pendingServices.append((header.feature, key, running, [])) }
                return .committed(mutation)
            }
            var first: CommittedMutation?
            var previous = current
            var where_ = place
            for (i, step) in run.microsteps.enumerated() {
                let kind: MutationKind = i == 0 && header.kind == .initialize ? .initialization
                    : (step.entered.isEmpty && step.exited.isEmpty ? .actualization : .transition)
                // The action's own microstep shows the action; the others show
                // what took them (an internal event or `always`).
                let own = i == 0 && (header.kind != .send || (taken && !step.isAlways))
                let internalAction: JSONObject? = own ? nil
                    : (step.isAlways ? ["kind": .string("always")] : ["kind": .string("send"), "event": .string(step.event ?? "")])
                let paths = StatechartRegistry.StepPaths(entered: step.entered.map(path), exited: step.exited.map(path),
                                                         action: internalAction)
                let mutation = try commitStatechartStep(header, kind: kind, at: where_, from: previous, to: step.instance,
                                                        payload: step.payload, paths: paths, policy: policy)
                where_ = mutation.place
                previous = mutation.record.newState
                if first == nil { first = mutation } else { charts.pending.append(mutation) }
            }
            try applyStatechartTimers(run.microsteps, header: header, chart: chart)
            try applyStatechartDeferred(run.deferred, header: header)
            planStatechartServices(run, header: header, chart: chart)
            if policy == .immediate && hot.journaling { try journalPlannedInvocations() }
            if !taken {
                let failure = UniFlowError(.rejected, "\(subject(header)) in state \(configuration) has no transition for event '\(eventName)'")
                if let first { charts.pending.insert(first, at: 0) }
                return .failed(failure, header)
            }
            if let first {
                if header.kind == .send && !host.consulted && policy == .immediate && !header.byTimer {
                    learnPlainSend(run, from: current, event: eventName, mutation: first, table: table)
                }
                return .committed(first)
            }
            // Taken, and nothing changed at all (a targetless transition that
            // assigned nothing): an actualization with the same state.
            return .committed(try commitStatechartStep(header, kind: .actualization, at: place, from: current,
                                                       to: run.instance, payload: run.payload,
                                                       paths: .init(entered: [], exited: [], action: nil), policy: policy))
        } catch {
            return .failed(error, header)
        }
    }

    /// An action's own payload may name only fields of the configuration its
    /// first microstep reaches (the feature's and its active states'); the
    /// engine drops fields that leave the schema, which must not hide a typo.
    private func unknownField(in own: JSONObject, after run: StatechartRun, table: StatechartTable,
                              feature: Int32) -> UniFlowError? {
        guard !own.isEmpty, let first = run.microsteps.first else { return nil }
        let chart = table.chart
        var declared = Set(chart.nodes[0].fields.map(\.name))
        for n in first.instance.active where n > 0 { declared.formUnion(chart.nodes[n].fields.map(\.name)) }
        guard let unknown = own.keys.sorted().first(where: { !declared.contains($0) }) else { return nil }
        return UniFlowError(.schema, "\(featureName(feature)).\(chart.configurationText(first.instance.active)).\(unknown): unknown field")
    }

    // MARK: Services

    /// What the macrostep means for the instance's services: the running ones
    /// of states it left are stopped, and the states it entered that are still
    /// active start theirs (once the action is announced: `finishStatechartAction`).
    private func planStatechartServices(_ run: StatechartRun, header: ActionHeader, chart: Statechart) {
        guard run.microsteps.contains(where: { !$0.services.isEmpty }) else { return }
        let key = header.key.map { String(cString: $0) }
        var running: [String: UInt64] = [:]
        for invocation in charts.services.invocations(feature: header.feature, key: key) {
            running["\(invocation.node).\(invocation.index)"] = invocation.serial
        }
        var stops: [UInt64] = []
        var entered: [(node: Int, index: Int)] = []
        for step in run.microsteps {
            for op in step.services {
                let slot = "\(op.node).\(op.index)"
                if op.start {
                    entered.removeAll { $0 == (op.node, op.index) }
                    entered.append((op.node, op.index))
                } else {
                    entered.removeAll { $0 == (op.node, op.index) }
                    if let serial = running.removeValue(forKey: slot) { stops.append(serial) }
                }
            }
        }
        let final = run.microsteps.last!.instance
        var starts: [StatechartServices.Invocation] = []
        if final.status == .active {
            let payload = run.microsteps.last!.payload
            let data: JSONValue = ["feature": ["state": .string(chart.configurationText(final.active)), "payload": .object(payload)],
                                   "model": modelJSON()]
            for (node, index) in entered where final.active.contains(node) {
                let invoke = chart.nodes[node].invokes[index]
                let input = invoke.input.map { (try? ActionTemplate.substitute($0, data: data)) ?? .null } ?? .null
                starts.append(.init(serial: 0, feature: header.feature, key: key, node: node, index: index,
                                    id: invoke.id, src: invoke.src, input: input))
            }
        }
        if !stops.isEmpty || !starts.isEmpty { charts.pendingServices.append((header.feature, key, stops, starts)) }
    }

    /// After an action's own mutation is announced: its later microsteps, then
    /// the services its macrostep stopped and started.
    func finishStatechartAction(_ action: ResolvedAction, policy: CommitPolicy) {
        if !charts.pending.isEmpty { announceStatechartSteps(action, policy: policy) }
        // A partitioned dispatcher's services wait for the record (Dispatcher+StatechartOwnership.swift).
        if policy == .staged { return stageStatechartServices() }
        while !charts.pendingServices.isEmpty {
            let next = charts.pendingServices.removeFirst()
            runStatechartServices(feature: next.feature, key: next.key, stops: next.stops, starts: next.starts)
        }
    }

    /// `"invocations"` of an instance's model JSON: what runs now (without serials).
    func statechartInvocations(feature: Int32, key: String?, into object: inout JSONObject) {
        let list = charts.services.invocations(feature: feature, key: key)
        guard !list.isEmpty else { return }
        object["invocations"] = .array(list.map(\.listed))
    }

    func currentInvocations() -> [ChartInstanceRef: [StatechartServices.Invocation]] {
        charts.any ? charts.services.byInstance() : [:]
    }

    // MARK: Timers

    /// A statechart timer's id: `Feature[key]:path:after:i` (the feature's own
    /// timers have the path `.`). API timers carry it, so `uf_timer_*` see them.
    private func statechartTimerID(feature: Int32, key: String?, node: Int, index: Int, chart: Statechart) -> String {
        let subject = key.map { "\(featureName(feature))[\($0)]" } ?? featureName(feature)
        return "\(subject):\(node == 0 ? "." : chart.nodes[node].path):after:\(index)"
    }

    /// The node and index a statechart timer's id names, if it is one of this feature's.
    private func statechartTimer(_ id: String, table: StatechartTable) -> (node: Int, index: Int)? {
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[parts.count - 2] == "after", let index = Int(parts[parts.count - 1]) else { return nil }
        let path = String(parts[parts.count - 3])
        let node: Int
        if path == "." {
            node = 0
        } else if case .success(let found) = table.chart.node(named: path) {
            node = found
        } else {
            return nil
        }
        guard index >= 0, index < table.chart.nodes[node].timers.count else { return nil }
        return (node, index)
    }

    /// Arms and disarms what the microsteps entered and left, in their order.
    private func applyStatechartTimers(_ steps: [StatechartMicrostep], header: ActionHeader, chart: Statechart) throws(UniFlowError) {
        let key = header.key.map { String(cString: $0) }
        for step in steps {
            for t in step.timers {
                if !t.arm {
                    disarmStatechartTimer(feature: header.feature, key: key, node: t.node, index: t.index, chart: chart)
                    continue
                }
                var action: JSONObject = ["kind": "send", "feature": .string(featureName(header.feature))]
                if let key { action["key"] = .string(key) }
                action["event"] = "after"
                try time.armAPITimer(action: JSONValue.object(action).jsonText, delay: chart.nodes[t.node].timers[t.index].ms,
                                     id: statechartTimerID(feature: header.feature, key: key, node: t.node, index: t.index, chart: chart),
                                     keep: false, self)
            }
        }
    }

    /// Delayed sends armed or cancelled, actions queued: what the macrostep's
    /// effects asked for, now that it is applied.
    private func applyStatechartDeferred(_ deferred: [StatechartDeferred], header: ActionHeader) throws(UniFlowError) {
        let key = header.key.map { String(cString: $0) }
        let subject = key.map { "\(featureName(header.feature))[\($0)]" } ?? featureName(header.feature)
        for item in deferred {
            switch item {
            case .send(let event, let payload, let delay, let id):
                var action: JSONObject = ["kind": "send", "feature": .string(featureName(header.feature))]
                if let key { action["key"] = .string(key) }
                action["event"] = .string(event)
                if !payload.isEmpty { action["payload"] = .object(payload) }
                try time.armAPITimer(action: JSONValue.object(action).jsonText, delay: delay,
                                     id: id.map { "\(subject):send:\($0)" }, keep: false, self)
            case .cancel(let id):
                let timer = "\(subject):send:\(id)"
                if time.apiIDs[timer] != nil { try time.cancelTimer(timer, self) }
            case .submit(let actions):
                for action in actions { queue.append(action) }
            }
        }
    }

    private func disarmStatechartTimer(feature: Int32, key: String?, node: Int, index: Int, chart: Statechart) {
        let id = statechartTimerID(feature: feature, key: key, node: node, index: index, chart: chart)
        if time.apiIDs[id] != nil { try? time.cancelTimer(id, self) }
    }

    /// Journals one microstep's mutation and stores the instance's new value
    /// (making or ending the instance); nobody is told yet.
    private func commitStatechartStep(_ action: ActionHeader, kind: MutationKind, at given: Place, from current: Int32,
                                      to value: StatechartInstance?, payload: JSONObject?,
                                      paths: StatechartRegistry.StepPaths?, policy: CommitPolicy) throws(UniFlowError) -> CommittedMutation {
        var place = given
        let newState: Int32 = value == nil ? -1 : try charts.intern(value!, feature: action.feature, arena: &names)
        let oldPayload = current >= 0 ? self.payload(at: place) : nil
        let keyed = hot.features[Int(action.feature)].instances >= 0
        if keyed && current < 0 { place = try createInstance(action.key!, of: action.feature) }
        var mutation = CommittedMutation(
            record: MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: model.seq &+ 1, kind: kind,
                                   feature: action.feature, oldState: current, newState: newState, key: key(at: place)),
            action: action, place: place)
        mutation.oldPayload = oldPayload
        // Always an object while live: see the type's comment on the hot path.
        mutation.newPayload = value == nil ? nil : (payload ?? JSONObject())
        if let paths { noteStatechartStep(seq: model.seq &+ 1, paths) }
        if hot.journaling {
            do throws(UniFlowError) {
                try journalMutation(mutation)
            } catch {
                if keyed && current < 0 { free(hot.instanceTables.pointer(Int(hot.features[Int(action.feature)].instances)).pointee.remove(place.instance)) }
                throw error
            }
        }
        if policy != .immediate && !(keyed && kind == .deinitialization) {
            batch!.undo.append(current < 0 && keyed
                ? .created(table: hot.features[Int(action.feature)].instances, slot: place.instance)
                : .stored(place, state: current, payload: current >= 0 ? oldPayload : nil))
        }
        if keyed && kind == .deinitialization {
            removeInstance(at: place)
        } else {
            store(newState, payload: value == nil ? nil : (payload ?? JSONObject()), at: place)
        }
        model.seq &+= 1
        if policy == .immediate { noteCommitted(mutation) }
        return mutation
    }

    /// Announces the microsteps committed after an action's own (under the
    /// action's policy), in order.
    func announceStatechartSteps(_ action: ResolvedAction, policy: CommitPolicy) {
        while !charts.pending.isEmpty {
            let mutation = charts.pending.removeFirst()
            if policy == .staged {
                staging!.actions.append(action)
                staging!.committed.append((mutation, registrationIDs.next))
                announceToBindings(mutation)
            } else {
                announce(mutation)
            }
        }
    }
}

import Glibc

/// Guards and effects of a statechart, answered by the dispatcher: rules over
/// `{model, event, feature}`, handlers through `callHandler`.
struct DispatcherStatechartHost: StatechartHost {
    let dispatcher: Dispatcher
    let header: ActionHeader
    let place: Place
    /// A guard or an effect was evaluated: the macrostep's outcome may depend
    /// on more than the configuration and the event's name (`StatechartStepCache`).
    var consulted = false

    private func data(_ event: StatechartEvent, run: StatechartRun, params: JSONValue? = nil) -> JSONValue {
        var feature: JSONObject = ["state": .string(run.configurationText), "payload": .object(run.payload),
                                   "active": .array(run.activePaths.map { .string($0) })]
        if let key = header.key { feature["key"] = .string(String(cString: key)) }
        // What guards, templates and handlers read: the model, the event, the
        // instance (`feature`, with `active`), and the payload as assigned so far.
        var object: JSONObject = ["model": dispatcher.modelJSON(), "mutation": .null,
                                  "event": ["name": .string(event.name), "payload": .object(event.payload)],
                                  "feature": .object(feature), "payload": .object(run.payload)]
        if let params { object["params"] = params }
        return .object(object)
    }

    private func prefix(_ event: StatechartEvent) -> String { "event '\(event.name)'" }

    mutating func guardHolds(_ t: StatechartTransition, event: StatechartEvent, run: StatechartRun) throws(UniFlowError) -> Bool {
        consulted = true
        let data = data(event, run: run)
        if let rule = t.guardRule {
            let result: JSONValue
            do throws(UniFlowError) {
                result = try JsonLogic.apply(rule, data: data)
            } catch {
                throw UniFlowError(.schema, "\(prefix(event)): rule error: \(error.message)")
            }
            if !isTruthy(result) { return false }
        }
        if let call = t.guardCall { return try holds(call, data: data, event: event, run: run) }
        return true
    }

    private func holds(_ call: GuardCall, data: JSONValue, event: StatechartEvent, run: StatechartRun) throws(UniFlowError) -> Bool {
        switch call {
        case .call(let name, let params):
            var given = data
            if let params, case .object(var object) = data {
                object["params"] = try ActionTemplate.substitute(params, data: data)
                given = .object(object)
            }
            let result = dispatcher.callHandler(name, mutation: "null", given: given, inGiven: false)
            if result.status < 0 {
                throw UniFlowError(.callback, "\(prefix(event)): handler '\(name)' failed (returned \(result.status))")
            }
            return result.status > 0
        case .and(let items):
            for item in items where !(try holds(item, data: data, event: event, run: run)) { return false }
            return true
        case .or(let items):
            for item in items where try holds(item, data: data, event: event, run: run) { return true }
            return false
        case .not(let item):
            return !(try holds(item, data: data, event: event, run: run))
        case .active(let node):
            return run.active(node)
        }
    }

    mutating func perform(_ effect: StatechartEffect, event: StatechartEvent, run: inout StatechartRun) throws(UniFlowError) {
        consulted = true
        switch effect {
        case .assign(let fields):
            let data = data(event, run: run)
            for (field, template) in fields {
                do throws(UniFlowError) {
                    run.payload[field] = try ActionTemplate.substitute(template, data: data)
                } catch {
                    throw UniFlowError(.schema, "\(prefix(event)): assign '\(field)': rule error: \(error.message)")
                }
            }
            run.noteAssigned()
        case .call(let name, let params):
            var given = data(event, run: run)
            if let params, case .object(var object) = given {
                object["params"] = try ActionTemplate.substitute(params, data: given)
                given = .object(object)
            }
            // As a `given` clause's handler: it may set an output, which is assigned.
            let result = dispatcher.callHandler(name, mutation: "null", given: given, inGiven: true)
            if result.status < 0 {
                throw UniFlowError(.callback, "\(prefix(event)): handler '\(name)' failed (returned \(result.status))")
            }
            if let output = result.output {
                guard case .object(let values) = output else {
                    throw UniFlowError(.schema, "\(prefix(event)): handler '\(name)': output: expected object, got \(output.jsonTypeName)")
                }
                for (key, value) in values { run.payload[key] = value }
                run.noteAssigned()
            }
        case .send(let name, let template, let delay, let id):
            var payload = JSONObject()
            if let template {
                if case .object(let object) = try ActionTemplate.substitute(template, data: data(event, run: run)) { payload = object }
            }
            if let delay {
                run.deferred.append(.send(name, payload: payload, delay: delay, id: id))
            } else {
                run.raise(StatechartEvent(name: name, payload: payload))
            }
        case .cancel(let id):
            run.deferred.append(.cancel(id))
        case .submit(let templates):
            let key = header.key.map { String(cString: $0) }
            let given = data(event, run: run)
            do throws(UniFlowError) {
                let actions = try dispatcher.templateActions(templates.map(CompiledTemplate.init),
                                                             data: JsonLogic.JSValue(wrapping: given),
                                                             ownFeature: header.feature, ownKey: key, path: "submit")
                var owned: [ResolvedAction] = []
                for action in actions { owned.append(try action.owned()) }
                run.deferred.append(.submit(owned))
            } catch {
                throw error.prefixed(prefix(event))
            }
        }
    }
}

// MARK: Models and journal lines

extension Dispatcher {
    func statechartLineExtras(_ state: Int32, feature: Int32, into line: inout JSONObject) {
        guard charts.any else { return }
        statechartModelExtras(state, feature: feature, into: &line)
    }

    /// A statechart instance read back from a model, a snapshot or a journal
    /// line: its state number and payload (checked against the fields of the
    /// feature and of its active states); nil for a flat feature.
    func statechartEntry(_ entry: JSONObject, feature: Int32, at path: String) throws(UniFlowError) -> (state: Int32, payload: JSONObject)? {
        guard charts.any, let table = charts[feature] else { return nil }
        for key in entry.keys where !["state", "payload", "history", "status", "invocations", "seq", "feature", "key", "kind", "at", "action"].contains(key) {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
        guard let text = entry["state"]?.stringValue else { throw UniFlowError(.schema, "\(path): missing key 'state'") }
        let value = try statechartInstance(text, history: entry["history"], status: entry["status"], chart: table.chart,
                                           feature: feature, at: path)
        var payload = JSONObject()
        if let given = entry["payload"] {
            guard case .object(let object) = given else { throw UniFlowError(.schema, "\(path).payload: expected object, got \(given.jsonTypeName)") }
            payload = object
        }
        var fields = table.chart.nodes[0].fields
        for n in value.active where n > 0 { fields += table.chart.nodes[n].fields }
        let checked = try StateDefinition(name: text, fields: fields).checkPayload(payload, feature: featureName(feature))
        // Always an object while live: see the hot path note at the top of this file.
        return (try charts.intern(value, feature: feature, arena: &names), checked)
    }

    /// The state number of a configuration string alone (no history, active),
    /// as a record's line names it.
    func statechartConfiguration(_ text: String, feature: Int32, at path: String) throws(UniFlowError) -> Int32 {
        guard let table = charts[feature] else { throw UniFlowError(.notFound, "unknown state '\(text)' of feature \(featureName(feature))") }
        let value = try statechartInstance(text, history: nil, status: nil, chart: table.chart, feature: feature, at: path)
        return try charts.intern(value, feature: feature, arena: &names)
    }

    /// The configuration string names the active leaves (their ancestors are
    /// active too, and it must be a configuration the chart can be in),
    /// `history` what history states remember, `status` whether it is done.
    private func statechartInstance(_ text: String, history: JSONValue?, status: JSONValue?, chart: Statechart,
                                    feature: Int32, at path: String) throws(UniFlowError) -> StatechartInstance {
        func node(_ name: String, at where_: String) throws(UniFlowError) -> Int {
            switch chart.node(named: name) {
            case .success(let n): return n
            case .failure(let reason): throw UniFlowError(.schema, "\(where_): \(reason)")
            }
        }
        var active = Array(repeating: false, count: chart.nodes.count)
        active[0] = true
        for leaf in text.split(separator: ",", omittingEmptySubsequences: false) {
            var n = try node(String(leaf), at: "\(path).state")
            guard chart.nodes[n].isLeaf else { throw UniFlowError(.schema, "\(path).state: \(chart.nodes[n].path) is not an atomic state") }
            while n > 0 { active[n] = true; n = chart.nodes[n].parent }
        }
        for (n, isActive) in active.enumerated() where isActive {
            let children = chart.stateChildren(n).filter { active[$0] }
            switch chart.nodes[n].kind {
            case .compound where children.count != 1, .parallel where children.count != chart.stateChildren(n).count:
                throw UniFlowError(.schema, "\(path).state: '\(text)' is not a configuration of \(featureName(feature))")
            default: break
            }
        }
        var value = StatechartInstance(active: active.indices.filter { active[$0] })
        if let history {
            guard case .object(let object) = history else { throw UniFlowError(.schema, "\(path).history: expected object, got \(history.jsonTypeName)") }
            for (name, list) in object {
                let h = try node(name, at: "\(path).history")
                guard chart.nodes[h].kind == .history else { throw UniFlowError(.schema, "\(path).history: \(name) is not a history state") }
                guard case .array(let items) = list else { throw UniFlowError(.schema, "\(path).history.\(name): expected array, got \(list.jsonTypeName)") }
                var nodes: [Int] = []
                for item in items {
                    guard case .string(let p) = item else { throw UniFlowError(.schema, "\(path).history.\(name): expected strings") }
                    nodes.append(try node(p, at: "\(path).history.\(name)"))
                }
                value.history[h] = nodes
            }
        }
        switch status {
        case nil: break
        case .string("done")?: value.status = .done
        case .string("failed")?: value.status = .failed
        case let other?: throw UniFlowError(.schema, "\(path).status: expected \"done\" or \"failed\", got \(other.jsonText)")
        }
        return value
    }
}
