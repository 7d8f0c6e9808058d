import Foundation
import PostbackTesting
import Testing

@testable import Basics
@testable import Postbacks

@Suite struct RecordReaderTests {
    func records(_ content: [UInt8], limit: Int = RecordReader.defaultMaximumRecordBytes) throws -> [InputRecord] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reader-\(UUID().uuidString).jsonl").path
        try Data(content).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try RecordReader(path: path, maximumRecordBytes: limit)
        var out: [InputRecord] = []
        while let record = try reader.next() {
            out.append(
                InputRecord(
                    source: String(record.source.split(separator: "/").last!), bytes: record.bytes, problem: record.problem))
        }
        return out
    }

    func text(_ record: InputRecord) -> String { String(decoding: record.bytes, as: UTF8.self) }

    @Test func jsonLinesWithBlankLinesAndCRLF() throws {
        let out = try records(Array("{\"a\":1}\r\n\n  \n{\"a\":2}\n{\"a\":3}".utf8))
        #expect(out.map(text) == ["{\"a\":1}", "{\"a\":2}", "{\"a\":3}"])
        #expect(out.map { $0.source.split(separator: ":").last! } == ["1", "4", "5"])
    }

    @Test func singlePrettyPrintedDocumentIsOneRecordNamedByPath() throws {
        let out = try records(Array("{\n  \"a\": \"}\",\n  \"b\": [1, {\"c\": 2}]\n}\n".utf8))
        #expect(out.count == 1)
        #expect(!out[0].source.contains(":"))
        #expect(throws: Never.self) { try StrictJSONParser.parse(out[0].bytes) }
    }

    @Test func severalPrettyDocuments() throws {
        let out = try records(Array("{\n \"a\": 1\n}\n{\n \"a\": 2\n}\n".utf8))
        #expect(out.count == 2)
        #expect(out[1].source.hasSuffix(":4"))
    }

    @Test func tornLineIsOneMalformedRecordAndTheRestSurvive() throws {
        let out = try records(Array("{\"a\":1}\n{\"a\":\"tor\n{\"a\":3}\n".utf8))
        #expect(out.count == 3)
        #expect(text(out[2]) == "{\"a\":3}")
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(out[1].bytes) }
    }

    @Test func tornFirstLineOfJSONLinesCostsOnlyThatLine() throws {
        // The first line opens an object it never closes, so the file looks pretty-printed at first;
        // the complete objects after it must still be records of their own.
        let out = try records(Array("{\"a\":1,\n{\"a\":2}\n{\"a\":3}\n".utf8))
        #expect(out.map(text) == ["{\"a\":1,", "{\"a\":2}", "{\"a\":3}"])
        #expect(out.map { $0.source.split(separator: ":").last! } == ["1", "2", "3"])
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(out[0].bytes) }
    }

    @Test func tornFirstLineEndingInsideAStringDoesNotSwallowTheNext() throws {
        let out = try records(Array("{\"version\":\"4.\n{\"a\":2}\n{\"a\":3}\n".utf8))
        #expect(out.map(text) == ["{\"version\":\"4.", "{\"a\":2}", "{\"a\":3}"])
    }

    @Test func tornPrettyDocumentIsFollowedByTheNextDocument() throws {
        let out = try records(Array("{\n  \"a\": 1,\n{\n  \"a\": 2\n}\n".utf8))
        #expect(out.count == 2)
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(out[0].bytes) }
        #expect(out[1].source.hasSuffix(":3"))
        #expect(throws: Never.self) { try StrictJSONParser.parse(out[1].bytes) }
    }

    @Test func overlongLineIsSkippedWithoutBeingKept() throws {
        let long = Array("{\"a\":\"".utf8) + [UInt8](repeating: 0x61, count: 5000) + Array("\"}".utf8)
        let out = try records(Array("{\"a\":1}\n".utf8) + long + [0x0A] + Array("{\"a\":2}\n".utf8), limit: 1024)
        #expect(out.count == 3)
        #expect(out[1].problem?.contains("longer than the 1024-byte limit") == true)
        #expect(out[1].bytes.isEmpty)
        #expect(text(out[2]) == "{\"a\":2}")
    }

    @Test func emptyAndWhitespaceOnlyInputGiveOneProblemRecord() throws {
        for content in ["", "\n\n  \n"] {
            let out = try records(Array(content.utf8))
            #expect(out.count == 1)
            #expect(out[0].problem?.contains("empty input") == true)
        }
    }

    @Test func binaryJunkBecomesRecordsThatFailToParse() throws {
        var junk = [UInt8]()
        var random = SplitMix64(seed: 7)
        for _ in 0..<20_000 { junk.append(UInt8(truncatingIfNeeded: random.next())) }
        let out = try records(junk)
        #expect(!out.isEmpty)
        for record in out where record.problem == nil {
            #expect(throws: PostbackRejection.self) { try Postback(body: record.bytes) }
        }
    }

    @Test func missingFileIsAnIOError() {
        let missing = #expect(throws: SystemCallError.self) { try RecordReader(path: "/nonexistent/file.json") }
        #expect(missing?.errorNumber == ENOENT && missing?.operation == "open" && missing?.path == "/nonexistent/file.json")
        let directory = #expect(throws: SystemCallError.self) { try RecordReader(path: "/tmp") }
        #expect(directory?.errorNumber == EISDIR && directory?.path == "/tmp")
        // Reading a file whole refuses a directory and a file over the limit the same way, in its own words.
        let whole = #expect(throws: SystemCallError.self) { try FileBytes.read(path: "/tmp") }
        #expect(whole?.errorNumber == EISDIR && whole?.description == "/tmp: is a directory")
        let large = #expect(throws: SystemCallError.self) { try FileBytes.read(path: "/proc/self/maps", limit: 1) }
        #expect(large?.errorNumber == EFBIG && large?.description == "/proc/self/maps: larger than the 1-byte limit")
    }
}
