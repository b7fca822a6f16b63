import CUniFlow

/// Turning submitted actions into `ResolvedAction`s: names to indices, the given
/// payload checked against its state (SPEC 3's order: JSON, shape, names, payload).
extension Dispatcher {
    func resolveFeature(_ name: String) throws(UniFlowError) -> Int32 {
        guard let index = featureIndex(named: name) else { throw UniFlowError(.notFound, "unknown feature '\(name)'") }
        return index
    }

    func resolveState(_ name: String, of feature: Int32) throws(UniFlowError) -> Int32 {
        guard let index = stateIndex(named: name, feature: feature) else {
            throw UniFlowError(.notFound, "unknown state '\(name)' of feature \(featureName(feature))")
        }
        return index
    }

    /// Resolves a decoded JSON action. `hasVia` tells whether a via callback
    /// comes with it (then a JSON payload is a conflict, and a missing payload is
    /// the callback's to give).
    func resolve(_ request: ActionRequest, hasVia: Bool) throws(UniFlowError) -> ResolvedAction {
        if hasVia && request.payload != nil {
            throw UniFlowError(.invalidArgument, "action has both a JSON payload and a via callback")
        }
        let feature = try resolveFeature(request.feature)
        var action = ResolvedAction(kind: request.kind, feature: feature)
        if let from = request.from { action.from = try resolveState(from, of: feature) }
        if let into = request.into { action.into = try resolveState(into, of: feature) }
        action.same = request.same
        action.uninitialized = request.uninitialized
        let payload = try checkedPayload(request.payload, for: action, hasVia: hasVia)
        var submit: [ResolvedAction] = []
        for (i, queued) in request.submit.enumerated() {
            do {
                submit.append(try resolve(queued, hasVia: false))
            } catch {
                throw error.prefixed("submit[\(i)]")
            }
        }
        let extras = ActionExtras(payload: payload, submit: submit)
        action.scope = request.scope.flatMap { $0.withCString { extras.own($0) } }
        action.context = request.context.flatMap { $0.withCString { extras.own($0) } }
        action.id = request.id.flatMap { $0.withCString { extras.own($0) } }
        action.extras = extras
        return action
    }

    /// Resolves an action decoded straight from jansson's tree (`uf_submit`), the
    /// same way as a decoded `ActionRequest` but without a `String`: names are
    /// looked up from their C bytes, and only the payload's declared fields are
    /// converted. Scope, context and id stay borrowed from the tree (which outlives
    /// the call; queued actions copy them); `submit` actions own theirs.
    func resolve(_ request: BorrowedAction, hasVia: Bool) throws(UniFlowError) -> ResolvedAction {
        if hasVia && request.payload != nil {
            throw UniFlowError(.invalidArgument, "action has both a JSON payload and a via callback")
        }
        let feature = request.feature.cName.map { hot.findFeature($0) } ?? -1
        if feature < 0 { throw UniFlowError(.notFound, "unknown feature '\(request.feature.string)'") }
        func state(_ name: BorrowedString) throws(UniFlowError) -> Int32 {
            let index = name.cName.map { hot.findState($0, of: feature) } ?? -1
            if index < 0 { throw UniFlowError(.notFound, "unknown state '\(name.string)' of feature \(featureName(feature))") }
            return index
        }
        var action = ResolvedAction(kind: request.kind, feature: feature)
        if let from = request.from { action.from = try state(from) }
        if let into = request.into { action.into = try state(into) }
        action.same = request.same
        action.uninitialized = request.uninitialized
        action.scope = request.scope
        action.context = request.context
        action.id = request.id
        let payload: JSONObject?
        if let given = request.payload, action.entersState {
            payload = try stateDefinition(action.into, of: feature)
                .checkPayload(jansson: given, depth: request.depth + 1, feature: featureName(feature))
        } else {
            payload = try checkedPayload(nil, for: action, hasVia: hasVia)
        }
        var submit: [ResolvedAction] = []
        for (i, queued) in request.submit.enumerated() {
            do {
                submit.append(try resolve(queued, hasVia: false).owned())
            } catch {
                throw error.prefixed("submit[\(i)]")
            }
        }
        if payload != nil || !submit.isEmpty { action.extras = ActionExtras(payload: payload, submit: submit) }
        return action
    }

