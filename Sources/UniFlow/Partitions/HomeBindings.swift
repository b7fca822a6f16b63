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

    /// For each partition (by number; the global one has no entry): the
    /// version up to which the global partition's records say its bindings
    /// have run (the last committed `after`); nil while the global partition
    /// has had no owner yet. Arrays, not dictionaries: every record of the
    /// global partition reads and writes all of them, and hashing each number
    /// cost a record more than writing it.
    private(set) var after: [UInt64?] { didSet { afterText = nil } }
    /// `after` as the last record wrote it: global records mostly carry it
    /// unchanged, and writing its numbers again was a tenth of a record's cost.
    private var afterText: [UInt8]? = nil
    /// For each partition: its records above `after`, in version order.
    private(set) var pending: [[PendingRecord]]
    /// What `after` gained since the last global record that carried it.
    private(set) var unwritten = 0
    /// A run is under way (runs do not nest).
    var running = false

    /// For `count` partitions besides the global one (0 on an unpartitioned dispatcher).
    init(partitions count: Int = 0) {
        after = Array(repeating: nil, count: count)
        pending = Array(repeating: [], count: count)
    }

    /// Records above `after[q]` are kept. While this node does not know
    /// `after[q]` (the global partition has had no owner yet, or its records
    /// have not been read yet) every record is: what they say prunes them.
    func keeps(_ q: Int, version: UInt64) -> Bool {
        guard let last = after[q] else { return true }
        return version > last
    }

    mutating func keep(_ q: Int, _ record: PendingRecord) {
        pending[q].append(record)
    }

    /// The first record waiting to be run over, by partition, then version.
    var next: (partition: Int, record: PendingRecord)? {
        for q in pending.indices { if let first = pending[q].first { return (q, first) } }
        return nil
    }

    /// `after` as a record of the global partition carries it, with `extra`
    /// (a run over another partition's record) counted in.
    /// A partition it does not name is at 0 (nothing run over yet): records of
    /// a model with many partitions stay small while few are written.
    mutating func write(to writer: inout JSONWriter, with extra: (partition: Int, version: UInt64)? = nil) {
        if let extra, extra.version != after[extra.partition] ?? 0 {
            var text = JSONWriter()
            writeAfter(to: &text, with: extra)
            writer.raw(bytes: text.bytes)
            return
        }
        if afterText == nil {
            var text = JSONWriter()
            writeAfter(to: &text, with: nil)
            afterText = text.bytes
        }
        writer.raw(bytes: afterText!)
    }

    private func writeAfter(to writer: inout JSONWriter, with extra: (partition: Int, version: UInt64)?) {
        writer.raw(byte: UInt8(ascii: "{"))
        var first = true
        for q in after.indices {
            let version = extra?.partition == q ? extra!.version : after[q] ?? 0
            guard version > 0 else { continue }
            if !first { writer.raw(byte: UInt8(ascii: ",")) }
            first = false
            writer.raw(byte: UInt8(ascii: "\""))
            writer.write(int: Int64(q))
            writer.raw("\":")
            writer.write(int: Int64(version))
        }
        writer.raw(byte: UInt8(ascii: "}"))
    }

    /// `after` as a JSON value (snapshots).
    func json() -> JSONValue {
        var object = JSONObject()
        for q in after.indices where (after[q] ?? 0) > 0 { object[String(q)] = .int(Int64(after[q]!)) }
        return .object(object)
    }

    /// A global record carrying `after` was accepted or applied: what it says
    /// holds (a partition it does not name is at 0), and the records it covers
    /// need not be kept. `map` gives the versions it names.
    mutating func committed(_ map: [(partition: Int, version: UInt64)]) {
        for q in after.indices where after[q] == nil { after[q] = 0 }
        for (q, version) in map where q < after.count { raise(q, to: version) }
        unwritten = 0
    }

    /// A global record this node wrote was accepted: it carried `after` as it
    /// stands, with `extra` counted in.
    mutating func committedOwn(with extra: (partition: Int, version: UInt64)?) {
        for q in after.indices where after[q] == nil { after[q] = 0 }
        if let extra { raise(extra.partition, to: extra.version) }
        unwritten = 0
    }

    private mutating func raise(_ q: Int, to version: UInt64) {
        guard version > after[q]! else { return }
        after[q] = version
        pending[q].removeAll { $0.version <= version }
    }

    /// A run over `q`'s record `version` made no record of its own: the global
    /// partition will say so with its next record. Returns whether that is due
    /// now (every hundred such).
    mutating func ranWithoutRecord(_ q: Int, version: UInt64) -> Bool {
        after[q] = version
        pending[q].removeFirst()
        unwritten += 1
        return unwritten >= 100
    }

    /// A first claim of the global partition: runs start at what this node has
    /// applied of each partition.
    mutating func start(at versions: [UInt64]) {
        for q in after.indices where after[q] == nil {
            after[q] = versions[q]
            pending[q].removeAll { $0.version <= versions[q] }
        }
    }

    /// Reads a record's `after` object: the versions it names.
    static func parse(_ value: JSONValue?) -> [(partition: Int, version: UInt64)]? {
        guard let object = value?.objectValue else { return nil }
        var map: [(partition: Int, version: UInt64)] = []
        // Every global record carries one: growing the array as it fills cost
        // an apply more than reading the versions.
        map.reserveCapacity(object.count)
        for (key, version) in object {
            guard let q = Int(key), q >= 0, case .int(let v) = version, v >= 0 else { return nil }
            map.append((q, UInt64(v)))
        }
        return map
    }
}
