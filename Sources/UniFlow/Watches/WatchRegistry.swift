import CUniFlow

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

/// What the watches need from outside: the registered names, and the flags on
/// the model's features that make a dispatch note a change for them.
/// `Dispatcher` conforms (`Dispatcher+Watches.swift`).
protocol WatchContext: AnyObject {
    var featureCount: Int32 { get }
    func featureIndex(named name: String) -> Int32?
    func featureName(_ feature: Int32) -> String
    /// The feature's `InstanceTable`, nil for a single feature.
    func instanceTable(of feature: Int32) -> Int32?
    func stateCount(of feature: Int32) -> Int32
    func stateName(_ state: Int32, feature: Int32) -> String
    /// Some watch may read the feature (-1: every feature): its changes are noted.
    func setWatchFlag(of feature: Int32)
    /// No watch reads any feature (before the watches are filed again).
    func clearWatchFlags()
}

/// The watches (`uf_watch`, `uf_watch_deferred`; `docs/watches-and-interceptors.md`).
///
/// Owns the watches' slots (selector, callback, last delivered and waiting
/// values), which watches each feature's changes concern, and the counts that
/// decide when to compact and whether a deferred value waits for the loop. Ids
/// come from the dispatcher's `RegistrationIDs`; names and the features'
/// `watched` flags through the `WatchContext`.
///
/// It evaluates and calls nothing: a watch's selector reads the model and its
/// callback is the host's code, which may watch, unsubscribe or submit, and so
/// must never run while this struct is being modified (the dispatcher stores it
/// inline). The dispatcher evaluates and calls (`Dispatcher+Watches.swift`),
/// walking watches by index and reading their fields one by one (copying a slot
/// would retain its selector, values and callback), with this struct's changes
/// as short modifying accesses between calls.
struct WatchRegistry {
    private(set) var slots: [WatchSlot] = []
    /// For each feature, the watches whose selector may read it (by index in `slots`).
    private(set) var byFeature = FeatureWatchLists()
    /// Watches whose selector may read anything (a computed path).
    private(set) var ofAll: [Int] = []
    /// Watches ended since the list was last compacted.
    private(set) var ended = 0
    /// Deferred watches with a value waiting for the host's loop.
    private(set) var waiting = 0

    /// Fewer ended watches than this are never worth a compaction.
    static let endedBeforeCompacting = 16

    /// Adds a watch under a new id from `ids`, filed under the features it may read;
    /// returns its id and index.
    mutating func add(_ selector: WatchSelector, deferred: Bool, _ callback: HostCallback<uf_watch_fn>,
                      ids: inout RegistrationIDs, _ context: some WatchContext) -> (id: UInt64, index: Int) {
        let index = slots.count
        let id = ids.make(.watch(index))
        slots.append(WatchSlot(id: id, callback: callback, selector: selector, deferred: deferred))
        file(index, context)
        return (id, index)
    }

    /// Files a watch under the features it may read.
    private mutating func file(_ index: Int, _ context: some WatchContext) {
        if let first = slots[index].selector.path?.first, let feature = context.featureIndex(named: first) {
            setPathFeature(feature, ofWatch: index, context)
        }
        guard let reads = slots[index].selector.reads else {
            ofAll.append(index)
            context.setWatchFlag(of: -1)
            return
        }
        for name in reads {
            guard let feature = context.featureIndex(named: name) else { continue }
            byFeature.append(index, to: feature)
            context.setWatchFlag(of: feature)
        }
    }

    /// Features registered after a watch was made (from `first` on): files the
    /// watches that name them.
    mutating func attachToNewFeatures(from first: Int32, _ context: some WatchContext) {
        guard !slots.isEmpty, first < context.featureCount else { return }
        for feature in first..<context.featureCount {
            let name = context.featureName(feature)
            for i in slots.indices where slots[i].alive && slots[i].selector.reads?.contains(name) == true {
                if slots[i].selector.path?.first == name { setPathFeature(feature, ofWatch: i, context) }
                byFeature.append(i, to: feature)
                context.setWatchFlag(of: feature)
            }
        }
    }

