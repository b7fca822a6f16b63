import CUniFlow
import Glibc

// The one place with manual memory in the core.
//
// Every `uf_dispatch` looks a feature and a state up by their C names, checks a
// precondition, stores the new state and calls the subscribers of that feature.
// Measured on this machine kind (shared/FACTS.md), creating a `String` and seeding
// SipHash costs more than the whole rest of a dispatch, and ARC traffic and struct
// copies out of class-held arrays cost nearly as much again. So what a dispatch
// touches lives here: trivially-copyable structs in malloc'd buffers, names hashed
// straight from their C bytes. Nothing in this file retains, and nothing outside
// `Dispatcher` sees these types.

/// A growable buffer of trivially-copyable elements, never retained or released.
/// Elements move when it grows: hold indices, never pointers, across calls that
/// may append (a callback can subscribe or register).
struct UnsafeVector<Element: BitwiseCopyable> {
    private(set) var base: UnsafeMutablePointer<Element>?
    private(set) var count = 0
    private var capacity = 0

    subscript(i: Int) -> Element {
        get { base.unsafelyUnwrapped[i] }
        nonmutating set { base.unsafelyUnwrapped[i] = newValue }
    }

    /// A pointer to element `i`, valid until the next append.
    func pointer(_ i: Int) -> UnsafeMutablePointer<Element> { base.unsafelyUnwrapped + i }

    mutating func append(_ element: Element) {
        if count == capacity { grow(to: count + 1) }
        base.unsafelyUnwrapped[count] = element
        count += 1
    }

    mutating func removeLast(_ n: Int) { count -= n }

    /// Keeps the elements for which `keep` is true, in order.
    mutating func removeAll(where drop: (Element) -> Bool) {
        var kept = 0
        for i in 0..<count where !drop(self[i]) {
            self[kept] = self[i]
            kept += 1
        }
        count = kept
    }

    private mutating func grow(to minimum: Int) {
        let newCapacity = Swift.max(minimum, capacity * 2, 4)
        guard let raw = realloc(base, newCapacity * MemoryLayout<Element>.stride) else {
            fatalError("libuniflow: out of memory")
        }
        base = raw.assumingMemoryBound(to: Element.self)
        capacity = newCapacity
    }

    /// Frees the buffer; the vector is empty afterwards.
    mutating func deallocate() {
        free(base)
        base = nil
        count = 0
        capacity = 0
    }
}

/// An owned, NUL-terminated copy of a name; its address never changes, so
/// accessors can hand it to C as a borrowed `const char *`.
struct CName {
    let pointer: UnsafeMutablePointer<CChar>
    let length: Int32

    init(_ name: String) {
        let bytes = Array(name.utf8)
        let storage = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
        for (i, byte) in bytes.enumerated() { storage[i] = CChar(bitPattern: byte) }
        storage[bytes.count] = 0
        pointer = storage
        length = Int32(bytes.count)
    }

    var string: String { String(cString: pointer) }

    func deallocate() { pointer.deallocate() }
}

/// Maps (scope, name) to a value: features live in scope -1, the states of feature
/// `f` in scope `f`. Open addressing with linear probing over word-at-a-time hashes of the
/// C bytes, so a lookup from a `const char *` creates nothing.
struct NameTable {
    private struct Entry {
        var hash: UInt32
        var scope: Int32
        var value: Int32
        var length: Int32
        var name: UnsafePointer<CChar>?
    }

    /// A name recently found through a caller's pointer. Hosts pass the same
    /// pointers again and again (string literals, prepared `uf_action`s), so the
    /// pointer finds the entry and `strcmp` against the registered name confirms
    /// it: the caller's bytes are still what they were. That costs less than
    /// hashing the name.
    private struct Recent {
        var pointer: UnsafePointer<CChar>?
        var name: UnsafePointer<CChar>?
        var scope: Int32
        var value: Int32
    }

    private var entries: UnsafeMutablePointer<Entry>
    private var mask: Int
    private var count = 0
    private let recent: UnsafeMutablePointer<Recent>
    private static let recentCount = 16

