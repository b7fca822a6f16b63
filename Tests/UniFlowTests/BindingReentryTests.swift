import CUniFlow
import Testing
@testable import UniFlow

/// A binding's handlers run while the dispatcher is running its bindings, and may
/// change them (`Bindings/ModelBindings.swift`, "Running a binding calls host
/// functions").
@Suite struct BindingReentryTests {
    final class Log { var entries: [String] = [] }

    /// Registering a handler and a feature with a binding from inside a binding's
    /// handler works; the new binding takes part from the next mutation on.
    @Test func givenAHandlerOfABindingRegistersAHandlerAndABinding_whenItRuns_thenTheNewBindingRunsFromTheNextMutation() {
        let h = Harness()
        let log = Log()
        var grown = false
        let grow: (OpaquePointer) -> Int32 = { call in
            log.entries.append("grow")
            guard !grown else { return 1 }
            grown = true
            let d = uf_binding_call_dispatcher(call)
            // Not `registerHandler(h, ...)`: the handler would keep the harness.
            #expect(uf_register_handler(d, "late", { _, payload in
                Unmanaged<Log>.fromOpaque(payload!).takeUnretainedValue().entries.append("late")
                return 1
            }, Unmanaged.passRetained(log).toOpaque(), { Unmanaged<Log>.fromOpaque($0!).release() }) == UF_OK)
            #expect(uf_register(d, #"""
            {"feature":"B","states":{"On":{}},
             "bindings":[{"scenario":"late","when":"AnyMutationOf<A>","then":{"call":"late"}}]}
            """#) == UF_OK)
            #expect(uf_submit(d, #"{"kind":"initialize","feature":"B","into":"On"}"#) == UF_QUEUED)
            return 1
        }
        #expect(registerHandler(h, "grow", grow) == UF_OK)
        #expect(uf_register(h.d, #"""
        {"feature":"A","states":{"S":{},"T":{}},
         "bindings":[{"scenario":"first","when":"AnyMutationOf<A>","given":[{"call":"grow"}],"then":{"call":"grow"}}]}
        """#) == UF_OK, "\(h.lastError)")
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"S"}"#) == UF_OK, "\(h.lastError)")
        #expect(log.entries == ["grow", "grow"])
        #expect(h.submit(#"{"kind":"transition","feature":"A","into":"T"}"#) == UF_OK, "\(h.lastError)")
        #expect(log.entries == ["grow", "grow", "grow", "grow", "late"])
    }
}
