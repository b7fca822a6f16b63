import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// Filters naming a statechart's states (docs/filters.md, "Statechart
// features"): defined over the states a mutation entered and exited and the
// states active before and after it, wherever a filter is used.

private let player = #"""
{"feature": "Player",
 "fields": {"volume": {"type": "number", "default": 5}},
 "states": {
   "Stopped": {"on": {"play": "Active", "resume": "Active.Resume"}},
   "Active": {"initial": "Playing",
              "on": {"stop": "Stopped", "restart": {"into": "Active", "reenter": true}},
              "states": {"Playing": {"on": {"pause": "Paused"},
                                     "always": {"into": "Stopped", "if": {"==": [{"var": "feature.payload.volume"}, 0]}}},
                         "Paused": {"on": {"play": "Playing",
                                           "mute": {"actions": [{"assign": {"volume": 0}}]}}},
                         "Resume": {"type": "history"}}}},
 "initial": ["Stopped", "Active"]}
"""#

private let sound = #"""
{"feature": "Sound", "type": "parallel",
 "states": {"Audio": {"initial": "Off", "states": {"On": {"on": {"toggle": "Audio.Off"}}, "Off": {"on": {"toggle": "Audio.On"}}}},
            "Video": {"initial": "Off", "states": {"On": {"on": {"flip": "Video.Off"}}, "Off": {"on": {"flip": "Video.On"}}}}}}
