/// How a dispatcher is configured (`uf_dispatcher_new`'s options JSON).
struct DispatcherOptions: Sendable, Equatable {
    /// What the built-in reporter prints to stderr.
    enum Reporting: String, Sendable, CaseIterable {
        case none, short, verbose
    }

    var reporting: Reporting = .none
    /// Actions processed within one outer call before the rest are dropped.
    var maxCascade: Int = 100_000
    /// Send `binding_skipped` reports to a custom reporter.
    var reportSkipped = false
    /// A JSON-lines file that records every registration and applied mutation.
    var journal: String?
    /// fsync the journal after every line, not only flush it.
    var journalSync = false
    /// Who fires timers: the library's thread, or the host's loop (`uf_loop_run`).
    enum Timers: String, CaseIterable { case thread, host }
    var timers: Timers = .thread
    var clock: DispatcherClock.Kind = .monotonic
    /// Deliveries that may wait for the host's loop before the oldest is dropped.
    var deferredLimit = 100_000
    /// Scale-out (docs/scale-out.md): the number of partitions keyed instances
    /// are spread over, and this node's name. Both or neither: without them the
    /// dispatcher is not partitioned.
    var partitions: Int?
    var node: String?
    /// At most this many partitions, and this many bytes in a node's name.
    static let maxPartitions = 1024
    static let maxNodeName = 64

    init() {}

    /// An integer however it is spelled (`5`, `5.0`, `5e0`), as payloads take one.
    private static func integer(_ value: JSONValue) -> Int64? {
        switch value {
        case .int(let n): return n
        case .double(let d) where d.rounded(.towardZero) == d && d.magnitude <= Double(FieldType.maxIntegerMagnitude):
            return Int64(d)
        default: return nil
        }
    }

    // Every option is read by one of these, so that each kind of value is
    // checked, and its error worded, the same way for every option.

    /// One of a fixed set of strings (`allowed` says which, for the message).
    private static func choice<T: RawRepresentable>(_ key: String, _ value: JSONValue, _ allowed: String) throws(UniFlowError) -> T
        where T.RawValue == String {
        guard let text = value.stringValue, let chosen = T(rawValue: text) else {
            throw UniFlowError(.invalidArgument, "option '\(key)' must be \(allowed), got \(value.jsonText)")
        }
        return chosen
    }

    /// An integer of at least 1.
    private static func count(_ key: String, _ value: JSONValue) throws(UniFlowError) -> Int {
        guard let n = integer(value), n >= 1 else {
            throw UniFlowError(.invalidArgument, "option '\(key)' must be an integer >= 1, got \(value.jsonText)")
        }
        return Int(n)
    }

    private static func flag(_ key: String, _ value: JSONValue) throws(UniFlowError) -> Bool {
        guard let flag = value.boolValue else {
            throw UniFlowError(.invalidArgument, "option '\(key)' must be a boolean, got \(value.jsonText)")
        }
        return flag
    }

    /// Reads the options object; anything unknown or ill-typed is `UF_EINVAL`
    /// (a bad option is a bad argument, not a bad document).
    init(json: JSONValue) throws(UniFlowError) {
        guard let object = json.objectValue else {
            throw UniFlowError(.invalidArgument, "options must be an object, got \(json.jsonTypeName)")
        }
        for (key, value) in object {
            switch key {
            case "reporting":
                reporting = try Self.choice(key, value, "\"none\", \"short\" or \"verbose\"")
            case "max_cascade":
                maxCascade = try Self.count(key, value)
            case "report_skipped":
                reportSkipped = try Self.flag(key, value)
            case "journal":
                guard let path = value.stringValue, !path.isEmpty else {
                    throw UniFlowError(.invalidArgument, "option 'journal' must be a non-empty path, got \(value.jsonText)")
                }
                // The file system would read the path only up to it: another file.
                guard !path.utf8.contains(0) else {
                    throw UniFlowError(.invalidArgument, "option 'journal': the path contains \\u0000, which no file name can hold")
                }
                journal = path
            case "journal_sync":
                journalSync = try Self.flag(key, value)
            case "timers":
                timers = try Self.choice(key, value, "\"thread\" or \"host\"")
            case "clock":
                clock = try Self.choice(key, value, "\"monotonic\" or \"manual\"")
            case "deferred_limit":
                deferredLimit = try Self.count(key, value)
            case "partitions":
                guard let n = Self.integer(value), n >= 1, n <= Self.maxPartitions else {
                    throw UniFlowError(.invalidArgument, "option 'partitions' must be an integer from 1 to \(Self.maxPartitions), got \(value.jsonText)")
                }
                partitions = Int(n)
            case "node":
                guard let name = value.stringValue, DefinitionParser.isValidName(name), name.utf8.count <= Self.maxNodeName else {
                    throw UniFlowError(.invalidArgument, "option 'node' must be a name ([A-Za-z_][A-Za-z0-9_]*, at most \(Self.maxNodeName) bytes), got \(value.jsonText)")
                }
                node = name
            default:
                throw UniFlowError(.invalidArgument, "unknown option '\(key)'")
            }
        }
        if (partitions == nil) != (node == nil) {
            throw UniFlowError(.invalidArgument, partitions == nil
                ? "option 'node' needs option 'partitions' (a partitioned dispatcher has both)"
                : "option 'partitions' needs option 'node' (a partitioned dispatcher has both)")
        }
    }
}
