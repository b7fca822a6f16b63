/// Bindings across partitions (docs/scale-out.md): a binding of a single
/// feature lives in the global partition, and runs there, at the global
/// partition's owner, over the mutations of other partitions' records — once
/// per record, across failovers. This keeps what that needs: the mutations of
/// records not yet run over, and `after`, how far the global partition's
/// records say the runs have come in each partition.
struct HomeBindings {
    /// A mutation of another partition's record, as the node saw it when it
    /// committed or applied the record (the state before included).
    struct Mutation {
        var seq: UInt64
        var kind: MutationKind
        var feature: Int32
        var key: String?
        var oldState: Int32
        var newState: Int32
        var oldPayload: JSONObject?
        var newPayload: JSONObject?
        var action: JSONObject
    }

    struct PendingRecord {
        var version: UInt64
        var mutations: [Mutation]
    }

    /// For each partition: the version up to which the global partition's
    /// records say its bindings have run (the last committed `after`). A
    /// partition without an entry has had no global owner yet.
    private(set) var after: [Int: UInt64] = [:]
    /// For each partition: its records above `after`, in version order.
    private(set) var pending: [Int: [PendingRecord]] = [:]
    /// What `after` gained since the last global record that carried it.
    private(set) var unwritten = 0
    /// A run is under way (runs do not nest).
    var running = false

    /// Records above `after[q]` are kept. While this node does not know
    /// `after[q]` (the global partition has had no owner yet, or its records
    /// have not been read yet) every record is: what they say prunes them.
    func keeps(_ q: Int, version: UInt64) -> Bool {
        guard let last = after[q] else { return true }
        return version > last
    }

    mutating func keep(_ q: Int, _ record: PendingRecord) {
        pending[q, default: []].append(record)
    }

    /// The first record waiting to be run over, by partition, then version.
    var next: (partition: Int, record: PendingRecord)? {
        for q in pending.keys.sorted() { if let first = pending[q]?.first { return (q, first) } }
        return nil
    }

    /// `after` as a record of the global partition carries it.
    /// A partition it does not name is at 0 (nothing run over yet): records of
    /// a model with many partitions stay small while few are written.
    func json(with extra: (partition: Int, version: UInt64)? = nil) -> JSONValue {
        var map = after
        if let extra { map[extra.partition] = extra.version }
        var object = JSONObject()
        for q in map.keys.sorted() where map[q]! > 0 { object[String(q)] = .int(Int64(map[q]!)) }
        return .object(object)
    }

    /// A global record carrying `after` was accepted or applied: what it says
    /// holds (a partition it does not name is at 0), and the records it covers
    /// need not be kept.
    mutating func committed(_ map: [Int: UInt64], partitions count: Int) {
        for q in 0..<count {
            let version = max(after[q] ?? 0, map[q] ?? 0)
            after[q] = version
            pending[q]?.removeAll { $0.version <= version }
            if pending[q]?.isEmpty == true { pending[q] = nil }
        }
        unwritten = 0
    }

    /// A run over `q`'s record `version` made no record of its own: the global
    /// partition will say so with its next record. Returns whether that is due
    /// now (every hundred such).
    mutating func ranWithoutRecord(_ q: Int, version: UInt64) -> Bool {
        after[q] = version
        pending[q]?.removeFirst()
        if pending[q]?.isEmpty == true { pending[q] = nil }
        unwritten += 1
        return unwritten >= 100
    }

    /// A first claim of the global partition: runs start at what this node has
    /// applied of each partition.
    mutating func start(at versions: [Int: UInt64]) {
        for (q, version) in versions where after[q] == nil {
            after[q] = version
            pending[q]?.removeAll { $0.version <= version }
            if pending[q]?.isEmpty == true { pending[q] = nil }
        }
    }

    /// Reads a record's `after` object.
    static func parse(_ value: JSONValue?) -> [Int: UInt64]? {
        guard let object = value?.objectValue else { return nil }
        var map: [Int: UInt64] = [:]
        for (key, version) in object {
            guard let q = Int(key), case .int(let v) = version, v >= 0 else { return nil }
            map[q] = UInt64(v)
        }
        return map
    }
}
