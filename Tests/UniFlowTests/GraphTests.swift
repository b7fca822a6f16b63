import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// `uf_graph_dot` (docs/cli.md, "graph"): features as Graphviz DOT, driven through the C API.
@Suite struct Graphs {
    static let toggle = """
    {"feature": "Toggle", "description": "A \\"switch\\"", "states": {"Off": {}, "On": {"fields": {"level": {"type": "integer", "default": 1, "description": "brightness"}}}},
     "initial": ["Off"], "transitions": {"Off": ["On"], "On": ["Off", "On"]}}
    """

    static let stats = """
    {"feature": "Stats", "states": {"Counting": {"fields": {"completed": {"type": "integer", "default": 0}}}},
     "bindings": [
        {"scenario": "Count switches on",
         "when": "TransitionInto<Toggle.On>",
         "then": {"submit": [{"kind": "actualize", "feature": "Stats", "in": "Counting",
                              "payload": {"completed": {"$": {"+": [{"var": "model.Stats.payload.completed"}, 1]}}}}]}},
        {"when": "Deinitialization<Toggle>",
         "then": {"submit": [{"kind": "deinitialize", "feature": "Stats"}]}}]}
    """

    /// The DOT text, or the status and message of the failure.
    static func graph(_ h: Harness, _ feature: String? = nil) -> (status: Int32, dot: String?) {
        var out: UnsafeMutablePointer<CChar>?
        let status = feature.map { uf_graph_dot(h.d, $0, &out) } ?? uf_graph_dot(h.d, nil, &out)
        defer { uf_free(out) }
        return (status, out.map { String(cString: $0) })
    }

    // MARK: Features

    @Test func aFeatureIsAClusterOfStatesWithItsTransitionsAndEntryPoint() {
        let h = Harness(Self.toggle)
        let result = Self.graph(h)
        #expect(result.status == UF_OK)
        #expect(result.dot == """
        digraph uniflow {
          graph [rankdir=LR, compound=true, fontname="Helvetica", fontsize=12, nodesep=0.3, ranksep=0.45];
          node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];

          subgraph cluster_Toggle {
            label="Toggle";
            style=rounded; color=gray40;
            tooltip="A \\"switch\\"";
            "Toggle#entry" [shape=point, width=0.1, label=""];
            "Toggle.Off" [label="Off", peripheries=2];
            "Toggle.On" [label="On", tooltip="level: integer = 1 (brightness)"];
            "Toggle#entry" -> "Toggle.Off";
            "Toggle.Off" -> "Toggle.On";
            "Toggle.On" -> "Toggle.Off";
            "Toggle.On" -> "Toggle.On";
          }
        }

