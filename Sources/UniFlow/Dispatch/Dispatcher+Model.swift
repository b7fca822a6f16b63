/// Reading the GlobalModel (SPEC 5) and mutations as JSON.
extension Dispatcher {
    /// The payload stored for an initialized feature (`{}` when it has none).
    func payload(of feature: Int) -> JSONObject {
        hot.features[feature].hasPayload ? (payloads[feature] ?? JSONObject()) : JSONObject()
    }

    /// `{"state": S, "payload": {...}}`, or nil when the feature is absent.
    func featureState(_ feature: Int) -> JSONValue? {
        let state = hot.features[feature].state
        guard state >= 0 else { return nil }
        return ["state": .string(stateName(state, feature: Int32(feature))), "payload": .object(payload(of: feature))]
    }

    /// The GlobalModel: initialized features in registration order.
    func modelJSON() -> JSONValue {
        var model = JSONObject()
        for i in 0..<hot.features.count {
            if let state = featureState(i) { model[featureName(Int32(i))] = state }
        }
        return .object(model)
    }

    /// `{"features": [...]}` as registered: the stored texts, joined.
    func definitionsText() -> String {
        var text = #"{"features":["#
        for feature in definitions.indices {
            if feature > 0 { text += "," }
            text += definitions.source(feature)
        }
        return text + "]}"
    }

    /// Every registered definition, parsed (for graphs).
    func allDefinitions() -> [FeatureDefinition] {
        definitions.indices.map { definitions[$0] }
    }

    /// The mutation being delivered, as SPEC 5.1 shows it.
    func mutationJSON(_ record: MutationRecord) -> JSONValue {
        let kinds = ["", "initialization", "actualization", "transition", "deinitialization"]
        let feature = record.feature
        func side(_ state: Int32, _ payload: JSONObject?) -> JSONValue {
            guard state >= 0 else { return .null }
            return ["state": .string(stateName(state, feature: feature)), "payload": .object(payload ?? JSONObject())]
        }
        var object = JSONObject()
        object["seq"] = .int(Int64(record.seq))
        object["kind"] = .string(kinds[Int(record.kind)])
        object["feature"] = .string(featureName(feature))
        object["old"] = side(record.oldState, delivery.oldPayload)
        object["new"] = side(record.newState, delivery.newPayload)
        if let action = delivery.action { object["action"] = .object(actionDescription(action)) }
        return .object(object)
    }
}
