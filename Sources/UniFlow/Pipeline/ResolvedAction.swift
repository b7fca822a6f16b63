import CUniFlow
import Glibc

/// The trivially-copyable part of a resolved action: what the precondition,
/// mutations and reports need. Copying one retains nothing, so the hot path can
/// keep it on the stack and in `MutationDelivery` for free.
struct ActionHeader {
    var kind: ActionKind
    var feature: Int32
    /// The state the precondition requires (transition/deinitialize `from`,
    /// trigger `in`), or -1.
    var from: Int32 = -1
    /// The state entered or actualized, or -1 (a send's, once its target is chosen).
    var into: Int32 = -1
    /// The flags given, as `ActionField.bit`s (`same`, `uninitialized`).
    var flags: UInt16 = 0
    /// Whether the action carried a payload (a send: its event's); one it did
    /// not carry may still be filled in with the state's defaults.
    var carriesPayload = false
    /// A send's event, as the feature numbers its events (-1: no state takes it).
    var event: Int32 = -1
    var via: HostCallback<uf_via_fn>?
    /// The texts the action keeps, by `ActionField.headerSlot` (the key, a send's
    /// event name as given, the labels, a timer's id): borrowed while the
    /// caller's call lasts; owned by the action's extras once queued (`owned()`).
    var texts = ActionHeaderTexts()
    var byTimer = false

    init(kind: ActionKind, feature: Int32) {
        self.kind = kind
        self.feature = feature
    }

    /// Whether the action enters or actualizes a state it names (and so has a payload).
    var entersState: Bool { kind.entersState }

    /// A text field the header keeps (one with an `ActionField.headerSlot`).
    @inline(__always)
    subscript(text field: ActionField) -> UnsafePointer<CChar>? {
        get { texts[field.headerSlot!] }
        set { texts[field.headerSlot!] = newValue }
    }

    /// A flag field.
    @inline(__always)
    subscript(flag field: ActionField) -> Bool {
        get { flags & field.bit != 0 }
        set { flags = newValue ? flags | field.bit : flags & ~field.bit }
    }

    /// A field resolved to a state (`from`, `into`): its index, or -1.
    subscript(state field: ActionField) -> Int32 {
        precondition(field.resolution == .state, "\(field) is not resolved to a state")
        return field == .from ? from : into
    }

    /// Whether the header points to any text (borrowed or owned).
    var hasTexts: Bool {
        for i in 0..<ActionHeaderTexts.count where texts[i] != nil { return true }
        return false
    }

    // The fields by name, for the code that gives them their meaning.

    var same: Bool { get { self[flag: .same] } set { self[flag: .same] = newValue } }
    var uninitialized: Bool { get { self[flag: .uninitialized] } set { self[flag: .uninitialized] = newValue } }
    /// The instance of a keyed feature.
    var key: UnsafePointer<CChar>? { get { self[text: .key] } set { self[text: .key] = newValue } }
    /// A send's event name, as given.
    var eventName: UnsafePointer<CChar>? { get { self[text: .event] } set { self[text: .event] = newValue } }
    var scope: UnsafePointer<CChar>? { get { self[text: .scope] } set { self[text: .scope] = newValue } }
    var context: UnsafePointer<CChar>? { get { self[text: .context] } set { self[text: .context] = newValue } }
    var id: UnsafePointer<CChar>? { get { self[text: .id] } set { self[text: .id] = newValue } }
    /// Submitted by a timer: its id (nil for an anonymous timer).
    var timer: UnsafePointer<CChar>? { get { self[text: .timer] } set { self[text: .timer] = newValue } }
}

/// An action whose names are resolved to indices and whose JSON payload has been
/// checked: what the dispatcher processes. Payload-free actions from
/// `uf_dispatch` carry no `extras` and borrow their strings from the caller, so
/// building one allocates nothing.
struct ResolvedAction {
    var header: ActionHeader
    var extras: ActionExtras?

    init(kind: ActionKind, feature: Int32) {
        header = ActionHeader(kind: kind, feature: feature)
    }

    var kind: ActionKind { header.kind }
    var feature: Int32 { header.feature }
    var entersState: Bool { header.entersState }

    /// The payload given with the action: a state's (checked and normalized), or a
    /// send's event payload.
    var payload: JSONObject? { extras?.payload }

    /// A copy that owns its strings, for the queue and for timers: what it
    /// borrowed from the caller is copied into its extras.
    func owned() throws(UniFlowError) -> ResolvedAction {
        var copy = self
        let extras = ActionExtras(payload: payload, submit: self.extras?.submit ?? [])
        if let old = self.extras { extras.adopt(old) }
        func own(_ text: UnsafePointer<CChar>?) throws(UniFlowError) -> UnsafePointer<CChar>? {
            guard let text else { return nil }
            // Already ours (a queued action queued again keeps its copies).
            if extras.strings.contains(where: { UnsafePointer($0) == text }) { return text }
            return try extras.own(text)
        }
        for i in 0..<ActionHeaderTexts.count { copy.header.texts[i] = try own(header.texts[i]) }
        copy.extras = extras
        return copy
    }
}

/// What a `ResolvedAction` owns beyond trivial fields: its payload, a trigger's
/// queued actions, and copies of its strings.
final class ActionExtras {
    let payload: JSONObject?
    /// Trigger only: queued when the trigger is processed.
    let submit: [ResolvedAction]
    fileprivate(set) var strings: [UnsafeMutablePointer<CChar>] = []

    init(payload: JSONObject?, submit: [ResolvedAction] = []) {
        self.payload = payload
        self.submit = submit
    }

    /// The extras of an action, made when it first needs some.
    static func make(_ extras: inout ActionExtras?) -> ActionExtras {
        if let extras { return extras }
        let made = ActionExtras(payload: nil)
        extras = made
        return made
    }

    /// Keeps a copy of `text` alive as long as these extras.
    func own(_ text: UnsafePointer<CChar>) throws(UniFlowError) -> UnsafePointer<CChar> {
        let copy = try Memory.copy(text, for: "an action's text")
        strings.append(copy)
        return UnsafePointer(copy)
    }

    func own(_ text: String) throws(UniFlowError) -> UnsafePointer<CChar> {
        let copy = try Memory.copy(text, for: "an action's text")
        strings.append(copy)
        return UnsafePointer(copy)
    }

    /// Takes over the strings of `other`, which then owns none.
    func adopt(_ other: ActionExtras) {
        strings += other.strings
        other.strings = []
    }

    deinit {
        for s in strings { free(s) }
    }
}

/// Actions waiting for the current one to finish, first in first out.
typealias ActionQueue = FIFO<ResolvedAction>

/// Counts the actions of one outer call against `max_cascade`.
struct CascadeState {
    var processed = 0
    /// The limit was reached: what is queued is being dropped, new submits are refused.
    var dropping = false
}