    private mutating func setPathFeature(_ feature: Int32, ofWatch index: Int, _ context: some WatchContext) {
        slots[index].pathFeature = feature
        guard let path = slots[index].selector.path else { return }
        let part = context.instanceTable(of: feature) == nil ? 1 : 2
        slots[index].readsPayloadOnly = path.count > part && path[part] == "payload"
        if path.count == part + 1 && path[part] == "state" {
            let count = context.stateCount(of: feature)
            slots[index].stateNames = (0..<count).map { .string(context.stateName($0, feature: feature)) }
        }
    }

    /// What ending a watch leaves to the caller (`markEnded`).
    struct Ended {
        var id: UInt64
        /// It had a value waiting for the loop (dropped now).
        var hadPending: Bool
        /// Its callback is on the stack: its `payload_free` waits until it returns.
        var running: Bool
    }

    /// Marks a watch ended and drops its waiting value; its slot is reclaimed
    /// by a later `compact`. The caller forgets its id and runs its
    /// `payload_free` (`takeRelease`) unless it is running.
    mutating func markEnded(_ index: Int) -> Ended {
        slots[index].alive = false
        ended += 1
        let hadPending = slots[index].pending != nil
        if hadPending { setPending(nil, ofWatch: index) }
        return Ended(id: slots[index].id, hadPending: hadPending, running: slots[index].running)
    }

    /// Forgets a watch's `payload_free` and returns what runs it, for the caller
    /// to run once this struct is no longer being modified.
    mutating func takeRelease(_ index: Int) -> PendingRelease {
        slots[index].callback.takeRelease()
    }

    /// Ends a watch for `uf_dispatcher_free`, which forgets every id at once:
    /// returns its `payload_free` for the caller to run.
    mutating func close(_ index: Int) -> PendingRelease {
        slots[index].alive = false
        return slots[index].callback.takeRelease()
    }

    /// Records `value` as the one delivered now (its waiting value, if any, is
    /// dropped) and returns the one delivered before, moved out of the slot: no copy.
    mutating func takeDelivered(_ value: JSONValue, ofWatch index: Int) -> JSONValue? {
        var previous: JSONValue? = value
        swap(&previous, &slots[index].delivered)
        if slots[index].pending != nil { setPending(nil, ofWatch: index) }
        return previous
    }

    /// Whether a watch's callback is on the stack (ending it then defers its `payload_free`).
    mutating func setRunning(_ index: Int, _ running: Bool) {
        slots[index].running = running
    }

    /// Sets or clears a deferred watch's waiting value, counting the watches
    /// that have one: a host's loop asks on every turn whether any does.
    mutating func setPending(_ value: JSONValue?, ofWatch index: Int) {
        let had = slots[index].pending != nil
        slots[index].pending = value
        waiting += (value != nil ? 1 : 0) - (had ? 1 : 0)
    }

    /// Deferred watches with a value waiting, in id order.
    var pendingIndices: [Int] {
        guard waiting > 0 else { return [] }
        return slots.indices.filter { slots[$0].alive && slots[$0].pending != nil }
    }

    /// Drops ended watches once they are many, so that adding and ending watches
    /// for ever does not grow the lists (only between deliveries: indices move).
    mutating func compact(ids: inout RegistrationIDs, _ context: some WatchContext) {
        // `ended` counts exactly the ended slots (each ends once): no walk over
        // every watch on every end.
        guard ended * 2 > slots.count, !slots.contains(where: { $0.running }) else { return }
        slots.removeAll { !$0.alive }
        ended = 0
        byFeature.removeAll()
        ofAll.removeAll()
        context.clearWatchFlags()
        for i in slots.indices {
            ids.move(slots[i].id, to: .watch(i))
            file(i, context)
        }
    }
}
