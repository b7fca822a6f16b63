import Glibc

/// Maps (scope, name) to a value: features live in scope -1, the states of a
/// feature with many states in that feature's scope (a few states are found
/// faster by comparing them in order, see `HotStorage.findState`). Open
/// addressing with linear probing over a hash of the name's C bytes, so a lookup
/// from a `const char *` creates nothing.
struct NameTable {
    /// 16 bytes: at 100,000 features the table is a large part of what a feature
    /// costs, so it keeps no copy of the hash or the length; `strncmp` against the
    /// registered name settles a probe, and most first bytes differ.
    private struct Entry {
        var name: UnsafePointer<CChar>?
        var scope: Int32
        var value: Int32
    }

    /// A name recently found through a caller's pointer. Hosts pass the same
    /// pointers again and again (string literals, prepared `uf_action`s), so the
    /// pointer finds the entry and comparing the caller's bytes with the
    /// registered name confirms it: they are still what they were. That costs
    /// less than hashing the name.
    private struct Recent {
        var pointer: UnsafePointer<CChar>?
        /// A name of 1 to 7 bytes: its bytes and NUL, zero-padded, compared in
        /// place (a hit reads no other memory); any other: its address in the
        /// arena.
        var name: UInt64
        var scope: Int32
        /// The value found, or for a name kept by address (confirmed by one
        /// `strcmp`: for 8 bytes or more, a third of what comparing its first 8
        /// bytes one by one costs) its complement. One load and one test tell
        /// which, and either way the value returned is known not to be negative:
        /// the caller's test for -1 folds away.
        var tagged: Int32
        /// Keeps the stride at 32 bytes, so that a slot's offset is a shift of the hash.
        private var padding: UInt64 = 0

        init(pointer: UnsafePointer<CChar>?, name: UInt64, scope: Int32, tagged: Int32) {
            self.pointer = pointer
            self.name = name
            self.scope = scope
            self.tagged = tagged
        }
    }

    /// The table itself, behind one pointer.
    private struct Header {
        var entries: UnsafeMutablePointer<Entry>
        var mask: Int
        var count = 0
    }

    /// The header, followed in the same allocation by the recent pointers. One
    /// word: a lookup loads the whole `NameTable` where it starts, and with the
    /// table's fields inline every dispatch loaded (and spilled) three words that
    /// only a miss reads.
    private let header: UnsafeMutablePointer<Header>
    private var recent: UnsafeMutablePointer<Recent> {
        UnsafeMutableRawPointer(header + 1).assumingMemoryBound(to: Recent.self)
    }
    private var entries: UnsafeMutablePointer<Entry> {
        get { header.pointee.entries }
        nonmutating set { header.pointee.entries = newValue }
    }
    private var mask: Int {
        get { header.pointee.mask }
        nonmutating set { header.pointee.mask = newValue }
    }
    private var count: Int {
        get { header.pointee.count }
        nonmutating set { header.pointee.count = newValue }
    }
    /// 64 slots (2 KB), chosen by 6 bits of a multiplicative hash. With
    /// 16, two of a toggle's three hot names shared a slot, and evicted each other
    /// on every call (a third more per dispatch), in about one process in six, as
    /// the loader placed the caller's strings; with 64, in about one in twenty.
    private static let recentCount = 64

    /// Names are at most 256 bytes: longer keys match nothing.
    static let maxNameLength = 256

