import CUniFlow

/// What an `invoke` declares: a service by name, the id its events carry, and
/// the template of its input.
struct StatechartInvoke {
    var src: String
    var id: String
    var input: JSONValue?
}

/// The services a dispatcher knows (`uf_register_service`) and the invocations
/// running now, each with a serial that is never reused.
struct StatechartServices {
    struct Service {
        var start: HostCallback<uf_service_fn>
        var stop: HostCallback<uf_service_fn>?
    }

    /// One running invocation of a statechart instance's state.
    struct Invocation {
        var serial: UInt64
        var feature: Int32
        /// The instance's key (nil for a single feature).
        var key: String?
        var node: Int
        var index: Int
        var id: String
        var src: String
        var input: JSONValue

        /// As a model or a line lists it: `{"id", "src", "input"}` (serials belong to one process).
        var listed: JSONValue { ["id": .string(id), "src": .string(src), "input": input] }
    }

    private(set) var services: [String: Service] = [:]
    /// Running invocations by serial.
    private(set) var running: [UInt64: Invocation] = [:]
    private var nextSerial: UInt64 = 1
    /// On a partitioned dispatcher, the invocations of instances this node does
    /// not process (their partition is another node's, or no node's): known
    /// from records and partition snapshots, listed in the model as the writer
    /// lists them, never running here (serial 0). A partition's instances have
    /// either running invocations (owned) or mirrored ones (not owned).
    private(set) var mirrored: [ChartInstanceRef: [Invocation]] = [:]
    /// Serials stopped because this node stopped owning their instance's
    /// partition: settling one is `UF_ENOTOWNER` (the instance is processed
    /// elsewhere now), not a drop. Forgotten when this node owns the partition again.
    private(set) var orphaned: [UInt64: ChartInstanceRef] = [:]
    /// While a staged call's record is written: what its macrosteps will stop
    /// and start once the record holds (its lines list the invocations as they
    /// will be then).
    var writing = StagedCharts()
    /// Instances whose invocation settled and that no line has listed since:
    /// on a partitioned dispatcher their next record says so; on a journaling
    /// one, a line of their own once the services being run have all started.
    private var unwritten: [ChartInstanceRef] = []
    /// While a restore's line is written: what the restore is about to start,
    /// which the line's model lists instead of what runs now.
    var restoring: [ChartInstanceRef: [Invocation]]?
    /// How deep `runStatechartServices` calls are nested (a service's `start`
    /// may settle or send): lines wait until the outermost one is done.
    var runDepth = 0

    func has(_ name: String) -> Bool { services[name] != nil }
    func service(_ name: String) -> Service? { services[name] }

    mutating func add(_ name: String, _ service: Service) throws(UniFlowError) {
        guard services[name] == nil else { throw UniFlowError(.exists, "service '\(name)' is already registered") }
        services[name] = service
    }

    mutating func start(_ invocation: Invocation) -> Invocation {
        var started = invocation
        started.serial = nextSerial
        nextSerial += 1
        running[started.serial] = started
        return started
    }

    mutating func stop(_ serial: UInt64) -> Invocation? { running.removeValue(forKey: serial) }

    /// The invocations of one instance: those running here, in the order they
    /// started, or (an instance another node processes) those its records list.
    func invocations(feature: Int32, key: String?) -> [Invocation] {
        if let restoring { return restoring[ChartInstanceRef(feature: feature, key: key)] ?? [] }
        let list = running.values.filter { $0.feature == feature && $0.key == key }.sorted { $0.serial < $1.serial }
        guard list.isEmpty, !mirrored.isEmpty else { return list }
        return mirrored[ChartInstanceRef(feature: feature, key: key)] ?? []
    }

    /// `invocations(feature:key:)` of every instance that has some.
    func byInstance() -> [ChartInstanceRef: [Invocation]] {
        if let restoring { return restoring }
        var result: [ChartInstanceRef: [Invocation]] = [:]
        for invocation in running.values.sorted(by: { $0.serial < $1.serial }) {
            result[ChartInstanceRef(feature: invocation.feature, key: invocation.key), default: []].append(invocation)
        }
        for (instance, list) in mirrored where result[instance] == nil { result[instance] = list }
        return result
    }

