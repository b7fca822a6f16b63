import CUniFlow
import Glibc

/// Model bindings (`docs/bindings.md`): indexed by the feature their filter
/// watches, run after a mutation is applied and before the subscribers.
extension Dispatcher {
    /// Parses and checks the shapes (rules included) of the bindings of
    /// definitions about to be registered: the first registration check after the
    /// definitions' own shapes, before any name is looked up.
    func parseBindings(of parsed: [FeatureDefinition]) throws(UniFlowError) -> [[BindingDefinition]] {
        var shapes: [[BindingDefinition]] = []
        for (i, definition) in parsed.enumerated() {
            var list: [BindingDefinition] = []
            for (j, binding) in definition.bindings.enumerated() {
                list.append(try BindingDefinition.parse(binding, path: "features[\(i)].bindings[\(j)]"))
            }
            shapes.append(list)
        }
        return shapes
    }

    /// Resolves the names in parsed bindings (filters, handlers). Filters may
    /// name features registered earlier or in the same call (`parsed`).
    func compileBindings(_ shapes: [[BindingDefinition]], of parsed: [FeatureDefinition]) throws(UniFlowError) -> [[ActiveBinding]] {
        let base = Int32(definitions.count)
        func feature(_ name: String) -> (Int32, Bool, (String) -> Int?)? {
            if let index = featureIndex(named: name) {
                return (index, hot.features[Int(index)].instances >= 0, { self.stateIndex(named: $0, feature: index).map(Int.init) })
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
                let filter: CompiledFilter
                do throws(UniFlowError) {
                    filter = try compile(binding.when, lookup: feature)
                } catch {
                    throw error.prefixed("\(path).when")
                }
                for (k, clause) in binding.given.enumerated() {
                    if let name = clause.handler, bindings.handlers[name] == nil {
                        throw UniFlowError(.notFound, "\(path).given[\(k)].call: unknown handler '\(name)'")
                    }
                }
                if let name = binding.thenCall, bindings.handlers[name] == nil {
                    throw UniFlowError(.notFound, "\(path).then.call: unknown handler '\(name)'")
                }
                active.append(ActiveBinding(definition: binding, owner: base + Int32(i), ownerKeyed: parsed[i].keyed,
                                            filter: filter))
            }
            result.append(active)
        }
        return result
    }

    /// Makes bindings of a just-installed feature known to the features they watch.
    func installBindings(_ list: [ActiveBinding]) {
        for binding in list {
            let reference = BindingReference(owner: binding.owner, index: Int32(bindings.byOwner[binding.owner, default: []].count))
            bindings.byOwner[binding.owner, default: []].append(binding)
            if binding.filter.feature < 0 {
                bindings.anyWatchers.append(reference)
                hot.anyBindingKinds |= binding.filter.kinds
            } else {
                bindings.watchers[binding.filter.feature, default: []].append(reference)
                hot.features.pointer(Int(binding.filter.feature)).pointee.bindingKinds |= binding.filter.kinds
            }
        }
    }

    /// Whether a binding's owner is active for this mutation: a single owner from
    /// its initialization to its deinitialization, both included; a keyed owner
    /// for its own instances' mutations, and for other features' mutations while
    /// at least one of its instances lives (once, not once per instance).
    private func ownerActive(_ binding: ActiveBinding, _ record: MutationRecord) -> Bool {
        if binding.owner == record.feature { return true }
        if let alive = bindings.aliveInBatch?[binding.owner] { return alive > 0 }
        return alive(binding.owner) > 0
    }

    /// How many instances a feature has now; a single feature: 1 if initialized, else 0.
    func alive(_ feature: Int32) -> Int {
        if let table = instanceTable(of: feature) { return hot.instanceTables[Int(table)].live }
        return hot.features[Int(feature)].state >= 0 ? 1 : 0
    }

