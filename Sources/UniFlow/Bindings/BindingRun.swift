/// Running one model binding for one mutation: its `given` clauses in order,
/// then `then` (the handler, then the templates). `static`, and given the
/// binding as a value: the handlers and the reporter it calls may re-enter the
/// dispatcher and change the stored `ModelBindings` (see its comment).
extension ModelBindings {
    /// Runs a binding that is due (`due(_:for:context:)`): queues the actions its
    /// templates make and reports it processed, or reports it skipped (a `given`
    /// clause stopped it) or rejected (a rule, a handler or a template failed;
    /// nothing is queued).
    static func run(_ binding: ActiveBinding, for record: MutationRecord, inputs: inout MutationRuleData,
                    context: some BindingContext) {
        let definition = binding.definition
        let (mutation, model) = inputs.values(for: record, context: context)
        var given: JSONValue = .null
        func data() -> JsonLogic.JSValue {
            RuleData.object(["mutation": mutation, "model": model, "given": JsonLogic.JSValue(wrapping: given)])
        }
        do throws(UniFlowError) {
            for (i, clause) in definition.given.enumerated() {
                switch clause {
                case .when:
                    if !isTruthy(try evaluate(definition.compiledGiven[i]!, data())) {
                        context.reportBinding(.bindingSkipped, definition, nil)
                        return
                    }
                case .map:
                    given = try evaluate(definition.compiledGiven[i]!, data())
                case .call(let name, _):
                    let result = context.callHandler(name, mutation: context.mutationText(record), given: given, inGiven: true)
                    if result.status < 0 { throw UniFlowError(.callback, "handler '\(name)' failed (returned \(result.status))") }
                    if result.status == 0 {
                        context.reportBinding(.bindingSkipped, definition, nil)
                        return
                    }
                    if let output = result.output { given = output }
                }
            }
            if let name = definition.thenCall {
                let result = context.callHandler(name, mutation: context.mutationText(record), given: given, inGiven: false)
                if result.status < 0 { throw UniFlowError(.callback, "handler '\(name)' failed (returned \(result.status))") }
            }
            // A template on the binding's own keyed feature acts on the mutation's instance.
            let ownKey = binding.ownerKeyed && binding.owner == record.feature ? record.key.map { String(cString: $0) } : nil
            let actions = try templateActions(definition.compiledSubmit, data: data(), ownFeature: ownKey.map { _ in binding.owner },
                                              ownKey: ownKey, path: "then.submit", context: context)
            try context.queueBindingActions(actions)
            context.reportBinding(.bindingProcessed, definition, nil)
        } catch {
            context.reportBinding(.bindingRejected, definition, error)
        }
    }

    private static func evaluate(_ rule: JsonLogic.CompiledRule, _ data: JsonLogic.JSValue) throws(UniFlowError) -> JSONValue {
        do throws(UniFlowError) {
            return try rule.apply(data: data)
        } catch {
            throw UniFlowError(.schema, "rule error: \(error.message)")
        }
    }

    // MARK: Templates

    /// Substitutes and checks action templates, all or nothing: the actions to
    /// queue (owning their strings), or the first template's failure
    /// (`<path>[i]: ...`). A template on `ownFeature` without a key gets `ownKey`.
    /// State timers' templates are made here too (`Dispatcher.templateActions`).
    static func templateActions(_ templates: [CompiledTemplate], data: JsonLogic.JSValue, ownFeature: Int32?,
                                ownKey: String?, path: String,
                                context: some BindingContext) throws(UniFlowError) -> [ResolvedAction] {
        var actions: [ResolvedAction] = []
        actions.reserveCapacity(templates.count)
        for (i, template) in templates.enumerated() {
            do throws(UniFlowError) {
                actions.append(try templateAction(template, data: data, ownFeature: ownFeature, ownKey: ownKey,
                                                  context: context))
            } catch {
                throw error.prefixed("\(path)[\(i)]")
            }
        }
        return actions
    }

    private static func templateAction(_ template: CompiledTemplate, data: JsonLogic.JSValue, ownFeature: Int32?,
                                       ownKey: String?, context: some BindingContext) throws(UniFlowError) -> ResolvedAction {
        /// A rule's failure reads as a `given` rule's does.
        func substituted(_ part: CompiledTemplate.Part) throws(UniFlowError) -> JSONValue {
            do throws(UniFlowError) {
                return try CompiledTemplate.substitute(part, data: data)
            } catch {
                throw UniFlowError(.schema, "rule error: \(error.message)")
            }
        }
        func ownsKey(_ feature: String?) -> Bool {
            guard let ownFeature, ownKey != nil else { return false }
            return feature == context.featureName(ownFeature)
        }
        // Decoded once: only the payload is substituted.
        if var request = template.request {
            if let part = template.payload {
                let value = try substituted(part)
                guard case .object(let object) = value else {
                    throw UniFlowError(.schema, "action.payload: expected object, got \(value.jsonTypeName)")
                }
                request.payload = object
            }
            if request.key == nil && ownsKey(request.feature) { request.key = ownKey }
            return try context.resolve(request, hasVia: false).owned()
        }
        var json = try substituted(template.part)
        if case .object(var object) = json, object["key"] == nil, ownsKey(object["feature"]?.stringValue) {
            object["key"] = .string(ownKey!)
            json = .object(object)
        }
        return try context.resolve(try ActionRequest.decode(json), hasVia: false).owned()
    }
}

/// What the bindings run for one mutation read as `mutation` and `model`: made
/// when the first of them runs, once, and then only as far as the rules read it.
struct MutationRuleData {
    private var made: (mutation: JsonLogic.JSValue, model: JsonLogic.JSValue)?

    mutating func values(for record: MutationRecord,
                         context: some BindingContext) -> (mutation: JsonLogic.JSValue, model: JsonLogic.JSValue) {
        if let made { return made }
        let mutation = context.lazyMutation(record)
        let values = (mutation: mutation, model: context.lazyModel())
        made = values
        return values
    }
}

/// JsonLogic's truthiness (json-logic-js `truthy`: JavaScript's, except that an
/// empty array is false).
func isTruthy(_ value: JSONValue) -> Bool {
    switch value {
    case .null: false
    case .bool(let b): b
    case .int(let i): i != 0
    case .double(let d): d != 0 && !d.isNaN
    case .string(let s): !s.isEmpty
    case .array(let items): !items.isEmpty
    case .object: true
    }
}
