import CSystem
import CUniFlow
import Glibc
import Synchronization

/// Owns the GlobalModel, the registered feature definitions, the registrations
/// (subscriptions, watches, interceptors, handlers, the reporter) and the queue
/// of actions. Nothing outside can change the model except by submitting actions.
///
/// One dispatcher processes one action at a time, on the thread that submitted it,
/// holding `lock` for the whole cascade (callbacks included). Calls from that
/// thread while it processes are re-entrant: submits are queued, everything else
/// acts at once. Calls from other threads wait for the lock.
final class Dispatcher {
    let options: DispatcherOptions

    // Not `Mutex`, which draws false positives from ThreadSanitizer on Linux and
    // costs more than this on every dispatch.
    let lock = DispatcherLock()
    /// The processing thread's id (`uniflow_thread_id`), 0 when idle. Read without
    /// the lock to detect re-entrant calls: another thread can only ever read 0 or
    /// a foreign id.
    private let owner = Atomic<UInt>(0)
    /// The process's fork count when the dispatcher was made: in a child, the
    /// dispatcher is a copy whose threads and lock owner stayed in the parent.
    private let forkGeneration = ForkGuard.generationAtCreation

    // MARK: The model and its definitions

    /// What a dispatch touches: flat tables, never retained.
    var hot = HotStorage()
    /// The registered names `hot` points to.
    var names = NameArena()
    /// Registration order; `definitions[i]` describes `hot.features[i]`.
    var definitions = DefinitionStore()
    /// Payloads and the mutation counter.
    var model = ModelStore()

    // MARK: Registrations

    /// The id space of subscriptions, watches and interceptors.
    var registrationIDs = RegistrationIDs()
    var subscriptions = SubscriptionRegistry()
    var watches = WatchRegistry()
    var interceptors = InterceptorChain()
    var bindings = ModelBindings()
    /// The reporter (`Reports/Reporter.swift`).
    var reporter: Reporter

    // MARK: Processing

    var queue = ActionQueue()
    var cascade = CascadeState()
    /// What callbacks read while they run (the mutation, the via's context, the
    /// handler's call, the intercepted action) and the text handed out to them.
    var scratch = CallbackScratch()
    /// What changed during the current outer call, for watches and instance storage.
    var changes = ChangeLog()
    /// Set while a batch applies its actions: what it changes can be undone.
    var batch: BatchLog?
    /// The clock and the timers (`Timers/TimerService.swift`).
    var time: TimerService
    /// Deliveries waiting for the host's loop, and its descriptor (`Loop/HostLoop.swift`).
    var loop = HostLoop()
    /// Set while `uf_dispatcher_free` releases payloads, so their callbacks cannot submit.
    var closing = false
    /// Where applied mutations are written (option `journal`; `Persistence/JournalWriter.swift`).
    var journal: JournalWriter?
    /// A partitioned dispatcher's partitions and owners (options `partitions`
    /// and `node`; docs/scale-out.md); nil otherwise.
    var partitioning: PartitionTable?
    /// The partition the current outer call writes, once its first action
    /// passed the ownership step: the rest of its cascade must stay there.
    var partitionWritten: Int?
    /// The registered definitions' fingerprint, once asked for (every record
    /// carries it); forgotten when more are registered.
    var fingerprint: String?
    /// Statechart features and their instances' values (`Statecharts/`).
    var charts = StatechartRegistry()
    /// Bindings across partitions: what the global partition's owner runs them over.
    var homes = HomeBindings()
    /// The buffer records are written into (`writeRecord`), kept between records.
    var recordText = JSONWriter()
    /// The outer call being staged into a record (partitioned dispatchers).
    var staging: StagedCall?
    /// While a record's mutation is announced: the action object its line
    /// carries, which the mutation's JSON shows as the writer's did.
    var foreignAction: JSONObject?
    /// Where records go (`uf_record_sink`); nil: every record is accepted at once.
    var recordSink: HostCallback<uf_record_fn>?

