import Foundation
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics

/// The fast spool-line path must agree with `SpoolRecord(line:)`, the definition of a valid line:
/// whatever it accepts, the full parser accepts with the same values.
@Suite struct SpoolLineTests {
    static func text(_ slice: ByteSlice?, _ base: UnsafeRawBufferPointer) -> String {
        guard let slice else { return "nil" }
        return String(decoding: UnsafeRawBufferPointer(rebasing: base[slice.start..<(slice.start + slice.count)]), as: UTF8.self)
    }

    /// A canonical description of what the fast path extracted: every declared field, in order.
    static func describe(_ summary: SpoolLineSummary, _ base: UnsafeRawBufferPointer) -> String {
        guard summary.hasFields else { return "no attribution" }
        let fields = summary.fields
        let values = AttributionField.allCases.map { RecordSchemaTests.describe($0, of: fields, in: base) }
        return ([String(summary.receivedAtMicros), String(summary.isProduction), text(summary.dedupKey, base)] + values)
            .joined(separator: "|")
    }

    /// The same, from the full parser's record.
    static func describe(_ record: SpoolRecord) -> String {
        guard let attribution = record.attribution else { return "no attribution" }
        let values = AttributionField.allCases.map { field -> String in
            switch field.value(in: attribution) {
            case .string(let text): return text ?? "nil"
            case .integer(let number): return number.map { String($0) } ?? "nil"
            case .boolean(let flag): return flag.map { String($0) } ?? "nil"
            }
        }
        return
            ([
                String(record.receivedAt.microsecondsSinceEpoch), String(record.environment == .production),
                record.dedupKey ?? "nil",
            ] + values).joined(separator: "|")
    }

    /// nil when the fast path declines; otherwise its description, after checking the full parser agrees.
    static func fastAgreesWithFull(_ line: [UInt8]) -> (fast: String?, full: String?) {
        let fast = line.withUnsafeBytes { bytes in FastSpoolLineParser.parse(bytes).map { describe($0, bytes) } }
        let full = (try? SpoolRecord(line: line)).flatMap { $0.status == .verified ? describe($0) : nil }
        return (fast, full)
    }

    static let syntheticLines: [[UInt8]] = {
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 400
        spool.rejectedRate = 0.05
        return spool.lines(day: day("2026-03-02"), first: day("2026-03-01")).map { Array($0.line.dropLast()) }
    }()

