import Glibc

/// The calling thread's last failure (`uf_last_status`, `uf_last_error`), kept in
/// pthread thread-specific storage: Swift has no thread-locals without Foundation.
struct ThreadError {
    var status: Int32 = 0
    var message: UnsafeMutablePointer<CChar>?

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            guard let raw else { return }
            let state = raw.assumingMemoryBound(to: ThreadError.self)
            free(state.pointee.message)
            state.deallocate()
        }
        return key
    }()

    /// This thread's record, created on first use.
    static var current: UnsafeMutablePointer<ThreadError>? {
        if let raw = pthread_getspecific(key) { return raw.assumingMemoryBound(to: ThreadError.self) }
        return nil
    }

    private static func currentOrNew() -> UnsafeMutablePointer<ThreadError> {
        if let existing = current { return existing }
        let state = UnsafeMutablePointer<ThreadError>.allocate(capacity: 1)
        state.initialize(to: ThreadError())
        pthread_setspecific(key, state)
        return state
    }

    /// Records a failure on this thread; the previous message is freed. When the
    /// message cannot be copied, the status is still recorded and the message is
    /// the status's sentence.
    static func record(_ error: UniFlowError) {
        let state = currentOrNew()
        free(state.pointee.message)
        state.pointee.status = error.status.rawValue
        // A C string ends at the first NUL; a name read from JSON may hold one
        // ("\u0000"), so it is spelled the way JSON does.
        let message = error.message.utf8.contains(0) ? error.message.replacing("\0", with: "\\u0000") : error.message
        state.pointee.message = strdup(message) ?? strdup(error.status.sentence)
    }
}

/// Records `error` as this thread's last failure and returns its status code.
@inline(never)
func fail(_ error: UniFlowError) -> Int32 {
    ThreadError.record(error)
    return error.status.rawValue
}
