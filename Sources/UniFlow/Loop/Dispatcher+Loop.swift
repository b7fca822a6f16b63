import CUniFlow
import Glibc

/// The host's event loop (`docs/time.md`): deferred subscriptions and watches,
/// host timers, and the one descriptor that tells the loop there is work. The
/// deliveries and the descriptor are `loop`'s (`Loop/HostLoop.swift`); this is
/// the dispatcher's side: what the loop needs of it (`LoopContext`), and the
/// calls to the host (subscribers, the reporter), made here with no access to
/// `loop` open, since each may end subscriptions or make watches, which change it.
extension Dispatcher: LoopContext {
    /// Keeps a mutation for a deferred subscriber (its strings copied: the
    /// mutation's own end with the delivery). Past `deferred_limit`, the oldest
    /// waiting delivery is dropped and reported.
    func capture(_ record: MutationRecord, for subscription: Int32) {
        // The common case first: a hot-path action that lent no text, a mutation
        // of a single feature without payloads, room under `deferred_limit` and
        // in the queue's buffer. The delivery is then this record alone, with
        // nothing to copy, own, drop or fail; the general case's frame (headers,
        // texts, payloads, failures) costs as much again, so it is out of line.
        if let action = scratch.delivery.hotAction, record.key == nil, !action.lendsTexts,
           scratch.delivery.oldPayload == nil, scratch.delivery.newPayload == nil,
           loop.capturePlain(record, for: subscription, id: subscriptions.slots[Int(subscription)].id, action: action,
                             limit: options.deferredLimit) {
            subscriptions.slots.pointer(Int(subscription)).pointee.waiting &+= 1
            return
        }
        captureInGeneral(record, for: subscription)
    }

    /// `capture` of any mutation.
    @inline(never)
    private func captureInGeneral(_ record: MutationRecord, for subscription: Int32) {
        var delivery = DeferredDelivery(subscription: subscription, id: subscriptions.slots[Int(subscription)].id, record: record)
        var header: ActionHeader? = nil
        var strings: ActionExtras? = nil
        do throws(UniFlowError) {
            if var action = scratch.delivery.hotAction, !action.lendsTexts {
                action.action = UnsafePointer(loop.plainActions + (action.action.pointee.same != 0 ? 1 : 0))
                delivery.hotAction = action
            } else if var action = scratch.delivery.actionHeader {
                action.via = nil
                // Only texts the caller lent must be copied; most actions lend none.
                if action.key != nil || action.eventName != nil || action.scope != nil || action.context != nil
                    || action.id != nil || action.timer != nil {
                    let copied = try ResolvedAction(header: action).owned()
                    action = copied.header
                    strings = copied.extras
                }
                header = action
            }
            if let key = record.key {
                delivery.record.key = try ActionExtras.make(&strings).own(key)
            }
            // A DeferredOwned is made only when there is something to own: making
            // one costs as much as the rest.
            delivery.owns = strings != nil || scratch.delivery.oldPayload != nil || scratch.delivery.newPayload != nil
            if let header {
                try loop.headers.append(header)
                delivery.hasHeader = true
            }
            do throws(UniFlowError) {
                try loop.queue.append(delivery)
            } catch {
                if delivery.hasHeader { loop.headers.removeLast() }
                throw error
            }
        } catch {
            dropped(delivery, action: header ?? delivery.hotAction?.header, error)
            return
        }
        if delivery.owns {
            loop.owned.append(DeferredOwned(oldPayload: scratch.delivery.oldPayload, newPayload: scratch.delivery.newPayload,
                                            strings: strings))
        }
        loop.pending += 1
        subscriptions.slots.pointer(Int(subscription)).pointee.waiting += 1
        while loop.pending > options.deferredLimit, let oldest = popDelivery() {
            guard isWanted(oldest.delivery) else {
                discard(oldest.delivery)
                continue
            }
            taken(oldest.delivery)
            dropped(oldest.delivery, action: popHeader(of: oldest.delivery),
                    UniFlowError(.noMemory, "deferred_limit of \(options.deferredLimit) deliveries reached; the oldest was dropped"))
        }
        // Only the first waiting delivery can change what the descriptor says.
        if loop.pending == 1 { loop.dirty = true }
    }

