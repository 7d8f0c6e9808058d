import Foundation
import Testing

@testable import Basics
@testable import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct DurableFileTests {
    @Test func writesAtomicallyThroughAHiddenTemporaryAndCleansStaleOnes() throws {
        let directory = NSTemporaryDirectory() + "durable-\(UUID().uuidString)"
        try DurableFile.makeDirectories(directory + "/a/b")
        let path = directory + "/a/b/out.csv"
        let temporary = DurableFile.temporaryPath(for: path)
        #expect(temporary.hasPrefix(directory + "/a/b/.out.csv.tmp-"), "hidden, next to the target")
        try DurableFile.write(Array("first".utf8), to: path)
        try DurableFile.write(Array("second".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second")
        #expect(!FileManager.default.fileExists(atPath: temporary))

        _ = FileManager.default.createFile(atPath: directory + "/a/b/.out.csv.tmp-99999", contents: Data("partial".utf8))
        _ = FileManager.default.createFile(atPath: directory + "/a/b/.other.csv.tmp-99999", contents: Data("keep".utf8))
        DurableFile.removeStaleTemporaries(for: path)
        #expect(!FileManager.default.fileExists(atPath: directory + "/a/b/.out.csv.tmp-99999"))
        #expect(FileManager.default.fileExists(atPath: directory + "/a/b/.other.csv.tmp-99999"))
        #expect(throws: DurableFile.WriteError.self) { try DurableFile.write([1], to: directory + "/missing/x") }
    }

    /// A torn last line (no newline, or NUL bytes where a page was lost) is cut before the next
    /// append, whatever its length; complete lines before it stay.
    @Test func cutTornLineLeavesOnlyCompleteLines() throws {
        let directory = NSTemporaryDirectory() + "durable-\(UUID().uuidString)"
        try DurableFile.makeDirectories(directory)
        let cases: [(content: String, kept: String)] = [
            ("", ""),
            ("one\ntwo\n", "one\ntwo\n"),
            ("one\ntw", "one\n"),
            ("no newline at all", ""),
            ("one\n" + String(repeating: "x", count: 10_000), "one\n"),  // a tail longer than one read
            ("one\n\0\0\0\0", "one\n"),  // zeros a power cut left
            ("one\n\0\0two\n", "one\n"),  // a complete last line whose first page was lost
            ("one\ntw\0\0o\n", "one\n"),  // … or a page in its middle
            ("\0\0\0\n", ""),
            (String(repeating: "\0", count: 5000) + "end\n", ""),  // a last line longer than one read
            ("\0\0x\none\n", "\0\0x\none\n"),  // only the last line can be unsynced: the rest is left
            (
                String(repeating: "y", count: 5000) + "\n" + String(repeating: "z", count: 4095),
                String(repeating: "y", count: 5000) + "\n"
            ),
        ]
        for (number, item) in cases.enumerated() {
            let path = "\(directory)/\(number).jsonl"
            _ = FileManager.default.createFile(atPath: path, contents: Data(item.content.utf8))
            let fd = open(path, O_RDWR | O_APPEND)
            #expect(fd >= 0)
            defer { close(fd) }
            let cut = try DurableFile.cutTornLine(fd, path: path)
            #expect(cut == item.content.utf8.count - item.kept.utf8.count, "case \(number)")
            try FileDescriptorIO.writeAll(Array("next\n".utf8), to: fd, path: path)
            #expect(try String(contentsOfFile: path, encoding: .utf8) == item.kept + "next\n", "case \(number)")
        }
    }
}
