import Glibc

/// A dispatcher's clock, in milliseconds: `CLOCK_MONOTONIC` since the dispatcher
/// was made, or a manual reading that moves only with `uf_clock_advance` (tests
/// never sleep).
struct DispatcherClock {
    enum Kind: String, CaseIterable { case monotonic, manual }

    let kind: Kind
    /// The monotonic clock, in nanoseconds, when the dispatcher was made.
    let origin: UInt64
    /// The manual reading.
    var manual: UInt64 = 0

    init(_ kind: Kind) {
        self.kind = kind
        origin = DispatcherClock.monotonicNanoseconds()
    }

    /// Milliseconds since the dispatcher was made, or the manual reading.
    func now() -> UInt64 {
        switch kind {
        case .monotonic: (DispatcherClock.monotonicNanoseconds() &- origin) / 1_000_000
        case .manual: manual
        }
    }

    /// What the snapshot and the journal call a time: milliseconds since the Unix
    /// epoch (`CLOCK_REALTIME`) for the time `at` on this clock; on a manual clock,
    /// the manual reading itself.
    func wallClock(at time: UInt64) -> UInt64 {
        switch kind {
        case .manual: return time
        case .monotonic:
            let wall = DispatcherClock.realtimeMilliseconds()
            let current = now()
            return time >= current ? wall &+ (time - current) : wall &- min(wall, current - time)
        }
    }

    /// The time on this clock of a wall-clock time `wallClock(at:)` gave
    /// (clamped to now when it has passed).
    func time(atWallClock wall: UInt64) -> UInt64 {
        switch kind {
        case .manual: return max(wall, manual)
        case .monotonic:
            let current = now()
            let realNow = DispatcherClock.realtimeMilliseconds()
            return wall > realNow ? current &+ (wall - realNow) : current
        }
    }

    /// The monotonic time, in nanoseconds, of a time on this clock (for timerfd).
    func monotonicNanoseconds(at time: UInt64) -> UInt64 {
        origin &+ time &* 1_000_000
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    static func realtimeMilliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) &* 1000 &+ UInt64(now.tv_nsec) / 1_000_000
    }
}
