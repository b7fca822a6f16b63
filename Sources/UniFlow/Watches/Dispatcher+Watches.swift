import CUniFlow
import Glibc

/// What `uf_watch_event *` points to: a record on the delivering call's stack,
/// holding what the callback may read. A watch made inside another's callback is
/// delivered with its own record, so the outer one's stays as it was.
struct WatchEventRecord {
    let dispatcher: UnsafeMutableRawPointer
    let id: UInt64
    let value: JSONValue
    let previous: JSONValue?
    /// Their text, made on first request; valid until the callback returns.
    var valueText: UnsafeMutablePointer<CChar>?
    /// `valueText` is the dispatcher's `WatchTextBuffer` block, to be given back
    /// instead of freed.
    var valueTextLent = false
    var previousText: UnsafeMutablePointer<CChar>?

    init(dispatcher: UnsafeMutableRawPointer, id: UInt64, value: JSONValue, previous: JSONValue?) {
        self.dispatcher = dispatcher
        self.id = id
        self.value = value
        self.previous = previous
    }

    /// `uf_watch_value_json` and `uf_watch_previous_json`, made on first request
    /// (the value's in the dispatcher's `buffer` when it is free).
    mutating func text(previous wantsPrevious: Bool, _ buffer: inout WatchTextBuffer) -> UnsafePointer<CChar>? {
        if wantsPrevious {
            guard let value = previous else { return nil }
            if previousText == nil {
                previousText = try? Memory.copy(value.jsonText, for: "a watch's value")
            }
            return UnsafePointer(previousText)
        }
        if valueText == nil, let made = buffer.text(of: value) {
            valueText = made.text
            valueTextLent = made.lent
        }
        return UnsafePointer(valueText)
    }

    /// Frees (or gives back to `buffer`) the text the callback asked for, once it has returned.
    mutating func releaseTexts(_ buffer: inout WatchTextBuffer) {
        if valueTextLent { buffer.giveBack() } else if let text = valueText { free(text) }
        if let text = previousText { free(text) }
        valueText = nil
        previousText = nil
    }
}

extension Dispatcher: WatchContext {
    func stateCount(of feature: Int32) -> Int32 { hot.features[Int(feature)].stateCount }

    func setWatchFlag(of feature: Int32) {
        if feature < 0 { hot.watchingAll = true } else { hot.features.pointer(Int(feature)).pointee.watched = true }
    }

    func clearWatchFlags() {
        for f in 0..<hot.features.count { hot.features.pointer(f).pointee.watched = false }
        hot.watchingAll = false
    }
}

