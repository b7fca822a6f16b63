import Glibc

/// Reads whole files without Foundation.
enum FileReader {
    /// The file's bytes as a NUL-terminated buffer for the JSON parser; `UF_EIO` naming the path otherwise.
    static func read(_ path: UnsafePointer<CChar>) throws(UniFlowError) -> String {
        try text(bytes(path), path: path)
    }

    /// The bytes as text, if they are UTF-8; `UF_EJSON` naming the path and the
    /// place otherwise.
    static func text(_ bytes: [UInt8], path: UnsafePointer<CChar>) throws(UniFlowError) -> String {
        // Invalid UTF-8 must reach jansson unchanged so it is refused as JSON,
        // not repaired: keep the bytes, not a decoded String.
        try checkUTF8(bytes, path: path)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `UF_EJSON` naming the path and the place, unless the bytes are UTF-8.
    static func checkUTF8(_ bytes: [UInt8], path: UnsafePointer<CChar>) throws(UniFlowError) {
        if let invalid = validateUTF8(bytes) { throw invalid.prefixed(String(cString: path)) }
    }

    /// The file's bytes; `UF_EIO` naming the path otherwise.
    static func bytes(_ path: UnsafePointer<CChar>) throws(UniFlowError) -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw UniFlowError(.io, "cannot read '\(String(cString: path))': \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
            if n < chunk.count {
                if ferror(file) != 0 {
                    throw UniFlowError(.io, "cannot read '\(String(cString: path))': \(String(cString: strerror(errno)))")
                }
                break
            }
        }
        return bytes
    }

    private static func validateUTF8(_ bytes: [UInt8]) -> UniFlowError? {
        var line = 1, column = 0
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                if scalar == "\n" { line += 1; column = 0 } else { column += 1 }
            case .emptyInput: return nil
            case .error: return UniFlowError(.invalidJSON, "line \(line), column \(column + 1): invalid UTF-8")
            }
        }
    }
}
