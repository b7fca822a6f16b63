/// Watch indices filed by feature number: an array, not a dictionary, because
/// it is read after every outer call that changed a watched feature, and hashing
/// the number cost more than the rest of finding an unchanged value.
struct FeatureWatchLists {
    private var lists: [[Int]] = []

    subscript(feature: Int32) -> [Int] { Int(feature) < lists.count ? lists[Int(feature)] : [] }

    mutating func append(_ watch: Int, to feature: Int32) {
        if Int(feature) >= lists.count { lists += repeatElement([], count: Int(feature) + 1 - lists.count) }
        lists[Int(feature)].append(watch)
    }

    mutating func removeAll() { lists.removeAll() }
}
