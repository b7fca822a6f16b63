import CUniFlow
import Glibc

// Timers and the clock.

/// The flags `uf_submit_after` and `uf_dispatch_after` know.
private let knownTimerFlags = UInt32(UF_TIMER_KEEP)

private func timerID(_ id: UnsafePointer<CChar>?, _ flags: UInt32, _ function: StaticString) throws(UniFlowError) -> String? {
    if flags & ~knownTimerFlags != 0 { throw UniFlowError(.invalidArgument, "\(function): unknown flags \(flags)") }
    guard let id else { return nil }
    let text = String(cString: id)
    try TimerService.checkTimerID(text, function)
    return text
}

/// A delay is at most what a state timer's `ms` may be, 2^53 ms: every time the
/// library writes (deadlines in snapshots and journals) stays an exact integer.
private func checkedDelay(_ ms: UInt64, _ function: StaticString) throws(UniFlowError) -> UInt64 {
    guard ms <= DefinitionParser.maxTimerMilliseconds else {
        throw UniFlowError(.invalidArgument, "\(function): delay_ms is \(ms), at most 2^53")
    }
    return ms
}

@c @implementation
public func uf_submit_after(_ d: OpaquePointer?, _ action_json: UnsafePointer<CChar>?, _ delay_ms: UInt64,
                            _ timer_id: UnsafePointer<CChar>?, _ flags: UInt32) -> Int32 {
    withDispatcher(d, "uf_submit_after") { (dispatcher) throws(UniFlowError) in
        let text = try required(action_json, "uf_submit_after", "action_json")
        let delay = try checkedDelay(delay_ms, "uf_submit_after")
        let id = try timerID(timer_id, flags, "uf_submit_after")
        try dispatcher.exclusive { () throws(UniFlowError) in
            try dispatcher.armAPITimer(json: text, delay: delay, id: id, keep: flags & UInt32(UF_TIMER_KEEP) != 0)
        }
        return .ok
    }
}

@c @implementation
public func uf_dispatch_after(_ d: OpaquePointer?, _ action: UnsafePointer<uf_action>?, _ delay_ms: UInt64,
                              _ timer_id: UnsafePointer<CChar>?, _ flags: UInt32) -> Int32 {
    guard let action else { return nullArgument("uf_dispatch_after", "action") }
    return withWholeAction(action, "uf_dispatch_after") { action in
        if action.pointee.via != nil {
            action.pointee.via_payload_free?(action.pointee.via_payload)
            return fail(UniFlowError(.invalidArgument, "uf_dispatch_after: a timer's action cannot have a via callback"))
        }
        return withDispatcher(d, "uf_dispatch_after") { (dispatcher) throws(UniFlowError) in
            let delay = try checkedDelay(delay_ms, "uf_dispatch_after")
            let id = try timerID(timer_id, flags, "uf_dispatch_after")
            try dispatcher.exclusive { () throws(UniFlowError) in
                try dispatcher.armAPITimer(action: action.pointee, delay: delay, id: id, keep: flags & UInt32(UF_TIMER_KEEP) != 0)
            }
            return .ok
        }
    }
}

@c @implementation
public func uf_timer_cancel(_ d: OpaquePointer?, _ timer_id: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_timer_cancel") { (dispatcher) throws(UniFlowError) in
        let id = String(cString: try required(timer_id, "uf_timer_cancel", "timer_id"))
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.cancelTimer(id) }
        return .ok
    }
}

@c @implementation
public func uf_timers_get(_ d: OpaquePointer?, _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_timers_get") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_json, "uf_timers_get", "out_json")
        try give(dispatcher.exclusive {
            dispatcher.time.listJSON(dispatcher, partition: dispatcher.partitioning == nil ? nil : dispatcher.timerPartition).jsonText
        }, to: out)
        return .ok
    }
}

@c @implementation
public func uf_clock_advance(_ d: OpaquePointer?, _ ms: UInt64) -> Int32 {
    withDispatcher(d, "uf_clock_advance") { (dispatcher) throws(UniFlowError) in
        try dispatcher.advanceClock(by: ms)
        return .ok
    }
}

@c @implementation
public func uf_clock_now(_ d: OpaquePointer?, _ out_ms: UnsafeMutablePointer<UInt64>?) -> Int32 {
    withDispatcher(d, "uf_clock_now") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_ms, "uf_clock_now", "out_ms")
        out.pointee = dispatcher.exclusive { dispatcher.time.clock.now() }
        return .ok
    }
}

// MARK: The host's loop

@c @implementation
public func uf_loop_fd(_ d: OpaquePointer?, _ out_fd: UnsafeMutablePointer<Int32>?) -> Int32 {
    withDispatcher(d, "uf_loop_fd") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_fd, "uf_loop_fd", "out_fd")
        out.pointee = try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.loopDescriptor() }
        return .ok
    }
}

@c @implementation
public func uf_loop_timeout(_ d: OpaquePointer?, _ out_ms: UnsafeMutablePointer<Int32>?) -> Int32 {
    withDispatcher(d, "uf_loop_timeout") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_ms, "uf_loop_timeout", "out_ms")
        out.pointee = dispatcher.exclusive { dispatcher.loopTimeout() }
        return .ok
    }
}

@c @implementation
public func uf_loop_run(_ d: OpaquePointer?, _ out_done: UnsafeMutablePointer<UInt64>?) -> Int32 {
    withDispatcher(d, "uf_loop_run") { (dispatcher) throws(UniFlowError) in
        let done = try dispatcher.runLoop()
        out_done?.pointee = done
        return .ok
    }
}