        """)
    }

    @Test func withoutInitialOrTransitionsTheClusterSaysAnyAndDrawsNoEdges() {
        let h = Harness(Seeds.search)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Search\n(any initial state, any transition)";"#))
        #expect(!dot.contains("->"))
        #expect(!dot.contains("#entry"))
        #expect(!dot.contains("peripheries"))
        for state in ["Ready", "InProgress", "Failed"] {
            #expect(dot.contains(#""Search.\#(state)" [label="\#(state)""#))
        }
    }

    @Test func anEmptyTransitionListDrawsNoEdgesAndNoNote() {
        let h = Harness(#"{"feature": "Main", "states": {"Main": {}}, "initial": ["Main"], "transitions": {"Main": []}}"#)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Main";"#))
        #expect(dot.contains(#""Main#entry" -> "Main.Main";"#))
        #expect(!dot.contains(#""Main.Main" ->"#))
    }

    @Test func featuresAppearInRegistrationOrder() {
        let h = Harness(Seeds.toggle, Seeds.fileDownloading, Seeds.main)
        let dot = Self.graph(h).dot ?? ""
        let clusters = dot.split(separator: "\n").filter { $0.contains("subgraph cluster_") }
        #expect(clusters == ["  subgraph cluster_Toggle {", "  subgraph cluster_FileDownloading {", "  subgraph cluster_Main {"])
    }

    // MARK: Bindings

    @Test func aBindingIsADashedEdgeFromTheStateItWaitsForToTheStateItEnters() {
        let h = Harness(Self.toggle, Self.stats)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"""
          "Toggle.On" -> "Stats.Counting" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Count switches on", tooltip="[Count switches on] WHEN TransitionInto<Toggle.On>, THEN actualize Stats."];
        """#))
    }

    @Test func aFilterWithoutAStateStartsAtTheFeatureClusterAndADeinitializationEndsAtOne() {
        let h = Harness(Self.toggle, Self.stats)
        let dot = Self.graph(h).dot ?? ""
        // No scenario: the derived name, wrapped.
        #expect(dot.contains(#"""
          "Toggle.Off" -> "Stats.Counting" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="WHEN\nDeinitialization<Toggle>,\nTHEN deinitialize Stats", tooltip="WHEN Deinitialization<Toggle>, THEN deinitialize Stats.", ltail=cluster_Toggle, lhead=cluster_Stats];
        """#))
    }

    @Test(arguments: [
        ("AnyMutation", ##""#any-mutation""##),
        ("AnyMutationOf<Toggle>", #""Toggle.Off""#),
        ("Initialization<Toggle>", #""Toggle.Off""#),
        ("SettingInto<Toggle.On>", #""Toggle.On""#),
        ("InitializationInto<Toggle.On>", #""Toggle.On""#),
        ("ActualizationIn<Toggle.On>", #""Toggle.On""#),
        ("TransitionFrom<Toggle.On>", #""Toggle.On""#),
        ("DeinitializationFrom<Toggle.On>", #""Toggle.On""#),
        ("TransitionBetween<Toggle.Off, Toggle.On>", #""Toggle.On""#),
    ])
    func eachFilterStartsItsEdgeWhereItsMutationHappens(filter: String, tail: String) {
        let watcher = """
        {"feature": "Watcher", "states": {"Seen": {}},
         "bindings": [{"scenario": "watch", "when": "\(filter)",
                       "then": {"submit": [{"kind": "initialize", "feature": "Watcher", "into": "Seen"}]}}]}
        """
        let h = Harness(Self.toggle, watcher)
        let dot = Self.graph(h).dot ?? ""
        let edges = dot.split(separator: "\n").filter { $0.contains(#"label="watch""#) }
        #expect(edges.count == 1)
        #expect(edges.first?.hasPrefix("  \(tail) -> \"Watcher.Seen\" [") == true, "\(edges)")
        #expect(edges.first?.contains("ltail=cluster_Toggle") == (tail == #""Toggle.Off""#))
    }

    @Test func handlersComputedAndUnknownFeaturesGetNodesOfTheirOwn() {
        var out: OpaquePointer?
        #expect(uf_dispatcher_new(&out, nil) == UF_OK)
        guard let d = out else { return }
        defer { uf_dispatcher_free(d) }
        #expect(uf_register_handler(d, "notify", { _, _ in 0 }, nil, nil) == UF_OK)
        let definition = """
        {"feature": "Notifier", "states": {"Idle": {}, "Sending": {"fields": {"text": "string"}}},
         "bindings": [
            {"scenario": "Tell the host", "when": "AnyMutation", "then": {"call": "notify"}},
            {"scenario": "Fan out", "when": "TransitionInto<Notifier.Sending>",
             "then": {"submit": [{"kind": "initialize", "feature": {"$": {"var": "given"}}, "into": "Idle"},
                                 {"kind": "initialize", "feature": "Elsewhere", "into": "Idle"},
                                 {"kind": "transition", "feature": "Notifier", "into": {"$": "Idle"}},
                                 {"kind": "transition", "feature": "Notifier", "into": "Idle"}]}}]}
        """
        #expect(uf_register(d, definition) == UF_OK, "\(String(cString: uf_last_error()))")
        var dotOut: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(d, nil, &dotOut) == UF_OK)
        let dot = dotOut.map { String(cString: $0) } ?? ""
        uf_free(dotOut)
        // What follows the last cluster: the helper nodes, then the edges. The
        // transition into a computed state acts on Notifier as a whole from
        // inside its cluster: it ends at Notifier's border dot.
        let lines = dot.split(separator: "\n", omittingEmptySubsequences: false)
        let tail = lines[(lines.lastIndex(of: "  }") ?? 0) + 2 ..< lines.count - 1].joined(separator: "\n")
        #expect(tail == #"""
          "#any-mutation" [label="any mutation", shape=plaintext];
          "#handler:notify" [label="notify()", shape=cds];
          "#computed-feature" [label="computed feature", shape=plaintext];
          "#unknown:Elsewhere" [label="Elsewhere?", shape=plaintext];
          "Notifier#border" [shape=point, width=0.08, color=gray40, label="", tooltip="Notifier: any state"];
          "Notifier.Idle" -> "Notifier#border" [ltail=cluster_Notifier, arrowhead=none, color=gray40];
          "#any-mutation" -> "#handler:notify" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Tell the host", tooltip="[Tell the host] WHEN AnyMutation, THEN call notify."];
          "Notifier.Sending" -> "#computed-feature" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
          "Notifier.Sending" -> "#unknown:Elsewhere" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
          "Notifier.Sending" -> "Notifier#border" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
          "Notifier.Sending" -> "Notifier.Idle" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
        }
        """#)
    }

    @Test func aBindingActingOnItsOwnFeatureAsAWholeUsesTheBorderDot() {
        let h = Harness(#"""
        {"feature": "Session", "states": {"Active": {}, "Closed": {}},
         "bindings": [{"scenario": "close", "when": "TransitionInto<Session.Closed>",
                       "then": {"submit": [{"kind": "deinitialize", "feature": "Session"}]}},
                      {"scenario": "reopen", "when": "Deinitialization<Session>",
                       "then": {"submit": [{"kind": "initialize", "feature": "Session", "into": "Active"}]}},
                      {"scenario": "echo", "when": "Initialization<Session>",
                       "then": {"submit": [{"kind": "trigger", "feature": "Session"}]}}]}
        """#)
        let edges = (Self.graph(h).dot ?? "").split(separator: "\n").filter { $0.contains("->") }.map { $0.split(separator: " [")[0] }
        #expect(edges == [#"  "Session.Active" -> "Session#border""#,
                          #"  "Session.Closed" -> "Session#border""#,
                          #"  "Session#border" -> "Session.Active""#,
                          #"  "Session#border" -> "Session#border""#])
    }

    @Test func labelsEscapeQuotesBackslashesAndNewlines() {
        let definition = #"""
        {"feature": "Quoted", "states": {"A": {}},
         "bindings": [{"scenario": "Say \"hi\" \\N\nnow", "when": "Initialization<Quoted>",
                       "then": {"submit": [{"kind": "deinitialize", "feature": "Quoted"}]}}]}
        """#
        let h = Harness(definition)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Say \"hi\" \\N\nnow""#))
        #expect(DOTGraph.quoted("a\u{1}b\tc") == #""a b c""#)
    }

    @Test func longLabelsAreWrappedAtBlanks() {
        #expect(DOTGraph.wrapped("Finish the download when progress reaches 100", width: 28)
                == "Finish the download when\nprogress reaches 100")
        #expect(DOTGraph.wrapped("Averyveryveryverylongwordthatdoesnotfit here", width: 10)
                == "Averyveryveryverylongwordthatdoesnotfit\nhere")
        #expect(DOTGraph.wrapped("", width: 10) == "")
    }

    // MARK: Events

    static let flow = #"""
    {"feature": "Flow",
     "states": {"Form": {"fields": {"n": {"type": "number", "optional": true}},
                         "on": {"next": [{"into": "Invalid", "spec": "below 10", "if": {"<": [{"var": "event.payload.n"}, 10]}},
                                         {"into": "Review", "call": "approve"}],
                                "edit": {"into": "Form", "actualize": true}}},
                "Invalid": {"on": {"retry": "Form"}},
                "Review": {"on": {"back": "Form"}},
                "Done": {}},
     "initial": ["Form"],
     "transitions": {"Form": ["Invalid", "Review", "Form"], "Invalid": ["Form"], "Review": ["Form", "Done"], "Done": []},
     "on": {"reset": {"into": "Form", "spec": "start over"}, "finish": "Done"}}
    """#

    /// A dispatcher with the `approve` handler the flow's guard names.
    static func flowHarness(_ more: String...) -> Harness {
        let h = Harness()
        #expect(uf_register_handler(h.d, "approve", { _, _ in 1 }, nil, nil) == UF_OK)
        for definition in [Self.flow] + more {
            #expect(uf_register(h.d, definition) == UF_OK, "\(h.lastError)")
        }
        return h
    }

    @Test func eventTargetsAreLabelledArrowsThatStandForTheTransitionsTheyTake() {
        let h = Self.flowHarness()
        // Form -> Form is declared but only taken as an actualization: it keeps its
        // own arrow; Review -> Done is taken by no event of Review (only by the
        // feature's `finish`): it keeps its own too.
        #expect(Self.graph(h).dot == #"""
        digraph uniflow {
          graph [rankdir=LR, compound=true, fontname="Helvetica", fontsize=12, nodesep=0.3, ranksep=0.45];
          node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];

          subgraph cluster_Flow {
            label="Flow";
            style=rounded; color=gray40;
            "Flow#entry" [shape=point, width=0.1, label=""];
            "Flow.Form" [label="Form", peripheries=2, tooltip="n: number?"];
            "Flow.Invalid" [label="Invalid"];
            "Flow.Review" [label="Review"];
            "Flow.Done" [label="Done"];
            "Flow#entry" -> "Flow.Form";
            "Flow.Form" -> "Flow.Form";
            "Flow.Review" -> "Flow.Done";
            "Flow.Form" -> "Flow.Invalid" [label="on next [below 10]", tooltip="if {\"<\":[{\"var\":\"event.payload.n\"},10]}"];
            "Flow.Form" -> "Flow.Review" [label="on next", tooltip="call approve"];
            "Flow.Form" -> "Flow.Form" [label="on edit"];
            "Flow.Invalid" -> "Flow.Form" [label="on retry"];
            "Flow.Review" -> "Flow.Form" [label="on back"];
          }

          "Flow#border" [shape=point, width=0.08, color=gray40, label="", tooltip="Flow: any state"];
          "Flow.Form" -> "Flow#border" [ltail=cluster_Flow, arrowhead=none, color=gray40];
          "Flow#border" -> "Flow.Form" [label="on reset [start over]"];
          "Flow#border" -> "Flow.Done" [label="on finish"];
        }

        """#)
    }

    @Test func withoutTransitionsEveryEventTargetIsStillDrawn() {
        let h = Harness(#"{"feature": "Light", "states": {"Off": {"on": {"flip": "On"}}, "On": {"on": {"flip": "Off"}}}}"#)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Light\n(any initial state, any transition)";"#))
        let arrows = dot.split(separator: "\n").filter { $0.contains("->") }
        #expect(arrows == [#"    "Light.Off" -> "Light.On" [label="on flip"];"#,
                           #"    "Light.On" -> "Light.Off" [label="on flip"];"#])
    }

    @Test func twoTargetsThatDrawTheSameArrowDrawItOnce() {
        let h = Harness(#"{"feature": "Twice", "states": {"A": {"on": {"go": ["B", "B"]}}, "B": {}}, "on": {"up": ["A", "A"]}}"#)
        let arrows = (Self.graph(h).dot ?? "").split(separator: "\n").filter { $0.contains("on go") || $0.contains("on up") }
        #expect(arrows == [#"    "Twice.A" -> "Twice.B" [label="on go"];"#,
                           #"  "Twice#border" -> "Twice.A" [label="on up"];"#])
    }

    @Test func aKeyedFeatureIsDrawnOnceItsLabelMarked() {
        let h = Harness(#"{"feature": "Download", "instances": "keyed", "states": {"Idle": {}, "Busy": {}}, "initial": ["Idle"], "transitions": {"Idle": ["Busy"]}}"#,
                        #"{"feature": "Any", "instances": "keyed", "states": {"S": {}}}"#)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"    label="Download [key]";"#))
        #expect(dot.contains(#"    label="Any [key]\n(any initial state, any transition)";"#))
        #expect(dot.split(separator: "\n").filter { $0.contains("subgraph cluster_") }.count == 2)
    }

    // MARK: Timers

    @Test(arguments: [
        (0, "0 ms"), (1, "1 ms"), (250, "250 ms"), (999, "999 ms"), (1000, "1 s"), (1500, "1500 ms"),
        (30_000, "30 s"), (59_000, "59 s"), (60_000, "1 min"), (90_000, "90 s"), (300_000, "5 min"),
        (5_400_000, "90 min"), (3_600_000, "1 h"), (86_400_000, "24 h"), (9_007_199_254_740_992, "9007199254740992 ms"),
    ] as [(UInt64, String)])
    func aDelayIsWrittenInTheLargestUnitThatHoldsItWhole(ms: UInt64, text: String) {
        #expect(DOTGraph.delayText(ms) == text)
    }

    static let session = #"""
    {"feature": "Session", "instances": "keyed",
     "states": {"Active": {"after": [{"ms": 300000, "scenario": "Lock when idle",
                                      "submit": [{"kind": "transition", "feature": "Session", "from": "Active", "into": "Locked"},
                                                 {"kind": "actualize", "feature": "Audit", "in": "Logging", "payload": {"lines": 1}}]}]},
                "Locked": {"after": [{"ms": 30000, "submit": [{"kind": "deinitialize", "feature": "Session"}]},
                                     {"ms": 250, "submit": [{"kind": "send", "feature": "Session", "event": "ping"},
                                                            {"kind": "trigger", "feature": "Audit"}]}],
                           "on": {"ping": "Locked"}}},
     "initial": ["Active"]}
    """#

    static let audit = #"""
    {"feature": "Audit", "states": {"Logging": {"fields": {"lines": "integer"}}}}
    """#

    @Test func aStateTimerIsADottedArrowToTheStateItsActionsEnterElseToTheBorder() {
        let h = Harness(Self.audit, Self.session)
        let dot = Self.graph(h).dot ?? ""
        let lines = dot.split(separator: "\n").map(String.init)
        // Into a state of its own feature: inside the cluster.
        #expect(lines.contains(#"    "Session.Active" -> "Session.Locked" [style=dotted, label="after 5 min", tooltip="Lock when idle"];"#))
        // Everything else after the clusters: its own feature as a whole (a
        // deinitialization, a send) at the border dot; another feature's state; another
        // feature as a whole clipped at its cluster.
        let outside = Array(lines[(lines.lastIndex(of: "  }") ?? 0) + 1 ..< lines.count - 1])
        #expect(outside == [
            #"  "Session#border" [shape=point, width=0.08, color=gray40, label="", tooltip="Session: any state"];"#,
            #"  "Session.Active" -> "Session#border" [ltail=cluster_Session, arrowhead=none, color=gray40];"#,
            #"  "Session.Active" -> "Audit.Logging" [style=dotted, label="after 5 min", tooltip="Lock when idle"];"#,
            #"  "Session.Locked" -> "Session#border" [style=dotted, label="after 30 s"];"#,
            #"  "Session.Locked" -> "Session#border" [style=dotted, label="after 250 ms"];"#,
            #"  "Session.Locked" -> "Audit.Logging" [style=dotted, label="after 250 ms", lhead=cluster_Audit];"#,
        ])
        // Drawn alone, the other feature's state and the feature itself are dashed nodes.
        let alone = Self.graph(h, "Session").dot ?? ""
        #expect(!alone.contains("subgraph cluster_Audit"))
        #expect(alone.contains(#"  "Audit.Logging" [label="Audit.Logging", style="rounded,dashed"];"#))
        #expect(alone.contains(#"  "Audit#feature" [label="Audit", style=dashed];"#))
        #expect(alone.contains(#"  "Session.Locked" -> "Audit#feature" [style=dotted, label="after 250 ms"];"#))
    }

    // MARK: One feature

    @Test func oneFeatureDrawsItsClusterItsBindingsAndForeignStatesAsDashedNodes() {
        let h = Harness(Self.toggle, Self.stats)
        let dot = Self.graph(h, "Stats").dot ?? ""
        #expect(!dot.contains("subgraph cluster_Toggle"))
        #expect(dot.contains("subgraph cluster_Stats"))
        #expect(dot.contains(#"  "Toggle.On" [label="Toggle.On", style="rounded,dashed"];"#))
        #expect(dot.contains(#"  "Toggle#feature" [label="Toggle", style=dashed];"#))
        #expect(dot.contains(#"  "Toggle#feature" -> "Stats.Counting" ["#))

        // Toggle declares no bindings: its own graph has none.
        let toggleOnly = Self.graph(h, "Toggle").dot ?? ""
        #expect(!toggleOnly.contains("dashed"))
        #expect(!toggleOnly.contains("Stats"))
    }

    // MARK: Errors and determinism

    @Test func anUnknownFeatureIsNotFound() {
        let h = Harness(Self.toggle)
        var out: UnsafeMutablePointer<CChar>? = UnsafeMutablePointer(bitPattern: 1)
        #expect(uf_graph_dot(h.d, "Nope", &out) == UF_ENOTFOUND)
        #expect(out == nil)
        #expect(h.lastError == "unknown feature 'Nope'")
        #expect(h.lastStatus == UF_ENOTFOUND)
    }

    @Test func nullArgumentsAreInvalid() {
        let h = Harness(Self.toggle)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(nil, nil, &out) == UF_EINVAL)
        #expect(uf_graph_dot(h.d, nil, nil) == UF_EINVAL)
    }

    @Test func anEmptyDispatcherIsAnEmptyGraph() {
        let h = Harness()
        #expect(Self.graph(h).dot?.hasPrefix("digraph uniflow {\n") == true)
        #expect(Self.graph(h).dot?.hasSuffix("fontsize=9];\n}\n") == true)
    }

    @Test func theSameDefinitionsAlwaysGiveTheSameBytes() {
        let first = Self.graph(Harness(Seeds.fileDownloading, Self.toggle, Self.stats)).dot
        let second = Self.graph(Harness(Seeds.fileDownloading, Self.toggle, Self.stats)).dot
        #expect(first != nil)
        #expect(first == second)
        let h = Harness(Seeds.fileDownloading, Self.toggle, Self.stats)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(Self.graph(h).dot == first, "the model's state does not change the drawing")
    }

    @Test func itCanBeCalledFromInsideACallback() {
        let h = Harness(Self.toggle)
        var inside: String?
        h.subscribe(nil) { m in
            var out: UnsafeMutablePointer<CChar>?
            if uf_graph_dot(uf_mutation_dispatcher(m), "Toggle", &out) == UF_OK { inside = String(cString: out!) }
            uf_free(out)
            return UF_KEEP
        }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(inside == Self.graph(h, "Toggle").dot)
    }

    // MARK: Graphviz accepts it

    static let dotAvailable = system("command -v dot >/dev/null 2>&1") == 0

    @Test(.enabled(if: Graphs.dotAvailable, "Graphviz's dot is not installed"))
    func graphvizRendersEveryDrawingWithoutAWarning() throws {
        var out: OpaquePointer?
        #expect(uf_dispatcher_new(&out, nil) == UF_OK)
        let d = try #require(out)
        defer { uf_dispatcher_free(d) }
        #expect(uf_register_handler(d, "notify", { _, _ in 0 }, nil, nil) == UF_OK)
        let notifier = #"""
        {"feature": "Notifier", "states": {"Idle": {}},
         "bindings": [{"scenario": "Tell \"the host\" \\ now", "when": "AnyMutation", "then": {"call": "notify"}},
                      {"when": "TransitionBetween<Toggle.Off, Toggle.On>",
                       "then": {"submit": [{"kind": "initialize", "feature": {"$": "Notifier"}, "into": "Idle"},
                                           {"kind": "initialize", "feature": "Ghost", "into": "Idle"}]}}]}
        """#
        for definition in [Seeds.fileDownloading, Seeds.search, Self.toggle, Self.stats, notifier] {
            #expect(uf_register(d, definition) == UF_OK, "\(String(cString: uf_last_error()))")
        }
        for feature in [nil, "FileDownloading", "Search", "Toggle", "Stats", "Notifier"] as [String?] {
            var text: UnsafeMutablePointer<CChar>?
            let status = feature.map { uf_graph_dot(d, $0, &text) } ?? uf_graph_dot(d, nil, &text)
            #expect(status == UF_OK)
            guard let text else { continue }
            let dot = String(cString: text)
            uf_free(text)
            let (exit, stderr) = try Self.render(dot)
            #expect(exit == 0, "dot -Tsvg failed for \(feature ?? "all"): \(stderr)")
            #expect(stderr.isEmpty, "dot -Tsvg warned for \(feature ?? "all"): \(stderr)")
        }
    }

    @Test(.enabled(if: Graphs.dotAvailable, "Graphviz's dot is not installed"))
    func graphvizRendersEventsTimersAndKeyedFeaturesWithoutAWarning() throws {
        let h = Self.flowHarness(Self.audit, Self.session)
        let transfer = "\(#filePath)".split(separator: "/").dropLast(3).joined(separator: "/") + "/examples/definitions/transfer.json"
        #expect(uf_register_file(h.d, "/" + transfer) == UF_OK, "\(h.lastError)")
        for feature in [nil, "Flow", "Audit", "Session", "Transfer"] as [String?] {
            let dot = try #require(Self.graph(h, feature).dot)
            let (exit, stderr) = try Self.render(dot)
            #expect(exit == 0, "dot -Tsvg failed for \(feature ?? "all"): \(stderr)")
            #expect(stderr.isEmpty, "dot -Tsvg warned for \(feature ?? "all"): \(stderr)")
        }
    }

    /// Runs `dot -Tsvg` over the text; its exit status and standard error.
    static func render(_ dot: String) throws -> (Int32, String) {
        var template = Array("/tmp/uniflow-graph-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(path); unlink(path + ".err"); unlink(path + ".svg") }
        let written = dot.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        try #require(written == dot.utf8.count)
        let status = system("dot -Tsvg '\(path)' > '\(path).svg' 2> '\(path).err'")
        var stderr = ""
        if let file = fopen(path + ".err", "r") {
            var buffer = [CChar](repeating: 0, count: 4096)
            while fgets(&buffer, Int32(buffer.count), file) != nil {
                stderr += buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
            fclose(file)
        }
        // system() returns a wait status: the exit code is in the second byte.
        return ((status >> 8) & 0xFF, stderr)
    }
}
