import CUniFlow
import Glibc

/// A host via callback and its user payload. `release` runs `payload_free` and
/// must be called exactly once, whatever becomes of the action.
struct ViaCallback {
    var fn: uf_via_fn
    var payload: UnsafeMutableRawPointer?
    var payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    func release() { payloadFree?(payload) }
}

/// The trivially-copyable part of a resolved action: what the precondition,
/// mutations and reports need. Copying one retains nothing, so the hot path can
/// keep it on the stack and in `MutationDelivery` for free.
struct ActionHeader {
    var kind: ActionKind
    var feature: Int32
    /// The state the precondition requires (transition/deinitialize `from`,
    /// trigger `in`), or -1.
    var from: Int32 = -1
    /// The state entered or actualized, or -1.
    var into: Int32 = -1
    var same = false
    var uninitialized = false
    var via: ViaCallback?
    /// Borrowed while the caller's call lasts; owned by the action's extras once queued.
    var scope: UnsafePointer<CChar>?
    var context: UnsafePointer<CChar>?
    var id: UnsafePointer<CChar>?

    /// Whether the action enters or actualizes a state (and so has a payload).
    var entersState: Bool { kind == .initialize || kind == .actualize || kind == .transition }
}

/// An action whose names are resolved to indices and whose JSON payload has been
/// checked: what the dispatcher processes. Payload-free actions from
/// `uf_dispatch` carry no `extras` and borrow their diagnostic strings from the
/// caller, so building one allocates nothing.
struct ResolvedAction {
    var header: ActionHeader
    var extras: ActionExtras?

    init(kind: ActionKind, feature: Int32) {
        header = ActionHeader(kind: kind, feature: feature)
    }

    var kind: ActionKind { header.kind }
    var feature: Int32 { header.feature }
    var from: Int32 {
        get { header.from }
        set { header.from = newValue }
    }
    var into: Int32 {
        get { header.into }
        set { header.into = newValue }
    }
    var same: Bool {
        get { header.same }
        set { header.same = newValue }
    }
    var uninitialized: Bool {
        get { header.uninitialized }
        set { header.uninitialized = newValue }
    }
    var via: ViaCallback? {
        get { header.via }
        set { header.via = newValue }
    }
    var scope: UnsafePointer<CChar>? {
        get { header.scope }
        set { header.scope = newValue }
    }
    var context: UnsafePointer<CChar>? {
        get { header.context }
        set { header.context = newValue }
    }
    var id: UnsafePointer<CChar>? {
        get { header.id }
        set { header.id = newValue }
    }

    /// The JSON payload given with the action (checked and normalized).
    var payload: JSONObject? { extras?.payload }

    /// Whether the action enters or actualizes a state (and so has a payload).
    var entersState: Bool { header.entersState }

    /// A copy that owns its strings, for the queue.
    func owned() -> ResolvedAction {
        var copy = self
        let extras = ActionExtras(payload: payload, submit: self.extras?.submit ?? [])
        copy.scope = extras.own(scope)
        copy.context = extras.own(context)
        copy.id = extras.own(id)
        copy.extras = extras
        return copy
    }
}

/// What a `ResolvedAction` owns beyond trivial fields: its payload, a trigger's
/// queued actions, and copies of its diagnostic strings.
final class ActionExtras {
    let payload: JSONObject?
    /// Trigger only: queued when the trigger is processed.
    let submit: [ResolvedAction]
    private var strings: [UnsafeMutablePointer<CChar>] = []

    init(payload: JSONObject?, submit: [ResolvedAction] = []) {
        self.payload = payload
        self.submit = submit
    }

    /// Keeps a copy of `text` alive as long as these extras.
    func own(_ text: UnsafePointer<CChar>?) -> UnsafePointer<CChar>? {
        guard let text, let copy = strdup(text) else { return nil }
        strings.append(copy)
        return UnsafePointer(copy)
    }

    deinit {
        for s in strings { free(s) }
    }
}

/// First-in first-out actions waiting for the current one to finish (SPEC 7.3).
struct ActionQueue {
    private var items: [ResolvedAction] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    mutating func append(_ action: ResolvedAction) { items.append(action) }

    mutating func popFirst() -> ResolvedAction? {
        guard head < items.count else { return nil }
        let action = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return action
    }
}

/// Counts the actions of one outer call against `max_cascade`.
struct CascadeState {
    var processed = 0
    /// The limit was reached: what is queued is being dropped, new submits are refused.
    var dropping = false
}
