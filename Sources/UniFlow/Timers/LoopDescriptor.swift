import CSystem
import Glibc

/// The one file descriptor a host's event loop watches (`uf_loop_fd`): an epoll
/// instance holding an eventfd (work waits: deliveries, deferred watch values) and
/// a timerfd (the next host timer's deadline). It is readable, level-triggered,
/// while either is, which is what `poll`, GLib, libuv and asyncio's `add_reader`
/// expect.
final class LoopDescriptor {
    let fd: Int32
    private let event: Int32
    private let timer: Int32
    /// What the descriptors say now, so that nothing is written twice.
    private var signalled = false
    private var timerDeadline: UInt64?

    init() throws(UniFlowError) {
        // One at a time, each checked as it is made: the message names the call
        // that failed with its own errno.
        var made: [Int32] = []
        func fail(_ what: String) -> UniFlowError {
            let reason = String(cString: strerror(errno))
            for descriptor in made { close(descriptor) }
            return UniFlowError(.io, "uf_loop_fd: \(what): \(reason)")
        }
        let event = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard event >= 0 else { throw fail("eventfd") }
        made.append(event)
        let timer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard timer >= 0 else { throw fail("timerfd_create") }
        made.append(timer)
        let poll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard poll >= 0 else { throw fail("epoll_create1") }
        made.append(poll)
        for descriptor in [event, timer] {
            var interest = epoll_event()
            interest.events = EPOLLIN.rawValue
            interest.data.fd = descriptor
            guard epoll_ctl(poll, EPOLL_CTL_ADD, descriptor, &interest) == 0 else { throw fail("epoll_ctl") }
        }
        self.event = event
        self.timer = timer
        fd = poll
    }

    deinit {
        close(fd)
        close(event)
        close(timer)
    }

    /// Makes the descriptor readable (work waits) or not.
    func setWorkPending(_ pending: Bool) {
        guard pending != signalled else { return }
        signalled = pending
        var value: UInt64 = 1
        if pending {
            _ = write(event, &value, 8)
        } else {
            _ = read(event, &value, 8)
        }
    }

    /// Makes the descriptor readable from a monotonic time on (nil: no timer).
    func setTimer(atMonotonicNanoseconds deadline: UInt64?) {
        guard deadline != timerDeadline else { return }
        timerDeadline = deadline
        var spec = itimerspec()
        if let deadline {
            // 0 would disarm: a deadline already passed is the earliest time there is.
            let at = max(deadline, 1)
            spec.it_value.tv_sec = Int(at / 1_000_000_000)
            spec.it_value.tv_nsec = Int(at % 1_000_000_000)
        }
        _ = timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    }

    /// Clears an expiry the timer has signalled (it is armed again afterwards).
    func acknowledgeTimer() {
        var expirations: UInt64 = 0
        _ = read(timer, &expirations, 8)
        timerDeadline = nil
    }
}
