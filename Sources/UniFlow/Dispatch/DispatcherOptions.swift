/// How a dispatcher is configured (`uf_dispatcher_new`'s options JSON).
public struct DispatcherOptions: Sendable, Equatable {
    /// What the built-in reporter prints to stderr.
    public enum Reporting: String, Sendable, CaseIterable {
        case none, short, verbose
    }

    public var reporting: Reporting = .none
    /// Actions processed within one outer call before the rest are dropped (SPEC 7.6).
    public var maxCascade: Int = 100_000
    /// Send `binding_skipped` reports to a custom reporter.
    public var reportSkipped = false
    /// A JSON-lines file that records every registration and applied mutation.
    public var journal: String?
    /// fsync the journal after every line, not only flush it.
    public var journalSync = false

    public init() {}

    /// Reads the options object; anything unknown or ill-typed is `UF_EINVAL`
    /// (a bad option is a bad argument, not a bad document).
    public init(json: JSONValue) throws(UniFlowError) {
        guard let object = json.objectValue else {
            throw UniFlowError(.invalidArgument, "options must be an object, got \(json.kindName)")
        }
        for (key, value) in object {
            switch key {
            case "reporting":
                guard let text = value.stringValue, let reporting = Reporting(rawValue: text) else {
                    throw UniFlowError(.invalidArgument, "option 'reporting' must be \"none\", \"short\" or \"verbose\", got \(value.jsonText)")
                }
                self.reporting = reporting
            case "max_cascade":
                guard case .int(let n) = value, n >= 1 else {
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
                journal = path
            case "journal_sync":
                guard let flag = value.boolValue else {
                    throw UniFlowError(.invalidArgument, "option 'journal_sync' must be a boolean, got \(value.jsonText)")
                }
                journalSync = flag
            default:
                throw UniFlowError(.invalidArgument, "unknown option '\(key)'")
            }
        }
    }
}
