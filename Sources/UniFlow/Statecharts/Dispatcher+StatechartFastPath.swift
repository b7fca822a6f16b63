import CUniFlow

// The statechart fast path: `uf_dispatch` of a send to a statechart feature
// whose outcome the general path has already worked out once
// (`StatechartStepCache` says when that is sound). Such a send is what a host
// does in a loop, and the engine (selection, exit and entry sets, history, the
// macrostep, a fresh `StatechartRun` with its arrays) costs a hundred times a
// flat toggle. Here it costs a cache probe: the new state number, the
// mutation's kind and its `entered`/`exited` come from the entry, and the rest
// is what the flat hot path does (Pipeline/Dispatcher+HotPath.swift).
//
// Like the flat hot path, it never decides anything the general path would
// decide differently: anything it does not serve (a journal, a partitioned
// dispatcher, reports, interceptors, watches, bindings on the feature, a timer
// at the place, an entry the cache does not hold) returns nil before anything
// happened, and the general path runs — and learns the send for next time.

extension Dispatcher {
    /// Numbers the chart's events in the feature's event scope of `hot.names`,
    /// so that the fast path finds them from the caller's C bytes. Best effort:
    /// without memory for the names, sends simply stay on the general path.
    func learnStatechartEventNames(_ feature: Int32) {
        guard let table = charts[feature] else { return }
        do throws(UniFlowError) {
            try hot.chartSteps.allocate()
            for (event, number) in table.events.sorted(by: { $0.value < $1.value }) {
                try hot.names.insert(try names.store(event), scope: HotStorage.eventScope(feature), value: number)
            }
        } catch {
            return
        }
    }

    /// After the general path committed a send: remembers it when it was plain.
    func learnPlainSend(_ run: StatechartRun, from current: Int32, event: String, mutation: CommittedMutation,
                        table: StatechartTable) {
        guard current >= 0, hot.chartSteps.isAllocated, run.microsteps.count == 1, run.deferred.isEmpty,
              let number = table.events[event] else { return }
        let step = run.microsteps[0]
        guard step.timers.isEmpty, step.services.isEmpty, step.instance.status == .active,
              !step.entered.contains(where: { !table.chart.nodes[$0].fields.isEmpty }),
              !step.exited.contains(where: { !table.chart.nodes[$0].fields.isEmpty }),
              let paths = statechartStep(seq: mutation.record.seq) else { return }
        hot.chartSteps.learn(.init(feature: mutation.record.feature, state: current, event: number,
                                   newState: mutation.record.newState, paths: charts.plainStepNumber(paths),
                                   kind: mutation.record.kind, lendsPayload: table.hasFields))
    }

    /// Applies a send the cache holds and notifies the subscribers; nil,
    /// having changed nothing, for anything else.
    @inline(never)
    func dispatchStatechartFast(_ a: UnsafePointer<uf_action>) -> Int32? {
        guard a.pointee.kind == UF_ACTION_SEND, let featureName = a.pointee.feature, let eventName = a.pointee.event,
              a.pointee.from == nil, a.pointee.into == nil, a.pointee.same == 0, a.pointee.uninitialized == 0,
              !hot.journaling, !hot.partitioned, !reportingActive, !hot.interceptingAll, !hot.watchingAll else { return nil }
        var feature = hot.names.recall(featureName, scope: -1)
        if feature < 0 { feature = hot.findFeature(featureName) }
        guard feature >= 0 else { return nil }
        let slot = hot.features.pointer(Int(feature))
        guard !slot.pointee.intercepted, !slot.pointee.watched else { return nil }
        var event = hot.names.recall(eventName, scope: HotStorage.eventScope(feature))
        if event < 0 { event = hot.findEvent(eventName, of: feature) }
        guard event >= 0 else { return nil }

        let table = slot.pointee.instances
        let current: Int32
        var instanceSlot: UnsafeMutablePointer<InstanceSlot>? = nil
        var key: UnsafePointer<CChar>? = nil
        if table >= 0 {
            guard let given = a.pointee.key,
                  let found = hot.instanceTables.pointer(Int(table)).pointee.findRemembering(given),
                  found.pointee.timers == -1 else { return nil }
            instanceSlot = found
            current = found.pointee.state
            key = UnsafePointer(found.pointee.key)
        } else {
            guard a.pointee.key == nil, slot.pointee.timers == -1 else { return nil }
            current = slot.pointee.state
        }
        guard current >= 0, let entry = hot.chartSteps.find(feature: feature, state: current, event: event),
              (slot.pointee.bindingKinds | hot.anyBindingKinds) & MutationKind.bit(entry.pointee.kind) == 0 else { return nil }

        // Plain: no interceptor, watch, binding or timer to serve; apply, note, notify.
        cascade.processed &+= 1
        let newState = entry.pointee.newState
        let lendsPayload = entry.pointee.lendsPayload
        var instanceList: Int32 = -1
        var place = Place(feature: feature)
        if let instanceSlot {
            instanceSlot.pointee.state = newState
            instanceList = instanceSlot.pointee.subscribers
            if lendsPayload { place.instance = hot.instanceTables[Int(table)].index(of: instanceSlot) }
        } else {
            slot.pointee.state = newState
        }
        model.seq &+= 1
        hot.chartSteps.note(seq: model.seq, paths: entry.pointee.paths)
        var record = MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: model.seq,
                                    kind: MutationKind(rawValue: entry.pointee.kind) ?? .transition,
                                    feature: feature, oldState: current, newState: newState, key: key)
        if lendsPayload {
            // The payload is the same before and after: no field came or went.
            let payload = storedPayload(at: place)
            scratch.delivery.oldPayload = payload
            scratch.delivery.newPayload = payload
        }
        scratch.delivery.hotAction = HotAction(action: a, kind: .send, feature: feature, from: -1, into: -1, event: event)
        deliver(&record, instanceList: instanceList, subscribedBefore: registrationIDs.next, charts: true)
        if lendsPayload { scratch.delivery.reset() } else { scratch.delivery.resetHot() }
        return Status.ok.rawValue
    }

    /// Notes a general-path microstep's `entered`/`exited` under its `seq`.
    func noteStatechartStep(seq: UInt64, _ paths: StatechartRegistry.StepPaths) {
        charts.keepInline(seq: seq, paths)
        if hot.chartSteps.isAllocated { hot.chartSteps.note(seq: seq, paths: StatechartStepCache.inline) }
    }

    /// The `entered`/`exited` of a recent statechart mutation (the last
    /// `StatechartStepCache.noteCount` mutations of the dispatcher are kept).
    func statechartStep(seq: UInt64) -> StatechartRegistry.StepPaths? {
        guard let paths = hot.chartSteps.noted(seq: seq) else { return nil }
        return paths == StatechartStepCache.inline ? charts.inlineStep(seq: seq) : charts.plainSteps[Int(paths)]
    }
}