    // MARK: The context

    @inline(__always)
    func isLive(subscription: Int32, id: UInt64) -> Bool {
        subscriptions.slots[Int(subscription)].alive && subscriptions.slots[Int(subscription)].id == id
    }

    var watchesWaiting: Int { watches.waiting }

    func nextHostTimer() -> (due: Bool, monotonicNanoseconds: UInt64)? {
        guard options.timers == .host, time.clock.kind == .monotonic, let next = time.store.peek()?.deadline else { return nil }
        return (next <= time.clock.now(), time.clock.monotonicNanoseconds(at: next))
    }

    // MARK: Deliveries leaving the queue

    /// Whether the delivery's subscription is still the one it was made for
    /// (ended subscriptions' deliveries are skipped, and no longer counted).
    @inline(__always)
    private func isWanted(_ delivery: DeferredDelivery) -> Bool { isLive(subscription: delivery.subscription, id: delivery.id) }

    /// A wanted delivery leaves the queue (made or dropped).
    @inline(__always)
    private func taken(_ delivery: DeferredDelivery) { taken(delivery.subscription) }

    @inline(__always)
    private func taken(_ subscription: Int32) {
        loop.taken()
        subscriptions.slots.pointer(Int(subscription)).pointee.waiting &-= 1
    }

    private func popDelivery() -> (delivery: DeferredDelivery, owned: DeferredOwned?)? { loop.popDelivery() }
    private func popHeader(of delivery: DeferredDelivery) -> ActionHeader? { loop.popHeader(of: delivery) }
    private func discard(_ delivery: DeferredDelivery) { loop.discard(delivery) }

    /// A delivery that will never be made: counted for its subscription's next
    /// one, and reported.
    private func dropped(_ delivery: DeferredDelivery, action: ActionHeader?, _ failure: UniFlowError) {
        subscriptions.slots.pointer(Int(delivery.subscription)).pointee.dropped += 1
        guard reportingActive else { return }
        report(.dropped, action: action, failure: failure,
               details: ReportDetails(subscription: delivery.id, seq: delivery.record.seq))
    }

    /// An ended subscription's waiting deliveries no longer count (they are
    /// skipped when their turn comes, or purged now: `HostLoop.forget`).
    func dropDeliveries(of subscription: Int32) {
        let slot = subscriptions.slots.pointer(Int(subscription))
        let waiting = slot.pointee.waiting
        slot.pointee.waiting = 0
        loop.forget(waiting, self)
    }

    /// The loop's descriptor must be looked at when the call ends.
    @inline(__always)
    func noteLoopWork() {
        loop.dirty = true
        changes.any = true
    }

    /// Brings the descriptor up to date (`HostLoop.sync`).
    func syncLoopDescriptor() { loop.sync(self) }

    /// `uf_loop_fd`.
    func loopDescriptor() throws(UniFlowError) -> Int32 { try loop.makeDescriptor(self) }

    /// `uf_loop_timeout` (`HostLoop.timeout`).
    func loopTimeout() -> Int32 { loop.timeout(self) }

