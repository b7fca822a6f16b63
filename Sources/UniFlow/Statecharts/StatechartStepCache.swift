import Glibc

/// Sends to statechart features that the general path found to be *plain*, so
/// that `uf_dispatch` can apply them again without running the engine.
///
/// A send is plain when its macrostep asked nothing and did nothing beyond
/// moving the configuration: no guard or effect was evaluated (so neither the
/// event's payload nor the instance's can change the outcome), one microstep,
/// no timer, service, delayed send or queued action, no field entering or
/// leaving the payload's schema, and the instance still active. Its outcome
/// then depends on the instance's state number (configuration, history and
/// status, interned for the dispatcher's life) and the event alone, and the
/// general path's answer for that pair is the answer every time.
///
/// Manual memory, like `HotStorage` which holds it: the fast path
/// (`Dispatcher.dispatchStatechartFast`) reads it without retaining anything.
struct StatechartStepCache {
    /// What a plain send from `state` with `event` does.
    struct Entry {
        var feature: Int32 = -1
        var state: Int32 = -1
        var event: Int32 = -1
        var newState: Int32 = -1
        /// Its `entered`/`exited` in `StatechartRegistry.plainSteps`.
        var paths: Int32 = -1
        /// A `MutationKind`'s raw value (transition or actualization).
        var kind: Int32 = 0
        /// The chart declares fields: the payload is lent to the subscribers.
        var lendsPayload = false
    }

    /// Which paths a mutation's `seq` had: an index in `plainSteps`, or
    /// `StatechartStepCache.inline` (the general path's, in `inlineSteps`).
    struct Note {
        var seq: UInt64 = 0
        var paths: Int32 = -1
    }

    /// Direct-mapped: a collision replaces the older entry, and a miss costs a
    /// pass through the general path, which learns the send again.
    static let entryCount = 1024
    /// The last mutations whose `entered`/`exited` are kept (by `seq`).
    static let noteCount = 8192
    static let inline: Int32 = -2

    private var entries: UnsafeMutablePointer<Entry>?
    private var notes: UnsafeMutablePointer<Note>?

    var isAllocated: Bool { entries != nil }

    /// Allocates the tables (when the first statechart feature is registered).
    mutating func allocate() throws(UniFlowError) {
        guard entries == nil else { return }
        guard let e = malloc(MemoryLayout<Entry>.stride * StatechartStepCache.entryCount),
              let n = malloc(MemoryLayout<Note>.stride * StatechartStepCache.noteCount) else {
            throw UniFlowError(.noMemory, "out of memory for the statechart step cache")
        }
        entries = e.bindMemory(to: Entry.self, capacity: StatechartStepCache.entryCount)
        entries!.initialize(repeating: Entry(), count: StatechartStepCache.entryCount)
        notes = n.bindMemory(to: Note.self, capacity: StatechartStepCache.noteCount)
        notes!.initialize(repeating: Note(), count: StatechartStepCache.noteCount)
    }

    @inline(__always)
    private static func slot(feature: Int32, state: Int32, event: Int32) -> Int {
        let mixed = (UInt32(bitPattern: feature) &* 0x9E37_79B1) ^ (UInt32(bitPattern: state) &* 0x85EB_CA77) ^ UInt32(bitPattern: event)
        return Int((mixed ^ (mixed >> 15)) & UInt32(StatechartStepCache.entryCount - 1))
    }

    /// The plain send learned for the pair, if it is still cached.
    @inline(__always)
    func find(feature: Int32, state: Int32, event: Int32) -> UnsafeMutablePointer<Entry>? {
        guard let entries else { return nil }
        let entry = entries + StatechartStepCache.slot(feature: feature, state: state, event: event)
        guard entry.pointee.feature == feature, entry.pointee.state == state, entry.pointee.event == event else { return nil }
        return entry
    }

    mutating func learn(_ entry: Entry) {
        guard let entries else { return }
        entries[StatechartStepCache.slot(feature: entry.feature, state: entry.state, event: entry.event)] = entry
    }

    @inline(__always)
    func note(seq: UInt64, paths: Int32) {
        notes.unsafelyUnwrapped[Int(truncatingIfNeeded: seq) & (StatechartStepCache.noteCount - 1)] = Note(seq: seq, paths: paths)
    }

    /// The paths noted for `seq`, or nil when it is no longer kept.
    func noted(seq: UInt64) -> Int32? {
        guard let notes else { return nil }
        let note = notes[Int(truncatingIfNeeded: seq) & (StatechartStepCache.noteCount - 1)]
        return note.seq == seq ? note.paths : nil
    }

    mutating func deallocate() {
        free(entries)
        free(notes)
        entries = nil
        notes = nil
    }
}
