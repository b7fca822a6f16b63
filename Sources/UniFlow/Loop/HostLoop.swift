import CUniFlow

/// A mutation kept for a deferred subscriber until the host's loop delivers it.
/// Trivially copyable, so that queueing and popping it copy bytes and retain
/// nothing. Most deliveries are a payload-free mutation the hot path applied,
/// from an action that lent no text: they are this record alone. Any other
/// action's header waits in `HostLoop.headers`, and what a delivery owns
/// (payloads, copied texts) in `HostLoop.owned`, both in queue order.
struct DeferredDelivery {
    var subscription: Int32
    var id: UInt64
    var record: MutationRecord
    /// The action when the hot path applied it and it lent no text, pointing at
    /// one of `HostLoop.plainActions` in place of the caller's struct.
    var hotAction: HotAction?
    /// Its action's header is next in `HostLoop.headers`.
    var hasHeader = false
    /// Its `DeferredOwned` is next in `HostLoop.owned`.
    var owns = false
}

/// The payloads of a deferred delivery, and copies of the texts its action and
/// record point to (the instance's key, what the caller lent).
struct DeferredOwned {
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var strings: ActionExtras?
}

/// Delivery on the host's thread (`docs/time.md`): the deferred subscribers'
/// queue and the descriptor that tells the host's loop there is work.
///
/// It owns the waiting deliveries (with their actions' headers and what they
/// own, in queue order), how many of them still count, the descriptor, and
/// whether the descriptor may be out of date. It decides what is made next,
/// what an ended subscription leaves behind, what the descriptor says and how
/// long the loop may sleep; whether a subscription is still there and when the
/// host's timers fall due come through a `LoopContext`.
///
/// It calls no host code. Making a delivery calls the subscriber, which may
/// end subscriptions or make watches (both change `loop`): a call made from
/// inside one of its mutating methods would overlap the access that method
/// holds. So it hands out the next delivery (`popNext`) and the dispatcher's
/// glue (`Loop/Dispatcher+Loop.swift`) calls the subscriber with no access to
/// it open; a dropped delivery's report is made the same way.
///
/// Its queues stay visible to the dispatcher: `Dispatcher.captureInGeneral`
/// (whose body the action-field work owns) fills them in place.
struct HostLoop {
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

    // MARK: Capturing

    /// `Dispatcher.capture`'s common case: a hot-path action that lent no
    /// text, a mutation of a single feature without payloads. The delivery is
    /// this record alone, kept when there is room under `limit` and in the
    /// queue's buffer; returns false (having done nothing) otherwise.
    @inline(__always)
    mutating func capturePlain(_ record: MutationRecord, for subscription: Int32, id: UInt64, action: HotAction,
                               limit: Int) -> Bool {
        guard pending < limit, !queue.isFull else { return false }
        var action = action
        action.action = UnsafePointer(plainActions + (action.action.pointee.same != 0 ? 1 : 0))
        queue.appendReserved(DeferredDelivery(subscription: subscription, id: id, record: record, hotAction: action))
        pending &+= 1
        // Only the first waiting delivery can change what the descriptor says.
        if pending == 1 { dirty = true }
        return true
    }

    // MARK: Taking deliveries out

    /// The oldest waiting delivery and what it owns. Its action's header, if it
    /// is not a `HotAction`, is the next in `headers` (`popHeader`).
    mutating func popDelivery() -> (delivery: DeferredDelivery, owned: DeferredOwned?)? {
        guard let delivery = queue.popFirst() else { return nil }
        return (delivery, delivery.owns ? owned.popFirst() : nil)
    }

    /// The oldest delivery, when its mutation's seq is at most `last`; what it
    /// owns and its header are next in `owned` and `headers` (`popOwned`, `popHeader`).
    @inline(__always)
    mutating func popNext(through last: UInt64) -> DeferredDelivery? {
        guard let first = queue.firstPointer, first.pointee.record.seq <= last else { return nil }
        let delivery = first.pointee
        queue.discardFirst()
        return delivery
    }