    init(options: DispatcherOptions = DispatcherOptions()) throws(UniFlowError) {
        self.options = options
        time = TimerService(clock: options.clock, mode: options.timers)
        reporter = Reporter(level: options.reporting)
        if let path = options.journal {
            journal = JournalWriter(log: try JournalFile(path: path, sync: options.journalSync))
            hot.journaling = true
        }
        if let count = options.partitions, let node = options.node {
            partitioning = PartitionTable(count: count, node: node)
            homes = HomeBindings(partitions: count)
            // Every action goes through the general path: ownership is a step of it.
            hot.partitioned = true
        }
    }

    deinit {
        time.deallocate()
        loop.deallocate()
        scratch.reset()
        scratch.watchText.deallocate()
        for key in changes.retiredKeys { free(key) }
        hot.deallocate()
        subscriptions.deallocate()
        names.deallocate()
        definitions.deallocate()
        lock.deallocate()
    }

    /// The opaque handle C sees for this dispatcher.
    var handle: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    /// True in a child process forked after the dispatcher was made.
    @inline(__always)
    var isForkedCopy: Bool { ForkGuard.generation != forkGeneration }

    /// True on the thread that is processing an action of this dispatcher
    /// (inside any of its callbacks).
    @inline(__always)
    var isProcessingOnCurrentThread: Bool {
        owner.load(ordering: .relaxed) == UInt(uniflow_thread_id())
    }