    /// What a record or a snapshot says an instance's invocations are (empty: none).
    mutating func mirror(_ instance: ChartInstanceRef, _ list: [Invocation]) {
        mirrored[instance] = list.isEmpty ? nil : list
    }

    /// The mirrored invocations of instances `filter` accepts, taken out (to
    /// be started, or dropped with their instances).
    mutating func takeMirrored(where filter: (ChartInstanceRef) -> Bool) -> [Invocation] {
        var taken: [Invocation] = []
        for instance in mirrored.keys.sorted(by: ChartInstanceRef.order) where filter(instance) {
            taken += mirrored.removeValue(forKey: instance)!
        }
        return taken
    }

    /// Running invocations of instances `filter` accepts, in the order they started.
    func runningInvocations(where filter: (ChartInstanceRef) -> Bool) -> [Invocation] {
        running.values.filter { filter(ChartInstanceRef(feature: $0.feature, key: $0.key)) }.sorted { $0.serial < $1.serial }
    }

    mutating func noteUnwritten(_ instance: ChartInstanceRef) {
        if !unwritten.contains(instance) { unwritten.append(instance) }
    }

    /// The instances waiting for a record that `filter` accepts, taken out.
    mutating func takeUnwritten(where filter: (ChartInstanceRef) -> Bool) -> [ChartInstanceRef] {
        guard !unwritten.isEmpty else { return [] }
        let taken = unwritten.filter(filter)
        unwritten.removeAll(where: filter)
        return taken
    }

    mutating func orphan(_ serial: UInt64, of instance: ChartInstanceRef) { orphaned[serial] = instance }
    mutating func forgetOrphans(where filter: (ChartInstanceRef) -> Bool) {
        orphaned = orphaned.filter { !filter($0.value) }
    }

    /// Every service's callbacks, to release once (the dispatcher is freed).
    mutating func takeAll() -> [Service] {
        defer { services.removeAll() }
        return services.keys.sorted().map { services[$0]! }
    }
}

/// A statechart instance (`key` nil: a single feature), as invocations are filed.
struct ChartInstanceRef: Hashable {
    var feature: Int32
    var key: String?

    /// Feature, then key: the order services are started in when a partition is claimed.
    static func order(_ a: ChartInstanceRef, _ b: ChartInstanceRef) -> Bool {
        (a.feature, a.key ?? "") < (b.feature, b.key ?? "")
    }
}

/// What `const uf_invocation *` points to during a service's `start` or `stop`.
struct InvocationRecord {
    var feature: UnsafePointer<CChar>
    var key: UnsafePointer<CChar>?
    var id: UnsafePointer<CChar>
    var input: UnsafePointer<CChar>
    var serial: UInt64
}

extension Dispatcher {
    func registerService(_ name: String, start: HostCallback<uf_service_fn>, stop: HostCallback<uf_service_fn>?) throws(UniFlowError) {
        try refuseWhileClosing("uf_register_service")
        guard DefinitionParser.isValidName(name) else { throw UniFlowError(.invalidArgument, "'\(name)' is not a valid service name") }
        try charts.services.add(name, .init(start: start, stop: stop))
    }

    /// Calls a service's `start` or `stop` for an invocation.
    private func call(_ fn: HostCallback<uf_service_fn>, _ invocation: StatechartServices.Invocation) -> Int32 {
        let input = invocation.input.jsonText
        let featureName = featureCName(invocation.feature)
        return invocation.id.withCString { id in
            input.withCString { inputText in
                func run(_ key: UnsafePointer<CChar>?) -> Int32 {
                    var record = InvocationRecord(feature: featureName, key: key, id: id, input: inputText, serial: invocation.serial)
                    return withUnsafePointer(to: &record) { fn.function(OpaquePointer($0), fn.payload) }
                }
                if let key = invocation.key { return key.withCString { run($0) } }
                return run(nil)
            }
        }
    }

    /// After a macrostep: stops the invocations of states it left, then starts
    /// those of the invoking states it entered that are still active.
    func runStatechartServices(feature: Int32, key: String?, stops: [UInt64], starts: [StatechartServices.Invocation]) {
        charts.services.runDepth += 1
        defer {
            charts.services.runDepth -= 1
            if charts.services.runDepth == 0 && journal != nil && partitioning == nil { journalUnwrittenInvocations() }
        }
        for serial in stops {
            guard let invocation = charts.services.stop(serial) else { continue }
            if let stop = charts.services.service(invocation.src)?.stop { _ = call(stop, invocation) }
        }
        for pending in starts {
            guard let service = charts.services.service(pending.src) else { continue }
            let invocation = charts.services.start(pending)
            if call(service.start, invocation) < 0 {
                _ = try? serviceSettled(invocation.serial, error: true, value: .null)
            }
        }
    }

