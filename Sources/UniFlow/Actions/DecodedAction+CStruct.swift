import CUniFlow

extension DecodedAction where Source == CActionSource {
    /// Reads a `uf_action` (a copy that is zero beyond the caller's `size`). A
    /// field that does not fit the kind, a NULL where a name is required, or an
    /// unknown kind is `UF_EINVAL`: from C these are bad arguments, where the same
    /// faults in JSON are a document of the wrong shape.
    init(_ a: uf_action) throws(UniFlowError) {
        guard let kind = ActionKind(cKind: a.kind) else {
            throw UniFlowError(.invalidArgument, "uf_action.kind \(a.kind.rawValue) is not a uf_action_kind")
        }
        guard let feature = a.feature else { throw UniFlowError(.invalidArgument, "uf_action.feature is NULL") }
        try DecodedAction.checkFields(a, kind)
        self.init(kind: kind, feature: CText(pointer: feature), depth: 1)
        from = a.from.map(CText.init)
        into = a.into.map(CText.init)
        key = a.key.map(CText.init)
        event = a.event.map(CText.init)
        payload = a.payload_json.map(CPayloadText.init)
        same = a.same != 0
        uninitialized = a.uninitialized != 0
        scope = a.scope.map(CText.init)
        context = a.context.map(CText.init)
        id = a.id.map(CText.init)
    }

    private static func checkFields(_ a: uf_action, _ kind: ActionKind) throws(UniFlowError) {
        func refuse(_ what: String) -> UniFlowError {
            UniFlowError(.invalidArgument, "uf_action: \(what) on \(kind.article) \(kind.rawValue) action")
        }
        switch kind {
        case .initialize, .actualize:
            if a.from != nil { throw refuse("'from' is not allowed") }
            if a.into == nil { throw UniFlowError(.invalidArgument, "uf_action: 'into' is required on \(kind.article) \(kind.rawValue) action") }
            if a.same != 0 { throw refuse("'same' is not allowed") }
        case .transition:
            if a.into == nil { throw UniFlowError(.invalidArgument, "uf_action: 'into' is required on a transition action") }
            if a.same != 0 && a.from != nil { throw UniFlowError(.invalidArgument, "uf_action: 'same' cannot be used with 'from'") }
        case .deinitialize, .trigger:
            if a.into != nil { throw refuse("'into' is not allowed") }
            if a.same != 0 { throw refuse("'same' is not allowed") }
            if a.payload_json != nil { throw refuse("'payload_json' is not allowed") }
        case .send:
            if a.from != nil { throw refuse("'from' is not allowed") }
            if a.into != nil { throw refuse("'into' is not allowed") }
            if a.same != 0 { throw refuse("'same' is not allowed") }
            if a.via != nil { throw refuse("a via callback is not allowed") }
            guard let event = a.event else { throw UniFlowError(.invalidArgument, "uf_action: 'event' is required on a send action") }
            let name = String(cString: event)
            guard DefinitionParser.isValidName(name) else {
                throw UniFlowError(.invalidArgument, "uf_action.event: '\(name)' is not a valid event name")
            }
        }
        if kind != .send && a.event != nil { throw refuse("'event' is not allowed") }
        if kind != .trigger && a.uninitialized != 0 { throw refuse("'uninitialized' is not allowed") }
        if kind == .trigger && a.uninitialized != 0 && a.from != nil {
            throw UniFlowError(.invalidArgument, "uf_action: a trigger has 'from' (in) or 'uninitialized', not both")
        }
        if let key = a.key, let reason = InstanceKey.refusal(UnsafeRawBufferPointer(start: key, count: strlen(key))) {
            throw UniFlowError(.invalidArgument, "uf_action.key: \(reason)")
        }
        if a.payload_json != nil && a.via != nil {
            throw UniFlowError(.invalidArgument, "action has both a JSON payload and a via callback")
        }
    }
}

import Glibc
