import CUniFlow

/// Turning submitted actions into `ResolvedAction`s, from whatever source they
/// were decoded: names to indices, the key checked against the feature, the given
/// payload checked against its state (`docs/actions.md`: JSON, shape, names,
/// payload, then — when processed — the precondition).
extension Dispatcher {
    func resolveFeature(_ name: String) throws(UniFlowError) -> Int32 {
        guard let index = featureIndex(named: name) else { throw UniFlowError(.notFound, "unknown feature '\(name)'") }
        return index
    }

    func resolveState(_ name: String, of feature: Int32) throws(UniFlowError) -> Int32 {
        // A statechart's state, as models and journal lines write it, is a configuration.
        if charts.any, charts[feature] != nil { return try statechartConfiguration(name, feature: feature, at: featureName(feature)) }
        guard let index = stateIndex(named: name, feature: feature) else {
            throw UniFlowError(.notFound, "unknown state '\(name)' of feature \(featureName(feature))")
        }
        return index
    }

    /// Resolves a decoded action. `hasVia` tells whether a via callback comes with
    /// it (then a JSON payload is a conflict, and a missing payload is the
    /// callback's to give). Strings stay borrowed from the source where it
    /// outlives the call (`owned()` copies them for the queue).
    func resolve<Source: ActionSource>(_ request: DecodedAction<Source>, hasVia: Bool) throws(UniFlowError) -> ResolvedAction {
        if hasVia && request.payload != nil {
            throw UniFlowError(.invalidArgument, "action has both a JSON payload and a via callback")
        }
        if hasVia && request.kind == .send {
            throw UniFlowError(.invalidArgument, "a send takes no via callback: its target and payload come from the definition")
        }
        let feature = try request.feature.withCName { (name) throws(UniFlowError) -> Int32 in
            name.map { hot.findFeature($0) } ?? -1
        }
        if feature < 0 { throw UniFlowError(.notFound, "unknown feature '\(request.feature.string)'") }
        var action = ResolvedAction(kind: request.kind, feature: feature)
        var extras: ActionExtras? = nil

        // The names, each as its field requires (`ActionField.resolution`).
        let keyed = hot.features[Int(feature)].instances >= 0
        if request.key != nil {
            guard keyed else {
                throw keyFault("\(featureName(feature)) is a single feature: an action on it takes no key", request)
            }
        } else if keyed {
            throw keyFault("\(featureName(feature)) is keyed: an action on it needs a key", request)
        }

        func state(_ name: Source.Text) throws(UniFlowError) -> Int32 {
            let index = try name.withCName { (c) throws(UniFlowError) -> Int32 in c.map { hot.findState($0, of: feature) } ?? -1 }
            // A statechart's bare names (unique in the feature) name states too.
            if index < 0, charts.any, let node = try statechartState(name.string, feature: feature) { return node }
            if index < 0 { throw UniFlowError(.notFound, "unknown state '\(name.string)' of feature \(featureName(feature))") }
            return index
        }
        if let from = request.from { action.header.from = try state(from) }
        if let into = request.into { action.header.into = try state(into) }
        if let event = request.event {
            action.header.event = try event.withCName { (c) throws(UniFlowError) -> Int32 in c.map { hot.findEvent($0, of: feature) } ?? -1 }
        }

        // The flags, and the texts the header keeps as given: every field the table gives a place.
        action.header.flags = request.flags
        for kept in ActionField.keptTexts {
            guard let text = request[slot: kept.input] else { continue }
            action.header.texts[kept.header] = try text.cString(keptIn: &extras)
        }

        action.header.carriesPayload = request.payload != nil
        let payload: JSONObject?
        if action.kind == .send || (charts.any && charts[feature] != nil) {
            // A statechart checks its payload as its macrostep runs.
            payload = try request.payload?.value(depth: request.depth + 1)
        } else if action.entersState {
            // The definition is read only when there is a payload to check or fill
            // in: copying it out cost a plain transition a tenth of its resolution.
            if let given = request.payload {
                payload = try given.checked(by: stateDefinition(action.header.into, of: feature), depth: request.depth + 1) { featureName(feature) }
            } else if hasVia || !stateSlot(action.header.into, of: hot.features[Int(feature)]).hasFields {
                // The via gives it, or the state has nothing to fill in.
                payload = nil
            } else {
                payload = try stateDefinition(action.header.into, of: feature).checkPayload(nil, feature: featureName(feature))
            }
        } else {
            payload = nil
        }

        var submit: [ResolvedAction] = []
        // By index: `enumerated()` copied the whole request on every call, list or no list.
        for i in request.submit.indices {
            do throws(UniFlowError) {
                submit.append(try resolve(request.submit[i], hasVia: false).owned())
            } catch {
                throw error.prefixed("submit[\(i)]")
            }
        }
        if payload != nil || !submit.isEmpty {
            extras = extras.map { $0.replacingPayloadAndSubmit(payload, submit) } ?? ActionExtras(payload: payload, submit: submit)
        }
        action.extras = extras
        return action
    }

    /// A key that does not fit its feature: a document of the wrong shape in
    /// JSON, a bad argument from C.
    private func keyFault<Source: ActionSource>(_ message: String, _ request: DecodedAction<Source>) -> UniFlowError {
        UniFlowError(Source.self == CActionSource.self ? .invalidArgument : .schema, message)
    }
}

extension ActionExtras {
    /// The same strings with a payload and a submit list.
    func replacingPayloadAndSubmit(_ payload: JSONObject?, _ submit: [ResolvedAction]) -> ActionExtras {
        let copy = ActionExtras(payload: payload, submit: submit)
        copy.adopt(self)
        return copy
    }
}