/// The dispatcher's side of the watches (`WatchRegistry`,
/// `docs/watches-and-interceptors.md`): evaluated once each outer call has
/// finished, over the final model, and only when a feature their selector may
/// read changed.
///
/// Evaluating and calling are here, not in the registry: a selector reads the
/// model (and a failing one is reported), and a callback is the host's code,
/// which may watch, unsubscribe or submit, modifying the registry again. So no
/// call runs inside a modifying access to `watches`: the loops walk watches by
/// index and read their fields one by one, and the registry's changes
/// (`setPending`, `takeDelivered`, `markEnded`) are short accesses between calls.
extension Dispatcher {
    /// Adds a watch and, unless it is deferred, calls it with the current value
    /// before returning.
    func addWatch(_ selector: WatchSelector, deferred: Bool, _ callback: HostCallback<uf_watch_fn>,
                  identified: (UInt64) -> Void = { _ in }) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing(deferred ? "uf_watch_deferred" : "uf_watch")
        let (id, index) = watches.add(selector, deferred: deferred, callback, ids: &registrationIDs, self)
        identified(id)
        if batch != nil { batch!.watchAdded = true }
        let value = evaluate(watch: index)
        if deferred {
            watches.setPending(value, ofWatch: index)
            noteLoopWork()
        } else {
            deliver(value, toWatch: index)
        }
        return id
    }

    /// Features registered after a watch was made: file the watches that name them.
    func attachWatchesToNewFeatures(from first: Int32) {
        watches.attachToNewFeatures(from: first, self)
    }

    /// Ends a watch; its `payload_free` runs now, or when its callback returns.
    func endWatch(_ index: Int) {
        let ended = watches.markEnded(index)
        if ended.hadPending {
            loop.dirty = true  // its waiting value no longer keeps the loop's descriptor readable
        }
        registrationIDs.remove(ended.id)
        if !ended.running { watches.takeRelease(index).run() }
        // Its slot is reclaimed when the outer call settles.
        changes.any = true
    }

    /// `uf_dispatcher_free`: every watch's `payload_free`, each run outside the registry.
    func releaseWatches() {
        for i in watches.slots.indices where watches.slots[i].alive { watches.close(i).run() }
    }

    /// Notes that a feature changed, for the watches that read it.
    /// `stateOnly`: it existed before and after, and its payload did not change.
    @inline(__always)
    func noteChange(of feature: Int32, stateOnly: Bool = false) {
        changes.any = true
        if !changes.features.contains(feature) { changes.features.append(feature) }
        if !stateOnly && !changes.payloads.contains(feature) { changes.payloads.append(feature) }
    }

    /// After an outer call's cascade: evaluates the watches whose features
    /// changed and calls those whose value changed (their submits are processed,
    /// and the watches evaluated again, until nothing changes or the cascade limit
    /// stops it); then frees what the call left behind.
    func settle() {
        while changes.everything || !changes.features.isEmpty {
            let touched = touchedWatches()
            let everything = changes.everything
            // (`removeLast` for the usual one: `removeAll(keepingCapacity:)` costs more.)
            if changes.features.count == 1 { changes.features.removeLast() } else { changes.features.removeAll(keepingCapacity: true) }
            changes.everything = false
            // Callbacks called here only queue actions: the model, and so
            // `changes.payloads`, stays as it is until `drainQueue`.
            for index in touched where watches.slots[index].alive {
                if watches.slots[index].readsPayloadOnly && !everything
                    && !changes.payloads.contains(watches.slots[index].pathFeature) {
                    continue  // its value is the one it had after the last evaluation
                }
                let value = evaluate(watch: index)
                if watches.slots[index].deferred {
                    if watches.slots[index].delivered == value {
                        // Back to the value the watch has: nothing waits for the loop any more.
                        if watches.slots[index].pending != nil {
                            setPending(nil, ofWatch: index)
                            loop.dirty = true
                        }
                    } else {
                        setPending(value, ofWatch: index)
                        noteLoopWork()
                    }
                } else if watches.slots[index].delivered != value {
                    deliver(value, toWatch: index)
                }
            }
            if !changes.payloads.isEmpty { changes.payloads.removeAll(keepingCapacity: true) }
            if !queue.isEmpty { drainQueue() }
        }
        // Each step tested first: emptying an empty array, or calling to find there
        // is nothing to compact, cost a settle a tenth of its work.
        if !changes.retiredKeys.isEmpty {
            for key in changes.retiredKeys { free(key) }
            changes.retiredKeys.removeAll()
        }
        if !changes.emptiedTables.isEmpty { releaseEmptyInstanceTables() }
        if watches.ended > WatchRegistry.endedBeforeCompacting { compactWatches() }
        changes.any = false
    }

    @inline(never)
    private func compactWatches() {
        watches.compact(ids: &registrationIDs, self)
    }

    /// The watches to evaluate, in id order.
    private func touchedWatches() -> [Int] {
        if changes.everything { return Array(watches.slots.indices) }
        // The usual outer call changes one feature: its list is the answer, in
        // order, and nothing is allocated.
        if changes.features.count == 1 && watches.ofAll.isEmpty {
            return watches.byFeature[changes.features[0]]
        }
        var touched = Set(watches.ofAll)
        for feature in changes.features { touched.formUnion(watches.byFeature[feature]) }
        return touched.sorted()
    }

    /// The selector's value over the current model; `null` (reported) when the rule fails.
    func evaluate(watch index: Int) -> JSONValue {
        // Fields read one by one: copying the slot or the selector would retain each
        // of their parts. A single feature's state, the most watched value, first.
        if let names = watches.slots[index].stateNames, instanceTable(of: watches.slots[index].pathFeature) == nil {
            let current = state(at: Place(feature: watches.slots[index].pathFeature))
            return current < 0 ? .null : names[Int(current)]
        }
        if let path = watches.slots[index].selector.path,
           let value = read(path, feature: watches.slots[index].pathFeature, stateNames: watches.slots[index].stateNames) {
            return value
        }
        do throws(UniFlowError) {
            return try watches.slots[index].selector.compiled.apply(data: ruleData(["model": lazyModel()]))
        } catch {
            reportWatch(watches.slots[index].id, UniFlowError(.schema, "rule error: \(error.message)"))
            return .null
        }
    }

    /// A literal path read from the model without building it, or nil when the
    /// path goes through something only the JsonLogic evaluator reads exactly
    /// (an array or string member such as `length` or an index).
    private func read(_ path: [String], feature known: Int32, stateNames: [JSONValue]?) -> JSONValue? {
        guard let feature = known >= 0 ? known : featureIndex(named: path[0]) else { return .null }
        var rest = path.dropFirst()
        var place = Place(feature: feature)
        if let table = instanceTable(of: feature) {
            guard let key = rest.first else { return nil }
            rest = rest.dropFirst()
            let slot = key.withCString { hot.instanceTables[Int(table)].find($0) }
            guard slot >= 0 else { return .null }
            place.instance = slot
        }
        let current = state(at: place)
        guard current >= 0 else { return .null }
        guard let first = rest.first else { return nil }
        var value: JSONValue
        switch first {
        case "state": value = stateNames?[Int(current)] ?? .string(stateName(current, feature: feature))
        case "payload": value = .object(payload(at: place))
        default: return .null
        }
        for component in rest.dropFirst() {
            switch value {
            case .object(let object):
                guard let member = object[component] else { return .null }
                value = member
            case .null:
                return .null
            default:
                return nil
            }
        }
        // As JsonLogic gives a number: integral values as integers.
        if case .double(let d) = value, d == d.rounded(.towardZero), abs(d) <= 9_007_199_254_740_992 { return .int(Int64(d)) }
        return value
    }

    /// Calls a watch with a new value.
    func deliver(_ value: JSONValue, toWatch index: Int) {
        // The value delivered before moves out of the slot into the record: no copy.
        let previous = watches.takeDelivered(value, ofWatch: index)
        // The callback's fields one by one: a copy of the whole slot would retain
        // its selector, its values and its callback on every delivery.
        let function = watches.slots[index].callback.function
        let payload = watches.slots[index].callback.payload
        var record = WatchEventRecord(dispatcher: UnsafeMutableRawPointer(handle), id: watches.slots[index].id,
                                      value: value, previous: previous)
        watches.setRunning(index, true)
        let result = withUnsafeMutablePointer(to: &record) { function(OpaquePointer($0), payload) }
        watches.setRunning(index, false)
        if record.valueText != nil || record.previousText != nil { record.releaseTexts(&scratch.watchText) }
        if !watches.slots[index].alive {
            watches.takeRelease(index).run()
        } else if result == UF_STOP {
            endWatch(index)
        }
    }

    /// Deferred watches with a value waiting, in id order.
    var pendingWatches: [Int] { watches.pendingIndices }

    /// Sets or clears a deferred watch's waiting value. (Out of line, as the
    /// other changes to the registry `settle` may make: inlined, they made it
    /// keep the registry's address on every settle.)
    @inline(never)
    func setPending(_ value: JSONValue?, ofWatch index: Int) {
        watches.setPending(value, ofWatch: index)
    }
}
