import CUniFlow

/// The six kinds of action. The twelve forms of the original UniFlow actions are
/// the first five kinds with different keys (see `docs/actions.md`); `send` names
/// an event and lets the definition choose the target (`docs/events.md`).
enum ActionKind: String, CaseIterable {
    case initialize, actualize, transition, deinitialize, trigger, send

    init?(cKind: uf_action_kind) {
        switch cKind {
        case UF_ACTION_INITIALIZE: self = .initialize
        case UF_ACTION_ACTUALIZE: self = .actualize
        case UF_ACTION_TRANSITION: self = .transition
        case UF_ACTION_DEINITIALIZE: self = .deinitialize
        case UF_ACTION_TRIGGER: self = .trigger
        case UF_ACTION_SEND: self = .send
        default: return nil
        }
    }

    var cKind: uf_action_kind {
        switch self {
        case .initialize: UF_ACTION_INITIALIZE
        case .actualize: UF_ACTION_ACTUALIZE
        case .transition: UF_ACTION_TRANSITION
        case .deinitialize: UF_ACTION_DEINITIALIZE
        case .trigger: UF_ACTION_TRIGGER
        case .send: UF_ACTION_SEND
        }
    }

    /// The kind whose JSON spelling these bytes are.
    init?(bytes name: UnsafeRawBufferPointer) {
        func equals(_ literal: StaticString) -> Bool {
            name.count == literal.utf8CodeUnitCount && memcmp(name.baseAddress!, literal.utf8Start, name.count) == 0
        }
        switch name.count {
        case 4 where equals("send"): self = .send
        case 7 where equals("trigger"): self = .trigger
        case 9 where equals("actualize"): self = .actualize
        case 10 where equals("transition"): self = .transition
        case 10 where equals("initialize"): self = .initialize
        case 12 where equals("deinitialize"): self = .deinitialize
        default: return nil
        }
    }

    /// "an initialize action", "a transition action".
    var article: String { self == .initialize || self == .actualize ? "an" : "a" }

    /// Whether an action of this kind enters or actualizes a state it names (and
    /// so carries that state's payload). A send's state is chosen when it is processed.
    var entersState: Bool { self == .initialize || self == .actualize || self == .transition }
}

import Glibc
