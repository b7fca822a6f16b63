import CUniFlow
import Glibc

/// A watch (`uf_watch`, `uf_watch_deferred`): follows a value selected from the
/// model and is called only when it changes.
struct WatchSlot {
    var id: UInt64
    var callback: HostCallback<uf_watch_fn>
    var selector: WatchSelector
    var deferred: Bool
    var alive = true
    /// Its callback is on the stack: ending it now must defer `payload_free`.
    var running = false
    /// The value last delivered (nil before the first delivery).
    var delivered: JSONValue?
    /// Deferred: the latest value waiting for `uf_loop_run`.
    var pending: JSONValue?
    /// The feature its literal path starts with, once registered (-1: not yet).
    var pathFeature: Int32 = -1
    /// Its path goes into that feature's payload (`F.payload…`, `K.key.payload…`):
    /// its value changes only with the payload or when the feature (or instance)
    /// begins or ends, never with a change of state alone.
    var readsPayloadOnly = false
    /// Its path is the feature's state (`F.state`, `K.key.state`): every state's
    /// name as a value, made when the feature is known, so that following a state
    /// makes no string.
    var stateNames: [JSONValue]?
}

/// A watch's selector: a JsonLogic rule over `{"model": ...}`, with what it may
/// read worked out once.
struct WatchSelector {
    let rule: JSONValue
    let compiled: JsonLogic.CompiledRule
    /// The features its literal paths name (nil: a computed path, anything).
    let reads: Set<String>?
    /// `{"var": "model.F.a.b"}`: the path after `model`, read straight from the model.
    let path: [String]?

    init(_ rule: JSONValue) {
        self.rule = rule
        compiled = JsonLogic.CompiledRule(rule)
        reads = JsonLogic.readMembers(rule, of: "model")
        if case .object(let object) = rule, object.count == 1, object.entries[0].key == "var" {
            let argument = object.entries[0].value
            let text = argument.stringValue ?? (argument.arrayValue.flatMap { $0.count == 1 ? $0[0].stringValue : nil })
            if let text, text.hasPrefix("model."), !text.hasSuffix(".") {
                path = text.dropFirst("model.".count).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                return
            }
        }
        path = nil
    }
}

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
}

