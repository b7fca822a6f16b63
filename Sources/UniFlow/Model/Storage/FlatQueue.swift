/// A first-in first-out queue of trivially copyable elements in one malloc'd
/// buffer: `FIFO` without the array's uniqueness checks, retains and releases,
/// which cost as much as the rest of queueing a deferred delivery. Popping moves
/// an index; the buffer is reused from the start once it empties, and compacted
/// when most of it has been popped. The owner frees it (`deallocate`).
struct FlatQueue<Element: BitwiseCopyable> {
    private var items = UnsafeVector<Element>()
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    /// Fails only when the buffer cannot grow; the queue is unchanged then.
    mutating func append(_ element: Element) throws(UniFlowError) { try items.append(element) }

    /// Room for `n` more elements, so that `appendReserved` cannot fail.
    mutating func reserve(_ n: Int) throws(UniFlowError) { try items.reserve(n) }

    mutating func appendReserved(_ element: Element) { items.appendReserved(element) }

    /// Whether the next `append` must grow the buffer (and may fail); when it
    /// need not, `appendReserved` does.
    var isFull: Bool { items.isFull }

    /// Takes back the last `append` (the queue must not be empty).
    mutating func removeLast() { items.truncate(to: items.count - 1) }

    /// The oldest element, left in place.
    var first: Element? { head < items.count ? items[head] : nil }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let first = items[head]
        discardFirst()
        return first
    }

    /// A pointer to the oldest element, valid until the queue next changes:
    /// what reads a few fields of a large element without copying the rest.
    var firstPointer: UnsafeMutablePointer<Element>? { head < items.count ? items.pointer(head) : nil }

    /// Drops the oldest element (the queue must not be empty).
    mutating func discardFirst() {
        head += 1
        if head == items.count {
            items.truncate(to: 0)
            head = 0
        } else if head > 4096 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
    }

    /// Keeps, in order, only the elements `keep` accepts; `keep` sees each once, oldest first.
    mutating func filter(_ keep: (Element) -> Bool) {
        var kept = 0
        for i in head..<items.count where keep(items[i]) {
            items.pointer(kept).pointee = items[i]
            kept += 1
        }
        items.truncate(to: kept)
        head = 0
    }

    mutating func deallocate() {
        items.deallocate()
        head = 0
    }
}