    /// What an installed model's instances list (`ModelSnapshot.invocations`)
    /// and may run: an invocation of a state the instance is not in (a
    /// journal's list, which later mutation lines moved away from) is left out.
    func restartableInvocations(_ listed: [ChartInstanceRef: [StatechartServices.Invocation]]) -> [ChartInstanceRef: [StatechartServices.Invocation]] {
        guard !listed.isEmpty else { return [:] }
        return listed.compactMapValues { list in
            let kept = list.filter { invokes($0.node, ChartInstanceRef(feature: $0.feature, key: $0.key)) }
            return kept.isEmpty ? nil : kept
        }
    }

    /// After a restore or a replay: what ran is stopped, and every statechart
    /// instance starts what the installed model lists (`restartableInvocations`),
    /// with new serials (the model does not keep serials) and the input it
    /// lists. On a partitioned dispatcher only instances of partitions this
    /// node owns start them; the others list them, as their owner runs them.
    func restartStatechartServices(_ listed: [ChartInstanceRef: [StatechartServices.Invocation]]) {
        let running = charts.services.running.values.sorted { $0.serial < $1.serial }
        if !running.isEmpty { runStatechartServices(feature: -1, key: nil, stops: running.map(\.serial), starts: []) }
        if partitioning != nil { _ = charts.services.takeMirrored { _ in true } }
        var starts: [StatechartServices.Invocation] = []
        if !listed.isEmpty {
            forEachPlace { place in
                guard charts[place.feature] != nil else { return }
                let instance = ChartInstanceRef(feature: place.feature, key: self.key(at: place).map { String(cString: $0) })
                starts += listed[instance] ?? []
            }
        }
        if let table = partitioning {
            var mirrored: [ChartInstanceRef: [StatechartServices.Invocation]] = [:]
            for invocation in starts where !table.owns(table.partition(ofKey: invocation.key)) {
                mirrored[ChartInstanceRef(feature: invocation.feature, key: invocation.key), default: []].append(invocation)
            }
            for (instance, list) in mirrored { charts.services.mirror(instance, list) }
            starts.removeAll { !table.owns(table.partition(ofKey: $0.key)) }
        }
        if !starts.isEmpty { runStatechartServices(feature: -1, key: nil, stops: [], starts: starts) }
    }

    /// `uf_service_done` / `uf_service_error`: the invocation's event, sent to
    /// its instance (queued when called from a callback). A serial no longer
    /// running is dropped (reported) and is not an error.
    func serviceSettled(_ serial: UInt64, error: Bool, value: JSONValue) throws(UniFlowError) {
        if partitioning != nil, let failure = settlementOwnership(serial, error: error) { throw failure }
        guard let invocation = charts.services.running[serial] else {
            if reportingActive { report(.dropped, action: nil, failure: UniFlowError(.ok, "invocation \(serial) is no longer running")) }
            return
        }
        if partitioning == nil && journal != nil { try journalSettlement(of: invocation) }
        // Settled once: a second done or error finds nothing running.
        _ = charts.services.stop(serial)
        // Followers learn it from the instance's next record, or from a line of its own.
        if partitioning != nil { charts.services.noteUnwritten(ChartInstanceRef(feature: invocation.feature, key: invocation.key)) }
        let event = (error ? "xstate.error.actor." : "xstate.done.actor.") + invocation.id
        let payload: JSONObject = error ? ["error": value] : ["output": value]
        do throws(UniFlowError) {
            _ = try submit(via: nil) { () throws(UniFlowError) -> ResolvedAction in
                var action = ResolvedAction(kind: .send, feature: invocation.feature)
                let extras = ActionExtras(payload: payload)
                action.header.eventName = try extras.own(event)
                if let key = invocation.key { action.header.key = try extras.own(key) }
                action.header.carriesPayload = true
                action.extras = extras
                return action
            }
        } catch where error.status == .rejected {
            // Taken by nothing: reported as the send was; the call itself succeeded.
        }
    }
}