    /// Runs the bindings that match the mutation just applied, in feature
    /// registration order and then declaration order.
    func runBindings(_ record: MutationRecord) {
        let watchers = bindings.watchers[record.feature] ?? []
        var candidates = bindings.anyWatchers.isEmpty ? watchers : (watchers + bindings.anyWatchers)
        if !bindings.anyWatchers.isEmpty && !watchers.isEmpty {
            candidates.sort { ($0.owner, $0.index) < ($1.owner, $1.index) }
        }
        let kindBit = MutationKind.bit(record.kind)
        // What the rules read, made once per mutation and only as far as they read it.
        var mutation: JSValue? = nil
        var model: JSValue? = nil
        for reference in candidates {
            let binding = bindings.byOwner[reference.owner]![Int(reference.index)]
            let filter = binding.filter
            guard filter.kinds & kindBit != 0,
                  filter.oldState < 0 || filter.oldState == record.oldState,
                  filter.newState < 0 || filter.newState == record.newState else { continue }
            if let key = filter.key {
                guard let recordKey = record.key, key == String(cString: recordKey) else { continue }
            }
            guard ownerActive(binding, record) else { continue }
            if mutation == nil { mutation = lazyMutation(record) }
            if model == nil { model = lazyModel() }
            run(binding, record: record, mutation: mutation!, model: model!)
        }
    }

    private func run(_ binding: ActiveBinding, record: MutationRecord, mutation: JSValue, model: JSValue) {
        let definition = binding.definition
        var given: JSONValue = .null
        func data() -> JSValue { ruleData(["mutation": mutation, "model": model, "given": JSValue(wrapping: given)]) }
        do throws(UniFlowError) {
            for (i, clause) in definition.given.enumerated() {
                switch clause {
                case .when:
                    if !isTruthy(try evaluate(definition.compiledGiven[i]!, data())) {
                        reportBinding(.bindingSkipped, definition, nil)
                        return
                    }
                case .map:
                    given = try evaluate(definition.compiledGiven[i]!, data())
                case .call(let name, _):
                    let result = callHandler(name, mutation: mutationJSON(record, scratch.delivery).jsonText, given: given, inGiven: true)
                    if result.status < 0 { throw UniFlowError(.callback, "handler '\(name)' failed (returned \(result.status))") }
                    if result.status == 0 {
                        reportBinding(.bindingSkipped, definition, nil)
                        return
                    }
                    if let output = result.output { given = output }
                }
            }
            if let name = definition.thenCall {
                let result = callHandler(name, mutation: mutationJSON(record, scratch.delivery).jsonText, given: given, inGiven: false)
                if result.status < 0 { throw UniFlowError(.callback, "handler '\(name)' failed (returned \(result.status))") }
            }
            // A template on the binding's own keyed feature acts on the mutation's instance.
            let ownKey = binding.ownerKeyed && binding.owner == record.feature ? record.key.map { String(cString: $0) } : nil
            let actions = try templateActions(definition.compiledSubmit, data: data(), ownFeature: ownKey.map { _ in binding.owner },
                                              ownKey: ownKey, path: "then.submit")
            if cascade.dropping && !actions.isEmpty {
                throw UniFlowError(.loop, "the cascade limit (\(options.maxCascade)) was reached; actions refused")
            }
            for action in actions { queue.append(action) }
            reportBinding(.bindingProcessed, definition, nil)
        } catch {
            reportBinding(.bindingRejected, definition, error)
        }
    }

    /// Substitutes and checks action templates, all or nothing: the actions to
    /// queue (owning their strings), or the first template's failure
    /// (`<path>[i]: ...`). A template on `ownFeature` without a key gets `ownKey`.
    func templateActions(_ templates: [CompiledTemplate], data: JSValue, ownFeature: Int32?, ownKey: String?,
                         path: String) throws(UniFlowError) -> [ResolvedAction] {
        var actions: [ResolvedAction] = []
        actions.reserveCapacity(templates.count)
        for (i, template) in templates.enumerated() {
            do throws(UniFlowError) {
                actions.append(try templateAction(template, data: data, ownFeature: ownFeature, ownKey: ownKey))
            } catch {
                throw error.prefixed("\(path)[\(i)]")
            }
        }
        return actions
    }

