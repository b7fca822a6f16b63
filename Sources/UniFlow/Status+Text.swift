/// The status texts as `StaticString`s, so C can borrow them forever.
extension Status {
    /// `name` as a `StaticString`, so C can borrow it forever.
    var staticName: StaticString {
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
        case .busy: "UF_EBUSY"
        case .notOwner: "UF_ENOTOWNER"
        case .conflict: "UF_ECONFLICT"
        case .unavailable: "UF_EUNAVAILABLE"
        case .gap: "UF_EGAP"
        }
    }

    var staticSentence: StaticString {
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
        case .io: "a file could not be read or written"
        case .busy: "the dispatcher is processing on another thread; nothing was done"
        case .notOwner: "the action's partition is owned by another node, or by none"
        case .conflict: "the log refused a record: another got there first"
        case .unavailable: "the log did not answer; the outcome is unknown until it is read"
        case .gap: "a record came before the ones it follows"
        }
    }
}
