import Foundation
import Testing

@testable import Basics
@testable import Postbacks

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
}
