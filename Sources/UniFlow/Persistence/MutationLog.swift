/// Where what the core commits goes before anyone sees it: the seam between the
/// commit step and whatever keeps the dispatcher's history (`docs/architecture.md`,
/// "Persistence").
///
/// The journal writer (`JournalWriter`) words each change as JSON lines
/// (`docs/journal.md`) and hands the lines that belong together to a log: a
/// registration's header, one applied mutation, one batch (one line, so that a
/// crash leaves all of it or none), a restore, a timer's event. The log accepts
/// them as one whole, or refuses them by throwing, keeping none; a refused change
/// is not applied and its call fails with the log's error. What a log accepted it
/// never gives back.
///
/// The journal file (`JournalFile`) is the implementation. Scale-out's records
/// are not written through it: a partitioned dispatcher's staged call makes its
/// lines one record for the host's record sink, which decides whether the whole
/// call happened (`Partitions/Dispatcher+Records.swift`).
protocol MutationLog: AnyObject {
    /// The id this log's header lines name (`"session"`): a replay of the same
    /// history stops where its own session begins.
    var session: String { get }
    /// Takes `lines` (each a JSON object) as one whole, or throws and keeps none of them.
    func accept(_ lines: [JSONValue]) throws(UniFlowError)
}
