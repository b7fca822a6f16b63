/// A mutation filter as written (`TransitionBetween<F.A, F.B>`), names not yet
/// resolved against the registry (`docs/filters.md`).
struct FilterExpression: Equatable, Sendable {
    enum Form: String, Sendable, CaseIterable {
        case anyMutation = "AnyMutation"
        case anyMutationOf = "AnyMutationOf"
        case anyUpdateOf = "AnyUpdateOf"
        case anySettingOf = "AnySettingOf"
        case settingInto = "SettingInto"
        case initialization = "Initialization"
        case actualization = "Actualization"
        case transition = "Transition"
        case deinitialization = "Deinitialization"
        case initializationInto = "InitializationInto"
        case actualizationIn = "ActualizationIn"
        case transitionInto = "TransitionInto"
        case transitionFrom = "TransitionFrom"
        case transitionBetween = "TransitionBetween"
        case deinitializationFrom = "DeinitializationFrom"
    }

    var form: Form
    /// nil only for `AnyMutation`.
    var feature: String?
    /// The state of `…Into`, `…In`, `…From` forms; the `A` of `TransitionBetween`.
    var state: String?
    /// The `B` of `TransitionBetween`.
    var secondState: String?
    /// `F[key]`: one instance of a keyed feature.
    var key: String?

    init(form: Form, feature: String? = nil, state: String? = nil, secondState: String? = nil, key: String? = nil) {
        self.form = form
        self.feature = feature
        self.state = state
        self.secondState = secondState
        self.key = key
    }

    /// The canonical spelling, without blanks (`TransitionBetween<F.A,F.B>`, `Transition<F[k]>`).
    var text: String {
        let f = feature.map { name in key.map { "\(name)[\($0)]" } ?? name }
        switch (f, state, secondState) {
        case (nil, _, _): return form.rawValue
        case (let f?, nil, _): return "\(form.rawValue)<\(f)>"
        case (let f?, let s?, nil): return "\(form.rawValue)<\(f).\(s)>"
        case (let f?, let a?, let b?): return "\(form.rawValue)<\(f).\(a),\(f).\(b)>"
        }
    }
}
