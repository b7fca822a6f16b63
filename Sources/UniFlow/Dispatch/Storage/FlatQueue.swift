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

    /// Takes back the last `append` (the queue must not be empty).
    mutating func removeLast() { items.truncate(to: items.count - 1) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let first = items[head]
        discardFirst()
        return first
    }

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

    /// How many of the waiting elements `matches` accepts.
    func count(where matches: (Element) -> Bool) -> Int {
        var n = 0
        for i in head..<items.count where matches(items[i]) { n += 1 }
        return n
    }

    mutating func deallocate() {
        items.deallocate()
        head = 0
    }
}
