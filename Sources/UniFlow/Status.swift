/// The outcome of a call, mirroring the `UF_*` status codes of `uniflow.h`
/// one for one, the way swift-system's `Errno` mirrors `errno`.
public enum Status: Int32, Sendable, CaseIterable {
    /// Done.
    case ok = 0
    /// Accepted inside a callback of the same dispatcher; processed after the current action.
    case queued = 1
    /// The precondition did not hold, or a via callback declined; nothing changed.
    case rejected = -1
    /// A bad argument: NULL where a value is required, an unknown option.
    case invalidArgument = -2
    /// The text is not valid JSON.
    case invalidJSON = -3
    /// Valid JSON of the wrong shape.
    case schema = -4
    /// An unknown feature, state, handler or subscription.
    case notFound = -5
    /// A feature or handler with that name is already registered.
    case exists = -6
    /// A user callback reported failure.
    case callback = -7
    /// The cascade limit was reached.
    case loop = -8
    /// The call is not allowed here.
    case misuse = -9
    /// Out of memory.
    case noMemory = -10
    /// A file could not be read.
    case io = -11

    /// The code's name as the header spells it.
    public var name: String {
        switch self {
        case .ok: "UF_OK"
        case .queued: "UF_QUEUED"
        case .rejected: "UF_REJECTED"
        case .invalidArgument: "UF_EINVAL"
        case .invalidJSON: "UF_EJSON"
        case .schema: "UF_ESCHEMA"
        case .notFound: "UF_ENOTFOUND"
        case .exists: "UF_EEXISTS"
        case .callback: "UF_ECALLBACK"
        case .loop: "UF_ELOOP"
        case .misuse: "UF_EMISUSE"
        case .noMemory: "UF_ENOMEM"
        case .io: "UF_EIO"
        }
    }

    /// A sentence describing the code.
    public var sentence: String {
        switch self {
        case .ok: "done"
        case .queued: "accepted inside a callback; processed after the current action"
        case .rejected: "precondition not met, or a via callback declined; nothing changed"
        case .invalidArgument: "bad argument: NULL where a value is required, or an unknown option"
        case .invalidJSON: "text is not valid JSON"
        case .schema: "valid JSON of the wrong shape"
        case .notFound: "unknown feature, state, handler or subscription"
        case .exists: "a feature or handler with that name is already registered"
        case .callback: "a user callback reported failure"
        case .loop: "the cascade limit was reached"
        case .misuse: "call not allowed here"
        case .noMemory: "out of memory"
        case .io: "a file could not be read"
        }
    }
}

/// A failure with its status and a specific message
/// (`FileDownloading is in state InProgress, not Starting`).
public struct UniFlowError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: Status
    public var message: String

    public init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { "\(status.name): \(message)" }

    /// The same error with `prefix: ` in front of its message (a path, a batch index).
    public func prefixed(_ prefix: String) -> UniFlowError {
        UniFlowError(status, "\(prefix): \(message)")
    }
}
