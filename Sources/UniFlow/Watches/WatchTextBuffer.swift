import Glibc

/// The text `uf_watch_value_json` hands out, written into one block kept from
/// delivery to delivery: a host that reads every new value (the Python binding
/// always does) would otherwise pay for a string, a copy and a `malloc` on each
/// change.
///
/// The block is lent to one delivery at a time. A watch made from inside another
/// watch's callback is delivered while the outer callback may still hold its text,
/// so that inner delivery gets a block of its own, freed when it ends.
struct WatchTextBuffer {
    private var writer = JSONWriter()
    private var block: UnsafeMutablePointer<CChar>?
    private var capacity = 0
    private var lent = false

    /// A text this long gets a block of its own, freed after its delivery: one big
    /// value must not hold its memory for the dispatcher's life.
    private static let keptCapacity = 4096

    /// The value's compact JSON text and whether it is the lent block (to be given
    /// back) or a block of its own (to be freed); nil when no memory is left.
    mutating func text(of value: JSONValue) -> (text: UnsafeMutablePointer<CChar>, lent: Bool)? {
        if !lent, case .string(var string) = value, let quoted = string.withUTF8({ quote($0) }) {
            lent = true
            return (quoted, true)
        }
        writer.reset(keeping: Self.keptCapacity)
        writer.write(value)
        let count = writer.bytes.count
        if lent || count >= Self.keptCapacity {
            return writer.bytes.withUnsafeBytes { (try? Memory.copy($0, for: "a watch's value")).map { ($0, false) } }
        }
        guard let block = reserve(count + 1) else { return nil }
        writer.bytes.withUnsafeBytes { if let base = $0.baseAddress { memcpy(block, base, count) } }
        block[count] = 0
        lent = true
        return (block, true)
    }

    /// A string that needs no escape (a state's name, mostly) between quotes in the
    /// block, without going through the writer; nil for any other.
    private mutating func quote(_ utf8: UnsafeBufferPointer<UInt8>) -> UnsafeMutablePointer<CChar>? {
        guard utf8.count + 3 < Self.keptCapacity, JSONWriter.isPlain(utf8), let block = reserve(utf8.count + 3) else { return nil }
        block[0] = CChar(UInt8(ascii: "\""))
        if let base = utf8.baseAddress { memcpy(block + 1, base, utf8.count) }
        block[utf8.count + 1] = CChar(UInt8(ascii: "\""))
        block[utf8.count + 2] = 0
        return block
    }

    /// The block, with room for `size` bytes (fewer than `keptCapacity`).
    private mutating func reserve(_ size: Int) -> UnsafeMutablePointer<CChar>? {
        if capacity < size {
            let grown = Swift.max(64, 1 << (Int.bitWidth - (size - 1).leadingZeroBitCount))  // a power of two >= size
            guard let raw = realloc(block, grown) else { return nil }
            block = raw.assumingMemoryBound(to: CChar.self)
            capacity = grown
        }
        return block
    }

    /// Takes back the block lent by `text(of:)`.
    mutating func giveBack() {
        lent = false
    }

    mutating func deallocate() {
        free(block)
        block = nil
        capacity = 0
    }
}