    init() {
        // The first 64 entries (1 KB) come with the dispatcher, whose own memory
        // is Swift's: running out of it there ends the process (see Memory.swift).
        let entries = malloc(64 * MemoryLayout<Entry>.stride)!.assumingMemoryBound(to: Entry.self)
        entries.initialize(repeating: Entry(name: nil, scope: 0, value: -1), count: 64)
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<Header>.stride + NameTable.recentCount * MemoryLayout<Recent>.stride,
            alignment: max(MemoryLayout<Header>.alignment, MemoryLayout<Recent>.alignment))
        header = raw.bindMemory(to: Header.self, capacity: 1)
        header.initialize(to: Header(entries: entries, mask: 63))
        let recent = (raw + MemoryLayout<Header>.stride).bindMemory(to: Recent.self, capacity: NameTable.recentCount)
        recent.initialize(repeating: Recent(pointer: nil, name: 0, scope: 0, tagged: 0), count: NameTable.recentCount)
    }

    /// Hashes a name from its C bytes, a word at a time: the length comes from
    /// `strlen` (vectorized, never reads past the NUL), and every load stays inside
    /// the name (the last partial word is read overlapping the one before it). A
    /// byte-at-a-time hash cost about 15 instructions per byte, more than the rest
    /// of a dispatch with names like "FileDownloading".
    @inline(__always)
    private static func hash(_ name: UnsafePointer<CChar>, scope: Int32) -> (hash: UInt64, length: Int) {
        let length = strlen(name)
        if length > maxNameLength { return (0, length) }
        return (hash(UnsafeRawPointer(name), length: length, seed: UInt64(UInt32(bitPattern: scope))), length)
    }

    /// The hash of `length` bytes (shared with `InstanceTable`, whose keys are
    /// names of the host's choosing).
    @inline(__always)
    static func hash(_ raw: UnsafeRawPointer, length: Int, seed: UInt64) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed ^ (UInt64(length) << 32)
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
        return h ^ (h >> 32)
    }

    /// The value stored for the name, or -1.
    @inline(__always)
    func find(_ name: UnsafePointer<CChar>, scope: Int32) -> Int32 {
        let known = recall(name, scope: scope)
        if known >= 0 { return known }
        return findInTable(name, scope: scope)
    }

    /// `find` when the pointer cache does not know the name. Out of line: inlined,
    /// its hashing and probing kept registers busy on the hot path around it.
    @inline(never)
    private func findInTable(_ name: UnsafePointer<CChar>, scope: Int32) -> Int32 {
        let (value, stored) = lookUp(name, scope: scope)
        if let stored { remember(name, scope: scope, value: value, registered: stored) }
        return value
    }

    @inline(__always)
    private func recentSlot(_ name: UnsafePointer<CChar>, _ scope: Int32) -> UnsafeMutablePointer<Recent> {
        // Every low bit of the pointer counts: string literals such as "A" and "B"
        // sit two bytes apart, and a slot chosen by the high bits alone made them
        // evict each other on every call of a toggle. Bits 26-31 of the product
        // mix all of the pointer's low 32 bits (the names of one binary or one
        // heap differ there), and a 31-bit factor is an immediate operand: one
        // instruction fewer per lookup than a 64-bit one.
        let mixed = (UInt(bitPattern: Int(bitPattern: name)) ^ UInt(UInt32(bitPattern: scope))) &* 0x61C8_8647
        return recent + Int(truncatingIfNeeded: mixed >> 26) & (NameTable.recentCount - 1)
    }

    /// The value found last time for this pointer in this scope, if its bytes
    /// still spell the same name; -1 otherwise.
    @inline(__always)
    func recall(_ name: UnsafePointer<CChar>, scope: Int32) -> Int32 {
        var slot = recentSlot(name, scope)
        if slot.pointee.pointer != name || slot.pointee.scope != scope {
            // Two ways: names whose pointers fall on one slot (a toggle's "A" and
            // "B", as a binary happens to lay them out) would otherwise evict each
            // other on every call.
            slot = partner(of: slot)
            guard slot.pointee.pointer == name && slot.pointee.scope == scope else { return -1 }
        }
        let tagged = slot.pointee.tagged
        if tagged < 0 {
            let known = UnsafePointer<CChar>(bitPattern: UInt(slot.pointee.name)).unsafelyUnwrapped
            return strcmp(known, name) == 0 ? ~tagged : -1
        }
        // A short name's bytes, in the slot: compared one by one (a call to
        // `strcmp` costs more than a short name), so that the caller's string
        // is never read past its NUL. The first is not NUL (an empty name is
        // kept as a long one).
        let same = withUnsafePointer(to: &slot.pointee.name) { word in
            let known = UnsafeRawPointer(word)
            if known.load(as: CChar.self) != name[0] { return false }
            var i = 1
            while i < 8 {
                let byte = known.load(fromByteOffset: i, as: CChar.self)
                if byte != name[i] { return false }
                if byte == 0 { return true }
                i += 1
            }
            return false
        }
        return same ? tagged : -1
    }

    /// Notes that `name` (the caller's pointer) found `value`, registered as `registered`.
    @inline(__always)
    func remember(_ name: UnsafePointer<CChar>, scope: Int32, value: Int32, registered: UnsafePointer<CChar>) {
        let length = strnlen(registered, 8)
        let isLong = length == 8 || length == 0
        var known: UInt64 = 0
        if isLong {
            known = UInt64(UInt(bitPattern: registered))
        } else {
            // The bytes in memory order; the NUL and the padding are the zeros after them.
            withUnsafeMutableBytes(of: &known) { $0.copyMemory(from: UnsafeRawBufferPointer(start: registered, count: length)) }
        }
        // The slot, unless it holds another name: then its partner, so that the
        // two stay (the partner's name, if any, is the one that goes).
        var slot = recentSlot(name, scope)
        if slot.pointee.pointer != nil && (slot.pointee.pointer != name || slot.pointee.scope != scope) {
            slot = partner(of: slot)
        }
        slot.pointee = Recent(pointer: name, name: known, scope: scope, tagged: isLong ? ~value : value)
    }

    /// The other slot of a slot's pair.
    @inline(__always)
    private func partner(of slot: UnsafeMutablePointer<Recent>) -> UnsafeMutablePointer<Recent> {
        recent + ((slot - recent) ^ 1)
    }

    /// The value and the registered name's storage, from the hash table.
    private func lookUp(_ name: UnsafePointer<CChar>, scope: Int32) -> (Int32, UnsafePointer<CChar>?) {
        let (h, length) = NameTable.hash(name, scope: scope)
        if length > NameTable.maxNameLength { return (-1, nil) }
        var i = Int(truncatingIfNeeded: h) & mask
        while true {
            let entry = entries[i]
            guard let stored = entry.name else { return (-1, nil) }
            // strncmp stops at either NUL, so a shorter registered name is never
            // read past its end; equal over `length` bytes plus its NUL is equal.
            if entry.scope == scope && strncmp(stored, name, length) == 0 && stored[length] == 0 {
                return (entry.value, stored)
            }
            i = (i + 1) & mask
        }
    }

    /// Makes room for `n` more names, so that inserting them cannot fail.
    mutating func reserve(_ n: Int) throws(UniFlowError) {
        var capacity = mask + 1
        while (count + n) * 4 > capacity * 3 { capacity *= 2 }
        if capacity != mask + 1 { try rehash(capacity: capacity) }
    }

    /// Adds a name whose storage outlives the table (a `CName`).
    mutating func insert(_ name: CName, scope: Int32, value: Int32) throws(UniFlowError) {
        if (count + 1) * 4 > (mask + 1) * 3 { try rehash(capacity: (mask + 1) * 2) }
        let (h, _) = NameTable.hash(name.pointer, scope: scope)
        place(Entry(name: name.pointer, scope: scope, value: value), hash: h)
        count += 1
    }

    private mutating func place(_ entry: Entry, hash: UInt64) {
        var i = Int(truncatingIfNeeded: hash) & mask
        while entries[i].name != nil { i = (i + 1) & mask }
        entries[i] = entry
    }

    private mutating func rehash(capacity: Int) throws(UniFlowError) {
        let old = entries
        let oldCount = mask + 1
        let new = try Memory.allocate(Entry.self, count: capacity, for: "the name table")
        mask = capacity - 1
        entries = new
        entries.initialize(repeating: Entry(name: nil, scope: 0, value: -1), count: capacity)
        for i in 0..<oldCount {
            guard let name = old[i].name else { continue }
            place(old[i], hash: NameTable.hash(name, scope: old[i].scope).hash)
        }
        free(old)
    }

    func deallocate() {
        free(entries)
        UnsafeMutableRawPointer(header).deallocate()
    }
}
