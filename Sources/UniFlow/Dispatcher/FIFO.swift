/// A first-in first-out queue over an array: popping moves an index, and the
/// array is compacted when it empties or when most of it has been popped.
struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    /// `popFirst` empties the array when it takes the last element, so an empty
    /// queue is an empty array: one comparison, without reading `head` (every
    /// dispatch asks).
    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count - head }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let first = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return first
    }
}
