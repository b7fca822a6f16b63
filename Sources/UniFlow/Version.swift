/// The library's version; kept equal to `UNIFLOW_VERSION` in `uniflow.h` (a test checks).
public enum Version {
    public static let text = "0.1.0"
    public static let number: Int32 = 1000
}
