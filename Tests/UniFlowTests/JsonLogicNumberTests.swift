import Testing
@testable import UniFlow

/// JavaScript's number ⇄ string conversions, which `cat`, `var` paths, `+` and
/// the comparisons depend on. Expected texts are what node prints.
@Suite struct JsonLogicNumbers {
    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (1.0, "1"), (-1.5, "-1.5"), (0.1 + 0.2, "0.30000000000000004"),
        (100.0, "100"), (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e21, "1.5e+21"),
        (123456789012345680000.0, "123456789012345680000"), (1e-6, "0.000001"), (1.5e-6, "0.0000015"),
        (1e-7, "1e-7"), (1.25e-7, "1.25e-7"), (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9007199254740993.0, "9007199254740992"), (0.000123, "0.000123"), (4.35, "4.35"), (1e16, "10000000000000000"),
        (Double.nan, "NaN"), (Double.infinity, "Infinity"), (-Double.infinity, "-Infinity"),
    ])
    func givenADouble_whenWrittenAsJavaScriptWould_thenNumberToString(_ value: Double, _ text: String) {
        #expect(JsonLogic.JSNumber.format(value) == text)
    }

    @Test(arguments: [
        ("", 0.0), ("  ", 0), (" 12 ", 12), ("\u{A0}\n7\u{3000}", 7), ("0x10", 16), ("0X1f", 31), ("0o17", 15),
        ("0b101", 5), ("1e3", 1000), ("-1.5E-1", -0.15), (".5", 0.5), ("5.", 5), ("+5", 5), ("00012", 12),
        ("Infinity", .infinity), ("-Infinity", -.infinity), ("1e400", .infinity),
        ("0x1fffffffffffffffff", 590295810358705651712), ("0x20000000000001", 9007199254740992),
        ("0x20000000000003", 9007199254740996),
    ])
    func givenANumericString_whenConverted_thenNumberOfIt(_ text: String, _ value: Double) {
        #expect(JsonLogic.JSNumber.parse(text) == value)
    }

    @Test(arguments: ["abc", "12px", "1e", ".", "-", "+-1", "-0x10", "0x", "0xg", "0b2", "1_000", "inf", "nan",
                      "infinity", "1 2", "\u{180E}1"])
    func givenANonNumericString_whenConverted_thenNaN(_ text: String) {
        #expect(JsonLogic.JSNumber.parse(text).isNaN)
    }

    @Test(arguments: [
        ("12px", 12.0), ("  -.5e1x", -5), ("1e", 1), ("1e+", 1), ("0x10", 0), ("1.2.3", 1.2), ("Infinityx", .infinity),
        ("-0", -0.0), ("\u{2028}3", 3),
    ])
    func givenAString_whenParsedAsFloat_thenTheLongestNumericPrefix(_ text: String, _ value: Double) {
        let parsed = JsonLogic.JSNumber.parseFloat(text)
        #expect(parsed == value && parsed.sign == value.sign)
    }

    @Test(arguments: ["", "abc", ".", "-", "e5", "x1"])
    func givenNoNumericPrefix_whenParsedAsFloat_thenNaN(_ text: String) {
        #expect(JsonLogic.JSNumber.parseFloat(text).isNaN)
    }
}
