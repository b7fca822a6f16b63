import CUniFlow
import Glibc
import Synchronization

/// Owns the GlobalModel, the registered feature definitions, the subscriptions and
/// the queue of actions. Nothing outside can change the model except by submitting
/// actions.
///
/// One dispatcher processes one action at a time, on the thread that submitted it,
/// holding `mutex` for the whole cascade (callbacks included). Calls from that
/// thread while it processes are re-entrant: submits are queued, everything else
/// acts at once. Calls from other threads wait for the mutex.
public final class Dispatcher {
    let options: DispatcherOptions

    // A pthread mutex allocated once and never moved: `Mutex` draws false
    // positives from ThreadSanitizer on Linux (shared/FACTS.md).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The processing thread's id, 0 when idle. Read without the mutex to detect
    /// re-entrant calls: another thread can only ever read 0 or a foreign id.
    private let owner = Atomic<UInt>(0)

    var hot = HotStorage()
    /// The registered names `hot` points to.
    var names = NameArena()
    /// Registration order; `definitions[i]` describes `hot.features[i]`.
    var definitions = DefinitionStore()
    /// The payload of each feature whose `FeatureSlot.hasPayload` is set.
    var payloads: [JSONObject?] = []
    /// Applied mutations so far (the `seq` of the last one).
    var seq: UInt64 = 0

    var nextSubscriptionID: UInt64 = 1
    var subscriptionSlots: [UInt64: Int32] = [:]
    var freeSubscriptionSlots: [Int32] = []
    /// Subscriptions ended during a notification, removed from their lists after it.
    var pendingRemovals: [Int32] = []
    var notifyingDepth = 0

    var queue = ActionQueue()
    var cascade = CascadeState()
    var reporter: CustomReporter?
    /// The reporter being called, so that replacing it from inside itself defers its release.
    var reporterRunning = false
    var retiredReporters: [CustomReporter] = []
    /// Set while `uf_dispatcher_free` releases payloads, so their callbacks cannot submit.
    var closing = false

    /// Host handlers by name (`uf_register_handler`).
    var handlers: [String: HostHandler] = [:]
    /// Model bindings by owner feature, in declaration order (features without
    /// bindings have no entry: most have none).
    var modelBindings: [Int32: [ActiveBinding]] = [:]
    /// For each watched feature, the bindings whose filter names it (owner order).
    var bindingWatchers: [Int32: [BindingReference]] = [:]
    /// Bindings whose filter is `AnyMutation`.
    var anyBindingWatchers: [BindingReference] = []
    /// What `uf_binding_call_*` reads while a handler runs.
    var handlerCall = HandlerCallScratch()

    /// Where applied mutations are written (option `journal`).
    var journal: Journal?

    /// What accessors read while a mutation is being delivered.
    var delivery = MutationDelivery()
    /// What `uf_context_*` reads and `uf_context_become` writes while a via runs.
    var via = ViaScratch()