    @Test func fastPathReadsGeneratedRecordsExactlyLikeTheFullParser() {
        var fastCount = 0
        for line in Self.syntheticLines {
            let (fast, full) = Self.fastAgreesWithFull(line)
            guard let fast else { continue }
            fastCount += 1
            #expect(fast == full, "\(String(decoding: line, as: UTF8.self))")
        }
        #expect(
            fastCount > Self.syntheticLines.count * 9 / 10,
            "the fast path takes the common case: \(fastCount) of \(Self.syntheticLines.count)")
    }

    @Test func fastPathReadsAppleVectorsStoredByTheVerifier() throws {
        for name in [
            "skan-4.0_apple-doc_web-ad-tier-high.json", "skan-4.0_apple-doc_web-ad-tier-low.json",
            "skan-3.0_apple-doc_nonwinning.json",
            "skan-2.2_apple-doc.json", "aak_apple-doc_developer-settings_apple-development-identifier-1.json",
        ] {
            let body = try Fixtures.appleVector(name)
            let result = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true)).verify(body: body)
            #expect(result.isVerified, "\(name)")
            let line = Array(
                SpoolRecord(
                    receivedAt: timestamp("2026-03-02T10:00:00.000000Z"), writer: "rx1", route: "r", result: result, body: body
                ).encoded().dropLast())
            let (fast, full) = Self.fastAgreesWithFull(line)
            #expect(fast != nil && fast == full, "\(name)")
        }
    }

    @Test func mutatedLinesAreNeverReadDifferently() {
        var random = SplitMix64(seed: 42)
        let inserts: [UInt8] = Array("\\\",:{}[] 0-9enultrfaé".utf8) + [0x01, 0x7F, 0xFF, 0x0D]
        var accepted = 0
        var declined = 0
        for round in 0..<3000 {
            var line = Self.syntheticLines[round % Self.syntheticLines.count]
            for _ in 0...(random.next() % 3) {
                let position = Int(random.next() % UInt64(line.count))
                switch random.next() % 3 {
                case 0: line[position] ^= UInt8(1 << (random.next() % 8))
                case 1: line.remove(at: position)
                default: line.insert(inserts[Int(random.next() % UInt64(inserts.count))], at: position)
                }
            }
            let (fast, full) = Self.fastAgreesWithFull(line)
            if let fast {
                accepted += 1
                #expect(fast == full, "fast path read a mutated line differently: \(String(decoding: line, as: UTF8.self))")
            } else {
                declined += 1
            }
        }
        #expect(accepted > 0 && declined > 0)
    }

    @Test func unusualButValidLinesFallBackToTheFullParser() throws {
        let attribution = Attribution(
            postbackProtocol: .skadnetwork, version: "4.0", appID: 1, adNetworkID: "n", sourceIdentifier: "12",
            postbackSequenceIndex: 0, didWin: true)
        let base = record(attribution, key: "k:0", at: "2026-03-02T10:00:00.000000Z")
        let decoder = SpoolLineDecoder()
        var summary = SpoolLineSummary()
        func decode(_ text: String) -> SpoolLineDecoder.Outcome {
            Array(text.utf8).withUnsafeBytes { decoder.decode($0, spool: .postbacks, into: &summary) }
        }
        let encoded = String(decoding: base.encoded().dropLast(), as: UTF8.self)
        let variants = [
            encoded.replacingOccurrences(of: #""writer":"rx1","#, with: #""writer":"rx1","extra":{"a":[1]},"#),  // unknown key
            encoded.replacingOccurrences(of: #"{\"placeholder\":true}"#, with: #"{\"\u00e9\":true}"#),  // \u escape in the body
            encoded.replacingOccurrences(of: #"{\"placeholder\":true}"#, with: #"{\"é\":true}"#),  // non-ASCII body
            encoded.replacingOccurrences(of: #""route""#, with: #" "route""#),  // whitespace
            encoded.replacingOccurrences(of: #""dedup_key":"k:0""#, with: #""dedup_key":"k\/0""#),  // escape in a field
        ]
        for variant in variants {
            guard case .verified(let inScratch) = decode(variant) else {
                Issue.record("valid line not read: \(variant)")
                continue
            }
            #expect(inScratch, "read by the full parser: \(variant)")
            #expect(summary.hasFields && summary.fields.sourceIdentifier != nil)
        }
        // Keys in another order still take the fast path.
        let reordered =
            #"{"status":"verified","received_at":"2026-03-02T10:00:00.000000Z","body":"{}","dedup_key":"k:0","environment":"production","attribution":{"app_id":1,"protocol":"skadnetwork","ad_network_id":"n","conversion_type":"download"}}"#
        guard case .verified(let inScratch) = decode(reordered) else {
            Issue.record("reordered line not read")
            return
        }
        #expect(!inScratch)
        // Members left out read as the full parser reads them (window 0, not test mode).
        let (fast, full) = Self.fastAgreesWithFull(Array(reordered.utf8))
        #expect(fast != nil && fast == full)
        #expect(summary.fields.sequenceIndex == 0 && summary.fields.isTestMode == false)
    }

    @Test func decoderRulesOnTopOfTheRecordFormat() throws {
        let decoder = SpoolLineDecoder()
        var summary = SpoolLineSummary()
        func decode(_ record: SpoolRecord, spool: StoreLayout.Spool = .postbacks) -> SpoolLineDecoder.Outcome {
            Array(record.encoded().dropLast()).withUnsafeBytes { decoder.decode($0, spool: spool, into: &summary) }
        }
        var attribution = Attribution(
            postbackProtocol: .adattributionkit, version: nil, appID: 9, adNetworkID: "n", postbackSequenceIndex: 3)
        guard case .corrupt(let reason) = decode(record(attribution, key: "k:3", at: "2026-03-02T10:00:00.000000Z")) else {
            Issue.record("a sequence index of 3 is not a verified postback")
            return
        }
        #expect(reason.contains("postback_sequence_index 3"))
        attribution.postbackSequenceIndex = 0
        attribution.fineValue = 64
        guard case .corrupt = decode(record(attribution, key: "k:0", at: "2026-03-02T10:00:00.000000Z")) else {
            Issue.record("fine value 64")
            return
        }

        // A record in raw/rejected counts as rejected whatever its status says.
        attribution.fineValue = 1
        guard
            case .rejected(let facts) = decode(
                record(attribution, key: "k:0", at: "2026-03-02T10:00:00.000000Z"), spool: .rejected)
        else {
            Issue.record("rejected spool")
            return
        }
        #expect(facts.appID == 9 && facts.adNetworkID == "n")

        // A verified record without attribution or dedup key is read again from its body.
        let body = try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-low.json")
        var bare = SpoolRecord(
            receivedAt: timestamp("2026-03-02T10:00:00.000000Z"), writer: "rx1", route: "r",
            result: PostbackVerifier().verify(body: body), body: body)
        bare.attribution = nil
        bare.dedupKey = nil
        guard case .verified(true) = decode(bare) else {
            Issue.record("record without attribution")
            return
        }
        #expect(decoder.scratch.withUnsafeBytes { Self.text(summary.dedupKey, $0) } == "6aafb7a5-0170-41b5-bbe4-fe71dedf1e31:0")
        #expect(summary.fields.coarseValue == .high)
        bare.body = Array("{}".utf8)
        guard case .corrupt = decode(bare) else {
            Issue.record("no attribution and an unreadable body")
            return
        }
    }

    @Test func timestampsParseOnlyWhatUTCTimestampWrites() {
        // One parser serves the fast reader (bytes) and `UTCTimestamp(iso8601:)`: valid text round-trips.
        for text in [
            "2026-03-02T10:00:00.000000Z", "2028-02-29T23:59:59.999999Z", "0000-01-01T00:00:00.000000Z",
            "9999-12-31T23:59:59.999999Z",
        ] {
            #expect(UTCTimestamp(iso8601: text)?.description == text, "\(text)")
        }
        for text in [
            "2027-02-29T00:00:00.000000Z", "2026-13-01T00:00:00.000000Z", "2026-04-31T00:00:00.000000Z",
            "2026-03-02T24:00:00.000000Z", "2026-03-02T10:00:60.000000Z", "2026-03-02T10:00:00.00000xZ",
            "2026-03-02 10:00:00.000000Z", "2026-00-10T00:00:00.000000Z", "2026-03-00T00:00:00.000000Z",
            "2026-03-02T10:00:00.000000", "",
        ] {
            #expect(UTCTimestamp(iso8601: text) == nil, "\(text)")
        }
        #expect(UTCTimestamp(iso8601: "1970-01-02T00:00:01.000002Z")?.microsecondsSinceEpoch == 86_401_000_002)
    }
}

@Suite struct DedupSortTests {
    static func entries(_ count: Int, seed: UInt64, distinctHashes: UInt64) -> [DedupEntry] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { index in
            DedupEntry(
                hashHigh: random.next() % distinctHashes, hashLow: random.next() % 3, receivedAt: Int64(random.next() % 1000),
                order: UInt64(index), row: UInt32(index), flags: 0)
        }
    }

    @Test(arguments: [0, 1, 2, 17, 1000, 50_000]) func sortsLikeTheStandardLibrary(count: Int) {
        for (seed, distinct) in [(1, UInt64.max), (2, 5), (3, 1)] as [(UInt64, UInt64)] {
            var mine = Self.entries(count, seed: seed, distinctHashes: distinct)
            let expected = mine.sorted(by: DedupEntry.precedes).map(\.order)
            DedupEntry.sort(&mine)
            #expect(mine.map(\.order) == expected, "count \(count), \(distinct) distinct hashes")
        }
        // Already sorted and reversed input (quicksort's classic worst cases).
        var sorted = Self.entries(count, seed: 4, distinctHashes: .max).sorted(by: DedupEntry.precedes)
        let expected = sorted.map(\.order)
        DedupEntry.sort(&sorted)
        #expect(sorted.map(\.order) == expected)
        var reversed = Array(sorted.reversed())
        DedupEntry.sort(&reversed)
        #expect(reversed.map(\.order) == expected)
    }
}
