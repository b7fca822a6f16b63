/// The keys an action may have, and which kind may have which.
enum ActionKey: Int, CaseIterable {
    case kind, feature, scope, context, id, key, into, `in`, from, same, payload, initialized, submit, event

    /// The key spelled by these bytes, or nil for a key no action knows. Compared
    /// as bytes: decoding `uf_submit`'s text creates no `String` per key.
    init?(bytes name: UnsafeRawBufferPointer) {
        guard let base = name.baseAddress else { return nil }
        func equals(_ literal: StaticString) -> Bool {
            memcmp(base, literal.utf8Start, name.count) == 0
        }
        let first = base.load(as: UInt8.self)
        switch name.count {
        case 2: if equals("id") { self = .id } else if equals("in") { self = .in } else { return nil }
        case 3: if equals("key") { self = .key } else { return nil }
        case 4:
            switch first {
            case UInt8(ascii: "k") where equals("kind"): self = .kind
            case UInt8(ascii: "i") where equals("into"): self = .into
            case UInt8(ascii: "f") where equals("from"): self = .from
            case UInt8(ascii: "s") where equals("same"): self = .same
            default: return nil
            }
        case 5:
            switch first {
            case UInt8(ascii: "s") where equals("scope"): self = .scope
            case UInt8(ascii: "e") where equals("event"): self = .event
            default: return nil
            }
        case 6: if equals("submit") { self = .submit } else { return nil }
        case 7:
            switch first {
            case UInt8(ascii: "f") where equals("feature"): self = .feature
            case UInt8(ascii: "c") where equals("context"): self = .context
            case UInt8(ascii: "p") where equals("payload"): self = .payload
            default: return nil
            }
        case 11: if equals("initialized") { self = .initialized } else { return nil }
        default: return nil
        }
    }

    /// The key as JSON spells it.
    var name: String {
        switch self {
        case .kind: "kind"
        case .feature: "feature"
        case .scope: "scope"
        case .context: "context"
        case .id: "id"
        case .key: "key"
        case .into: "into"
        case .in: "in"
        case .from: "from"
        case .same: "same"
        case .payload: "payload"
        case .initialized: "initialized"
        case .submit: "submit"
        case .event: "event"
        }
    }

    /// The key's bit in a set of keys.
    var bit: UInt16 { 1 << UInt16(rawValue) }

    /// Keys every kind may carry (`key` is checked against the feature when the
    /// names are resolved: only an instance of a keyed feature has one).
    static let common: UInt16 = ActionKey.kind.bit | ActionKey.feature.bit | ActionKey.scope.bit
        | ActionKey.context.bit | ActionKey.id.bit | ActionKey.key.bit

    /// Every key an action of that kind may carry.
    static func allowed(_ kind: ActionKind) -> UInt16 {
        switch kind {
        case .initialize: common | ActionKey.into.bit | ActionKey.payload.bit
        case .actualize: common | ActionKey.in.bit | ActionKey.payload.bit
        case .transition: common | ActionKey.into.bit | ActionKey.from.bit | ActionKey.same.bit | ActionKey.payload.bit
        case .deinitialize: common | ActionKey.from.bit
        case .trigger: common | ActionKey.in.bit | ActionKey.initialized.bit | ActionKey.submit.bit
        case .send: common | ActionKey.event.bit | ActionKey.payload.bit
        }
    }

    /// Why the key `name` (`key` when the action knows it) is refused on an action
    /// of that kind, or nil when it is allowed. A typo (`form`) and a real key on
    /// the wrong kind (`from` on an initialize) need different fixes, so they read
    /// differently.
    static func refusal(_ key: ActionKey?, named name: @autoclosure () -> String, kind: ActionKind) -> UniFlowError? {
        guard let key else { return UniFlowError(.schema, "action: unknown key '\(name())'") }
        if allowed(kind) & key.bit != 0 { return nil }
        return UniFlowError(.schema, "action: '\(name())' cannot be used with kind '\(kind.rawValue)'")
    }
}

import Glibc
