/// What rules read (bindings' `given` and templates, event guards, timers'
/// templates, watches' selectors), made as the rule reads it: a rule that reads
/// `mutation.new.payload.n` builds neither the whole mutation nor the model.
enum RuleData {
    /// An object of the given members, for a rule's data.
    static func object(_ members: KeyValuePairs<String, JsonLogic.JSValue>) -> JsonLogic.JSValue {
        .object(JsonLogic.JSObject(members.map { JsonLogic.JSObject.Member(key: $0.key, value: $0.value) }))
    }

    /// The GlobalModel, its features made when read.
    static func model(of source: some RuleDataSource) -> JsonLogic.JSValue {
        .object(JsonLogic.JSObject(lazy: LazyModel(source)))
    }

    /// A mutation being delivered, its parts made when read (the payloads and
    /// action of `delivery`, taken now).
    static func mutation(_ record: MutationRecord, _ delivery: MutationDelivery,
                         of source: some RuleDataSource) -> JsonLogic.JSValue {
        .object(JsonLogic.JSObject(lazy: LazyMutation(source, record, delivery)))
    }
}

/// What rule data reads of the live model; the dispatcher conforms
/// (`Dispatcher+Bindings.swift`), with the methods it has for the C API.
protocol RuleDataSource: AnyObject {
    func featureIndex(named name: String) -> Int32?
    func featureName(_ feature: Int32) -> String
    func stateName(_ state: Int32, feature: Int32) -> String
    /// A feature as `uf_feature_json` shows it; nil when it has no state (or instance).
    func featureJSON(_ feature: Int32) -> JSONValue?
    func modelJSON() -> JSONValue
    func mutationJSON(_ record: MutationRecord, _ delivery: MutationDelivery) -> JSONValue
    func actionDescription(_ action: ActionHeader) -> JSONObject
    /// A mutation installed from a record: the action object its line carried.
    var foreignAction: JSONObject? { get }
}

/// The GlobalModel as a JsonLogic object whose features are built when a rule reads them.
final class LazyModel<Source: RuleDataSource>: JsonLogic.LazyMembers {
    unowned let source: Source

    init(_ source: Source) { self.source = source }

    func member(_ key: String) -> JsonLogic.JSValue? {
        guard let feature = source.featureIndex(named: key), let value = source.featureJSON(feature) else { return nil }
        return JsonLogic.JSValue(wrapping: value)
    }

    func allMembers() -> JSONObject { source.modelJSON().objectValue ?? JSONObject() }
}

/// A mutation as `uf_mutation_json` shows it, one member at a time.
final class LazyMutation<Source: RuleDataSource>: JsonLogic.LazyMembers {
    unowned let source: Source
    let record: MutationRecord
    let delivery: MutationDelivery

    init(_ source: Source, _ record: MutationRecord, _ delivery: MutationDelivery) {
        self.source = source
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
        case "feature": return .string(source.featureName(record.feature))
        case "key": return record.key.map { .string(String(cString: $0)) }
        case "old": return side(record.oldState, delivery.oldPayload)
        case "new": return side(record.newState, delivery.newPayload)
        case "action":
            if let foreign = source.foreignAction { return .init(wrapping: .object(foreign)) }
            return delivery.actionHeader.map { .init(wrapping: .object(source.actionDescription($0))) }
        default: return nil
        }
    }

    private func side(_ state: Int32, _ payload: JSONObject?) -> JsonLogic.JSValue {
        guard state >= 0 else { return .null }
        return .init(wrapping: ["state": .string(source.stateName(state, feature: record.feature)),
                                "payload": .object(payload ?? JSONObject())])
    }

    func allMembers() -> JSONObject { source.mutationJSON(record, delivery).objectValue ?? JSONObject() }
}
