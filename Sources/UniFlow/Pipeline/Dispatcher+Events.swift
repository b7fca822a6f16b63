/// The target a send takes (`docs/events.md`).
struct EventChoice {
    var into: Int32
    /// An actualization of the current state rather than a transition.
    var actualize: Bool
    /// The new state's payload, checked (nil: `{}`).
    var payload: JSONObject?
}

/// Events: a send names an event, and the definition chooses the next state.
extension Dispatcher {
    /// Tries the targets of the send's event in order (the current state's `on`,
    /// then the feature's own, passing over feature-level targets `transitions`
    /// does not allow) and returns the first one taken, with its payload. No
    /// target: `UF_REJECTED` naming the state and the event. A guard's rule error
    /// is `UF_ESCHEMA`, a failing handler `UF_ECALLBACK`, a payload that does not
    /// fit `UF_ESCHEMA`: the send fails and nothing changes.
    func chooseTarget(_ action: ActionHeader, place: Place, current: Int32,
                      eventPayload: JSONObject) -> Result<EventChoice, UniFlowError> {
        let feature = hot.features[Int(action.feature)]
        // The state's own list first, then the feature's (two passes, not an array:
        // a send must cost little more than the transition it becomes).
        let stateList = stateSlot(current, of: feature).events
        var data: JSValue? = nil
        for pass in 0..<2 {
            let list = pass == 0 ? stateList : feature.events
            for t in hot.targets(of: action.event, in: list) {
                let slot = hot.eventTargets[t]
                if slot.declaredIn < 0 && !(slot.actualize && slot.into == current)
                    && !hot.allowsTransition(feature, from: current, into: slot.into) {
                    continue
                }
                let target = eventTarget(slot, of: action.feature)
                // Made once, and only for what needs it: a guard the shortcut cannot
                // decide, a handler, a template.
                func ruleData() -> JSValue {
                    if let data { return data }
                    let made = guardData(action, place: place, current: current, eventPayload: eventPayload)
                    data = made
                    return made
                }
                do throws(UniFlowError) {
                    if target.call == nil, let shortcut = target.shortcut,
                       let answer = shortcut.decide(eventPayload: eventPayload, featurePayload: storedPayload(at: place)) {
                        if !answer { continue }
                    } else if let rule = target.compiledRule {
                        let result: JSONValue
                        do throws(UniFlowError) {
                            result = try rule.apply(data: ruleData())
                        } catch {
                            throw UniFlowError(.schema, "\(subject(action)): event '\(eventName(action))': rule error: \(error.message)")
                        }
                        if !isTruthy(result) { continue }
                    }
                    if let call = target.call {
                        // A handler is given the data as JSON: the model built whole.
                        let given = (try? ruleData().jsonValue()) ?? .null
                        let result = callHandler(call, mutation: "null", given: given, inGiven: false)
                        if result.status < 0 {
                            throw UniFlowError(.callback, "\(subject(action)): event '\(eventName(action))': handler '\(call)' failed (returned \(result.status))")
                        }
                        if result.status == 0 { continue }
                    }
                    let actualize = slot.actualize && slot.into == current
                    let payload = try targetPayload(target, into: slot.into, action: action, place: place,
                                                    eventPayload: eventPayload,
                                                    data: target.compiledPayload != nil ? ruleData() : nil)
                    return .success(EventChoice(into: slot.into, actualize: actualize, payload: payload))
                } catch {
                    return .failure(error)
                }
            }
        }
        return .failure(UniFlowError(.rejected, "\(subject(action)) in state \(stateName(current, feature: action.feature)) has no transition for event '\(eventName(action))'"))
    }

    private func eventName(_ action: ActionHeader) -> String {
        action.eventName.map { String(cString: $0) } ?? ""
    }

    /// The declaration of a target (features with events keep their definitions).
    private func eventTarget(_ slot: EventTargetSlot, of feature: Int32) -> EventTarget {
        let definition = definitions[Int(feature)]
        let events = slot.declaredIn < 0 ? definition.events : definition.states[Int(slot.declaredIn)].events
        return events[Int(slot.list)].targets[Int(slot.item)]
    }

    /// What guards and templates read: `{"model", "event": {"name", "payload"},
    /// "feature": {"state", "payload", "key"}}` (the model made as far as read).
    private func guardData(_ action: ActionHeader, place: Place, current: Int32, eventPayload: JSONObject) -> JSValue {
        var feature: JSONObject = ["state": .string(stateName(current, feature: action.feature)),
                                   "payload": .object(payload(at: place))]
        if let key = action.key { feature["key"] = .string(String(cString: key)) }
        return ruleData(["model": lazyModel(),
                         "event": JSValue(wrapping: ["name": .string(eventName(action)), "payload": .object(eventPayload)]),
                         "feature": JSValue(wrapping: .object(feature))])
    }

    /// The taken target's payload: its template evaluated, or else each field of
    /// the new state carried forward from the event's payload, else from the
    /// current payload, else left to its default; then checked like any payload.
    private func targetPayload(_ target: EventTarget, into: Int32, action: ActionHeader, place: Place,
                               eventPayload: JSONObject, data: JSValue?) throws(UniFlowError) -> JSONObject? {
        let state = stateDefinition(into, of: action.feature)
        let given: JSONObject
        if let template = target.compiledPayload {
            let value: JSONValue
            do throws(UniFlowError) {
                value = try template.substitute(data: data ?? .null)
            } catch {
                throw UniFlowError(.schema, "\(subject(action)): event '\(eventName(action))': rule error: \(error.message)")
            }
            guard let object = value.objectValue else {
                throw UniFlowError(.schema, "\(subject(action)): event '\(eventName(action))': payload: expected object, got \(value.jsonTypeName)")
            }
            given = object
        } else {
            guard !state.fields.isEmpty else { return nil }
            let current = storedPayload(at: place)
            var carried: [(key: String, value: JSONValue)] = []
            for field in state.fields {
                if let value = eventPayload[field.name] ?? current?[field.name] { carried.append((field.name, value)) }
            }
            given = JSONObject(carried)
        }
        let checked = try state.checkPayload(given, feature: featureName(action.feature))
        return checked.isEmpty ? nil : checked
    }
}
