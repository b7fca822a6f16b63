import CSystem
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
    /// The shortest delay, in milliseconds, that counts from the coarse clock
    /// (`base(forDelay:)`): a thousand of its ticks.
    let coarseDelay: UInt64

    init(_ kind: Kind) {
        self.kind = kind
        origin = DispatcherClock.monotonicNanoseconds()
        coarseDelay = DispatcherClock.coarseTickNanoseconds().map { $0 / 1000 } ?? .max
    }

    /// Milliseconds since the dispatcher was made, or the manual reading.
    func now() -> UInt64 {
        switch kind {
        case .monotonic: (DispatcherClock.monotonicNanoseconds() &- origin) / 1_000_000
        case .manual: manual
        }
    }

    /// Where a delay of `ms` counts from: now. A delay of a thousand ticks of
    /// `CLOCK_MONOTONIC_COARSE` or more (4 s with the usual 250 Hz tick) counts
    /// from that clock, plus one tick: it reads in a fifth of the time of the
    /// precise clock, which costs more than half of a whole transition. Its reading
    /// trails the time by up to a tick or two, so such a deadline is off by about
    /// a tick either way (0.1% of the delay), as libuv's and nginx's timers count
    /// from a time cached once per loop turn. Shorter delays count from the
    /// precise clock.
    @inline(__always)
    func base(forDelay ms: UInt64) -> UInt64 {
        switch kind {
        case .monotonic:
            guard ms >= coarseDelay else { return now() }
            let reading = uniflow_clock_nanoseconds(CLOCK_MONOTONIC_COARSE) &+ coarseDelay &* 1000
            // Just after the dispatcher was made, the coarse reading may still be before it.
            return reading > origin ? (reading &- origin) / 1_000_000 : 0
        case .manual: return manual
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

    /// The monotonic time, in nanoseconds, of a time on this clock (for timerfd and
    /// the timer thread's sleep). Saturating at `Int64.max` (292 years of uptime):
    /// delays reach 2^53 ms, and a deadline that wrapped would lie in the past, so
    /// a sleep until it would end at once, again and again.
    func monotonicNanoseconds(at time: UInt64) -> UInt64 {
        let (nanoseconds, overflow) = time.multipliedReportingOverflow(by: 1_000_000)
        let limit = UInt64(Int64.max)
        guard !overflow, nanoseconds <= limit - min(origin, limit) else { return limit }
        return origin + nanoseconds
    }

    static func monotonicNanoseconds() -> UInt64 { uniflow_clock_nanoseconds(CLOCK_MONOTONIC) }

    /// The coarse clock's tick, when it has a usable one (at most 100 ms).
    static func coarseTickNanoseconds() -> UInt64? {
        var resolution = timespec()
        guard clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) == 0, resolution.tv_sec == 0,
              resolution.tv_nsec > 0, resolution.tv_nsec <= 100_000_000 else { return nil }
        return UInt64(resolution.tv_nsec)
    }

    static func realtimeMilliseconds() -> UInt64 { uniflow_clock_nanoseconds(CLOCK_REALTIME) / 1_000_000 }
}
