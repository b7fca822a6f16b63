import Glibc

/// A growable buffer of trivially-copyable elements, never retained or released.
/// Elements move when it grows: hold indices, never pointers, across calls that
/// may append (a callback can subscribe or register).
///
/// It grows with `realloc`, which for large buffers remaps pages instead of
/// copying them: 100,000 features never hold two copies of their tables at once.
struct UnsafeVector<Element: BitwiseCopyable> {
    private(set) var base: UnsafeMutablePointer<Element>?
    private var storedCount: Int32 = 0
    private var capacity: Int32 = 0

    var count: Int { Int(storedCount) }

    subscript(i: Int) -> Element {
        get { base.unsafelyUnwrapped[i] }
        nonmutating set { base.unsafelyUnwrapped[i] = newValue }
    }

    /// A pointer to element `i`, valid until the next append.
    func pointer(_ i: Int) -> UnsafeMutablePointer<Element> { base.unsafelyUnwrapped + i }

    mutating func append(_ element: Element) throws(UniFlowError) {
        if storedCount == capacity { try grow(to: count + 1) }
        base.unsafelyUnwrapped[count] = element
        storedCount += 1
    }

    /// Whether the next `append` must grow the buffer (and may fail).
    var isFull: Bool { storedCount == capacity }

    /// Appends an element `reserve` made room for.
    @inline(__always)
    mutating func appendReserved(_ element: Element) {
        assert(storedCount < capacity, "appendReserved without reserve")
        base.unsafelyUnwrapped[count] = element
        storedCount &+= 1
    }

    /// Appends `count` copies of `element`.
    mutating func append(repeating element: Element, count n: Int) throws(UniFlowError) {
        if count + n > Int(capacity) { try grow(to: count + n) }
        (base.unsafelyUnwrapped + count).initialize(repeating: element, count: n)
        storedCount += Int32(n)
    }

    /// Appends the bytes of a buffer (for `UnsafeVector<UInt8>`).
    mutating func append(contentsOf buffer: UnsafeBufferPointer<Element>) throws(UniFlowError) {
        guard let source = buffer.baseAddress, !buffer.isEmpty else { return }
        if count + buffer.count > Int(capacity) { try grow(to: count + buffer.count) }
        (base.unsafelyUnwrapped + count).initialize(from: source, count: buffer.count)
        storedCount += Int32(buffer.count)
    }

    /// Makes room for `n` more elements, so that the appends that follow cannot fail.
    mutating func reserve(_ n: Int) throws(UniFlowError) {
        if count + n > Int(capacity) { try grow(to: count + n) }
    }

    /// Drops the elements from `n` on.
    mutating func truncate(to n: Int) { storedCount = Int32(Swift.min(n, count)) }

    /// Drops the first `n` elements; the others move to the front, in order.
    mutating func removeFirst(_ n: Int) {
        let kept = count - n
        if kept > 0 { base.unsafelyUnwrapped.update(from: base.unsafelyUnwrapped + n, count: kept) }
        storedCount = Int32(Swift.max(kept, 0))
    }

    /// Keeps the elements for which `drop` is false, in order.
    mutating func removeAll(where drop: (Element) -> Bool) {
        var kept = 0
        for i in 0..<count where !drop(self[i]) {
            self[kept] = self[i]
            kept += 1
        }
        storedCount = Int32(kept)
    }

    private mutating func grow(to minimum: Int) throws(UniFlowError) {
        guard minimum <= Int(Int32.max) else { throw Memory.outOfMemory("a table of more than 2^31 elements") }
        let newCapacity = Swift.min(Swift.max(minimum, Int(capacity) * 2, 4), Int(Int32.max))
        guard let raw = realloc(base, newCapacity * MemoryLayout<Element>.stride) else {
            throw Memory.outOfMemory("a table")
        }
        base = raw.assumingMemoryBound(to: Element.self)
        capacity = Int32(newCapacity)
    }

    /// Frees the buffer; the vector is empty afterwards.
    mutating func deallocate() {
        free(base)
        base = nil
        storedCount = 0
        capacity = 0
    }
}

extension UnsafeVector where Element: Equatable {
    func contains(_ element: Element) -> Bool {
        for i in 0..<count where self[i] == element { return true }
        return false
    }
}
