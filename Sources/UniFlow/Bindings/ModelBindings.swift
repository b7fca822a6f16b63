import CUniFlow

/// Model bindings (`docs/bindings.md`): indexed by the feature their filter
/// watches, run after a mutation is applied and before the subscribers.
///
/// The component owns the bindings and everything about them: the host handlers
/// they (and event guards) name, the bindings by owner and by watched feature,
/// parsing and compiling them at registration, deciding which run for a
/// mutation (while a batch announces, with its owners' instances counted as of
/// each mutation), and running one (its `given` clauses, `then`, its
/// templates). What it needs from outside comes through `BindingContext`
/// (`BindingContext.swift`): the registered names, the model and the mutation
/// as rule data, how many instances an owner has, resolving and queueing
/// actions, reporting, and calling a handler. The dispatcher stores it inline
/// (`Dispatcher.bindings`) and changes it in place; the hot path's flags
/// (`bindingKinds`, `anyBindingKinds`) stay in the dispatcher's hot storage,
/// which the dispatcher sets as it installs (`Dispatcher+Bindings.swift`).
///
/// Running a binding calls host functions (handlers, a custom reporter), and
/// those may re-enter the dispatcher: register a handler or definitions (which
/// change this struct), subscribe, submit. So nothing runs a binding from
/// inside an access to the stored component: `candidates(for:)` and
/// `due(_:for:context:)` only read it and return values, `run(_:for:inputs:context:)`
/// is `static` and sees only the binding it was handed, and the loop between them
/// is the dispatcher's (`runBindings`). Were the run a method of the stored struct,
/// a handler registering another handler would modify `Dispatcher.bindings`
/// while that access is still open: Swift's exclusivity check stops the
/// process.
struct ModelBindings {
    /// Host handlers by name (`uf_register_handler`).
    var handlers: [String: HostCallback<uf_handler_fn>] = [:]
    /// Model bindings by owner feature, in declaration order (features without
    /// bindings have no entry: most have none).
    var byOwner: [Int32: [ActiveBinding]] = [:]
    /// Some binding belongs to a single feature (on a partitioned dispatcher it
    /// lives in the global partition: every record of another is kept for it).
    private(set) var hasSingleOwner = false
    /// For each watched feature, the bindings whose filter names it (owner order).
    var watchers: [Int32: [BindingReference]] = [:]
    /// Bindings whose filter is `AnyMutation`.
    var anyWatchers: [BindingReference] = []
    /// While a batch announces its mutations (after committing them all): how
    /// many instances (a single feature: 0 or 1) each feature it began or ended
    /// has at the mutation being announced, which decides whether its bindings
    /// are active there, as one action after another would have.
    var aliveInBatch: [Int32: Int]? = nil

    // MARK: Handlers

    func hasHandler(_ name: String) -> Bool { handlers[name] != nil }

    mutating func addHandler(_ name: String, _ handler: HostCallback<uf_handler_fn>) throws(UniFlowError) {
        guard handlers[name] == nil else {
            throw UniFlowError(.exists, "a handler named '\(name)' is already registered")
        }
        handlers[name] = handler
    }

    /// Handlers are released in name order, so that it does not depend on hashing.
    mutating func releaseHandlers() {
        for name in handlers.keys.sorted() { handlers[name]!.release() }
        handlers.removeAll()
    }

    // MARK: Registration

    /// Parses and checks the shapes (rules included) of the bindings of
    /// definitions about to be registered: the first registration check after the
    /// definitions' own shapes, before any name is looked up.
    /// `isStatechart`: whether a feature (registered or in `parsed`) is a statechart.
    static func parse(_ parsed: [FeatureDefinition],
                      isStatechart: (String) -> Bool = { _ in false }) throws(UniFlowError) -> [[BindingDefinition]] {
        var shapes: [[BindingDefinition]] = []
        for (i, definition) in parsed.enumerated() {
            var list: [BindingDefinition] = []
            for (j, binding) in definition.bindings.enumerated() {
                list.append(try BindingDefinition.parse(binding, path: "features[\(i)].bindings[\(j)]", isStatechart: isStatechart))
            }
            shapes.append(list)
        }
        return shapes
    }

    /// Resolves the names in parsed bindings (filters, handlers). Filters may
    /// name features registered earlier or in the same call (`parsed`).
    func compile(_ shapes: [[BindingDefinition]], of parsed: [FeatureDefinition],
                 context: some BindingContext) throws(UniFlowError) -> [[ActiveBinding]] {
        let base = context.featureCount
        func feature(_ name: String) -> (Int32, Bool, (String) -> Int?)? {
            if let index = context.featureIndex(named: name) {
                return (index, context.instanceTable(of: index) != nil, { context.stateIndex(named: $0, feature: index).map(Int.init) })
            }
            if let i = parsed.firstIndex(where: { $0.name == name }) {
                return (base + Int32(i), parsed[i].keyed, { parsed[i].stateIndex(named: $0) })
            }
            return nil
        }
        var result: [[ActiveBinding]] = []
        for (i, list) in shapes.enumerated() {
            var active: [ActiveBinding] = []
            for (j, binding) in list.enumerated() {
                let path = "features[\(i)].bindings[\(j)]"
                let filter: Dispatcher.CompiledFilter
                do throws(UniFlowError) {
                    filter = try context.compile(binding.when, lookup: feature)
                } catch {
                    throw error.prefixed("\(path).when")
                }
                for (k, clause) in binding.given.enumerated() {
                    if let name = clause.handler, !hasHandler(name) {
                        throw UniFlowError(.notFound, "\(path).given[\(k)].call: unknown handler '\(name)'")
                    }
                }
                if let name = binding.thenCall, !hasHandler(name) {
                    throw UniFlowError(.notFound, "\(path).then.call: unknown handler '\(name)'")
                }
                active.append(ActiveBinding(definition: binding, owner: base + Int32(i), ownerKeyed: parsed[i].keyed,
                                            filter: filter))
            }
            result.append(active)
        }
        return result
    }

