import Glibc
import Synchronization

/// The library's own timer thread (`"timers": "thread"`, the default): for hosts
/// without an event loop, timeouts still fire. It runs user callbacks on a thread
/// the host did not make, which no other part of the library does; hosts with a
/// loop should prefer `"timers": "host"`.
///
/// It waits on a condition variable tied to the dispatcher's mutex, so that it
/// holds the mutex only while it fires timers, exactly as any other caller
/// holds it while it processes.
final class TimerThread {
    private var thread: pthread_t?
    let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Set (under the dispatcher's mutex) to end the thread.
    var stopping = false
    /// Set by `uf_dispatcher_free` before it waits for the mutex: the thread
    /// finishes the timer it is firing and fires no other.
    let stopRequested = Atomic<Bool>(false)
    /// The deadline the thread waits for, in dispatcher milliseconds (nil: none).
    var waitingUntil: UInt64?

    init() {
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

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
    func wake() { pthread_cond_signal(condition) }

    /// Waits for the thread to end (call after `stopping` is set and the mutex released).
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
