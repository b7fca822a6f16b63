/// The outcome of a call, mirroring the `UF_*` status codes of `uniflow.h`
/// one for one, the way swift-system's `Errno` mirrors `errno`.
enum Status: Int32, Sendable, CaseIterable {
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
    /// A file could not be read (or the journal written).
    case io = -11
    /// `uf_dispatch_try` only: another thread is processing; nothing was done.
    case busy = -12
    /// A partitioned dispatcher: the action's partition is owned by another node, or by none.
    case notOwner = -13
    /// The log refused a record: another record got there first.
    case conflict = -14
    /// The log did not answer; the outcome is unknown until it is read.
    case unavailable = -15
    /// A record came before the ones it follows.
    case gap = -16

    /// The code's name as the header spells it (`UF_REJECTED`).
    var name: String { staticName.description }

    /// A sentence describing the code.
    var sentence: String { staticSentence.description }
}

/// A failure with its status and a specific message
/// (`FileDownloading is in state InProgress, not Starting`).
struct UniFlowError: Error, Equatable, Sendable, CustomStringConvertible {
    var status: Status
    var message: String

    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { "\(status.name): \(message)" }

    /// The same error with `prefix: ` in front of its message (a path, a batch index).
    func prefixed(_ prefix: String) -> UniFlowError {
        UniFlowError(status, "\(prefix): \(message)")
    }
}
