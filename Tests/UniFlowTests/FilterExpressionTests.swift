import Testing
@testable import UniFlow

private func expectRefused(_ text: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(throws: UniFlowError(.schema, message), sourceLocation: sourceLocation) {
        try FilterExpression.parse(text)
    }
}

@Suite struct FilterExpressionTests {
    /// Every filter form (docs/filters.md), written compactly and with blanks around every token.
    @Test(arguments: [
        ("AnyMutation", " AnyMutation\t", FilterExpression(form: .anyMutation)),
        ("AnyMutationOf<F>", "AnyMutationOf < F >", FilterExpression(form: .anyMutationOf, feature: "F")),
        ("AnyUpdateOf<F>", "AnyUpdateOf\t<\tF\t>", FilterExpression(form: .anyUpdateOf, feature: "F")),
        ("AnySettingOf<F>", " AnySettingOf< F> ", FilterExpression(form: .anySettingOf, feature: "F")),
        ("SettingInto<F.S>", "SettingInto < F . S >", FilterExpression(form: .settingInto, feature: "F", state: "S")),
        ("Initialization<F>", "Initialization <F >", FilterExpression(form: .initialization, feature: "F")),
        ("Actualization<F>", "Actualization< F>", FilterExpression(form: .actualization, feature: "F")),
        ("Transition<F>", "Transition <  F  >", FilterExpression(form: .transition, feature: "F")),
        ("Deinitialization<F>", "Deinitialization<F >", FilterExpression(form: .deinitialization, feature: "F")),
        ("InitializationInto<F.S>", "InitializationInto<F .S>", FilterExpression(form: .initializationInto, feature: "F", state: "S")),
        ("ActualizationIn<F.S>", "ActualizationIn<F. S>", FilterExpression(form: .actualizationIn, feature: "F", state: "S")),
        ("TransitionInto<F.S>", "TransitionInto <F\t.\tS>", FilterExpression(form: .transitionInto, feature: "F", state: "S")),
        ("TransitionFrom<F.S>", "TransitionFrom< F . S >", FilterExpression(form: .transitionFrom, feature: "F", state: "S")),
        ("TransitionBetween<F.A,F.B>", "TransitionBetween < F . A , F . B >",
         FilterExpression(form: .transitionBetween, feature: "F", state: "A", secondState: "B")),
        ("DeinitializationFrom<F.S>", "DeinitializationFrom<F.S> ", FilterExpression(form: .deinitializationFrom, feature: "F", state: "S")),
    ])
    func everyFormParsesWithAndWithoutBlanks(compact: String, spaced: String, expected: FilterExpression) throws {
        #expect(try FilterExpression.parse(compact) == expected)
        #expect(try FilterExpression.parse(spaced) == expected)
        #expect(expected.text == compact)
    }

    @Test func everyFormIsCovered() {
        // Keeps the table above complete when a form is added.
        #expect(FilterExpression.Form.allCases.count == 15)
    }

    @Test func realNamesParse() throws {
        #expect(try FilterExpression.parse("TransitionBetween<FileDownloading.InProgress, FileDownloading.Completed>")
                == FilterExpression(form: .transitionBetween, feature: "FileDownloading", state: "InProgress", secondState: "Completed"))
        #expect(try FilterExpression.parse("ActualizationIn<_f9._S_1>") == FilterExpression(form: .actualizationIn, feature: "_f9", state: "_S_1"))
    }

    /// A statechart's states are named by paths; what a path gave before paths
    /// is kept for a flat feature's filter, and anything wrong after its first
    /// inner dot is still refused as it was.
    @Test func statePathsParseAndKeepTheirOldRefusal() throws {
        var refusal: String?
        let parsed = try FilterExpression.parse("TransitionBetween< F . A . B , F.C.D >", pathRefusal: &refusal)
        #expect(parsed.state == "A.B")
        #expect(parsed.secondState == "C.D")
        #expect(parsed.text == "TransitionBetween<F.A.B,F.C.D>")
        #expect(refusal == "cannot parse filter 'TransitionBetween< F . A . B , F.C.D >': expected '>' at column 26, found '.'")
        refusal = nil
        _ = try FilterExpression.parse("TransitionInto<F.S>", pathRefusal: &refusal)
        #expect(refusal == nil)
        expectRefused("TransitionInto<F.S.T>>", "cannot parse filter 'TransitionInto<F.S.T>>': expected '>' at column 19, found '.'")
        expectRefused("Transition<F.S.T>", "cannot parse filter 'Transition<F.S.T>': expected '>' at column 15, found '.'")
        expectRefused("TransitionInto<F.S.>", "cannot parse filter 'TransitionInto<F.S.>': expected '>' at column 19, found '.'")
        expectRefused("TransitionBetween<F.A.B, G.C>", "cannot parse filter 'TransitionBetween<F.A.B, G.C>': expected '>' at column 22, found '.'")
    }

    @Test func namesMayHave256BytesButNotMore() throws {
        let longest = String(repeating: "n", count: 256)
        #expect(try FilterExpression.parse("Transition<\(longest)>").feature == longest)
        expectRefused("Transition<\(longest)n>", "cannot parse filter 'Transition<\(longest)n>': a name is at most 256 bytes, got 257")
    }

    @Test(arguments: [
        ("", "empty filter"),
        (" \t", "empty filter"),
        ("Foo", "unknown filter 'Foo'"),
        ("Foo<", "unknown filter 'Foo'"),
        ("anyMutation", "unknown filter 'anyMutation'"),
        ("<F>", "expected a filter name at column 1, found '<'"),
        ("AnyMutation<F>", "AnyMutation takes no argument"),
        ("AnyMutation<>", "expected a feature name at column 13, found '>'"),
        ("Transition", "Transition takes <Feature>"),
        ("Transition<F.S>", "Transition takes <Feature>"),
        ("Transition<F,G>", "Transition takes <Feature>"),
        ("SettingInto<F>", "SettingInto takes <Feature.State>"),
        ("TransitionInto<F.A, F.B>", "TransitionInto takes <Feature.State>"),
        ("TransitionBetween<F.A>", "TransitionBetween takes <Feature.From, Feature.Into>"),
        ("TransitionBetween<F.A, F>", "TransitionBetween takes <Feature.From, Feature.Into>"),
        ("TransitionBetween<F.A, F.B, F.C>", "TransitionBetween takes <Feature.From, Feature.Into>"),
        ("Transition<F", "expected '>' at the end"),
        ("Transition<", "expected a feature name at the end"),
        ("Transition<F>>", "expected the end at column 14, found '>'"),
        ("Transition<F> x", "expected the end at column 15, found 'x'"),
        ("Transition<F>\n", "expected the end at column 14, found '\n'"),
        ("Transition<a-b>", "expected '>' at column 13, found '-'"),
        ("Transition<1F>", "expected a feature name at column 12, found '1'"),
        ("Transition<Fé>", "expected '>' at column 13, found 'é'"),
        ("TransitionInto<F.>", "expected a state name at column 18, found '>'"),
        ("TransitionInto<F..S>", "expected a state name at column 18, found '.'"),
        ("Transition Into<F.S>", "expected the end at column 12, found 'I'"),
    ])
    func whatDoesNotParseIsRefusedQuotingTheFilter(text: String, reason: String) {
        expectRefused(text, "cannot parse filter '\(text)': \(reason)")
    }

    @Test func transitionBetweenMustNameOneFeature() {
        expectRefused("TransitionBetween<F.A, G.B>",
                      "filter 'TransitionBetween<F.A, G.B>': TransitionBetween must name one feature, not F and G")
    }
}
