import CUniFlow
import Glibc

/// Model bindings (SPEC 6): indexed by the feature their filter watches, run after
/// a mutation is applied and before the subscribers.
extension Dispatcher {
    /// Parses and checks the shapes (rules included) of the bindings of
    /// definitions about to be registered: the first registration check after the
    /// definitions' own shapes, before any name is looked up (SPEC 6).
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
        func feature(_ name: String) -> (Int32, (String) -> Int?)? {
            if let index = featureIndex(named: name) {
                return (index, { self.stateIndex(named: $0, feature: index).map(Int.init) })
            }
            if let i = parsed.firstIndex(where: { $0.name == name }) {
                return (base + Int32(i), { parsed[i].stateIndex(named: $0) })
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
                    if let name = clause.handler, handlers[name] == nil {
                        throw UniFlowError(.notFound, "\(path).given[\(k)].call: unknown handler '\(name)'")
                    }
                }
                if let name = binding.thenCall, handlers[name] == nil {
                    throw UniFlowError(.notFound, "\(path).then.call: unknown handler '\(name)'")
                }
                active.append(ActiveBinding(definition: binding, owner: base + Int32(i), filter: filter))
            }
            result.append(active)
        }
        return result
    }

    /// Makes bindings of a just-installed feature known to the features they watch.
    func installBindings(_ bindings: [ActiveBinding]) {
        for binding in bindings {
            let reference = BindingReference(owner: binding.owner, index: Int32(modelBindings[binding.owner, default: []].count))
            modelBindings[binding.owner, default: []].append(binding)
            if binding.filter.feature < 0 {
                anyBindingWatchers.append(reference)
                hot.anyBindingKinds |= binding.filter.kinds
            } else {
                bindingWatchers[binding.filter.feature, default: []].append(reference)
                hot.features.pointer(Int(binding.filter.feature)).pointee.bindingKinds |= binding.filter.kinds
            }
        }
    }

    /// Runs the bindings that match the mutation just applied, in feature
    /// registration order and then declaration order.
    func runBindings(_ record: MutationRecord) {
        let watchers = bindingWatchers[record.feature] ?? []
        var candidates = anyBindingWatchers.isEmpty ? watchers : (watchers + anyBindingWatchers)
        if !anyBindingWatchers.isEmpty && !watchers.isEmpty {
            candidates.sort { ($0.owner, $0.index) < ($1.owner, $1.index) }
        }
        let kindBit: UInt8 = 1 << UInt8(truncatingIfNeeded: record.kind)
        var data: JSONValue? = nil
        var dataHasModel = false
        for reference in candidates {
            let binding = modelBindings[reference.owner]![Int(reference.index)]
            let filter = binding.filter
            guard filter.kinds & kindBit != 0,
                  filter.oldState < 0 || filter.oldState == record.oldState,
                  filter.newState < 0 || filter.newState == record.newState else { continue }
            // Active from the owner's initialization to its deinitialization, both included.
            let ownerActive = hot.features[Int(binding.owner)].state >= 0
                || (binding.owner == record.feature && record.kind == Int32(UF_MUTATION_DEINITIALIZATION.rawValue))
            guard ownerActive else { continue }
            // The model only for bindings whose rules may read it: with many
            // features it costs more than everything else a binding does.
            let readsModel = binding.definition.readsModel
            if data == nil || (readsModel && !dataHasModel) {
                data = ["mutation": mutationJSON(record), "model": readsModel ? modelJSON() : [:], "given": .null]
                dataHasModel = readsModel
            }
            run(binding, record: record, data: data!)
        }
    }

    private func run(_ binding: ActiveBinding, record: MutationRecord, data: JSONValue) {
        let definition = binding.definition
        var given: JSONValue = .null
        func scope() -> JSONValue {
            guard case .object(var object) = data else { return data }
            object["given"] = given
            return .object(object)
        }
        do throws(UniFlowError) {
            for clause in definition.given {
                switch clause {
                case .when(let rule, _):
                    if !isTruthy(try evaluate(rule, scope())) {
                        reportBinding(.bindingSkipped, definition, nil)
                        return
                    }
                case .map(let rule, _):
                    given = try evaluate(rule, scope())
                case .call(let name, _):
                    let (result, output) = callHandler(name, record: record, given: given, inGiven: true)
                    if result < 0 { throw UniFlowError(.callback, "handler '\(name)' failed (returned \(result))") }
                    if result == 0 {
                        reportBinding(.bindingSkipped, definition, nil)
                        return
                    }
                    if let output { given = output }
                }
            }
            if let name = definition.thenCall {
                let (result, _) = callHandler(name, record: record, given: given, inGiven: false)
                if result < 0 { throw UniFlowError(.callback, "handler '\(name)' failed (returned \(result))") }
            }
            var actions: [ResolvedAction] = []
            for (i, template) in definition.thenSubmit.enumerated() {
                do throws(UniFlowError) {
                    let json: JSONValue
                    do throws(UniFlowError) {
                        json = try ActionTemplate.substitute(template, data: scope())
                    } catch {
                        // As a `given` rule's failure reads.
                        throw UniFlowError(.schema, "rule error: \(error.message)")
                    }
                    actions.append(try resolve(try ActionRequest.decode(json), hasVia: false))
                } catch {
                    throw error.prefixed("then.submit[\(i)]")
                }
            }
            if cascade.dropping && !actions.isEmpty {
                throw UniFlowError(.loop, "the cascade limit (\(options.maxCascade)) was reached; actions refused")
            }
            for action in actions { queue.append(action) }
            reportBinding(.bindingProcessed, definition, nil)
        } catch {
            reportBinding(.bindingRejected, definition, error)
        }
    }

    private func evaluate(_ rule: JSONValue, _ data: JSONValue) throws(UniFlowError) -> JSONValue {
        do throws(UniFlowError) {
            return try JsonLogic.apply(rule, data: data)
        } catch {
            throw UniFlowError(.schema, "rule error: \(error.message)")
        }
    }

    private func callHandler(_ name: String, record: MutationRecord, given: JSONValue, inGiven: Bool) -> (Int32, JSONValue?) {
        guard let handler = handlers[name] else { return (-1, nil) }
        let saved = handlerCall
        handlerCall = HandlerCallScratch(mutationText: mutationJSON(record).jsonText, givenText: given.jsonText)
        defer {
            free(handlerCall.mutationCString)
            free(handlerCall.givenCString)
            handlerCall = saved
        }
        var call = BindingCallRecord(dispatcher: UnsafeMutableRawPointer(handle), inGiven: inGiven)
        let result = withUnsafeMutablePointer(to: &call) { handler.fn(OpaquePointer($0), handler.payload) }
        return (result, handlerCall.output)
    }

    private func reportBinding(_ event: ReportEvent, _ binding: BindingDefinition, _ failure: UniFlowError?) {
        guard reportingActive, let action = delivery.action else { return }
        if event == .bindingSkipped {
            let wanted = options.reporting == .verbose || (reporter != nil && options.reportSkipped)
            guard wanted else { return }
        }
        let name = reporter == nil && options.reporting == .verbose ? binding.sentence : binding.name
        report(event, action: action, failure: failure, binding: name)
    }

    // MARK: Handlers

    func registerHandler(_ handler: HostHandler) throws(UniFlowError) {
        try refuseWhileClosing("uf_register_handler")
        guard handlers[handler.name] == nil else {
            throw UniFlowError(.exists, "a handler named '\(handler.name)' is already registered")
        }
        handlers[handler.name] = handler
    }
}

/// A binding by its owner feature and its position in the owner's list.
struct BindingReference {
    var owner: Int32
    var index: Int32
}