    /// Makes a binding of a just-installed feature known to the feature it
    /// watches (the dispatcher then sets the hot path's flags from its filter).
    mutating func install(_ binding: ActiveBinding) {
        let reference = BindingReference(owner: binding.owner, index: Int32(byOwner[binding.owner, default: []].count))
        byOwner[binding.owner, default: []].append(binding)
        if !binding.ownerKeyed { hasSingleOwner = true }
        if binding.filter.feature < 0 {
            anyWatchers.append(reference)
        } else {
            watchers[binding.filter.feature, default: []].append(reference)
        }
    }

    // MARK: Deciding which bindings run

    /// The bindings that may run for a mutation of `feature`, in feature
    /// registration order and then declaration order: a copy, so that bindings
    /// installed while they run (a handler may register definitions) wait for
    /// the next mutation.
    func candidates(for feature: Int32) -> [BindingReference] {
        let watching = watchers[feature] ?? []
        var candidates = anyWatchers.isEmpty ? watching : (watching + anyWatchers)
        if !anyWatchers.isEmpty && !watching.isEmpty {
            candidates.sort { ($0.owner, $0.index) < ($1.owner, $1.index) }
        }
        return candidates
    }

    /// The candidate binding, if it runs for this mutation: its filter matches
    /// and its owner is active. Decided just before it would run, after the
    /// bindings before it have run.
    func due(_ reference: BindingReference, for record: MutationRecord,
             context: some BindingContext) -> ActiveBinding? {
        let binding = byOwner[reference.owner]![Int(reference.index)]
        let filter = binding.filter
        guard filter.kinds & MutationKind.bit(record.kind) != 0 else { return nil }
        // A statechart's filter fails the state test by construction and asks
        // its own, last: asked while `filter` is in use (or out of line), it
        // made every binding's matching copy more.
        var chartFilter: Int32 = -1
        if !(filter.oldState < 0 || filter.oldState == record.oldState) || !(filter.newState < 0 || filter.newState == record.newState) {
            guard filter.newState == CompiledFilter.chartMarker else { return nil }
            chartFilter = filter.oldState
        }
        if let key = filter.key {
            guard let recordKey = record.key, key == String(cString: recordKey) else { return nil }
        }
        guard ownerActive(binding, record, context: context) else { return nil }
        if chartFilter >= 0 && !context.chartFilterMatches(chartFilter, record) { return nil }
        return binding
    }

    // MARK: Batches

    /// A batch has committed its mutations and is about to announce them: for
    /// each feature it began or ended, how many instances it had before the
    /// batch, counted back from the committed model (nothing to count when no
    /// binding is registered).
    mutating func beginBatchAnnouncement(_ committed: [CommittedMutation], context: some BindingContext) {
        guard !byOwner.isEmpty else { return }
        var counts: [Int32: Int] = [:]
        for mutation in committed.reversed() {
            let feature = mutation.record.feature
            counts[feature] = (counts[feature] ?? context.alive(feature)) - MutationKind.instancesAdded(mutation.record.kind)
        }
        aliveInBatch = counts
    }

    /// A mutation of the batch is about to be announced: its feature's count
    /// moves forward to it.
    mutating func announcingInBatch(_ record: MutationRecord) {
        // Updated in place: a copy per mutation would cost the batch's size each time.
        let added = MutationKind.instancesAdded(record.kind)
        if added != 0 { aliveInBatch?[record.feature]! += added }
    }

    /// Every mutation of the batch was announced: owners are active as the model says.
    mutating func endBatchAnnouncement() { aliveInBatch = nil }

    /// Whether a binding's owner is active for this mutation: a single owner from
    /// its initialization to its deinitialization, both included; a keyed owner
    /// for its own instances' mutations, and for other features' mutations while
    /// at least one of its instances lives (once, not once per instance).
    private func ownerActive(_ binding: ActiveBinding, _ record: MutationRecord,
                             context: some BindingContext) -> Bool {
        if binding.owner == record.feature { return true }
        if let alive = aliveInBatch?[binding.owner] { return alive > 0 }
        return context.alive(binding.owner) > 0
    }
}

/// A binding by its owner feature and its position in the owner's list.
struct BindingReference {
    var owner: Int32
    var index: Int32
}

/// A registered model binding with its filter compiled and its owner known.
struct ActiveBinding {
    var definition: BindingDefinition
    /// The feature whose definition declares the binding.
    var owner: Int32
    var ownerKeyed: Bool
    var filter: Dispatcher.CompiledFilter
}
