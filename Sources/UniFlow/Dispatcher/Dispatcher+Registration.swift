/// Registering definitions (`uf_register`) and host handlers.
extension Dispatcher {
    /// Validates and registers definitions all or nothing.
    func register(_ json: JSONValue) throws(UniFlowError) {
        // A payload_free run by uf_dispatcher_free must not register (nor journal) anything.
        try refuseWhileClosing("uf_register")
        // Shapes first (definitions, then their bindings), then names.
        let parsed = try DefinitionParser.parse(json)
        let shapes = try parseBindings(of: parsed)
        for (i, definition) in parsed.enumerated() {
            if featureIndex(named: definition.name) != nil {
                throw UniFlowError(.exists, "features[\(i)]: feature '\(definition.name)' is already registered")
            }
        }
        for definition in parsed { charts.registering[definition.name] = definition.chart }
        defer { charts.registering = [:] }
        let compiled = try compileBindings(shapes, of: parsed)
        try checkHandlers(of: parsed)
        try checkStatechartHandlers(of: parsed)
        try checkTimerTemplates(of: parsed)
        if hot.journaling { try journalRegistration(adding: parsed) }
        // Everything that can fail for want of memory happens before anything is
        // installed, so that a registration is all or nothing.
        let sources = parsed.map { $0.source.jsonText }
        try hot.reserve(for: parsed, arena: &names)
        try subscriptions.reserveFeatures(parsed.count)
        try definitions.reserve(parsed.count, bytes: sources.reduce(0) { $0 + $1.utf8.count })
        // Every feature first: a binding may watch a feature later in the same call.
        for (definition, source) in zip(parsed, sources) {
            do throws(UniFlowError) {
                let index = try hot.addFeature(definition, arena: &names)
                try definitions.append(definition, source: source)
                registerStatechart(definition, feature: index)
            } catch {
                // Reserved above: cannot happen.
                fatalError("libuniflow: registering after reserving failed: \(error)")
            }
            model.payloads.append(nil)
            if definition.keyed { model.instancePayloads.append([]) }
        }
        subscriptions.addFeatures(upTo: hot.features.count)
        for list in compiled { installBindings(list) }
        attachWatchesToNewFeatures(from: Int32(hot.features.count - parsed.count))
        fingerprint = nil
    }

    /// Event guards that name a handler need it registered, as bindings do.
    private func checkHandlers(of parsed: [FeatureDefinition]) throws(UniFlowError) {
        for (i, definition) in parsed.enumerated() {
            func check(_ events: [EventTargets], at path: String) throws(UniFlowError) {
                for entry in events {
                    for (j, target) in entry.targets.enumerated() {
                        if let name = target.call, !bindings.hasHandler(name) {
                            let where_ = entry.listed ? "\(path).\(entry.event)[\(j)]" : "\(path).\(entry.event)"
                            throw UniFlowError(.notFound, "\(where_).call: unknown handler '\(name)'")
                        }
                    }
                }
            }
            for state in definition.states { try check(state.events, at: "features[\(i)].states.\(state.name).on") }
            try check(definition.events, at: "features[\(i)].on")
        }
    }

    /// A state timer's templates without rules are checked completely when
    /// they are registered (a timer that could never submit its action is a
    /// mistake in the definition); those with rules are checked when they fire.
    private func checkTimerTemplates(of parsed: [FeatureDefinition]) throws(UniFlowError) {
        for (i, definition) in parsed.enumerated() {
            for state in definition.states {
                for (t, timer) in state.timers.enumerated() {
                    for (j, template) in timer.submit.enumerated() where ActionTemplate.rules(in: template).isEmpty {
                        let path = "features[\(i)].states.\(state.name).after[\(t)].submit[\(j)]"
                        do throws(UniFlowError) {
                            try checkLiteralTemplate(template, owner: definition, keyedOwner: definition.keyed, parsed: parsed)
                        } catch {
                            // An unknown name is UF_ENOTFOUND, as in an action; the rest is the definition's shape.
                            throw UniFlowError(error.status == .notFound ? .notFound : .schema, "\(path): \(error.message)")
                        }
                    }
                }
            }
        }
    }

    /// Decodes a template and checks its names and payload against the registered
    /// definitions and those being registered.
    private func checkLiteralTemplate(_ template: JSONValue, owner: FeatureDefinition, keyedOwner: Bool,
                                      parsed: [FeatureDefinition]) throws(UniFlowError) {
        try checkLiteralAction(try ActionRequest.decode(template), owner: owner, keyedOwner: keyedOwner, parsed: parsed)
    }

    /// Checks a decoded template action, and a trigger's `submit` list in it (whose
    /// actions name their key: only the template itself takes the timer's instance).
    /// Its shape was checked by the table-driven decoder; what is left is the
    /// meaning of the fields resolved against definitions (`ActionField.resolution`):
    /// the key against the feature, `from` then `into` against its states, as
    /// `Dispatcher.resolve` does it (an event is checked when the send is processed).
    private func checkLiteralAction(_ request: ActionRequest, owner: FeatureDefinition, keyedOwner: Bool,
                                    parsed: [FeatureDefinition]) throws(UniFlowError) {
        let definition: FeatureDefinition
        if let index = featureIndex(named: request.feature) {
            definition = definitions[Int(index)]
        } else if let match = parsed.first(where: { $0.name == request.feature }) {
            definition = match
        } else {
            throw UniFlowError(.notFound, "unknown feature '\(request.feature)'")
        }
        // A template on the timer's own keyed feature may leave the key out: it acts on the timer's instance.
        if request.key != nil && !definition.keyed {
            throw UniFlowError(.schema, "\(definition.name) is a single feature: an action on it takes no key")
        }
        if request.key == nil && definition.keyed && !(keyedOwner && definition.name == owner.name) {
            throw UniFlowError(.schema, "\(definition.name) is keyed: an action on it needs a key")
        }
        func state(_ name: String?) throws(UniFlowError) -> StateDefinition? {
            guard let name else { return nil }
            guard let index = definition.stateIndex(named: name) else {
                throw UniFlowError(.notFound, "unknown state '\(name)' of feature \(definition.name)")
            }
            return definition.states[index]
        }
        _ = try state(request.from)
        if let into = try state(request.into), request.kind.entersState {
            _ = try into.checkPayload(request.payload, feature: definition.name)
        }
        for (i, queued) in request.submit.enumerated() {
            do throws(UniFlowError) {
                try checkLiteralAction(queued, owner: owner, keyedOwner: false, parsed: parsed)
            } catch {
                throw error.prefixed("submit[\(i)]")
            }
        }
    }

    func registerHandler(_ name: String, _ handler: HostCallback<uf_handler_fn>) throws(UniFlowError) {
        try refuseWhileClosing("uf_register_handler")
        try bindings.addHandler(name, handler)
    }
}

import CUniFlow