"""#

/// What a filter saw: the kind and new configuration of every mutation it matched.
private final class Seen {
    var list: [String] = []
}

private func watch(_ h: Harness, _ filter: String) -> Seen {
    let seen = Seen()
    let result = h.subscribe(filter) { m in
        let kind = ["", "initialization", "actualization", "transition", "deinitialization"][Int(uf_mutation_kind_of(m).rawValue)]
        let new = uf_mutation_new_state(m).map { String(cString: $0) } ?? "-"
        seen.list.append("\(kind) \(new)")
        return 0
    }
    precondition(result.status == UF_OK, "uf_subscribe(\(filter)): \(h.lastError)")
    return seen
}

private func send(_ h: Harness, _ event: String) -> Int32 { uf_send(h.d, "Player", nil, event, nil) }

@Suite struct StatechartStateFilterTests {
    /// Every form, with paths and unique bare names, over one run of the player.
    @Test func everyFormMatchesOverEnteredExitedAndActiveStates() {
        let h = Harness(player)
        let into = watch(h, "TransitionInto<Player.Active>")
        let intoLeaf = watch(h, "TransitionInto<Player.Paused>")
        let from = watch(h, "TransitionFrom<Player.Active>")
        let between = watch(h, "TransitionBetween<Player.Stopped, Player.Active.Playing>")
        let actualization = watch(h, "ActualizationIn<Player.Active>")
        let setting = watch(h, "SettingInto<Player.Active.Paused>")
        let initialization = watch(h, "InitializationInto<Player.Playing>")
        let deinitialization = watch(h, "DeinitializationFrom<Player.Active>")

        #expect(h.submit(#"{"kind":"initialize","feature":"Player","into":"Active"}"#) == UF_OK, "\(h.lastError)")
        #expect(send(h, "stop") == UF_OK)
        #expect(send(h, "play") == UF_OK)
        #expect(send(h, "pause") == UF_OK)
        #expect(send(h, "mute") == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Player"}"#) == UF_OK)

        #expect(into.list == ["transition Active.Playing"])
        #expect(intoLeaf.list == ["transition Active.Paused"])
        #expect(from.list == ["transition Stopped"])
        #expect(between.list == ["transition Active.Playing"])
        // `mute` assigns without leaving Paused: an actualization with Active active.
        #expect(actualization.list == ["actualization Active.Paused"])
        #expect(setting.list == ["transition Active.Paused", "actualization Active.Paused"])
        #expect(initialization.list == ["initialization Active.Playing"])
        #expect(deinitialization.list == ["deinitialization -"])
    }

    /// Each microstep of a macrostep is its own mutation: `always` leaving
    /// Playing is matched by a filter on what it entered.
    @Test func microstepsAreMatchedOneByOne() {
        let h = Harness(player)
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Active.Paused"}"#)
        send(h, "mute")
        let stopped = watch(h, "TransitionInto<Player.Stopped>")
        let playing = watch(h, "TransitionInto<Player.Playing>")
        #expect(send(h, "play") == UF_OK)
        #expect(playing.list == ["transition Active.Playing"])
        #expect(stopped.list == ["transition Stopped"])
    }

    /// A state exited and entered again (`reenter`) was both.
    @Test func aReenteredStateWasExitedAndEntered() {
        let h = Harness(player)
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Active.Paused"}"#)
        let into = watch(h, "TransitionInto<Player.Active>")
        let from = watch(h, "TransitionFrom<Player.Active>")
        let between = watch(h, "TransitionBetween<Player.Paused, Player.Playing>")
        #expect(send(h, "restart") == UF_OK, "\(h.lastError)")
        #expect(into.list == ["transition Active.Playing"])
        #expect(from.list == ["transition Active.Playing"])
        #expect(between.list == ["transition Active.Playing"])
    }

    /// Regions of a parallel feature: entering one leaf says nothing of the other region.
    @Test func regionsAreToldApart() {
        let h = Harness(sound)
        let audioOn = watch(h, "TransitionInto<Sound.Audio.On>")
        let videoOff = watch(h, "TransitionFrom<Sound.Video.Off>")
        let audio = watch(h, "SettingInto<Sound.Audio>")
        h.submit(#"{"kind":"initialize","feature":"Sound","into":"Audio"}"#)
        uf_send(h.d, "Sound", nil, "toggle", nil)
        uf_send(h.d, "Sound", nil, "flip", nil)
        #expect(audioOn.list == ["transition Audio.On,Video.Off"])
        #expect(videoOff.list == ["transition Audio.On,Video.On"])
        #expect(audio.list.count == 3)
    }

    @Test(arguments: [
        ("TransitionInto<Sound.On>", UF_ESCHEMA, "filter 'TransitionInto<Sound.On>': ambiguous state 'On' (Audio.On, Video.On)"),
        ("TransitionBetween<Sound.Audio.On, Sound.Off>", UF_ESCHEMA,
         "filter 'TransitionBetween<Sound.Audio.On,Sound.Off>': ambiguous state 'Off' (Audio.Off, Video.Off)"),
        ("SettingInto<Sound.Audio.Nope>", UF_ENOTFOUND, "filter 'SettingInto<Sound.Audio.Nope>': unknown state 'Audio.Nope' of feature Sound"),
        ("TransitionFrom<Sound.Nope>", UF_ENOTFOUND, "filter 'TransitionFrom<Sound.Nope>': unknown state 'Nope' of feature Sound"),
        ("TransitionInto<Player.Resume>", UF_ESCHEMA,
         "filter 'TransitionInto<Player.Resume>': Active.Resume is a history state, which is never active"),
        ("TransitionInto<Sound[k].Audio.On>", UF_ESCHEMA,
         "filter 'TransitionInto<Sound[k].Audio.On>': Sound is a single feature: it has no instances to name with [key]"),
    ])
    func badStateNamesAreRefusedAndChangeNothing(_ filter: String, _ status: Int32, _ message: String) {
        let h = Harness(player, sound)
        let freed = FreeCounter()
        let result = h.subscribe(filter, freed: freed) { _ in 0 }
        #expect(result.status == status)
        #expect(h.lastError == message)
        #expect(result.id == 0)
        #expect(freed.count == 1)
    }

    /// The same names in a binding's `when`, registered with the feature it
    /// names; the binding runs for the mutations its filter matches.
    @Test func bindingsFilterTheSameWay() {
        let h = Harness()
        let definitions = #"""
        [\#(player),
         {"feature": "Pauses", "fields": {"n": {"type": "integer", "default": 0}}, "states": {"Counting": {}},
          "bindings": [{"when": "TransitionInto<Player.Active.Paused>",
                        "then": {"submit": [{"kind": "actualize", "feature": "Pauses", "in": "Counting",
                                             "payload": {"n": {"$": {"+": [{"var": "model.Pauses.payload.n"}, 1]}}}}]}}]}]
        """#
        #expect(uf_register(h.d, definitions) == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"Pauses","into":"Counting"}"#)
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Active"}"#)
        send(h, "pause")
        send(h, "play")
        send(h, "pause")
        send(h, "stop")
        #expect(h.feature("Pauses") == #"{"state":"Counting","payload":{"n":2}}"#)
        var dot: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(h.d, nil, &dot) == UF_OK, "\(h.lastError)")
        uf_free(dot)

        let refused = #"{"feature": "B", "type": "parallel", "states": {"R": {"initial": "A", "states": {"A": {}}}, "Q": {"initial": "A", "states": {"A": {}}}}, "bindings": [{"when": "InitializationInto<B.A>", "then": {"submit": []}}]}"#
        #expect(uf_register(h.d, refused) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].bindings[0].when: filter 'InitializationInto<B.A>': ambiguous state 'A' (R.A, Q.A)")
        #expect(h.feature("B") == nil)
    }

    /// One instance of a keyed statechart, and a deferred subscription.
    @Test func keyedAndDeferredSubscriptionsFilterTheSameWay() {
        let h = Harness(#"{"feature": "Door", "instances": "keyed", "states": {"Shut": {"on": {"open": "Open.Ajar"}}, "Open": {"initial": "Ajar", "states": {"Ajar": {}}, "on": {"shut": "Shut"}}}}"#)
        let one = watch(h, "TransitionInto<Door[front].Open>")
        var deferred: [String] = []
        #expect(h.subscribeDeferred("TransitionFrom<Door.Open.Ajar>") { m in
            deferred.append(String(cString: uf_mutation_new_state(m)))
            return 0
        }.status == UF_OK)
        for key in ["front", "back"] {
            h.submit(#"{"kind":"initialize","feature":"Door","key":"\#(key)","into":"Shut"}"#)
            uf_send(h.d, "Door", key, "open", nil)
            uf_send(h.d, "Door", key, "shut", nil)
        }
        #expect(one.list == ["transition Open.Ajar"])
        #expect(h.runLoop().status == UF_OK)
        #expect(deferred == ["Shut", "Shut"])
    }

    /// A chart filter's slot, once ended, is reused by a flat filter that
    /// matches as flat filters do.
    @Test func anEndedChartFilterLeavesNothingBehind() {
        let h = Harness(player, #"{"feature": "Flat", "states": {"A": {"on": {"go": "B"}}, "B": {}}}"#)
        let chart = h.subscribe("TransitionInto<Player.Active>") { _ in 0 }
        #expect(uf_unsubscribe(h.d, chart.id) == UF_OK)
        let flat = watch(h, "TransitionInto<Flat.B>")
        h.submit(#"{"kind":"initialize","feature":"Flat","into":"A"}"#)
        uf_send(h.d, "Flat", nil, "go", nil)
        #expect(flat.list == ["transition B"])
    }

    /// Flat features: a path is refused as it was before paths, whatever the feature.
    @Test func flatFeaturesRefuseAPathAsBefore() {
        let h = Harness(#"{"feature": "Flat", "states": {"A": {"on": {"go": "B"}}, "B": {}}}"#)
        for filter in ["TransitionInto<Flat.A.B>", "TransitionInto<Nobody.A.B>"] {
            #expect(h.subscribe(filter) { _ in 0 }.status == UF_ESCHEMA)
            #expect(h.lastError == "cannot parse filter '\(filter)': expected '>' at column \(filter.count - 2), found '.'")
        }
        #expect(h.subscribe("TransitionInto<Flat.C>") { _ in 0 }.status == UF_ENOTFOUND)
        #expect(h.lastError == "filter 'TransitionInto<Flat.C>': unknown state 'C' of feature Flat")
        let binding = #"{"feature": "G", "states": {"X": {}}, "bindings": [{"when": "TransitionInto<Flat.A.B>", "then": {"submit": []}}]}"#
        #expect(uf_register(h.d, binding) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].bindings[0].when: cannot parse filter 'TransitionInto<Flat.A.B>': expected '>' at column 22, found '.'")
    }
}
