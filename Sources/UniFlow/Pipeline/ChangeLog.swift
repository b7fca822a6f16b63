import Glibc

/// What the current outer call changed.
struct ChangeLog {
    /// Some change happened that watches may need to see.
    var any = false
    /// Features changed (once each), for the watches that read them.
    var features: [Int32] = []
    /// Those of `features` whose payload, or whether they exist, may have
    /// changed: a feature that only changed state is not here, and a watch that
    /// reads only its payload need not be evaluated again.
    var payloads: [Int32] = []
    /// Every feature may have changed (a restore, a replay).
    var everything = false
    /// Keys of instances that ended during the call, freed when it ends: a
    /// mutation being delivered may still show them.
    var retiredKeys: [UnsafeMutablePointer<CChar>] = []
    /// Instance tables that may now be empty, to release their storage.
    var emptiedTables: [Int32] = []
}
