import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Host code the reporter and the host's loop call may call the dispatcher back
/// and change them: neither is inside one of its own mutating methods while the
/// host runs (`Reports/Reporter.swift`, `Loop/HostLoop.swift`).
@Suite struct ReentrantHostCalls {
    let off = #"{"kind":"initialize","feature":"Toggle","into":"Off"}"#
    let on = #"{"kind":"transition","feature":"Toggle","into":"On"}"#

    @Test func aReporterThatReplacesItselfIsReleasedOnceItReturns() {
        let h = Harness(Seeds.toggle)
        let d = h.d
        let firstFreed = FreeCounter(), secondFreed = FreeCounter()
        var first: [String] = [], second: [String] = []
        var freedWhileRunning: Int? = nil
        let secondBox = Box<(String) -> Void>({ second.append($0) }, freed: secondFreed)
        let firstBox = Box<(String) -> Void>({ text in
            first.append(text)
            uf_set_reporter(d, { text, payload in
                Unmanaged<Box<(String) -> Void>>.fromOpaque(payload!).takeUnretainedValue().value(String(cString: text!))
            }, Unmanaged.passRetained(secondBox).toOpaque(), releaseBox)
            freedWhileRunning = firstFreed.count
        }, freed: firstFreed)
        uf_set_reporter(d, { text, payload in
            Unmanaged<Box<(String) -> Void>>.fromOpaque(payload!).takeUnretainedValue().value(String(cString: text!))
        }, Unmanaged.passRetained(firstBox).toOpaque(), releaseBox)
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(first.count == 1 && first[0].contains(#""event":"processed""#))
        #expect(freedWhileRunning == 0)
        #expect(firstFreed.count == 1)
        #expect(second.count == 1 && second[0].contains(#""into":"On""#))
        uf_set_reporter(d, nil, nil, nil)
        #expect(secondFreed.count == 1)
    }

    @Test func aReporterThatEndsTheSubscriptionWhoseDeliveryWasDroppedLeavesNothingWaiting() {
        let h = Harness(options: #"{"deferred_limit":1}"#, Seeds.toggle)
        let d = h.d
        var delivered = 0
        let sub = h.subscribeDeferred(nil) { _ in delivered += 1; return 0 }
        var dropped: [String] = []
        let box = Box<(String) -> Void>({ text in
            guard text.contains(#""event":"dropped""#) else { return }
            dropped.append(text)
            #expect(uf_unsubscribe(d, sub.id) == UF_OK)
        }, freed: FreeCounter())
        uf_set_reporter(d, { text, payload in
            Unmanaged<Box<(String) -> Void>>.fromOpaque(payload!).takeUnretainedValue().value(String(cString: text!))
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(dropped.count == 1 && dropped[0].contains(#""seq":1"#))
        #expect(h.loopTimeout == -1)
        #expect(h.runLoop() == (UF_OK, 0))
        #expect(delivered == 0)
    }
}