    /// The payload an action carries into its state: the given one checked and
    /// normalized; without one (and without a via), the state's defaults, or
    /// `UF_ESCHEMA` naming the first required field.
    func checkedPayload(_ given: JSONObject?, for action: ResolvedAction, hasVia: Bool) throws(UniFlowError) -> JSONObject? {
        guard action.entersState else { return nil }
        let state = stateDefinition(action.into, of: action.feature)
        if given == nil && (hasVia || state.fields.isEmpty) { return nil }
        return try state.checkPayload(given, feature: featureName(action.feature))
    }

    /// Resolves a `uf_action` without creating a `String` when it carries no
    /// payload: names are looked up from their C bytes.
    func resolve(_ a: uf_action) throws(UniFlowError) -> ResolvedAction {
        guard let kind = ActionKind(cKind: a.kind) else {
            throw UniFlowError(.invalidArgument, "uf_action.kind \(a.kind.rawValue) is not a uf_action_kind")
        }
        guard let featureName = a.feature else { throw UniFlowError(.invalidArgument, "uf_action.feature is NULL") }
        try checkFields(a, kind)
        let feature = hot.findFeature(featureName)
        if feature < 0 { throw UniFlowError(.notFound, "unknown feature '\(String(cString: featureName))'") }
        var action = ResolvedAction(kind: kind, feature: feature)
        if let from = a.from {
            action.from = hot.findState(from, of: feature)
            if action.from < 0 { throw UniFlowError(.notFound, "unknown state '\(String(cString: from))' of feature \(self.featureName(feature))") }
        }
        if let into = a.into {
            action.into = hot.findState(into, of: feature)
            if action.into < 0 { throw UniFlowError(.notFound, "unknown state '\(String(cString: into))' of feature \(self.featureName(feature))") }
        }
        action.same = a.same != 0
        action.uninitialized = a.uninitialized != 0
        action.scope = a.scope
        action.context = a.context
        action.id = a.id
        if let text = a.payload_json {
            let json = try JSONParser.parse(text)
            guard let object = json.objectValue else {
                throw UniFlowError(.schema, "uf_action.payload_json must be an object, got \(json.kindName)")
            }
            action.extras = ActionExtras(payload: try checkedPayload(object, for: action, hasVia: false))
        } else if action.entersState && a.via == nil && stateSlot(action.into, of: hot.features[Int(feature)]).hasFields {
            action.extras = ActionExtras(payload: try checkedPayload(nil, for: action, hasVia: false))
        }
        return action
    }

    /// The fields of a `uf_action` that do not fit its kind are `UF_EINVAL`.
    private func checkFields(_ a: uf_action, _ kind: ActionKind) throws(UniFlowError) {
        // "an initialize action", "a transition action".
        let article = kind == .initialize || kind == .actualize ? "an" : "a"
        func refuse(_ what: String) -> UniFlowError {
            UniFlowError(.invalidArgument, "uf_action: \(what) on \(article) \(kind.rawValue) action")
        }
        switch kind {
        case .initialize, .actualize:
            if a.from != nil { throw refuse("'from' is not allowed") }
            if a.into == nil { throw UniFlowError(.invalidArgument, "uf_action: 'into' is required on \(article) \(kind.rawValue) action") }
            if a.same != 0 { throw refuse("'same' is not allowed") }
        case .transition:
            if a.into == nil { throw UniFlowError(.invalidArgument, "uf_action: 'into' is required on a transition action") }
            if a.same != 0 && a.from != nil { throw UniFlowError(.invalidArgument, "uf_action: 'same' cannot be used with 'from'") }
        case .deinitialize, .trigger:
            if a.into != nil { throw refuse("'into' is not allowed") }
            if a.same != 0 { throw refuse("'same' is not allowed") }
            if a.payload_json != nil { throw refuse("'payload_json' is not allowed") }
        }
        if kind != .trigger && a.uninitialized != 0 { throw refuse("'uninitialized' is not allowed") }
        if kind == .trigger && a.uninitialized != 0 && a.from != nil {
            throw UniFlowError(.invalidArgument, "uf_action: a trigger has 'from' (in) or 'uninitialized', not both")
        }
        if a.payload_json != nil && a.via != nil {
            throw UniFlowError(.invalidArgument, "action has both a JSON payload and a via callback")
        }
    }
}

extension ActionKind {
    init?(cKind: uf_action_kind) {
        switch cKind {
        case UF_ACTION_INITIALIZE: self = .initialize
        case UF_ACTION_ACTUALIZE: self = .actualize
        case UF_ACTION_TRANSITION: self = .transition
        case UF_ACTION_DEINITIALIZE: self = .deinitialize
        case UF_ACTION_TRIGGER: self = .trigger
        default: return nil
        }
    }
}