    public init(options: DispatcherOptions = DispatcherOptions()) throws(UniFlowError) {
        self.options = options
        if let path = options.journal {
            journal = try Journal(path: path, sync: options.journalSync)
            hot.journaling = true
        }
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        delivery.reset()
        via.reset()
        hot.deallocate()
        names.deallocate()
        definitions.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// The opaque handle C sees for this dispatcher.
    var handle: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    /// True on the thread that is processing an action of this dispatcher
    /// (inside any of its callbacks).
    @inline(__always)
    var isProcessingOnCurrentThread: Bool {
        owner.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Runs `body` with the dispatcher to itself: at once when called from one of
    /// its callbacks, otherwise after taking the mutex. A call that takes the mutex
    /// also processes whatever its callbacks queued before it returns.
    @inline(__always)
    func exclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        if isProcessingOnCurrentThread { return try body() }
        pthread_mutex_lock(mutex)
        owner.store(UInt(pthread_self()), ordering: .relaxed)
        defer { leave() }
        return try body()
    }

    /// `exclusive`, except that when another thread is processing it does not
    /// wait: it returns nil without running `body` (`uf_dispatch_try`).
    @inline(__always)
    func exclusiveUnlessBusy<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R? {
        if isProcessingOnCurrentThread { return try body() }
        if pthread_mutex_trylock(mutex) != 0 { return nil }
        owner.store(UInt(pthread_self()), ordering: .relaxed)
        defer { leave() }
        return try body()
    }

    /// The end of an exclusive call: what callbacks queued, then the lock.
    @inline(__always)
    private func leave() {
        if !queue.isEmpty { drainQueue() }
        cascade = CascadeState()
        owner.store(0, ordering: .relaxed)
        pthread_mutex_unlock(mutex)
    }

    /// Refuses a registration made while `uf_dispatcher_free` releases payloads:
    /// one of those `payload_free`s calling back in would otherwise add something
    /// that is dropped with the dispatcher and never released.
    func refuseWhileClosing(_ function: StaticString) throws(UniFlowError) {
        if closing { throw UniFlowError(.misuse, "\(function): the dispatcher is being freed") }
    }

    /// Releases every subscription and the reporter, calling each `payload_free`
    /// once. Refused (`UF_EMISUSE`) from inside the dispatcher's own callbacks.
    func close() throws(UniFlowError) {
        if isProcessingOnCurrentThread {
            throw UniFlowError(.misuse, "uf_dispatcher_free called from inside one of the dispatcher's callbacks; free it after the outer call returns")
        }
        try exclusive { () throws(UniFlowError) in
            closing = true
            for i in 0..<hot.subscriptions.count where hot.subscriptions[i].alive {
                hot.subscriptions.pointer(i).pointee.alive = false
                releasePayload(ofSubscription: Int32(i))
            }
            while !queue.isEmpty {
                queue.popFirst()?.via?.release()
            }
            if let old = reporter {
                reporter = nil
                old.release()
            }
            for handler in handlers.values.sorted(by: { $0.name < $1.name }) { handler.release() }
            handlers.removeAll()
        }
    }

    // MARK: Registration

    /// Validates and registers definitions all or nothing.
    func register(_ json: JSONValue) throws(UniFlowError) {
        // Shapes first (definitions, then their bindings), then names.
        let parsed = try DefinitionParser.parse(json)
        let shapes = try parseBindings(of: parsed)
        for (i, definition) in parsed.enumerated() {
            if featureIndex(named: definition.name) != nil {
                throw UniFlowError(.exists, "features[\(i)]: feature '\(definition.name)' is already registered")
            }
        }
        let bindings = try compileBindings(shapes, of: parsed)
        if hot.journaling { try journalRegistration(adding: parsed) }
        // Every feature first: a binding may watch a feature later in the same call.
        for definition in parsed { install(definition) }
        for list in bindings { installBindings(list) }
    }

    private func install(_ definition: FeatureDefinition) {
        _ = hot.addFeature(definition, arena: &names)
        definitions.append(definition)
        payloads.append(nil)
    }

    // MARK: Names

    // JSON allows "\u0000" inside a string; as a C string the name would end there
    // and find another feature ("Toggle\u0000junk" is not Toggle). No registered
    // name contains NUL, so such a name finds nothing.

    func featureIndex(named name: String) -> Int32? {
        if name.utf8.contains(0) { return nil }
        let index = name.withCString { hot.findFeature($0) }
        return index < 0 ? nil : index
    }

    func stateIndex(named name: String, feature: Int32) -> Int32? {
        if name.utf8.contains(0) { return nil }
        let index = name.withCString { hot.findState($0, of: feature) }
        return index < 0 ? nil : index
    }

    func featureName(_ feature: Int32) -> String { hot.features[Int(feature)].name.string }

    func stateName(_ state: Int32, feature: Int32) -> String {
        stateSlot(state, of: hot.features[Int(feature)]).name.string
    }

    /// A state's definition: its fields, for payload checks.
    func stateDefinition(_ state: Int32, of feature: Int32) -> StateDefinition {
        if let kept = definitions.keptState(Int(state), of: Int(feature)) { return kept }
        return StateDefinition(name: stateName(state, feature: feature))
    }

    @inline(__always)
    func stateSlot(_ state: Int32, of feature: FeatureSlot) -> StateSlot {
        hot.states[Int(feature.stateBase + state)]
    }
}
