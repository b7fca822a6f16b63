import Glibc

/// What a dispatch needs to know about one live instance of a keyed feature (40 bytes).
struct InstanceSlot {
    /// The key, NUL-terminated, owned by the table (nil while the slot is free).
    /// Keys never contain NUL: the key rules refuse control characters.
    var key: UnsafeMutablePointer<CChar>?
    var keyHash: UInt32 = 0
    /// The current state's index within the feature.
    var state: Int32 = -1
    /// Creation order: the previous and next live instance (-1: none). A free
    /// slot keeps the next free slot in `next`.
    var prev: Int32 = -1
    var next: Int32 = -1
    /// The list of `F[key]` subscriptions in `SubscriptionRegistry.keyedLists`, or -1.
    var subscribers: Int32 = -1
    /// The first of the instance's armed state timers (`TimerStore`), or -1.
    var timers: Int32 = -1
    /// The current payload has fields (it lives in the model's instance payloads).
    var hasPayload = false
}

/// The live instances of one keyed feature: a slab of slots in creation order (a
/// doubly linked list, so that removing one and appending one are O(1)) and an
/// open-addressing index from key to slot hashed over the key's bytes, so that a
/// `uf_dispatch` naming an instance by a C string creates nothing.
///
/// Trivially copyable, like the rest of `HotStorage`; slot indices are stable for
/// as long as the instance lives, pointers are not (see `UnsafeVector`).
struct InstanceTable {
    var slots = UnsafeVector<InstanceSlot>()
    /// -1: empty, -2: a removed entry; otherwise a slot index.
    private var buckets: UnsafeMutablePointer<Int32>?
    private var mask = -1
    /// Buckets that are not empty (live and removed entries).
    private var used = 0
    private(set) var live = 0
    /// The oldest and newest live instance, -1 when none lives.
    private(set) var head: Int32 = -1
    private(set) var tail: Int32 = -1
    /// The most recently freed slot (a stack through `InstanceSlot.next`).
    private var freeHead: Int32 = -1

    /// The key pointer `findRemembering` was last given, the slot of the live
    /// instance it found and that instance's own key, kept together so that a
    /// hit reads only these. `lastKey` is nil when it found none, or once that
    /// instance is removed or the slots move.
    private var lastKey: UnsafePointer<CChar>?
    private var lastStored: UnsafePointer<CChar>?
    private var lastSlot: UnsafeMutablePointer<InstanceSlot>?

    private static let empty: Int32 = -1
    private static let removed: Int32 = -2