    /// `uf_loop_run`: fires the host timers due now (each an outer call), then
    /// makes the deliveries waiting when it started plus those its timers caused,
    /// then the deferred watches' values. What they submit is processed before it
    /// returns; the deliveries that causes wait for the next call. Returns timers
    /// fired plus deliveries made.
    func runLoop() throws(UniFlowError) -> UInt64 {
        try refuseInsideCallbacks("uf_loop_run")
        return exclusive {
            var done: UInt64 = 0
            if options.timers == .host && time.clock.kind == .monotonic {
                loop.descriptor?.acknowledgeTimer()
                done += UInt64(fireDueTimers(upTo: time.clock.now()))
            }
            // What waits now, and no more: deliveries its callbacks cause (with
            // a larger seq) wait for the next call, even when the limit drops
            // older ones meanwhile.
            done += makeDeliveries(through: model.seq)
            for index in pendingWatches {
                guard let value = watches.slots[index].pending else { continue }
                setPending(nil, ofWatch: index)
                if watches.slots[index].delivered != value || watches.slots[index].delivered == nil {
                    deliver(value, toWatch: index)
                    done += 1
                    if !queue.isEmpty { drainQueue() }
                }
            }
            loop.dirty = true
            changes.any = true
            return done
        }
    }

    /// `uf_loop_run`'s deliveries: those of mutations up to seq `last`, oldest
    /// first, each followed by what its callback submitted. Returns how many were made.
    private func makeDeliveries(through last: UInt64) -> UInt64 {
        var done: UInt64 = 0
        while let delivery = loop.popNext(through: last) {
            // Most deliveries are a record alone (`capture`'s common case), made
            // here; those with a header or owned values out of line, so that this
            // loop keeps few values across the callback.
            if delivery.owns || delivery.hasHeader {
                guard deliverInGeneral(delivery) else { continue }
            } else {
                guard isLive(subscription: delivery.subscription, id: delivery.id) else { continue }
                taken(delivery.subscription)
                var record = delivery.record
                deliverPlain(&record, to: delivery.subscription, id: delivery.id, action: delivery.hotAction)
            }
            done &+= 1
            if !queue.isEmpty { drainQueue() }
        }
        return done
    }

    /// Makes a delivery with a header or owned values, just taken from the
    /// queue, unless its subscription ended. Returns whether it was made.
    @inline(never)
    private func deliverInGeneral(_ delivery: DeferredDelivery) -> Bool {
        let owned = loop.popOwned(of: delivery)
        guard isWanted(delivery) else {
            discard(delivery)
            return false
        }
        taken(delivery)
        deliverDeferred(delivery, owned)
        return true
    }

    /// `deliverDeferred` of a delivery that owns nothing and whose action is
    /// its `hotAction`: what it sets is what the hot path's delivery sets, and
    /// what `resetHot` resets.
    @inline(__always)
    private func deliverPlain(_ record: inout MutationRecord, to index: Int32, id: UInt64, action: HotAction?) {
        record.subscriptionID = id
        let slot = subscriptions.slots.pointer(Int(index))
        record.dropped = slot.pointee.dropped
        slot.pointee.dropped = 0
        scratch.delivery.hotAction = action
        subscriptions.notifyingDepth &+= 1
        withUnsafeMutablePointer(to: &record) { call(subscription: index, $0) }
        subscriptions.notifyingDepth &-= 1
        flushPendingRemovals()
        scratch.delivery.resetHot()
    }

    private func deliverDeferred(_ delivery: DeferredDelivery, _ owned: DeferredOwned?) {
        var record = delivery.record
        let index = delivery.subscription
        record.subscriptionID = delivery.id
        record.dropped = subscriptions.slots[Int(index)].dropped
        subscriptions.slots.pointer(Int(index)).pointee.dropped = 0
        if let owned {
            scratch.delivery.oldPayload = owned.oldPayload
            scratch.delivery.newPayload = owned.newPayload
        }
        if delivery.hasHeader {
            scratch.delivery.action = loop.popHeader(of: delivery)
        } else {
            scratch.delivery.hotAction = delivery.hotAction
        }
        subscriptions.notifyingDepth += 1
        withUnsafeMutablePointer(to: &record) { call(subscription: index, $0) }
        subscriptions.notifyingDepth -= 1
        flushPendingRemovals()
        scratch.delivery.reset()
        withExtendedLifetime(owned) {}
    }
}

extension ResolvedAction {
    init(header: ActionHeader) {
        self.init(kind: header.kind, feature: header.feature)
        self.header = header
    }
}