    /// What a delivery `popNext` just returned owns.
    mutating func popOwned(of delivery: DeferredDelivery) -> DeferredOwned? {
        delivery.owns ? owned.popFirst() : nil
    }

    /// The action of a delivery `popDelivery` or `popNext` just returned.
    mutating func popHeader(of delivery: DeferredDelivery) -> ActionHeader? {
        delivery.hasHeader ? headers.popFirst() : delivery.hotAction?.header
    }

    /// A delivery just taken out that will not be made: its header goes with it.
    mutating func discard(_ delivery: DeferredDelivery) {
        if delivery.hasHeader { headers.discardFirst() }
    }

    /// A wanted delivery left the queue (made or dropped).
    @inline(__always)
    mutating func taken() { pending &-= 1 }

    // MARK: Ended subscriptions

    /// An ended subscription's `waiting` deliveries no longer count (they are
    /// skipped when their turn comes).
    mutating func forget(_ waiting: Int, _ context: some LoopContext) {
        pending -= waiting
        dirty = true
        // Nothing may run the loop again (its descriptor no longer says there is
        // work): once ended subscriptions' deliveries are most of the queue, they
        // go now, so that subscribers that come and go leave nothing behind.
        if queue.count > 2 * pending + 64 { purgeEnded(context) }
    }

    /// Takes the deliveries of ended subscriptions out of the queue, with their
    /// headers and what they own; the rest keep their order. Also safe from a
    /// callback of `uf_loop_run`: its walk takes a delivery, its header and what
    /// it owns from the front before calling back, and looks at the front again after.
    private mutating func purgeEnded(_ context: some LoopContext) {
        // Room for the headers first: without it the queue stays as it is.
        var kept = FlatQueue<ActionHeader>()
        do throws(UniFlowError) { try kept.reserve(headers.count) } catch { return }
        var keptOwned = FIFO<DeferredOwned>()
        // Taken out of `self` while filtered: the closure reads the other queues.
        var queue = self.queue, oldOwned = owned, oldHeaders = headers
        queue.filter { delivery in
            let wanted = context.isLive(subscription: delivery.subscription, id: delivery.id)
            if delivery.owns, let item = oldOwned.popFirst(), wanted { keptOwned.append(item) }
            if delivery.hasHeader, let header = oldHeaders.popFirst(), wanted { kept.appendReserved(header) }
            return wanted
        }
        oldHeaders.deallocate()
        self.queue = queue
        headers = kept
        owned = keptOwned
    }

    // MARK: The descriptor

    /// Makes the descriptor (`uf_loop_fd`), at the first call.
    mutating func makeDescriptor(_ context: some LoopContext) throws(UniFlowError) -> Int32 {
        if let descriptor { return descriptor.fd }
        let made = try LoopDescriptor()
        descriptor = made
        sync(context)
        return made.fd
    }

    /// Brings the descriptor up to date: readable while work is due (a host
    /// timer already due included: the timerfd would say so only a moment
    /// later), its timer set to the next host timer.
    mutating func sync(_ context: some LoopContext) {
        dirty = false
        guard let descriptor else { return }
        let timer = context.nextHostTimer()
        descriptor.setWorkPending(pending > 0 || context.watchesWaiting > 0 || timer?.due == true)
        descriptor.setTimer(atMonotonicNanoseconds: timer?.monotonicNanoseconds)
    }

    /// `uf_loop_timeout`: 0 when work is due, the milliseconds until the next
    /// host timer (rounded up, clamped to `INT_MAX`), or -1.
    func timeout(_ context: some LoopContext) -> Int32 {
        if pending > 0 || context.watchesWaiting > 0 { return 0 }
        guard let next = context.nextHostTimer() else { return -1 }
        let nowNanoseconds = DispatcherClock.monotonicNanoseconds()
        let due = next.monotonicNanoseconds
        guard due > nowNanoseconds else { return 0 }
        let ms = (due - nowNanoseconds + 999_999) / 1_000_000
        return ms > UInt64(Int32.max) ? Int32.max : Int32(ms)
    }
}