    /// Names are at most 256 bytes: hashing stops past that, and such a key matches nothing.
    static let maxNameLength = 256

    init() {
        mask = 63
        entries = .allocate(capacity: mask + 1)
        entries.initialize(repeating: Entry(hash: 0, scope: 0, value: -1, length: 0, name: nil), count: mask + 1)
        recent = .allocate(capacity: NameTable.recentCount)
        recent.initialize(repeating: Recent(pointer: nil, name: nil, scope: 0, value: -1), count: NameTable.recentCount)
    }

    /// Hashes a name from its C bytes, a word at a time: the length comes from
    /// `strlen` (vectorized, never reads past the NUL), and every load stays inside
    /// the name (the last partial word is read overlapping the one before it). A
    /// byte-at-a-time hash cost about 15 instructions per byte, more than the rest
    /// of a dispatch with names like "FileDownloading".
    @inline(__always)
    private static func hash(_ name: UnsafePointer<CChar>, scope: Int32) -> (hash: UInt32, length: Int) {
        let length = strlen(name)
        if length > maxNameLength { return (0, length) }
        let raw = UnsafeRawPointer(name)
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(UInt32(bitPattern: scope)) ^ (UInt64(length) << 32)
        @inline(__always) func mix(_ word: UInt64) {
            h = (h ^ word) &* 0x9e37_79b9_7f4a_7c15
            h ^= h >> 29
        }
        if length >= 8 {
            var i = 0
            while i + 8 <= length {
                mix(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                i += 8
            }
            if i < length { mix(raw.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)) }
        } else if length >= 4 {
            let low = UInt64(raw.loadUnaligned(as: UInt32.self))
            let high = UInt64(raw.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self))
            mix(low | high << 32)
        } else if length > 0 {
            let first = UInt64(raw.load(as: UInt8.self))
            let middle = UInt64(raw.load(fromByteOffset: length / 2, as: UInt8.self))
            let last = UInt64(raw.load(fromByteOffset: length - 1, as: UInt8.self))
            mix(first | middle << 8 | last << 16)
        }
        // Fold the high bits in: the table indexes with the low ones.
        h = (h ^ (h >> 32)) &* 0xff51_afd7_ed55_8ccd
        return (UInt32(truncatingIfNeeded: h ^ (h >> 32)), length)
    }

    /// The value stored for the name, or -1.
    @inline(__always)
    func find(_ name: UnsafePointer<CChar>, scope: Int32) -> Int32 {
        let slot = recent + ((Int(bitPattern: name) >> 3 ^ Int(scope)) & (NameTable.recentCount - 1))
        if slot.pointee.pointer == name && slot.pointee.scope == scope, let known = slot.pointee.name,
           strcmp(known, name) == 0 {
            return slot.pointee.value
        }
        let (value, stored) = lookUp(name, scope: scope)
        if let stored { slot.pointee = Recent(pointer: name, name: stored, scope: scope, value: value) }
        return value
    }

    /// The value and the registered name's storage, from the hash table.
    private func lookUp(_ name: UnsafePointer<CChar>, scope: Int32) -> (Int32, UnsafePointer<CChar>?) {
        let (h, length) = NameTable.hash(name, scope: scope)
        if length > NameTable.maxNameLength { return (-1, nil) }
        var i = Int(h) & mask
        while true {
            let entry = entries[i]
            guard let stored = entry.name else { return (-1, nil) }
            if entry.hash == h && entry.scope == scope && Int(entry.length) == length
                && memcmp(stored, name, length) == 0 {
                return (entry.value, stored)
            }
            i = (i + 1) & mask
        }
    }

    /// Adds a name whose storage outlives the table (a `CName`).
    mutating func insert(_ name: CName, scope: Int32, value: Int32) {
        if (count + 1) * 4 > (mask + 1) * 3 { rehash(capacity: (mask + 1) * 2) }
        let (h, _) = NameTable.hash(name.pointer, scope: scope)
        place(Entry(hash: h, scope: scope, value: value, length: name.length, name: name.pointer))
        count += 1
    }

    private mutating func place(_ entry: Entry) {
        var i = Int(entry.hash) & mask
        while entries[i].name != nil { i = (i + 1) & mask }
        entries[i] = entry
    }

    private mutating func rehash(capacity: Int) {
        let old = entries
        let oldCount = mask + 1
        mask = capacity - 1
        entries = .allocate(capacity: capacity)
        entries.initialize(repeating: Entry(hash: 0, scope: 0, value: -1, length: 0, name: nil), count: capacity)
        for i in 0..<oldCount where old[i].name != nil { place(old[i]) }
        old.deallocate()
    }

    func deallocate() {
        entries.deallocate()
        recent.deallocate()
    }
}

