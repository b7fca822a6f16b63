import CUniFlow

/// The dispatcher's side of model bindings (`ModelBindings`): the loop that runs
/// them for a mutation, the host calls they make, the context they read, and
/// the names the rest of the core calls them by.
extension Dispatcher {
    /// See `ModelBindings.parse`.
    func parseBindings(of parsed: [FeatureDefinition]) throws(UniFlowError) -> [[BindingDefinition]] {
        try ModelBindings.parse(parsed) { name in
            parsed.contains { $0.name == name && $0.chart != nil } || (featureIndex(named: name).map { charts[$0] != nil } ?? false)
        }
    }

    /// See `ModelBindings.compile`.
    func compileBindings(_ shapes: [[BindingDefinition]], of parsed: [FeatureDefinition]) throws(UniFlowError) -> [[ActiveBinding]] {
        try bindings.compile(shapes, of: parsed, context: self)
    }

    /// Makes bindings of a just-installed feature known to the features they
    /// watch, and to the hot path, which reads `bindingKinds | anyBindingKinds`
    /// to know that no binding applies.
    func installBindings(_ list: [ActiveBinding]) {
        for binding in list {
            bindings.install(binding)
            if binding.filter.feature < 0 {
                hot.anyBindingKinds |= binding.filter.kinds
            } else {
                hot.features.pointer(Int(binding.filter.feature)).pointee.bindingKinds |= binding.filter.kinds
            }
        }
    }

    /// Runs the bindings that match the mutation just applied, in feature
    /// registration order and then declaration order.
    ///
    /// `bindings` decides which run, one at a time, each access ending before the
    /// binding runs: a binding calls host handlers (and a custom reporter), which
    /// may register handlers or definitions and so change `bindings`; inside an
    /// access to it, that would be a conflicting access, which Swift stops.
    func runBindings(_ record: MutationRecord, homes: BindingHomes = .all) {
        var inputs = MutationRuleData()
        for reference in bindings.candidates(for: record.feature) {
            guard let binding = bindings.due(reference, for: record, context: self) else { continue }
            // A single feature's binding lives in the global partition (docs/scale-out.md).
            switch homes {
            case .all: break
            case .keyedOwners: if !binding.ownerKeyed { continue }
            case .singleOwners: if binding.ownerKeyed { continue }
            }
            ModelBindings.run(binding, for: record, inputs: &inputs, context: self)
        }
    }

    /// See `ModelBindings.templateActions`.
    func templateActions(_ templates: [CompiledTemplate], data: JSValue, ownFeature: Int32?, ownKey: String?,
                         path: String) throws(UniFlowError) -> [ResolvedAction] {
        try ModelBindings.templateActions(templates, data: data, ownFeature: ownFeature, ownKey: ownKey, path: path,
                                          context: self)
    }
}

/// Which bindings run for a mutation, by their home (a partitioned dispatcher):
/// a binding of a single feature lives in the global partition, one of a keyed
/// feature in the partition of the mutation it sees.
enum BindingHomes {
    case all
    /// In a record of a partition other than the global one: the bindings of
    /// single features run later, at the global partition's owner.
    case keyedOwners
    /// That later run, over another partition's record.
    case singleOwners
}

/// Rule data over the live model (`RuleData`): what guards, watches' selectors
/// and timers' templates build their data from.
extension Dispatcher: RuleDataSource {
    typealias JSValue = JsonLogic.JSValue

    /// An object of the given members, for a rule's data.
    func ruleData(_ members: KeyValuePairs<String, JSValue>) -> JSValue { RuleData.object(members) }

    /// The GlobalModel, its features made when read.
    func lazyModel() -> JSValue { RuleData.model(of: self) }

    /// The mutation being delivered, its parts made when read.
    func lazyMutation(_ record: MutationRecord) -> JSValue { RuleData.mutation(record, scratch.delivery, of: self) }
}

extension Dispatcher: BindingContext {
    /// How many instances a feature has now; a single feature: 1 if initialized, else 0.
    func alive(_ feature: Int32) -> Int {
        if let table = instanceTable(of: feature) { return hot.instanceTables[Int(table)].live }
        return hot.features[Int(feature)].state >= 0 ? 1 : 0
    }


    func queueBindingActions(_ actions: [ResolvedAction]) throws(UniFlowError) {
        if cascade.dropping && !actions.isEmpty {
            throw UniFlowError(.loop, "the cascade limit (\(options.maxCascade)) was reached; actions refused")
        }
        for action in actions { queue.append(action) }
    }

    func reportBinding(_ event: ReportEvent, _ binding: BindingDefinition, _ failure: UniFlowError?) {
        guard reportingActive, let action = scratch.delivery.action else { return }
        if event == .bindingSkipped {
            let wanted = options.reporting == .verbose || (reporter.custom != nil && options.reportSkipped)
            guard wanted else { return }
        }
        let name = reporter.custom == nil && options.reporting == .verbose ? binding.sentence : binding.name
        report(event, action: action, failure: failure, binding: name)
    }

    /// Calls a host handler with the text `uf_binding_call_*` reads; returns its
    /// status and the output it set (`given` clauses only). Event guards call it too.
    func callHandler(_ name: String, mutation: String, given: JSONValue, inGiven: Bool) -> (status: Int32, output: JSONValue?) {
        // A copy: the handler may register another one.
        guard let handler = bindings.handlers[name] else { return (-1, nil) }
        let saved = scratch.handlerCall
        scratch.handlerCall = HandlerCallScratch(mutationText: mutation, givenText: given.jsonText)
        defer {
            scratch.handlerCall.reset()
            scratch.handlerCall = saved
        }
        var call = BindingCallRecord(dispatcher: UnsafeMutableRawPointer(handle), inGiven: inGiven)
        let result = withUnsafeMutablePointer(to: &call) { handler.function(OpaquePointer($0), handler.payload) }
        return (result, scratch.handlerCall.output)
    }
}
