import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Errors in files name the file first, whatever the error: unreadable, not
/// UTF-8, not JSON (docs/definitions.md, "JSON input, everywhere"; docs/journal.md).
@Suite struct FileInput {

    @Test func aDefinitionFileThatIsNotUTF8NamesTheFileLineAndColumn() {
        let path = temporaryPath("latin1", extension: "json")
        defer { unlink(path) }
        writeAll(path, Array(#"{"feature":"Caf"#.utf8) + [0xE9] + Array(#"","states":{"A":{}}}"#.utf8))
        let h = Harness()
        #expect(uf_register_file(h.d, path) == UF_EJSON)
        #expect(h.lastError == "\(path): line 1, column 16: invalid UTF-8")
        #expect(uf_register_file(h.d, path + ".missing") == UF_EIO)
        #expect(h.lastError == "cannot read '\(path).missing': No such file or directory")
    }

    @Test func aJournalLineThatIsNotUTF8NamesTheJournal() throws {
        let path = temporaryPath("journal")
        defer { unlink(path) }
        do {
            let writer = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.toggle)
            writer.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        }
        var bytes = try #require(readAll(path))
        bytes += Array(#"{"seq":2,"feature":"Toggle","kind":"transition","state":"Off","payload":{"x":""#.utf8) + [0xFF] + Array(#""}}"#.utf8) + [10]
        writeAll(path, bytes)
        let reader = Harness(Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_EJSON)
        #expect(reader.lastError.hasPrefix("\(path): line 3, column "))
        #expect(reader.lastError.hasSuffix(": invalid UTF-8"))
        #expect(reader.state == "{}")
    }

    /// A directory opens but does not read: `EISDIR`, named with the path, for
    /// definitions and journals alike.
    @Test func aDirectoryIsNotAFileToRead() {
        let path = temporaryPath("directory", extension: "d")
        #expect(mkdir(path, 0o700) == 0)
        defer { rmdir(path) }
        let h = Harness(Seeds.toggle)
        #expect(uf_register_file(h.d, path) == UF_EIO)
        #expect(h.lastStatus == UF_EIO)
        #expect(h.lastError == "cannot read '\(path)': Is a directory")
        #expect(uf_replay_file(h.d, path) == UF_EIO)
        #expect(h.lastError == "cannot read '\(path)': Is a directory")
        #expect(h.state == "{}")
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(h.d, &out) == UF_OK)
        #expect(String(cString: out!) == #"{"features":[{"feature":"Toggle","states":{"Off":{},"On":{}}}]}"#)
        uf_free(out)
    }
}