/// A list of subscription slot indices, ordered by subscription id.
typealias SlotList = UnsafeVector<Int32>

/// What a dispatch needs to know about a feature.
struct FeatureSlot {
    /// The current state's index within the feature, or -1 when absent.
    var state: Int32 = -1
    /// Index of the feature's first `StateSlot`.
    var stateBase: Int32
    var stateCount: Int32
    /// Offset of the feature's transition matrix in `HotStorage.transitionBits`
    /// (`stateCount * stateCount` bits, row = from), or -1 when unrestricted.
    var transitionBase: Int32
    /// The current payload has fields (it then lives in `Dispatcher.payloads`).
    var hasPayload = false
    /// The feature has model bindings: notifying it costs a lookup beyond the subscribers.
    var hasBindings = false
    var name: CName
    /// Subscriptions whose filter names this feature.
    var subscribers = SlotList()
}

/// What a dispatch needs to know about a state.
struct StateSlot {
    var name: CName
    /// Can be entered without a payload.
    var isAuto: Bool
    /// Has declared fields, so entering it automatically stores defaults.
    var hasFields: Bool
    /// `initialize` may enter it.
    var isInitial: Bool
}

/// A subscription, with its filter compiled to indices.
struct SubscriptionSlot {
    var id: UInt64
    var fn: uf_subscriber_fn?
    var payload: UnsafeMutableRawPointer?
    var payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    /// Bit `1 << kind` for each mutation kind that matches.
    var kinds: UInt8
    /// -1: any feature (the `AnyMutation` list).
    var feature: Int32
    /// -1: any; otherwise the state index the old / new state must have.
    var oldState: Int32
    var newState: Int32
    var alive: Bool
    /// Its callback is on the stack: ending it now must defer `payloadFree`.
    var running: Bool
}

/// The flat tables of one dispatcher.
struct HotStorage {
    var names = NameTable()
    var features = UnsafeVector<FeatureSlot>()
    var states = UnsafeVector<StateSlot>()
    var transitionBits = UnsafeVector<UInt64>()
    var subscriptions = UnsafeVector<SubscriptionSlot>()
    /// Subscriptions to every mutation (`AnyMutation`).
    var anySubscribers = SlotList()
    /// Some model binding watches every mutation.
    var hasAnyBindings = false
    /// Mutations are written to a journal.
    var journaling = false

    /// Whether the feature's declared transitions allow `from -> into`.
    @inline(__always)
    func allowsTransition(_ feature: FeatureSlot, from: Int32, into: Int32) -> Bool {
        if feature.transitionBase < 0 { return true }
        let bit = Int(feature.transitionBase) + Int(from) * Int(feature.stateCount) + Int(into)
        return transitionBits[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    mutating func deallocate() {
        for i in 0..<features.count {
            features.pointer(i).pointee.subscribers.deallocate()
            features[i].name.deallocate()
        }
        for i in 0..<states.count { states[i].name.deallocate() }
        features.deallocate()
        states.deallocate()
        transitionBits.deallocate()
        subscriptions.deallocate()
        anySubscribers.deallocate()
        names.deallocate()
    }
}
