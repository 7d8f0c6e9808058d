import Foundation
import Postbacks
import Testing

@testable import Basics
@testable import PostbackStore

@Suite struct SpoolFormatTests {
    static let skanBody = Array(
        #"{"version":"4.0","ad-network-id":"com.example","source-identifier":"5239","app-id":525463029,"transaction-id":"6aafb7a5-0170-41b5-bbe4-fe71dedf1e30","redownload":false,"source-domain":"example.com","fidelity-type":1,"did-win":true,"conversion-value":63,"postback-sequence-index":0,"attribution-signature":"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="}"#
            .utf8)

    @Test func timestampsAreWrittenInTheFixedFormatAndReadBack() throws {
        let known: [(Int64, String)] = [
            (0, "1970-01-01T00:00:00.000000Z"),
            (951_782_400_123_456, "2000-02-29T00:00:00.123456Z"),
            (1_767_225_599_999_999, "2025-12-31T23:59:59.999999Z"),
            (1_764_681_255_000_001, "2025-12-02T13:14:15.000001Z"),
        ]
        for (micros, text) in known {
            #expect(UTCTimestamp(microsecondsSinceEpoch: micros).description == text)
        }
        // Any instant from 1970 to 2100 reads back as itself; Foundation agrees on the second.
        var random = SystemRandomNumberGenerator()
        let formatter = ISO8601DateFormatter()
        for _ in 0..<5_000 {
            let micros = Int64.random(in: 0..<4_102_444_800_000_000, using: &random)
            let text = UTCTimestamp(microsecondsSinceEpoch: micros).description
            #expect(text.utf8.count == 27)
            #expect(UTCTimestamp(iso8601: text)?.microsecondsSinceEpoch == micros, "\(text)")
            let whole = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(micros / 1_000_000)))
            #expect(String(text.prefix(19)) + "Z" == whole, "\(text) vs \(whole)")
        }
    }

    @Test func verifiedRecordRoundTrips() throws {
        let result = PostbackVerifier().verify(body: Self.skanBody)
        #expect(result.isVerified)
        let record = SpoolRecord(
            receivedAt: UTCTimestamp(microsecondsSinceEpoch: 1_764_681_255_123_456), writer: "rx-1",
            route: "skadnetwork-developer-copy", result: result, body: Self.skanBody)
        let line = record.encoded()
        #expect(line.last == 0x0A)
        #expect(line.filter { $0 == 0x0A }.count == 1)
        let decoded = try SpoolRecord(line: Array(line.dropLast()))
        #expect(decoded == record)
        #expect(decoded.body == Self.skanBody, "the body is kept byte for byte")
        #expect(decoded.attribution?.sourceIdentifier == "5239")
        #expect(decoded.attribution?.fineValue == 63)
        #expect(decoded.attribution?.interaction == .click)
        #expect(String(decoding: line, as: UTF8.self).hasPrefix(#"{"format":2,"received_at":"2025-12-02T13:14:15.123456Z","#))
        #expect(!String(decoding: line, as: UTF8.self).contains("\"flags\""), "flags are written only when there are some")
    }

    // Format 1 records (before flags): `StoredRecordFixtureTests` reads the ones a format 1 receiver
    // wrote (Tests/Fixtures/stores/), not a line made by today's writer.

    @Test func flagsAndQuarantineRoundTripAndNewerFormatsAreRefused() throws {
        var body = try JSONSerialization.jsonObject(with: Data(Self.skanBody)) as! [String: Any]
        body["country-code"] = "usa"
        body["coarse-conversion-value"] = "LOW"
        body["conversion-value"] = nil
        let edited = Array(try JSONSerialization.data(withJSONObject: body))
        let result = PostbackVerifier().verify(body: edited)
        #expect(result.isVerified)
        let record = SpoolRecord(receivedAt: .now(), writer: "rx-1", route: "ad-network", result: result, body: edited)
        #expect(record.flags.count == 2)
        let line = Array(record.encoded().dropLast())
        #expect(try SpoolRecord(line: line) == record)
        let newer = String(decoding: line, as: UTF8.self).replacingOccurrences(of: #"{"format":2,"#, with: #"{"format":3,"#)
        let refused = #expect(throws: StoredFormError.self) { try SpoolRecord(line: Array(newer.utf8)) }
        #expect(refused?.code == .newerFormat && refused?.member == "format")
        do { _ = try SpoolRecord(line: Array(newer.utf8)) } catch {
            #expect(error.description.contains("newer than this release"))
        }
    }

    @Test func binaryBodyIsKeptAsBase64() throws {
        let body: [UInt8] = [0xFF, 0xFE, 0x00, 0x7B]
        let record = SpoolRecord(
            receivedAt: .now(), writer: "w", route: "ad-network",
            result: PostbackVerifier().verify(body: body), body: body)
        #expect(record.status == .malformed)
        let text = String(decoding: record.encoded(), as: UTF8.self)
        #expect(text.contains("\"body_base64\":\"//4Aew==\""))
        #expect(try SpoolRecord(line: Array(record.encoded().dropLast())).body == body)
    }

    @Test func rejectedRecordWithClientAndReducedBodyRoundTrips() throws {
        let body = Array(#"{"version":"4.0","pad":"xxxxxxxx"}"#.utf8)
        var record = SpoolRecord(
            receivedAt: .now(), writer: "w", route: "skadnetwork-developer-copy",
            result: PostbackVerifier().verify(body: body), body: Array(body.prefix(10)))
        record.client = "2001:db8::1"
        record.bodyReduction = .init(kept: .prefix, sha256: String(repeating: "ab", count: 32), byteCount: body.count)
        let text = String(decoding: record.encoded(), as: UTF8.self)
        #expect(text.contains(#""client":"2001:db8::1""#) && text.contains(#""body_kept":"prefix""#))
        #expect(try SpoolRecord(line: Array(record.encoded().dropLast())) == record)
        record.bodyReduction = .init(kept: .none, sha256: String(repeating: "cd", count: 32), byteCount: body.count)
        record.body = []
        #expect(try SpoolRecord(line: Array(record.encoded().dropLast())) == record)
    }

    @Test func timestampsAndDaysRoundTrip() {
        for micros: Int64 in [0, 951_782_400_000_000, 1_764_681_255_123_456, -1, 4_102_444_799_999_999] {
            let stamp = UTCTimestamp(microsecondsSinceEpoch: micros)
            #expect(UTCTimestamp(iso8601: stamp.description) == stamp, "\(stamp)")
        }
        #expect(UTCTimestamp(microsecondsSinceEpoch: 951_782_400_000_000).description == "2000-02-29T00:00:00.000000Z")
        #expect(UTCDay("2028-02-29")?.description == "2028-02-29")
        #expect(UTCDay("2027-02-29") == nil)
        #expect(UTCDay("2026-13-01") == nil)
        #expect(UTCDay("2026-12-31")!.adding(days: 1).description == "2027-01-01")
    }

    @Test func segmentNamesSortAndParse() {
        #expect(StoreLayout.segmentName(writer: "rx-1", sequence: 7) == "part-rx-1-000007.jsonl")
        #expect(StoreLayout.parseSegmentName("part-rx-1-000007.jsonl")! == ("rx-1", 7))
        #expect(StoreLayout.parseSegmentName("part-rx-1-000007.jsonl.tmp") == nil)
        #expect(StoreLayout.parseSegmentName("part-../x-000001.jsonl") == nil)
        #expect(!StoreLayout.isValidWriterID("../etc"))
        #expect(!StoreLayout.isValidWriterID(""))
        #expect(StoreLayout.isValidWriterID("host-7.a_b"))
    }

    @Test func segmentReaderSkipsATornTailAndReportsCorruption() throws {
        let result = PostbackVerifier().verify(body: Self.skanBody)
        let record = SpoolRecord(receivedAt: .now(), writer: "w", route: "r", result: result, body: Self.skanBody)
        let good = record.encoded()
        let path = NSTemporaryDirectory() + "segment-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var content = good + Array("{\"not\":\"a record\"}\n".utf8) + good + Array(good.prefix(good.count / 2))
        try Data(content).write(to: URL(fileURLWithPath: path))
        var kinds: [String] = []
        let reader = try SegmentReader(path: path)
        while let entry = try reader.next() {
            switch entry {
            case .record(let decoded, _): kinds.append(decoded == record ? "record" : "different")
            case .corrupt(let line, _): kinds.append("corrupt:\(line)")
            case .tornTail(let line, _): kinds.append("torn:\(line)")
            }
        }
        #expect(kinds == ["record", "corrupt:2", "record", "torn:4"])

        // A complete-looking but cut final line (ends in a newline at a bad place) is also a torn tail.
        content = good + Array(good.prefix(40)) + [0x0A]
        try Data(content).write(to: URL(fileURLWithPath: path))
        let again = try SegmentReader(path: path)
        _ = try again.next()
        guard case .tornTail(let line, _)? = try again.next() else {
            Issue.record("expected a torn tail")
            return
        }
        #expect(line == 2)
    }

    /// A power cut can keep a later page of an unsynced write without an earlier one, which reads
    /// back as zeros (issue 28): such a line is torn wherever it is, never corrupt; a line that is
    /// not a record and has no NUL byte stays corrupt.
    @Test func zerosAPowerCutLeftAreTornWhereverTheyAre() throws {
        let result = PostbackVerifier().verify(body: Self.skanBody)
        let good = SpoolRecord(receivedAt: .now(), writer: "w", route: "r", result: result, body: Self.skanBody).encoded()
        let path = NSTemporaryDirectory() + "segment-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let zeros = [UInt8](repeating: 0, count: 100)
        let content = good + zeros + Array(good.suffix(50)) + good + Array("{\"not\":\"a record\"}\n".utf8) + good
        try Data(content).write(to: URL(fileURLWithPath: path))
        var kinds: [String] = []
        let reader = try SegmentReader(path: path)
        while let entry = try reader.next() {
            switch entry {
            case .record: kinds.append("record")
            case .corrupt(let line, _): kinds.append("corrupt:\(line)")
            case .tornTail(let line, _): kinds.append("torn:\(line)")
            }
        }
        #expect(kinds == ["record", "torn:2", "record", "corrupt:4", "record"])
    }
}
