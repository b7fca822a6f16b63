import Glibc

/// An append-only file of JSON lines: a header per registration, then every
/// applied mutation (SPEC 10). A line counts only once its newline is written,
/// so a crash can leave at most one torn last line, which opening cuts off.
final class Journal {
    let path: String
    private let fd: Int32
    private let sync: Bool

    init(path: String, sync: Bool) throws(UniFlowError) {
        self.path = path
        self.sync = sync
        fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw UniFlowError(.io, "cannot open journal '\(path)': \(String(cString: strerror(errno)))")
        }
        try cutTornLine()
    }

    deinit { close(fd) }

    /// Drops a last line without its newline, left by a crash mid-write.
    private func cutTornLine() throws(UniFlowError) {
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return }
        var keep = size
        var byte: UInt8 = 0
        while keep > 0 {
            guard pread(fd, &byte, 1, keep - 1) == 1 else { break }
            if byte == UInt8(ascii: "\n") { break }
            keep -= 1
        }
        if keep != size && ftruncate(fd, keep) != 0 {
            throw UniFlowError(.io, "cannot repair journal '\(path)': \(String(cString: strerror(errno)))")
        }
    }

    /// Writes one line, whole, then flushes it to the OS (and to disk with `journal_sync`).
    func append(_ line: JSONValue) {
        var text = line.jsonText
        text.append("\n")
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
        if sync { fsync(fd) }
        bytes.removeAll()
    }
}

extension Dispatcher {
    /// A 64-bit FNV-1a fingerprint of the registered definitions' JSON, in
    /// registration order: equal definitions give equal fingerprints.
    func definitionsFingerprint() -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for feature in definitions.indices {
            for byte in definitions.source(feature).utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            hash = (hash ^ 0x0A) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
