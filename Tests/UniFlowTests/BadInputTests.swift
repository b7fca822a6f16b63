import CUniFlow
import Testing
@testable import UniFlow

/// Every bad input gets its status and a specific message, and changes nothing.
@Suite struct BadInput {
    private func started() -> Harness {
        let h = Harness(Seeds.fileDownloading, Seeds.toggle)
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        return h
    }

    private let before = #"{"FileDownloading":{"state":"Starting","payload":{}}}"#

    @Test func malformedJSONGivesLineAndColumn() {
        let h = started()
        #expect(h.submit("{\"kind\": \"initialize\",\n  \"feature\" \"x\"}") == UF_EJSON)
        #expect(h.lastError.hasPrefix("line 2, column"), "\(h.lastError)")
        #expect(h.lastStatus == UF_EJSON)
        #expect(h.state == before)
    }

    @Test(arguments: [
        (#"[1]"#, UF_ESCHEMA),
        (#"{"kind":"initialize","feature":"Toggle","into":"On","form":"x"}"#, UF_ESCHEMA),
        (#"{"kind":"initialize","feature":"Toggle","into":5}"#, UF_ESCHEMA),
        (#"{"kind":"initialize","feature":"Toggle","from":"Off","into":"On"}"#, UF_ESCHEMA),
        (#"{"kind":"transition","feature":"Toggle","from":"Off","into":"On","same":true}"#, UF_ESCHEMA),
        (#"{"kind":"initialize","feature":"Nope","into":"On"}"#, UF_ENOTFOUND),
        (#"{"kind":"initialize","feature":"Toggle","into":"Nope"}"#, UF_ENOTFOUND),
        (#"{"kind":"transition","feature":"FileDownloading","into":"InProgress"}"#, UF_ESCHEMA),
        (#"{"kind":"transition","feature":"FileDownloading","into":"InProgress","payload":{"progress":"x"}}"#, UF_ESCHEMA),
        (#"{"kind":"transition","feature":"FileDownloading","into":"InProgress","payload":{"progress":1,"extra":2}}"#, UF_ESCHEMA),
        (#"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","code":null}}"#, UF_ESCHEMA),
        (#"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","code":1.5}}"#, UF_ESCHEMA),
        ("{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\",\"into\":\"Off\"}", UF_EJSON),
        ("", UF_EJSON),
    ])
    func badActionsChangeNothing(action: String, status: Int32) {
        let h = started()
        let recorder = h.record()
        #expect(h.submit(action) == status, "\(h.lastError)")
        #expect(!h.lastError.isEmpty)
        #expect(h.state == before)
        #expect(recorder.mutations.isEmpty)
    }

    @Test func payloadErrorsNameFeatureStateAndField() {
        let h = started()
        h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"InProgress","payload":{"progress":"x"}}"#)
        #expect(h.lastError == "FileDownloading.InProgress.progress: expected number, got string")
        h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"InProgress"}"#)
        #expect(h.lastError.hasPrefix("FileDownloading.InProgress.progress"))
    }

    @Test func unknownNamesAreNotFound() {
        let h = started()
        h.submit(#"{"kind":"initialize","feature":"Nope","into":"On"}"#)
        #expect(h.lastError == "unknown feature 'Nope'")
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Nope"}"#)
        #expect(h.lastError == "unknown state 'Nope' of feature Toggle")
    }

    @Test func nullArgumentsAreInvalid() {
        let h = started()
        #expect(uf_submit(nil, "{}") == UF_EINVAL)
        #expect(h.lastError == "uf_submit: dispatcher is NULL")
        #expect(uf_submit(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_submit: action_json is NULL")
        #expect(uf_register(h.d, nil) == UF_EINVAL)
        #expect(uf_state_get(h.d, nil) == UF_EINVAL)
        #expect(uf_feature_get(h.d, nil, nil) == UF_EINVAL)
        #expect(uf_dispatch(h.d, nil) == UF_EINVAL)
        #expect(uf_dispatcher_new(nil, nil) == UF_EINVAL)
        #expect(uf_subscribe(h.d, nil, nil, nil, nil, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_subscribe: fn is NULL")
        uf_dispatcher_free(nil)
        uf_free(nil)
        #expect(h.state == before)
    }

    @Test func aJSONPayloadWithAViaIsInvalid() {
        let h = started()
        let freed = FreeCounter()
        #expect(h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"InProgress","payload":{"progress":1}}"#, freed: freed) { _ in 0 } == UF_EINVAL)
        #expect(h.lastError == "action has both a JSON payload and a via callback")
        #expect(freed.count == 1)
    }

    @Test func optionsAreChecked() {
        var d: OpaquePointer?
        #expect(uf_dispatcher_new(&d, #"{"reporting":"loud"}"#) == UF_EINVAL)
        #expect(d == nil)
        #expect(String(cString: uf_last_error()).contains("reporting"))
        #expect(uf_dispatcher_new(&d, #"{"max_cascade":0}"#) == UF_EINVAL)
        #expect(uf_dispatcher_new(&d, #"{"colour":true}"#) == UF_EINVAL)
        #expect(String(cString: uf_last_error()) == "unknown option 'colour'")
        #expect(uf_dispatcher_new(&d, "{") == UF_EJSON)
        // Read as every JSON text is: too deep is UF_ESCHEMA, before any option is looked at.
        let deep = #"{"colour":"# + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "}"
        #expect(uf_dispatcher_new(&d, deep) == UF_ESCHEMA)
        #expect(String(cString: uf_last_error()) == "input is nested deeper than 256 levels")
        #expect(d == nil)
        #expect(uf_dispatcher_new(&d, #"{"reporting":"short","max_cascade":5,"report_skipped":true}"#) == UF_OK)
        uf_dispatcher_free(d)
    }

    /// Each refused option is `UF_EINVAL` with its own message, and `*out` is set
    /// to NULL whatever it held.
    @Test(arguments: [
        ("[]", "options must be an object, got array"),
        ("null", "options must be an object, got null"),
        (#""journal=/tmp/j""#, "options must be an object, got string"),
        (#"{"report_skipped":1}"#, "option 'report_skipped' must be a boolean, got 1"),
        (#"{"report_skipped":"true"}"#, #"option 'report_skipped' must be a boolean, got "true""#),
        (#"{"journal":""}"#, #"option 'journal' must be a non-empty path, got """#),
        (#"{"journal":3}"#, "option 'journal' must be a non-empty path, got 3"),
        (#"{"journal":null}"#, "option 'journal' must be a non-empty path, got null"),
        (#"{"journal_sync":"yes"}"#, #"option 'journal_sync' must be a boolean, got "yes""#),
        (#"{"journal_sync":0}"#, "option 'journal_sync' must be a boolean, got 0"),
        (#"{"timers":"none"}"#, #"option 'timers' must be "thread" or "host", got "none""#),
        (#"{"timers":false}"#, #"option 'timers' must be "thread" or "host", got false"#),
        (#"{"clock":"wall"}"#, #"option 'clock' must be "monotonic" or "manual", got "wall""#),
        (#"{"clock":["manual"]}"#, #"option 'clock' must be "monotonic" or "manual", got ["manual"]"#),
    ])
    func refusedOptionsAreNamed(options: String, message: String) {
        var d = OpaquePointer(bitPattern: 0x10)
        #expect(uf_dispatcher_new(&d, options) == UF_EINVAL)
        #expect(uf_last_status() == UF_EINVAL)
        #expect(String(cString: uf_last_error()) == message)
        #expect(d == nil)
    }

    @Test func registrationErrorsLeaveTheRegistryUnchanged() {
        let h = started()
        #expect(uf_register(h.d, Seeds.toggle) == UF_EEXISTS)
        #expect(h.lastError == "features[0]: feature 'Toggle' is already registered")
        #expect(uf_register(h.d, #"[{"feature":"A","states":{"X":{}}},{"feature":"B","states":{}}]"#) == UF_ESCHEMA)
        #expect(h.lastError.hasPrefix("features[1].states"), "\(h.lastError)")
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"X"}"#) == UF_ENOTFOUND)
        #expect(uf_register_file(h.d, "/nonexistent/defs.json") == UF_EIO)
        #expect(h.lastError == "cannot read '/nonexistent/defs.json': No such file or directory")
    }

    @Test func deepAndHugeInputIsRefusedWithoutCrashing() {
        let h = started()
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(h.submit(deep) < 0)
        let nested = "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\",\"context\":" + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "}"
        #expect(h.submit(nested) == UF_ESCHEMA)
        let long = String(repeating: "F", count: 300)
        #expect(h.submit(#"{"kind":"initialize","feature":"\#(long)","into":"On"}"#) == UF_ENOTFOUND)
        #expect(h.state == before)
    }

    @Test func statusNamesAndSentences() {
        #expect(String(cString: uf_status_name(UF_REJECTED)) == "UF_REJECTED")
        #expect(String(cString: uf_status_name(UF_EIO)) == "UF_EIO")
        #expect(String(cString: uf_status_name(42)) == "UF_UNKNOWN")
        for status in Status.allCases {
            #expect(String(cString: uf_status_name(status.rawValue)) == status.name)
            #expect(!String(cString: uf_strerror(status.rawValue)).isEmpty)
        }
        // The header is the one place the version is written; the library reports it.
        #expect(String(cString: uf_version()) == UNIFLOW_VERSION)
        #expect(uf_version_number() == UNIFLOW_VERSION_NUMBER)
        #expect(String(cString: uf_version()) == "0.2.0")
        #expect(uf_version_number() == 2000)
    }
}
