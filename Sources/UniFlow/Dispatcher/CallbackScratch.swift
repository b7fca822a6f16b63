/// What accessors read while a callback runs, and the text already handed out
/// (valid until the callback returns or the delivery ends).
struct CallbackScratch {
    var delivery = MutationDelivery()
    var via = ViaScratch()
    var handlerCall = HandlerCallScratch()
    var intercepted = InterceptScratch()
    var watchText = WatchTextBuffer()

    mutating func reset() {
        delivery.reset()
        via.reset()
    }
}
