import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// The hot path remembers the key pointer an instance was last found by. A host
/// that reuses one buffer for its keys (a prepared `uf_action` whose key it
/// rewrites) must still reach the instance the buffer names now.
@Suite struct KeyBuffers {
    static let toggles = #"""
        {"feature": "Toggle", "instances": "keyed", "states": {"Off": {}, "On": {}}}
        """#

    /// Dispatches a transition of the instance `buffer` names into `into`.
    static func flip(_ h: Harness, _ buffer: UnsafeMutablePointer<CChar>, into: String) -> Int32 {
        into.withCString { (state) -> Int32 in
            "Toggle".withCString { (feature) -> Int32 in
                var a = uf_action()
                a.size = UInt32(MemoryLayout<uf_action>.size)
                a.kind = UF_ACTION_TRANSITION
                a.feature = feature
                a.into = state
                a.key = UnsafePointer(buffer)
                return uf_dispatch(h.d, &a)
            }
        }
    }

    @Test func oneBufferRewrittenWithOtherKeysReachesEachInstance() {
        let h = Harness(Self.toggles)
        for key in ["a", "b", "c"] {
            #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","key":"\#(key)","into":"Off"}"#) == 0)
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 8)
        defer { buffer.deallocate() }
        strcpy(buffer, "a")
        #expect(Self.flip(h, buffer, into: "On") == 0)
        strcpy(buffer, "b")                      // the same pointer, another key
        #expect(Self.flip(h, buffer, into: "On") == 0)
        #expect(Self.flip(h, buffer, into: "Off") == 0)
        #expect(h.state == #"{"Toggle":{"a":{"state":"On","payload":{}},"b":{"state":"Off","payload":{}},"c":{"state":"Off","payload":{}}}}"#)

        // The instance the buffer found is gone, then made again in another slot.
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Toggle","key":"b"}"#) == 0)
        #expect(Self.flip(h, buffer, into: "On") == Int32(UF_REJECTED))
        #expect(h.lastError == "Toggle[b] is not initialized")
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","key":"d","into":"Off"}"#) == 0)  // takes b's slot
        strcpy(buffer, "d")
        #expect(Self.flip(h, buffer, into: "On") == 0)
        strcpy(buffer, "b")
        #expect(Self.flip(h, buffer, into: "On") == Int32(UF_REJECTED))
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","key":"b","into":"Off"}"#) == 0)
        #expect(Self.flip(h, buffer, into: "On") == 0)
        #expect(h.state == #"{"Toggle":{"a":{"state":"On","payload":{}},"c":{"state":"Off","payload":{}},"d":{"state":"On","payload":{}},"b":{"state":"On","payload":{}}}}"#)
    }
}

/// The flat tables' slots are what a registered feature costs: a field that makes
/// one grow shows in the memory per feature (`bench/run`, group 5).
@Suite struct SlotSizes {
    @Test func aStateSlotStaysSixteenBytes() {
        #expect(MemoryLayout<StateSlot>.stride == 16)
        #expect(MemoryLayout<EventTargetSlot>.stride <= 24)
    }
}