    private func templateAction(_ template: CompiledTemplate, data: JSValue, ownFeature: Int32?,
                                ownKey: String?) throws(UniFlowError) -> ResolvedAction {
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
            return feature == featureName(ownFeature)
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
            return try resolve(request, hasVia: false).owned()
        }
        var json = try substituted(template.part)
        if case .object(var object) = json, object["key"] == nil, ownsKey(object["feature"]?.stringValue) {
            object["key"] = .string(ownKey!)
            json = .object(object)
        }
        return try resolve(try ActionRequest.decode(json), hasVia: false).owned()
    }

    private func evaluate(_ rule: JsonLogic.CompiledRule, _ data: JSValue) throws(UniFlowError) -> JSONValue {
        do throws(UniFlowError) {
            return try rule.apply(data: data)
        } catch {
            throw UniFlowError(.schema, "rule error: \(error.message)")
        }
    }

    /// Calls a host handler with the text `uf_binding_call_*` reads; returns its
    /// status and the output it set (`given` clauses only).
    func callHandler(_ name: String, mutation: String, given: JSONValue, inGiven: Bool) -> (status: Int32, output: JSONValue?) {
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

    private func reportBinding(_ event: ReportEvent, _ binding: BindingDefinition, _ failure: UniFlowError?) {
        guard reportingActive, let action = scratch.delivery.action else { return }
        if event == .bindingSkipped {
            let wanted = options.reporting == .verbose || (reporter.custom != nil && options.reportSkipped)
            guard wanted else { return }
        }
        let name = reporter.custom == nil && options.reporting == .verbose ? binding.sentence : binding.name
        report(event, action: action, failure: failure, binding: name)
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

/// What `uf_binding_call *` points to while a handler runs: a record on the
/// processing thread's stack, with its text kept in `CallbackScratch.handlerCall`.
struct BindingCallRecord {
    var dispatcher: UnsafeMutableRawPointer
    /// `set_output` is allowed in `given`, not in `then`.
    var inGiven: Bool
}

/// The handler's side of a binding being run (or an event guard).
struct HandlerCallScratch {
    var mutationText: String = "null"
    var givenText: String = "null"
    var output: JSONValue?
    var mutationCString: UnsafeMutablePointer<CChar>?
    var givenCString: UnsafeMutablePointer<CChar>?

    mutating func reset() {
        free(mutationCString)
        free(givenCString)
        mutationCString = nil
        givenCString = nil
    }
}

extension Dispatcher {
    /// `uf_binding_call_mutation_json` and `uf_binding_call_given_json`, made on first request.
    func handlerCallText(given: Bool) -> UnsafePointer<CChar>? {
        if given {
            if scratch.handlerCall.givenCString == nil {
                scratch.handlerCall.givenCString = try? Memory.copy(scratch.handlerCall.givenText, for: "a binding's given")
            }
            return scratch.handlerCall.givenCString.map { UnsafePointer($0) }
        }
        if scratch.handlerCall.mutationCString == nil {
            scratch.handlerCall.mutationCString = try? Memory.copy(scratch.handlerCall.mutationText, for: "a mutation's text")
        }
        return scratch.handlerCall.mutationCString.map { UnsafePointer($0) }
    }

    /// `uf_binding_call_set_output`.
    func setHandlerOutput(_ record: BindingCallRecord, _ text: UnsafePointer<CChar>) throws(UniFlowError) {
        guard record.inGiven else {
            throw UniFlowError(.misuse, "uf_binding_call_set_output is only allowed in a given clause")
        }
        scratch.handlerCall.output = try JSONParser.parse(text)
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