/// Watches (`docs/watches-and-interceptors.md`): evaluated once each outer call has
/// finished, over the final model, and only when a feature their selector may
/// read changed.
extension Dispatcher {
    /// Adds a watch and, unless it is deferred, calls it with the current value
    /// before returning.
    func addWatch(_ selector: WatchSelector, deferred: Bool, _ callback: HostCallback<uf_watch_fn>,
                  identified: (UInt64) -> Void = { _ in }) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing(deferred ? "uf_watch_deferred" : "uf_watch")
        let id = registrations.makeID()
        identified(id)
        let index = registrations.watches.count
        registrations.byID[id] = .watch(index)
        registrations.watches.append(WatchSlot(id: id, callback: callback, selector: selector, deferred: deferred))
        fileWatch(index)
        if batch != nil { batch!.watchAdded = true }
        let value = evaluate(watch: index)
        if deferred {
            setPending(value, ofWatch: index)
            noteLoopWork()
        } else {
            deliver(value, toWatch: index)
        }
        return id
    }

    /// Files a watch under the features it may read.
    private func fileWatch(_ index: Int) {
        if let first = registrations.watches[index].selector.path?.first, let feature = featureIndex(named: first) {
            setPathFeature(feature, ofWatch: index)
        }
        guard let reads = registrations.watches[index].selector.reads else {
            registrations.watchesOfAll.append(index)
            hot.watchingAll = true
            return
        }
        for name in reads {
            guard let feature = featureIndex(named: name) else { continue }
            registrations.watchesByFeature.append(index, to: feature)
            hot.features.pointer(Int(feature)).pointee.watched = true
        }
    }

    /// Features registered after a watch was made: file the watches that name them.
    func attachWatchesToNewFeatures(from first: Int32) {
        guard !registrations.watches.isEmpty, first < Int32(hot.features.count) else { return }
        for feature in first..<Int32(hot.features.count) {
            let name = featureName(feature)
            for (i, watch) in registrations.watches.enumerated() where watch.alive && watch.selector.reads?.contains(name) == true {
                if watch.selector.path?.first == name { setPathFeature(feature, ofWatch: i) }
                registrations.watchesByFeature.append(i, to: feature)
                hot.features.pointer(Int(feature)).pointee.watched = true
            }
        }
    }

    private func setPathFeature(_ feature: Int32, ofWatch index: Int) {
        registrations.watches[index].pathFeature = feature
        guard let path = registrations.watches[index].selector.path else { return }
        let part = instanceTable(of: feature) == nil ? 1 : 2
        registrations.watches[index].readsPayloadOnly = path.count > part && path[part] == "payload"
        if path.count == part + 1 && path[part] == "state" {
            let count = hot.features[Int(feature)].stateCount
            registrations.watches[index].stateNames = (0..<count).map { .string(stateName($0, feature: feature)) }
        }
    }

    /// Ends a watch; its `payload_free` runs now, or when its callback returns.
    func endWatch(_ index: Int) {
        registrations.watches[index].alive = false
        registrations.watchesEnded += 1
        if registrations.watches[index].pending != nil {
            setPending(nil, ofWatch: index)
            loop.dirty = true  // its waiting value no longer keeps the loop's descriptor readable
        }
        registrations.byID[registrations.watches[index].id] = nil
        if !registrations.watches[index].running {
            let release = registrations.watches[index].callback.takeRelease()
            release.run()
        }
        // Its slot is reclaimed when the outer call settles.
        changes.any = true
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
            for index in touched where registrations.watches[index].alive {
                if registrations.watches[index].readsPayloadOnly && !everything
                    && !changes.payloads.contains(registrations.watches[index].pathFeature) {
                    continue  // its value is the one it had after the last evaluation
                }
                let value = evaluate(watch: index)
                if registrations.watches[index].deferred {
                    if registrations.watches[index].delivered == value {
                        // Back to the value the watch has: nothing waits for the loop any more.
                        if registrations.watches[index].pending != nil {
                            setPending(nil, ofWatch: index)
                            loop.dirty = true
                        }
                    } else {
                        setPending(value, ofWatch: index)
                        noteLoopWork()
                    }
                } else if registrations.watches[index].delivered != value {
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
        if registrations.watchesEnded > Self.watchesEndedBeforeCompacting { compactWatches() }
        changes.any = false
    }

    /// Fewer ended watches than this are never worth a compaction.
    static let watchesEndedBeforeCompacting = 16

    /// Drops ended watches once they are many, so that adding and ending watches
    /// for ever does not grow the lists (only between deliveries: indices move).
    private func compactWatches() {
        // `watchesEnded` counts exactly the ended slots (each ends once): no walk
        // over every watch on every end.
        let ended = registrations.watchesEnded
        guard ended * 2 > registrations.watches.count,
              !registrations.watches.contains(where: { $0.running }) else { return }
        registrations.watches.removeAll { !$0.alive }
        registrations.watchesEnded = 0
        registrations.watchesByFeature.removeAll()
        registrations.watchesOfAll.removeAll()
        for f in 0..<hot.features.count { hot.features.pointer(f).pointee.watched = false }
        hot.watchingAll = false
        for i in registrations.watches.indices {
            registrations.byID[registrations.watches[i].id] = .watch(i)
            fileWatch(i)
        }
    }

    /// The watches to evaluate, in id order.
    private func touchedWatches() -> [Int] {
        if changes.everything { return Array(registrations.watches.indices) }
        // The usual outer call changes one feature: its list is the answer, in
        // order, and nothing is allocated.
        if changes.features.count == 1 && registrations.watchesOfAll.isEmpty {
            return registrations.watchesByFeature[changes.features[0]]
        }
        var touched = Set(registrations.watchesOfAll)
        for feature in changes.features { touched.formUnion(registrations.watchesByFeature[feature]) }
        return touched.sorted()
    }

    /// The selector's value over the current model; `null` (reported) when the rule fails.
    func evaluate(watch index: Int) -> JSONValue {
        // Fields read one by one: copying the slot or the selector would retain each
        // of their parts. A single feature's state, the most watched value, first.
        if let names = registrations.watches[index].stateNames, instanceTable(of: registrations.watches[index].pathFeature) == nil {
            let current = state(at: Place(feature: registrations.watches[index].pathFeature))
            return current < 0 ? .null : names[Int(current)]
        }
        if let path = registrations.watches[index].selector.path,
           let value = read(path, feature: registrations.watches[index].pathFeature, stateNames: registrations.watches[index].stateNames) {
            return value
        }
        do throws(UniFlowError) {
            return try registrations.watches[index].selector.compiled.apply(data: ruleData(["model": lazyModel()]))
        } catch {
            reportWatch(registrations.watches[index].id, UniFlowError(.schema, "rule error: \(error.message)"))
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
        var previous: JSONValue? = value
        swap(&previous, &registrations.watches[index].delivered)
        if registrations.watches[index].pending != nil { setPending(nil, ofWatch: index) }
        // The callback's fields one by one: a copy of the whole slot would retain
        // its selector, its values and its callback on every delivery.
        let function = registrations.watches[index].callback.function
        let payload = registrations.watches[index].callback.payload
        var record = WatchEventRecord(dispatcher: UnsafeMutableRawPointer(handle), id: registrations.watches[index].id,
                                      value: value, previous: previous)
        registrations.watches[index].running = true
        let result = withUnsafeMutablePointer(to: &record) { function(OpaquePointer($0), payload) }
        registrations.watches[index].running = false
        if record.valueText != nil || record.previousText != nil { releaseTexts(of: record) }
        if !registrations.watches[index].alive {
            let release = registrations.watches[index].callback.takeRelease()
            release.run()
        } else if result == UF_STOP {
            endWatch(index)
        }
    }

    /// `uf_watch_value_json` and `uf_watch_previous_json`, made on first request.
    func watchText(_ record: UnsafeMutablePointer<WatchEventRecord>, previous: Bool) -> UnsafePointer<CChar>? {
        if previous {
            guard let value = record.pointee.previous else { return nil }
            if record.pointee.previousText == nil {
                record.pointee.previousText = try? Memory.copy(value.jsonText, for: "a watch's value")
            }
            return UnsafePointer(record.pointee.previousText)
        }
        if record.pointee.valueText == nil, let made = scratch.watchText.text(of: record.pointee.value) {
            record.pointee.valueText = made.text
            record.pointee.valueTextLent = made.lent
        }
        return UnsafePointer(record.pointee.valueText)
    }

    /// Frees (or gives back) the text a callback asked for, once it has returned.
    private func releaseTexts(of record: WatchEventRecord) {
        if record.valueTextLent { scratch.watchText.giveBack() } else if let text = record.valueText { free(text) }
        if let text = record.previousText { free(text) }
    }

    /// Deferred watches with a value waiting, in id order.
    var pendingWatches: [Int] {
        guard registrations.watchesWaiting > 0 else { return [] }
        return registrations.watches.indices.filter { registrations.watches[$0].alive && registrations.watches[$0].pending != nil }
    }

    /// Sets or clears a deferred watch's waiting value, counting the watches
    /// that have one: a host's loop asks on every turn whether any does.
    func setPending(_ value: JSONValue?, ofWatch index: Int) {
        let had = registrations.watches[index].pending != nil
        registrations.watches[index].pending = value
        registrations.watchesWaiting += (value != nil ? 1 : 0) - (had ? 1 : 0)
    }
}

