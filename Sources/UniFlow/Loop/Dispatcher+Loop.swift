import CUniFlow
import Glibc

/// A mutation kept for a deferred subscriber until the host's loop delivers it.
/// Trivially copyable, so that queueing and popping it copy bytes and retain
/// nothing. Most deliveries are a payload-free mutation the hot path applied,
/// from an action that lent no text: they are this record alone. Any other
/// action's header waits in `LoopRegistry.headers`, and what a delivery owns
/// (payloads, copied texts) in `LoopRegistry.owned`, both in queue order.
struct DeferredDelivery {
    var subscription: Int32
    var id: UInt64
    var record: MutationRecord
    /// The action when the hot path applied it and it lent no text, pointing at
    /// one of `LoopRegistry.plainActions` in place of the caller's struct.
    var hotAction: HotAction?
    /// Its action's header is next in `LoopRegistry.headers`.
    var hasHeader = false
    /// Its `DeferredOwned` is next in `LoopRegistry.owned`.
    var owns = false
}

/// The payloads of a deferred delivery, and copies of the texts its action and
/// record point to (the instance's key, what the caller lent).
struct DeferredOwned {
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var strings: ActionExtras?
}

/// Delivery on the host's thread: the deferred queue and the loop's descriptor.
struct LoopRegistry {
    /// Deliveries waiting, oldest first (ended subscriptions' are skipped).
    var queue = FlatQueue<DeferredDelivery>()
    /// The headers of the waiting deliveries' actions that are not `hotAction`s.
    var headers = FlatQueue<ActionHeader>()
    /// What the deliveries in `queue` that own something own, in the same order.
    var owned = FIFO<DeferredOwned>()
    /// Deliveries waiting for live subscriptions (what `deferred_limit` bounds).
    var pending = 0
    /// `uf_loop_fd`'s descriptor, made at the first call.
    var descriptor: LoopDescriptor?
    /// The descriptor's state may be out of date.
    var dirty = false
    /// Two zeroed actions, `same` off and on: what a queued `HotAction` points
    /// to once the caller's struct is gone, so that its header lends no text.
    let plainActions: UnsafeMutablePointer<uf_action> = {
        let actions = UnsafeMutablePointer<uf_action>.allocate(capacity: 2)
        actions.initialize(repeating: uf_action(), count: 2)
        actions[1].same = 1
        return actions
    }()

    mutating func deallocate() {
        queue.deallocate()
        headers.deallocate()
        plainActions.deallocate()
    }
}

/// The host's event loop (`docs/time.md`): deferred subscriptions and watches,
/// host timers, and the one descriptor that tells the loop there is work.
extension Dispatcher {
    /// Keeps a mutation for a deferred subscriber (its strings copied: the
    /// mutation's own end with the delivery). Past `deferred_limit`, the oldest
    /// waiting delivery is dropped and reported.
    func capture(_ record: MutationRecord, for subscription: Int32) {
        // The common case first: a hot-path action that lent no text, a mutation
        // of a single feature without payloads, room under `deferred_limit` and
        // in the queue's buffer. The delivery is then this record alone, with
        // nothing to copy, own, drop or fail; the general case's frame (headers,
        // texts, payloads, failures) costs as much again, so it is out of line.
        if var action = scratch.delivery.hotAction, record.key == nil, !action.lendsTexts,
           scratch.delivery.oldPayload == nil, scratch.delivery.newPayload == nil,
           loop.pending < options.deferredLimit, !loop.queue.isFull {
            action.action = UnsafePointer(loop.plainActions + (action.action.pointee.same != 0 ? 1 : 0))
            loop.queue.appendReserved(DeferredDelivery(subscription: subscription, id: hot.subscriptions[Int(subscription)].id,
                                                       record: record, hotAction: action))
            loop.pending &+= 1
            hot.subscriptions.pointer(Int(subscription)).pointee.waiting &+= 1
            if loop.pending == 1 { loop.dirty = true }
            return
        }
        captureInGeneral(record, for: subscription)
    }

