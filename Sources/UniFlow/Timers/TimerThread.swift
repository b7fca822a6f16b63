import CSystem
import Glibc
import Synchronization

/// The library's own timer thread (`"timers": "thread"`, the default): for hosts
/// without an event loop, timeouts still fire. It runs user callbacks on a thread
/// the host did not make, which no other part of the library does; hosts with a
/// loop should prefer `"timers": "host"`.
///
/// It sleeps without the dispatcher's lock, on a count of wake-ups (a futex
/// word), so that it holds the lock only while it fires timers, exactly as any
/// other caller holds it while it processes.
final class TimerThread {
    private var thread: pthread_t?
    /// Raised by `wake()`; the thread reads it before it lets go of the lock and
    /// sleeps only while it is unchanged, so a wake-up in between is not lost.
    private let wakeups: UnsafeMutablePointer<UInt32>
    /// Set (under the dispatcher's lock) to end the thread.
    var stopping = false
    /// Set by `uf_dispatcher_free` before it waits for the lock: the thread
    /// finishes the timer it is firing and fires no other.
    let stopRequested = Atomic<Bool>(false)
    /// The deadline the thread waits for, in dispatcher milliseconds (nil: none).
    var waitingUntil: UInt64?

    init() {
        wakeups = .allocate(capacity: 1)
        wakeups.initialize(to: 0)
    }

    deinit { wakeups.deallocate() }

    var isRunning: Bool { thread != nil }

    /// Starts the thread running `body` (which holds a strong reference to what it needs).
    func start(_ body: @escaping () -> Void) throws(UniFlowError) {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var made = pthread_t()
        let status = pthread_create(&made, nil, { raw in
            let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw UniFlowError(.noMemory, "cannot start the timer thread: \(String(cString: strerror(status)))")
        }
        thread = made
    }

    /// Wakes the thread (a sooner deadline, or the end).
    func wake() {
        uniflow_atomic_increment(wakeups)
        uniflow_futex_wake(wakeups, 1)
    }

    /// How many wake-ups there have been: read, holding the lock, before `sleep`.
    var wakeCount: UInt32 { uniflow_atomic_load(wakeups) }

    /// Sleeps, not holding the lock, until `deadline` (CLOCK_MONOTONIC; nil:
    /// none) or a wake-up after `seen` (at once if there was one already). It may
    /// also return early (a signal): the caller looks at its timers again either way.
    func sleep(unlessWokenSince seen: UInt32, until deadline: timespec?) {
        if var deadline {
            uniflow_futex_wait(wakeups, seen, &deadline)
        } else {
            uniflow_futex_wait(wakeups, seen, nil)
        }
    }

    /// Waits for the thread to end (call after `stopping` is set and the lock released).
    func join() {
        guard let thread else { return }
        pthread_join(thread, nil)
        self.thread = nil
    }

    /// Forgets the thread without joining it (a forked child, where it does not exist).
    func abandon() { thread = nil }

    private final class ThreadBody {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
}
