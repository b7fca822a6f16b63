/// A mutation filter as written (`TransitionBetween<F.A, F.B>`), names not yet
/// resolved against the registry (SPEC 4.5).
public struct FilterExpression: Equatable, Sendable {
    public enum Form: String, Sendable, CaseIterable {
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

    public var form: Form
    /// nil only for `AnyMutation`.
    public var feature: String?
    /// The state of `…Into`, `…In`, `…From` forms; the `A` of `TransitionBetween`.
    public var state: String?
    /// The `B` of `TransitionBetween`.
    public var secondState: String?

    public init(form: Form, feature: String? = nil, state: String? = nil, secondState: String? = nil) {
        self.form = form
        self.feature = feature
        self.state = state
        self.secondState = secondState
    }

    /// The canonical spelling, without blanks (`TransitionBetween<F.A,F.B>`).
    public var text: String {
        switch (feature, state, secondState) {
        case (nil, _, _): form.rawValue
        case (let f?, nil, _): "\(form.rawValue)<\(f)>"
        case (let f?, let s?, nil): "\(form.rawValue)<\(f).\(s)>"
        case (let f?, let a?, let b?): "\(form.rawValue)<\(f).\(a),\(f).\(b)>"
        }
    }
}
