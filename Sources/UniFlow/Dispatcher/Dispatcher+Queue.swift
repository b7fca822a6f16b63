import CUniFlow

/// The way in and the queue: an action submitted from outside is processed at
/// once (then the queue); one submitted from inside a callback is queued and
/// processed, in order, before the outer call returns (docs/processing.md).
extension Dispatcher {
    /// Submits an action: processes it now (and then the queue), or queues it when
    /// called from inside one of this dispatcher's callbacks. `resolve` runs with
    /// the dispatcher to itself; `via` is released exactly once, whatever happens.
    /// Returns `.ok` or `.queued`; a failure is thrown. Unless `waiting`, a call
    /// from another thread while this one is processing does nothing and returns
    /// `.busy` (`uf_dispatch_try`).
    @inline(__always)
    func submit(via: HostCallback<uf_via_fn>?, waiting: Bool = true,
                _ resolve: () throws(UniFlowError) -> ResolvedAction) throws(UniFlowError) -> Status {
        var via = via
        if isProcessingOnCurrentThread {
            do throws(UniFlowError) {
                if closing { throw UniFlowError(.misuse, "the dispatcher is being freed") }
                if cascade.dropping {
                    throw UniFlowError(.loop, "the cascade limit (\(options.maxCascade)) was reached; action refused")
                }
                var action = try resolve().owned()
                action.header.via = via
                queue.append(action)
                return .queued
            } catch {
                via?.release()
                throw error
            }
        }
        func processNow() throws(UniFlowError) -> Status {
            var action: ResolvedAction
            do throws(UniFlowError) {
                action = try resolve()
            } catch {
                via?.release()
                throw error
            }
            action.header.via = via
            if let failure = process(action) { throw failure }
            return .ok
        }
        if waiting { return try exclusive(processNow) }
        if let status = try exclusiveUnlessBusy(processNow) { return status }
        via?.release()
        return .busy
    }

    /// Processes queued actions in order until none is left, dropping what exceeds
    /// `max_cascade`.
    func drainQueue() {
        while let next = queue.popFirst() {
            if cascade.processed >= options.maxCascade {
                cascade.dropping = true
                drop(next)
            } else {
                _ = process(next, policy: staging != nil ? .staged : .immediate)
            }
        }
        cascade.dropping = false
    }

    private func drop(_ action: ResolvedAction) {
        if reportingActive {
            report(.dropped, action: action.header, failure: UniFlowError(.loop, "cascade limit of \(options.maxCascade) actions reached; action dropped"))
        }
        var via = action.header.via
        via?.release()
    }
}
