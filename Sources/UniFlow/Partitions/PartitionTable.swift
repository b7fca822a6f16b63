/// Who owns which partition of a partitioned dispatcher (docs/scale-out.md), and
/// how far each partition's log has come. It owns the partition count, this
/// node's name and incarnation, and per partition the version of its last
/// record, that record's hash and its owner; it knows nothing of the model.
///
/// Keyed instances live in partition `fnv1a32(key) mod N`; single features in
/// the *global partition*, numbered N. A node owns a partition while the last
/// claim of it (a record) names its node and incarnation and no release
/// followed: ownership follows the log.
struct PartitionTable {
    /// A node that claimed a partition: its name, and the incarnation that tells
    /// a restarted node from the one it replaces.
    struct Owner: Equatable {
        var node: String
        var incarnation: String
    }

    struct Partition {
        /// The number of records of the partition applied so far (0: none).
        var version: UInt64 = 0
        /// The FNV-1a hash of the last record's bytes (nil before the first).
        var lastHash: UInt32?
        var owner: Owner?
    }

    /// N: partitions 0..<N hold keyed instances; N is the global partition.
    let count: Int
    let me: Owner
    private(set) var partitions: [Partition]

    init(count: Int, node: String, incarnation: String = PartitionTable.newIncarnation()) {
        self.count = count
        me = Owner(node: node, incarnation: incarnation)
        partitions = Array(repeating: Partition(), count: count + 1)
    }

    /// The global partition's number.
    var global: Int { count }

    /// The partition of an instance (`key` non-nil) or of a single feature.
    func partition(ofKey key: UnsafePointer<CChar>?) -> Int {
        guard let key else { return global }
        return Int(FNV1a.hash32(cString: key) % UInt32(count))
    }

    func partition(ofKey key: String?) -> Int {
        guard let key else { return global }
        return Int(FNV1a.hash32(key) % UInt32(count))
    }

    subscript(p: Int) -> Partition { partitions[p] }

    /// Whether this node owns partition `p`.
    @inline(__always)
    func owns(_ p: Int) -> Bool { partitions[p].owner == me }

    /// A claim of `p` by `owner` took effect (nil: a release).
    mutating func setOwner(_ owner: Owner?, of p: Int) { partitions[p].owner = owner }

    /// A record of `p` was applied or accepted: its version and hash.
    mutating func advance(_ p: Int, to version: UInt64, hash: UInt32) {
        partitions[p].version = version
        partitions[p].lastHash = hash
    }

    /// A snapshot replaced the partition: its version, last hash and owner.
    mutating func replace(_ p: Int, version: UInt64, hash: UInt32?, owner: Owner?) {
        partitions[p] = Partition(version: version, lastHash: hash, owner: owner)
    }

    /// A partition's name in messages: its number, or "the global partition".
    func name(of p: Int) -> String { p == global ? "the global partition (\(p))" : "partition \(p)" }

    /// A random incarnation: 16 hex digits, drawn when a partitioned dispatcher is made.
    static func newIncarnation() -> String {
        var generator = SystemRandomNumberGenerator()
        let text = String(generator.next() as UInt64, radix: 16)
        return String(repeating: "0", count: 16 - text.utf8.count) + text
    }
}
