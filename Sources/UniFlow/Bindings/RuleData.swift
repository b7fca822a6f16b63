/// What rules read (bindings' `given` and templates, event guards, timers'
/// templates, watches' selectors), made as the rule reads it: a rule that reads
/// `mutation.new.payload.n` builds neither the whole mutation nor the model.
extension Dispatcher {
    typealias JSValue = JsonLogic.JSValue

    /// An object of the given members, for a rule's data.
    func ruleData(_ members: KeyValuePairs<String, JSValue>) -> JSValue { RuleData.object(members) }

    /// The GlobalModel, its features made when read.
    func lazyModel() -> JSValue {
        .object(JsonLogic.JSObject(lazy: LazyModel(self)))
    }

    /// The mutation being delivered, its parts made when read.
    func lazyMutation(_ record: MutationRecord) -> JSValue {
        .object(JsonLogic.JSObject(lazy: LazyMutation(self, record, scratch.delivery)))
    }
}

enum RuleData {
    /// An object of the given members, for a rule's data.
    static func object(_ members: KeyValuePairs<String, JsonLogic.JSValue>) -> JsonLogic.JSValue {
        .object(JsonLogic.JSObject(members.map { JsonLogic.JSObject.Member(key: $0.key, value: $0.value) }))
    }
}

/// The GlobalModel as a JsonLogic object whose features are built when a rule reads them.
final class LazyModel: JsonLogic.LazyMembers {
    unowned let dispatcher: Dispatcher

    init(_ dispatcher: Dispatcher) { self.dispatcher = dispatcher }

    func member(_ key: String) -> JsonLogic.JSValue? {
        guard let feature = dispatcher.featureIndex(named: key), let value = dispatcher.featureJSON(feature) else { return nil }
        return JsonLogic.JSValue(wrapping: value)
    }

    func allMembers() -> JSONObject { dispatcher.modelJSON().objectValue ?? JSONObject() }
}

/// A mutation as `uf_mutation_json` shows it, one member at a time.
final class LazyMutation: JsonLogic.LazyMembers {
    unowned let dispatcher: Dispatcher
    let record: MutationRecord
    let delivery: MutationDelivery

    init(_ dispatcher: Dispatcher, _ record: MutationRecord, _ delivery: MutationDelivery) {
        self.dispatcher = dispatcher
        self.record = record
        // Only what the JSON reads: the texts handed out stay with the dispatcher's delivery.
        var kept = MutationDelivery()
        kept.oldPayload = delivery.oldPayload
        kept.newPayload = delivery.newPayload
        kept.action = delivery.action
        kept.hotAction = delivery.hotAction
        self.delivery = kept
    }

    func member(_ key: String) -> JsonLogic.JSValue? {
        switch key {
        case "seq": return .number(Double(record.seq))
        case "kind": return .string(record.mutationKind.text)
        case "feature": return .string(dispatcher.featureName(record.feature))
        case "key": return record.key.map { .string(String(cString: $0)) }
        case "old": return side(record.oldState, delivery.oldPayload)
        case "new": return side(record.newState, delivery.newPayload)
        case "action": return delivery.actionHeader.map { .init(wrapping: .object(dispatcher.actionDescription($0))) }
        default: return nil
        }
    }

    private func side(_ state: Int32, _ payload: JSONObject?) -> JsonLogic.JSValue {
        guard state >= 0 else { return .null }
        return .init(wrapping: ["state": .string(dispatcher.stateName(state, feature: record.feature)),
                                "payload": .object(payload ?? JSONObject())])
    }

    func allMembers() -> JSONObject { dispatcher.mutationJSON(record, delivery).objectValue ?? JSONObject() }
}
