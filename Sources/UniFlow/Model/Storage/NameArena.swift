import Glibc

/// A registered name as C sees it: NUL-terminated UTF-8 at an address that never
/// changes, so accessors can hand it out as a borrowed `const char *`.
struct CName {
    let pointer: UnsafePointer<CChar>

    var string: String { String(cString: pointer) }
}

/// Where registered names live: blocks that are filled one after another and
/// freed together with the dispatcher. Names are never removed, and a `malloc`
/// per name would cost more than the name (two states and a feature of a few
/// bytes each took 96 bytes that way).
struct NameArena {
    private var blocks: [UnsafeMutablePointer<CChar>] = []
    private var used = 0
    private var capacity = 0
    private static let blockSize = 16 * 1024

    /// Makes room for `bytes` more bytes of names (NULs included), so that
    /// storing them cannot fail.
    mutating func reserve(_ bytes: Int) throws(UniFlowError) {
        guard used + bytes > capacity else { return }
        let size = Swift.max(NameArena.blockSize, bytes)
        blocks.append(try Memory.allocate(CChar.self, count: size, for: "names"))
        used = 0
        capacity = size
    }

    /// Copies `name` into the arena.
    mutating func store(_ name: String) throws(UniFlowError) -> CName {
        var utf8 = Array(name.utf8)
        utf8.append(0)
        if used + utf8.count > capacity {
            let size = Swift.max(NameArena.blockSize, utf8.count)
            blocks.append(try Memory.allocate(CChar.self, count: size, for: "a name"))
            used = 0
            capacity = size
        }
        let start = blocks[blocks.count - 1] + used
        utf8.withUnsafeBytes { raw in
            UnsafeMutableRawPointer(start).copyMemory(from: raw.baseAddress!, byteCount: raw.count)
        }
        used += utf8.count
        return CName(pointer: UnsafePointer(start))
    }

    mutating func deallocate() {
        for block in blocks { free(block) }
        blocks = []
        used = 0
        capacity = 0
    }
}