    /// Runs `body` with the dispatcher to itself: at once when called from one of
    /// its callbacks, otherwise after taking the lock. A call that takes the lock
    /// also finishes what its callbacks started before it returns (see `leave`).
    @inline(__always)
    func exclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        if isProcessingOnCurrentThread { return try body() }
        enter()
        defer { leave() }
        return try body()
    }

    /// `exclusive`, except that when another thread is processing it does not
    /// wait: it returns nil without running `body` (`uf_dispatch_try`).
    @inline(__always)
    func exclusiveUnlessBusy<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R? {
        if isProcessingOnCurrentThread { return try body() }
        guard enter(waiting: false) else { return nil }
        defer { leave() }
        return try body()
    }

    /// `exclusive` (or, without `waiting`, `exclusiveUnlessBusy`) for a caller
    /// that has just seen it is not processing on this thread: it takes the lock
    /// without reading the owner again.
    @inline(__always)
    func exclusiveFromOutside<R>(waiting: Bool, _ body: () -> R) -> R? {
        guard enter(waiting: waiting) else { return nil }
        // Not `defer`: the compiler makes that a call to a body shared with other
        // `defer`s, where this keeps `leave` inline (`body` cannot throw).
        let result = body()
        leave()
        return result
    }

    /// Takes the lock and becomes the owner. Without `waiting`, returns false
    /// (having done nothing) when another thread holds it.
    @discardableResult
    @inline(__always)
    func enter(waiting: Bool = true) -> Bool {
        guard lock.take(waiting: waiting) else { return false }
        owner.store(UInt(uniflow_thread_id()), ordering: .relaxed)
        return true
    }

    /// The end of an outer call: what callbacks queued, then what watches must
    /// see, then the lock.
    @inline(__always)
    func leave() {
        finishOuterCall()
        owner.store(0, ordering: .relaxed)
        lock.release()
    }

    /// Everything an outer call leaves to do before the dispatcher is idle: the
    /// queue, the watches (whose callbacks may queue more), then the bookkeeping.
    @inline(__always)
    func finishOuterCall() {
        if !queue.isEmpty { drainQueue() }
        if changes.any { settle() }
        if loop.dirty { syncLoopDescriptor() }
        // Only the count: `dropping` is set inside `drainQueue` alone, which clears
        // it before returning.
        cascade.processed = 0
        partitionWritten = nil
    }

    /// The calling thread takes the dispatcher as a caller does (the timer thread,
    /// which already holds the lock).
    func becomeOwner() { owner.store(UInt(uniflow_thread_id()), ordering: .relaxed) }
    func resignOwner() { owner.store(0, ordering: .relaxed) }

    /// Refuses a registration made while `uf_dispatcher_free` releases payloads:
    /// one of those `payload_free`s calling back in would otherwise add something
    /// that is dropped with the dispatcher and never released.
    func refuseWhileClosing(_ function: StaticString) throws(UniFlowError) {
        if closing { throw UniFlowError(.misuse, "\(function): the dispatcher is being freed") }
    }

    /// Refuses calls that replace or roll back the model a callback is looking at.
    func refuseInsideCallbacks(_ function: String) throws(UniFlowError) {
        if isProcessingOnCurrentThread {
            throw UniFlowError(.misuse, "\(function) is not allowed inside a callback of the same dispatcher")
        }
    }

    /// Releases every registration, calling each `payload_free` once. Refused
    /// (`UF_EMISUSE`) from inside the dispatcher's own callbacks.
    func close() throws(UniFlowError) {
        if isProcessingOnCurrentThread {
            throw UniFlowError(.misuse, "uf_dispatcher_free called from inside one of the dispatcher's callbacks; free it after the outer call returns")
        }
        try exclusive { () throws(UniFlowError) in releaseEverything() }
    }

    /// What `close` releases, with the dispatcher to itself.
    private func releaseEverything() {
        closing = true
        releaseRegistrations()
        while let queued = queue.popFirst() { var via = queued.header.via; via?.release() }
        releaseReporters()
        bindings.releaseHandlers()
        for var service in charts.services.takeAll() { service.start.release() }
        var sink = recordSink
        recordSink = nil
        sink?.release()
    }

    /// `uf_dispatcher_free` in a child process forked after the dispatcher was
    /// made. The parent's threads do not exist here: the timer thread is not
    /// joined. When no thread held the dispatcher at the fork, every
    /// `payload_free` runs as usual; otherwise the state may be half-way through
    /// a change, and only memory is released.
    func abandonInForkedChild() {
        time.abandonThread()
        guard lock.tryTake() else { return }
        owner.store(UInt(uniflow_thread_id()), ordering: .relaxed)
        releaseEverything()
        owner.store(0, ordering: .relaxed)
        lock.release()
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

    /// A feature's name as C borrows it (what callbacks' accessors return:
    /// registered names live as long as the dispatcher).
    func featureCName(_ feature: Int32) -> UnsafePointer<CChar> { hot.features[Int(feature)].name.pointer }

    /// A state's name as C borrows it, or NULL for -1 (no state).
    func stateCName(_ state: Int32, of feature: Int32) -> UnsafePointer<CChar>? {
        guard state >= 0 else { return nil }
        if charts.any, let name = statechartStateCName(state, feature: feature) { return name }
        return stateSlot(state, of: hot.features[Int(feature)]).name.pointer
    }

    func stateName(_ state: Int32, feature: Int32) -> String {
        if charts.any, let name = statechartStateCName(state, feature: feature) { return String(cString: name) }
        return stateSlot(state, of: hot.features[Int(feature)]).name.string
    }

    /// A state's definition: its fields, for payload checks.
    func stateDefinition(_ state: Int32, of feature: Int32) -> StateDefinition {
        // A statechart's state number is an instance value, not one of its states
        // (Statecharts/StatechartRegistry.swift): it has no fields or timers of its own.
        if charts.any, charts[feature] != nil { return StateDefinition(name: stateName(state, feature: feature)) }
        if let kept = definitions.keptState(Int(state), of: Int(feature)) { return kept }
        return StateDefinition(name: stateName(state, feature: feature))
    }

    @inline(__always)
    func stateSlot(_ state: Int32, of feature: FeatureSlot) -> StateSlot {
        hot.states[Int(feature.stateBase) &+ Int(state)]
    }
}

/// Counts forks, so that a dispatcher can tell it is a forked child's copy: its
/// lock may be held by a thread that does not exist in the child.
enum ForkGuard {
    private static let counter = Atomic<Int>(0)
    /// Registers the counter with `pthread_atfork`, once, when the first
    /// dispatcher is made (so that reading it, on every call, costs one load).
    private static let registered: Bool = {
        pthread_atfork(nil, nil) { ForkGuard.counter.add(1, ordering: .relaxed) }
        return true
    }()

    /// The fork count when a dispatcher is made (registering the counter first).
    static var generationAtCreation: Int {
        _ = registered
        return counter.load(ordering: .relaxed)
    }

    /// How many forks this process has gone through since the counter was registered.
    @inline(__always)
    static var generation: Int { counter.load(ordering: .relaxed) }
}
