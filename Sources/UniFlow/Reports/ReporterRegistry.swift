import CUniFlow

/// The host's reporter (`uf_set_reporter`); nil: the built-in one.
struct ReporterRegistry {
    var custom: HostCallback<uf_report_fn>?
    /// The reporter is being called: replacing it from inside itself defers its release.
    var running = false
    var retired: [HostCallback<uf_report_fn>] = []

    mutating func releaseAll() {
        custom?.release()
        custom = nil
        for i in retired.indices { retired[i].release() }
        retired.removeAll()
    }
}