    /// `capture` of any mutation.
    @inline(never)
    private func captureInGeneral(_ record: MutationRecord, for subscription: Int32) {
        var delivery = DeferredDelivery(subscription: subscription, id: hot.subscriptions[Int(subscription)].id, record: record)
        var header: ActionHeader? = nil
        var strings: ActionExtras? = nil
        do throws(UniFlowError) {
            if var action = scratch.delivery.hotAction, !action.lendsTexts {
                action.action = UnsafePointer(loop.plainActions + (action.action.pointee.same != 0 ? 1 : 0))
                delivery.hotAction = action
            } else if var action = scratch.delivery.actionHeader {
                action.via = nil
                // Only texts the caller lent must be copied; most actions lend none.
                if action.hasTexts {
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
        hot.subscriptions.pointer(Int(subscription)).pointee.waiting += 1
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

    /// Whether the delivery's subscription is still the one it was made for
    /// (ended subscriptions' deliveries are skipped, and no longer counted).
    @inline(__always)
    private func isWanted(_ delivery: DeferredDelivery) -> Bool { isWanted(delivery.subscription, delivery.id) }

    @inline(__always)
    private func isWanted(_ subscription: Int32, _ id: UInt64) -> Bool {
        hot.subscriptions[Int(subscription)].alive && hot.subscriptions[Int(subscription)].id == id
    }

    /// A wanted delivery leaves the queue (made or dropped).
    @inline(__always)
    private func taken(_ delivery: DeferredDelivery) { taken(delivery.subscription) }

    @inline(__always)
    private func taken(_ subscription: Int32) {
        loop.pending &-= 1
        hot.subscriptions.pointer(Int(subscription)).pointee.waiting &-= 1
    }

    /// The oldest waiting delivery and what it owns. Its action's header, if it
    /// is not a `HotAction`, is the next in `loop.headers` (`popHeader`).
    private func popDelivery() -> (delivery: DeferredDelivery, owned: DeferredOwned?)? {
        guard let delivery = loop.queue.popFirst() else { return nil }
        return (delivery, delivery.owns ? loop.owned.popFirst() : nil)
    }

    /// The action of a delivery `popDelivery` just returned.
    private func popHeader(of delivery: DeferredDelivery) -> ActionHeader? {
        delivery.hasHeader ? loop.headers.popFirst() : delivery.hotAction?.header
    }

    /// A delivery `popDelivery` just returned that will not be made: its header goes with it.
    private func discard(_ delivery: DeferredDelivery) {
        if delivery.hasHeader { loop.headers.discardFirst() }
    }

    /// A delivery that will never be made: counted for its subscription's next
    /// one, and reported.
    private func dropped(_ delivery: DeferredDelivery, action: ActionHeader?, _ failure: UniFlowError) {
        hot.subscriptions.pointer(Int(delivery.subscription)).pointee.dropped += 1
        guard reportingActive else { return }
        report(.dropped, action: action, failure: failure,
               details: ReportDetails(subscription: delivery.id, seq: delivery.record.seq))
    }

    /// An ended subscription's waiting deliveries no longer count (they are
    /// skipped when their turn comes).
    func dropDeliveries(of subscription: Int32) {
        let slot = hot.subscriptions.pointer(Int(subscription))
        loop.pending -= slot.pointee.waiting
        slot.pointee.waiting = 0
        loop.dirty = true
        // Nothing may run the loop again (its descriptor no longer says there is
        // work): once ended subscriptions' deliveries are most of the queue, they
        // go now, so that subscribers that come and go leave nothing behind.
        if loop.queue.count > 2 * loop.pending + 64 { purgeEndedDeliveries() }
    }

    /// Takes the deliveries of ended subscriptions out of the queue, with their
    /// headers and what they own; the rest keep their order. Also safe from a
    /// callback of `uf_loop_run`: its walk takes a delivery, its header and what
    /// it owns from the front before calling back, and looks at the front again after.
    private func purgeEndedDeliveries() {
        // Room for the headers first: without it the queue stays as it is.
        var headers = FlatQueue<ActionHeader>()
        do throws(UniFlowError) { try headers.reserve(loop.headers.count) } catch { return }
        var owned = FIFO<DeferredOwned>()
        // Taken out of `loop` while filtered: the closure reads its other queues.
        var queue = loop.queue, oldOwned = loop.owned, oldHeaders = loop.headers
        queue.filter { delivery in
            let wanted = isWanted(delivery)
            if delivery.owns, let item = oldOwned.popFirst(), wanted { owned.append(item) }
            if delivery.hasHeader, let header = oldHeaders.popFirst(), wanted { headers.appendReserved(header) }
            return wanted
        }
        oldHeaders.deallocate()
        loop.queue = queue
        loop.headers = headers
        loop.owned = owned
    }

    /// The loop's descriptor must be looked at when the call ends.
    @inline(__always)
    func noteLoopWork() {
        loop.dirty = true
        changes.any = true
    }

    /// Whether `uf_loop_run` has something to do now.
    private var loopWorkDue: Bool {
        if loop.pending > 0 || registrations.watchesWaiting > 0 { return true }
        guard let next = hostTimerDeadline else { return false }
        return next <= time.clock.now()
    }

    /// The soonest timer the host's loop fires (host timers on a monotonic clock).
    private var hostTimerDeadline: UInt64? {
        guard options.timers == .host, time.clock.kind == .monotonic else { return nil }
        return time.store.peek()?.deadline
    }

    /// Brings the descriptor up to date: readable while work is due (a host
    /// timer already due included: the timerfd would say so only a moment
    /// later), its timer set to the next host timer.
    func syncLoopDescriptor() {
        loop.dirty = false
        guard let descriptor = loop.descriptor else { return }
        descriptor.setWorkPending(loopWorkDue)
        descriptor.setTimer(atMonotonicNanoseconds: hostTimerDeadline.map { time.clock.monotonicNanoseconds(at: $0) })
    }

    /// `uf_loop_fd`.
    func loopDescriptor() throws(UniFlowError) -> Int32 {
        if let descriptor = loop.descriptor { return descriptor.fd }
        let descriptor = try LoopDescriptor()
        loop.descriptor = descriptor
        syncLoopDescriptor()
        return descriptor.fd
    }

    /// `uf_loop_timeout`: 0 when work is due, the milliseconds until the next
    /// host timer (rounded up, clamped to `INT_MAX`), or -1.
    func loopTimeout() -> Int32 {
        if loop.pending > 0 || registrations.watchesWaiting > 0 { return 0 }
        guard let next = hostTimerDeadline else { return -1 }
        let nowNanoseconds = DispatcherClock.monotonicNanoseconds()
        let due = time.clock.monotonicNanoseconds(at: next)
        guard due > nowNanoseconds else { return 0 }
        let ms = (due - nowNanoseconds + 999_999) / 1_000_000
        return ms > UInt64(Int32.max) ? Int32.max : Int32(ms)
    }

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
                guard let value = registrations.watches[index].pending else { continue }
                setPending(nil, ofWatch: index)
                if registrations.watches[index].delivered != value || registrations.watches[index].delivered == nil {
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
        while let first = loop.queue.firstPointer, first.pointee.record.seq <= last {
            // Most deliveries are a record alone (`capture`'s common case), made
            // here, read in place (only the fields it needs are copied, before
            // the callback can change the queue); those with a header or owned
            // values out of line, so that this loop keeps few values across the callback.
            if first.pointee.owns || first.pointee.hasHeader {
                let delivery = first.pointee
                loop.queue.discardFirst()
                guard deliverInGeneral(delivery) else { continue }
            } else {
                let index = first.pointee.subscription, id = first.pointee.id
                var record = first.pointee.record
                let action = first.pointee.hotAction
                loop.queue.discardFirst()
                guard isWanted(index, id) else { continue }
                taken(index)
                deliverPlain(&record, to: index, id: id, action: action)
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
        let owned = delivery.owns ? loop.owned.popFirst() : nil
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
        let slot = hot.subscriptions.pointer(Int(index))
        record.dropped = slot.pointee.dropped
        slot.pointee.dropped = 0
        scratch.delivery.hotAction = action
        registrations.notifyingDepth &+= 1
        withUnsafeMutablePointer(to: &record) { call(subscription: index, $0) }
        registrations.notifyingDepth &-= 1
        flushPendingRemovals()
        scratch.delivery.resetHot()
    }

    private func deliverDeferred(_ delivery: DeferredDelivery, _ owned: DeferredOwned?) {
        var record = delivery.record
        let index = delivery.subscription
        record.subscriptionID = delivery.id
        record.dropped = hot.subscriptions[Int(index)].dropped
        hot.subscriptions.pointer(Int(index)).pointee.dropped = 0
        if let owned {
            scratch.delivery.oldPayload = owned.oldPayload
            scratch.delivery.newPayload = owned.newPayload
        }
        if delivery.hasHeader {
            scratch.delivery.action = loop.headers.popFirst()
        } else {
            scratch.delivery.hotAction = delivery.hotAction
        }
        registrations.notifyingDepth += 1
        withUnsafeMutablePointer(to: &record) { call(subscription: index, $0) }
        registrations.notifyingDepth -= 1
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