    @inline(__always)
    private static func hash(_ key: UnsafePointer<CChar>, length: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: NameTable.hash(UnsafeRawPointer(key), length: length, seed: 0x6b65_7973))
    }

    /// The live instance with that key, or -1.
    @inline(__always)
    func find(_ key: UnsafePointer<CChar>) -> Int32 {
        guard let buckets else { return -1 }
        let length = strlen(key)
        if length > InstanceKey.maxLength { return -1 }
        let h = InstanceTable.hash(key, length: length)
        var i = Int(h) & mask
        while true {
            let entry = buckets[i]
            if entry == InstanceTable.empty { return -1 }
            if entry >= 0 {
                let slot = slots.pointer(Int(entry))
                if slot.pointee.keyHash == h && strcmp(slot.pointee.key!, key) == 0 { return entry }
            }
            i = (i + 1) & mask
        }
    }

    /// `find` for the hot path, which wants the slot: a host that passes the same
    /// key buffer again (a prepared uf_action) is answered without hashing. The
    /// key is still compared, so a buffer rewritten with another key is found
    /// afresh. (The slot pointer is valid until the next `insert`.)
    @inline(__always)
    mutating func findRemembering(_ key: UnsafePointer<CChar>) -> UnsafeMutablePointer<InstanceSlot>? {
        // As integers: `key` is not nil, so a nil `lastKey` (0) never matches,
        // and the optionals cost no tests.
        if Int(bitPattern: key) == Int(bitPattern: lastKey), strcmp(lastStored.unsafelyUnwrapped, key) == 0 {
            return lastSlot.unsafelyUnwrapped
        }
        let found = find(key)
        guard found >= 0 else {
            lastKey = nil
            return nil
        }
        let slot = slots.pointer(Int(found))
        lastKey = key
        lastStored = UnsafePointer(slot.pointee.key)
        lastSlot = slot
        return slot
    }

    /// The index of a slot `findRemembering` returned.
    func index(of slot: UnsafeMutablePointer<InstanceSlot>) -> Int32 {
        Int32(truncatingIfNeeded: slots.pointer(0).distance(to: slot))
    }

    /// Adds a live instance with a copy of `key`, last in creation order; returns its slot.
    mutating func insert(_ key: UnsafePointer<CChar>, state: Int32) throws(UniFlowError) -> Int32 {
        if (used + 1) * 4 > (mask + 1) * 3 { try rehash(live: live + 1) }
        let length = strlen(key)
        let copy = try Memory.copy(UnsafeRawBufferPointer(start: key, count: length), for: "an instance key")
        let index: Int32
        if freeHead >= 0 {
            index = freeHead
            freeHead = slots[Int(index)].next
        } else {
            let before = slots.base
            do throws(UniFlowError) {
                try slots.append(InstanceSlot())
            } catch {
                free(copy)
                throw error
            }
            if slots.base != before { lastKey = nil }
            index = Int32(slots.count - 1)
        }
        var slot = InstanceSlot()
        slot.key = copy
        slot.keyHash = InstanceTable.hash(copy, length: length)
        slot.state = state
        slot.prev = tail
        slots[Int(index)] = slot
        link(index, after: tail)
        place(index, hash: slot.keyHash)
        live += 1
        return index
    }

    /// Removes a live instance; returns its key, which the caller now owns (a
    /// mutation being delivered may still show it).
    mutating func remove(_ index: Int32) -> UnsafeMutablePointer<CChar> {
        let slot = slots[Int(index)]
        if slots.pointer(Int(index)) == lastSlot { lastKey = nil }
        unplace(index, hash: slot.keyHash)
        unlink(index)
        var freed = InstanceSlot()
        freed.next = freeHead
        slots[Int(index)] = freed
        freeHead = index
        live -= 1
        return slot.key!
    }

    /// Undoes the latest `remove` of `index` (a rolled-back batch undoes in
    /// reverse order, so the slot is the most recently freed and its neighbours in
    /// creation order are where they were): the instance is live again, in its place.
    mutating func restore(_ removed: InstanceSlot, at index: Int32) {
        precondition(freeHead == index, "libuniflow: instances restored out of order")
        freeHead = slots[Int(index)].next
        slots[Int(index)] = removed
        if removed.prev >= 0 { slots.pointer(Int(removed.prev)).pointee.next = index } else { head = index }
        if removed.next >= 0 { slots.pointer(Int(removed.next)).pointee.prev = index } else { tail = index }
        place(index, hash: removed.keyHash)
        live += 1
    }

    /// Live slots in creation order.
    func forEach<E: Error>(_ body: (Int32, InstanceSlot) throws(E) -> Void) throws(E) {
        var index = head
        while index >= 0 {
            let slot = slots[Int(index)]
            try body(index, slot)
            index = slot.next
        }
    }

    // MARK: Order

    private mutating func link(_ index: Int32, after previous: Int32) {
        slots.pointer(Int(index)).pointee.prev = previous
        slots.pointer(Int(index)).pointee.next = -1
        if previous >= 0 { slots.pointer(Int(previous)).pointee.next = index } else { head = index }
        tail = index
    }

    private mutating func unlink(_ index: Int32) {
        let slot = slots[Int(index)]
        if slot.prev >= 0 { slots.pointer(Int(slot.prev)).pointee.next = slot.next } else { head = slot.next }
        if slot.next >= 0 { slots.pointer(Int(slot.next)).pointee.prev = slot.prev } else { tail = slot.prev }
    }

    // MARK: Index

    private mutating func place(_ index: Int32, hash: UInt32) {
        var i = Int(hash) & mask
        while buckets![i] >= 0 { i = (i + 1) & mask }
        if buckets![i] == InstanceTable.empty { used += 1 }
        buckets![i] = index
    }

    private mutating func unplace(_ index: Int32, hash: UInt32) {
        var i = Int(hash) & mask
        while buckets![i] != index { i = (i + 1) & mask }
        buckets![i] = InstanceTable.removed
    }

    /// A table sized for `live` entries at most half full, without removed entries.
    private mutating func rehash(live: Int) throws(UniFlowError) {
        var capacity = 16
        while capacity < live * 2 { capacity *= 2 }
        let new = try Memory.allocate(Int32.self, count: capacity, for: "an instance index")
        new.initialize(repeating: InstanceTable.empty, count: capacity)
        free(buckets)
        buckets = new
        mask = capacity - 1
        used = 0
        var index = head
        while index >= 0 {
            place(index, hash: slots[Int(index)].keyHash)
            index = slots[Int(index)].next
        }
    }

    /// Frees the keys and the tables.
    mutating func deallocate() {
        var index = head
        while index >= 0 {
            free(slots[Int(index)].key)
            index = slots[Int(index)].next
        }
        slots.deallocate()
        free(buckets)
        buckets = nil
        mask = -1
        used = 0
        live = 0
        head = -1
        tail = -1
        freeHead = -1
        lastKey = nil
    }
}
