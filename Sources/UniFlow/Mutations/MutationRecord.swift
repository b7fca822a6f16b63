import CUniFlow
import Glibc

/// What `const uf_mutation *` points to: a record on the processing thread's
/// stack, so delivering a mutation allocates nothing. Text accessors compute
/// their strings lazily from the dispatcher's `MutationDelivery`.
struct MutationRecord {
    var dispatcher: UnsafeMutableRawPointer
    /// The subscription being called.
    var subscriptionID: UInt64 = 0
    var seq: UInt64
    /// A `uf_mutation_kind`.
    var kind: Int32
    var feature: Int32
    /// -1 on initialization.
    var oldState: Int32
    /// -1 on deinitialization.
    var newState: Int32
    /// The instance's key (nil for a single feature); valid while the mutation is delivered.
    var key: UnsafePointer<CChar>?
    /// A deferred delivery: how many deliveries to this subscription were dropped just before it.
    var dropped: UInt64 = 0
    /// Installed from a record another node (or this one) wrote (`uf_record_apply`),
    /// not processed here.
    var foreign = false

    init(dispatcher: UnsafeMutableRawPointer, seq: UInt64, kind: MutationKind, feature: Int32,
         oldState: Int32, newState: Int32, key: UnsafePointer<CChar>? = nil) {
        self.dispatcher = dispatcher
        self.seq = seq
        self.kind = kind.rawValue
        self.feature = feature
        self.oldState = oldState
        self.newState = newState
        self.key = key
    }

    var mutationKind: MutationKind { MutationKind(rawValue: kind)! }

    /// `MutationKind.bit` of `kind`, with a masking shift: kinds are 1...4, so
    /// the check `<<` makes for a shift past the width is dead weight here.
    @inline(__always)
    var kindBit: UInt8 { 1 &<< UInt8(truncatingIfNeeded: kind) }
}

/// The action of a mutation the hot path applied: the caller's struct (valid
/// while the mutation is delivered) with its names resolved. Its `ActionHeader`
/// is made only when something reads the action (`uf_mutation_json`, a deferred
/// delivery), so that a plain delivery copies a few words, not a whole header.
struct HotAction {
    var action: UnsafePointer<uf_action>
    var kind: ActionKind
    var feature: Int32
    var from: Int32
    var into: Int32
    var event: Int32

    /// Whether the caller's struct lends texts the action's header points to:
    /// every text member with an `ActionField.headerSlot`.
    ///
    /// Written out, not a loop over `ActionField.structTexts`: a hot-path action
    /// with a deferred subscriber asks on every call, and the loop cost about 50
    /// instructions more there (callgrind, bench's uf_deferred_1000).
    /// ActionFieldTableTests sets each text member of the table alone and checks
    /// that this sees it, so a new member cannot be missed here.
    var lendsTexts: Bool {
        action.pointee.key != nil || action.pointee.event != nil || action.pointee.scope != nil
            || action.pointee.context != nil || action.pointee.id != nil
    }

    var header: ActionHeader {
        var header = ActionHeader(kind: kind, feature: feature)
        header.from = from
        header.into = into
        header.event = event
        // The texts and flags as the caller's struct has them (the hot path serves
        // no action with `uninitialized`, so that flag is 0 there).
        let raw = UnsafeRawPointer(action)
        for member in ActionField.structTexts {
            header.texts[member.slot] = raw.load(fromByteOffset: member.offset, as: UnsafePointer<CChar>?.self)
        }
        for member in ActionField.structFlags {
            header[flag: member.field] = raw.load(fromByteOffset: member.offset, as: Int32.self) != 0
        }
        return header
    }
}
