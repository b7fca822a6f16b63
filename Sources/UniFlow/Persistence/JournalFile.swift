import Glibc

/// The journal file (option `journal`), the `MutationLog` a journaling
/// dispatcher writes to: an append-only file of JSON lines, a header per
/// registration, then every applied mutation (`docs/journal.md`). A line counts only once its newline is written,
/// so a crash can leave at most one torn last line, which opening cuts off.
///
/// Each dispatcher that opens the file is a session with an id of its own, named
/// in its header lines: a session starts from an empty model, so replay starts
/// over where a new session begins (and a dispatcher replaying the file it
/// journals to stops where its own session begins).
final class JournalFile: MutationLog {
    let path: String
    /// This session's id: 16 hex digits from the kernel's random source.
    let session: String
    private let fd: Int32
    private let sync: Bool
    /// Where the next line starts (one writer: this dispatcher): the end of the
    /// last whole line written.
    private var end: Int = 0
    /// A failed append left bytes past `end` that it could not cut off.
    private var untrimmed = false

    init(path: String, sync: Bool) throws(UniFlowError) {
        self.path = path
        self.sync = sync
        var bits: UInt64 = 0
        let random = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        let got = random >= 0 ? read(random, &bits, MemoryLayout<UInt64>.size) : -1
        if random >= 0 { close(random) }
        if got != MemoryLayout<UInt64>.size {
            // No entropy source: time and process still tell sessions apart.
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            bits = UInt64(bitPattern: Int64(now.tv_sec)) &* 1_000_000_007 ^ UInt64(now.tv_nsec) ^ UInt64(getpid()) << 40
        }
        let hex = String(bits, radix: 16)
        session = String(repeating: "0", count: 16 - hex.count) + hex
        fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw UniFlowError(.io, "cannot open journal '\(path)': \(String(cString: strerror(errno)))")
        }
        try cutTornLine()
        end = lseek(fd, 0, SEEK_END)
    }

    deinit {
        // A line that was refused but could not be cut off goes now if it can: the
        // next session would otherwise start after it, and a replay apply it.
        if untrimmed { _ = ftruncate(fd, end) }
        close(fd)
    }

    /// Drops a last line without its newline, left by a crash mid-write.
    private func cutTornLine() throws(UniFlowError) {
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return }
        // Backwards a block at a time: a torn line may be megabytes long.
        var keep = size
        var block = [UInt8](repeating: 0, count: 65536)
        search: while keep > 0 {
            let start = max(0, keep - off_t(block.count))
            let count = Int(keep - start)
            let read = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, start) }
            // Appending after a torn line that was not found would spoil the journal.
            guard read == count else {
                throw UniFlowError(.io, "cannot repair journal '\(path)': \(read < 0 ? String(cString: strerror(errno)) : "it changed while being read")")
            }
            for i in stride(from: count - 1, through: 0, by: -1) where block[i] == UInt8(ascii: "\n") {
                keep = start + off_t(i) + 1
                break search
            }
            keep = start
        }
        if keep != size && ftruncate(fd, keep) != 0 {
            throw UniFlowError(.io, "cannot repair journal '\(path)': \(String(cString: strerror(errno)))")
        }
    }

    /// Writes the lines, whole, then flushes them to the OS (and to disk with
    /// `journal_sync`). The journal is written ahead: lines that cannot all be
    /// written (a full disk) are cut off again and the caller does not apply
    /// what they describe. (A crash in the middle can leave the first of several
    /// lines; the core hands over one line at a time today.)
    func accept(_ lines: [JSONValue]) throws(UniFlowError) {
        // What a failed append could not cut off goes before anything is added
        // after it: a line glued to a torn one would spoil the journal for good.
        if untrimmed {
            guard ftruncate(fd, end) == 0 else {
                throw UniFlowError(.io, "cannot repair journal '\(path)': \(String(cString: strerror(errno)))")
            }
            untrimmed = false
        }
        var bytes: [UInt8] = []
        for line in lines {
            bytes += line.jsonText.utf8
            bytes.append(UInt8(ascii: "\n"))
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw cutOff(UniFlowError(.io, "cannot write journal '\(path)': \(String(cString: strerror(errno)))"))
            }
            offset += n
        }
        if sync && fsync(fd) != 0 {
            // Not known to be on disk: the caller does not apply it, so it must
            // not be in the file for a replay to apply either.
            throw cutOff(UniFlowError(.io, "cannot sync journal '\(path)': \(String(cString: strerror(errno)))"))
        }
        end += bytes.count
    }

    /// Cuts what a failed append wrote back to the journal's last whole line
    /// (`end`), or leaves that to the next append; returns `failure`.
    private func cutOff(_ failure: UniFlowError) -> UniFlowError {
        if ftruncate(fd, end) != 0 { untrimmed = true }
        return failure
    }
}
