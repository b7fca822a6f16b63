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

    /// Reads the options object; anything unknown or ill-typed is `UF_EINVAL`
    /// (a bad option is a bad argument, not a bad document).
    init(json: JSONValue) throws(UniFlowError) {
        guard let object = json.objectValue else {
            throw UniFlowError(.invalidArgument, "options must be an object, got \(json.jsonTypeName)")
        }
        for (key, value) in object {
            switch key {
            case "reporting":
                guard let text = value.stringValue, let reporting = Reporting(rawValue: text) else {
                    throw UniFlowError(.invalidArgument, "option 'reporting' must be \"none\", \"short\" or \"verbose\", got \(value.jsonText)")
                }
                self.reporting = reporting
            case "max_cascade":
                guard let n = DispatcherOptions.integer(value), n >= 1 else {
                    throw UniFlowError(.invalidArgument, "option 'max_cascade' must be an integer >= 1, got \(value.jsonText)")
                }
                maxCascade = Int(n)
            case "report_skipped":
                guard let flag = value.boolValue else {
                    throw UniFlowError(.invalidArgument, "option 'report_skipped' must be a boolean, got \(value.jsonText)")
                }
                reportSkipped = flag
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
                guard let flag = value.boolValue else {
                    throw UniFlowError(.invalidArgument, "option 'journal_sync' must be a boolean, got \(value.jsonText)")
                }
                journalSync = flag
            case "timers":
                guard let text = value.stringValue, let timers = Timers(rawValue: text) else {
                    throw UniFlowError(.invalidArgument, "option 'timers' must be \"thread\" or \"host\", got \(value.jsonText)")
                }
                self.timers = timers
            case "clock":
                guard let text = value.stringValue, let clock = DispatcherClock.Kind(rawValue: text) else {
                    throw UniFlowError(.invalidArgument, "option 'clock' must be \"monotonic\" or \"manual\", got \(value.jsonText)")
                }
                self.clock = clock
            case "deferred_limit":
                guard let n = DispatcherOptions.integer(value), n >= 1 else {
                    throw UniFlowError(.invalidArgument, "option 'deferred_limit' must be an integer >= 1, got \(value.jsonText)")
                }
                deferredLimit = Int(n)
            default:
                throw UniFlowError(.invalidArgument, "unknown option '\(key)'")
            }
        }
    }
}
