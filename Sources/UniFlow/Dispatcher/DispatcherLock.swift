import CSystem

/// What one dispatcher's callers take in turn: a futex word (`CSystem/shim.h`),
/// allocated once and never moved. Every `uf_dispatch` takes and releases it, so
/// it costs a few instructions where a pthread mutex cost about fifty; a thread
/// that finds it taken waits a moment for the owner before it sleeps.
struct DispatcherLock {
    private let word: UnsafeMutablePointer<UInt32>

    init() {
        word = .allocate(capacity: 1)
        word.initialize(to: 0)
    }

    func deallocate() { word.deallocate() }

    /// Takes the lock. Without `waiting`, returns false (having done nothing)
    /// when another thread holds it.
    @inline(__always)
    func take(waiting: Bool = true) -> Bool {
        // Alone in the process, nothing else can hold the lock, and taking it is a
        // plain store. With other threads it is atomic: try first, and wait only
        // if it is taken.
        if uniflow_single_threaded() {
            uniflow_lock_take_alone(word)
        } else if !uniflow_lock_try(word) {
            guard waiting else { return false }
            if !takenAfterWaitingBriefly() { uniflow_lock_take_sleeping(word) }
        }
        return true
    }

    /// Takes the lock if it is free.
    func tryTake() -> Bool { uniflow_lock_try(word) }

    @inline(__always)
    func release() { uniflow_lock_release(word) }

    /// Another thread holds the lock. Most actions hold it for well under a
    /// microsecond, less than sleeping on it and being woken costs, so try to take
    /// it as it is released, for a moment, before sleeping: with four threads on
    /// one dispatcher that doubled the throughput (bench/README.md, `threads_uf_4`).
    /// The waiter reads the word and tries it only when it looks free, with pauses
    /// that double up to 16 between looks: trying it on every turn made waiters and
    /// owner fight over its cache line, and kept only a third of the gain.
    @inline(never)
    private func takenAfterWaitingBriefly() -> Bool {
        var spent = 0, round = 1
        while spent < 100 {
            for _ in 0..<round { uniflow_spin_pause() }
            spent += round
            round = min(round * 2, 16)
            if uniflow_lock_looks_free(word) && uniflow_lock_try(word) { return true }
        }
        return false
    }
}
